"""The backtest's timeline: when the venue met an event (its exchange time, never after it was
received), read from whichever timestamp the event carries; one feed book for the venue and the
engine while they meet events together."""

from __future__ import annotations

import json
import random
from types import SimpleNamespace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.backtest.recording import Gap
from bot.backtest.timeline import Backtest, divided, exchange_time
from bot.compiled import interpreted
from bot.core.book import price_levels_of
from bot.core.clock import SimClock
from bot.core.levels import PriceLevels
from bot.core.markets import MarketInfo
from bot.core.intents import Quote, QuoteTarget
from bot.engine.assembly import Signing, build_engine, simulated_throttles
from bot.risk import RiskLimits
from bot.sim.venue import SimVenue, SimVenueConfig
from bot.strategy import Strategy
from bot.venue.enums import Side
from bot.venue.limits import LimitsConfig
from bot.venue.models.ws import LastTradePriceEvent, decode_market_frame
from strategies.market_maker import MarketMaker, Params


def test_the_exchange_time_is_the_event_stamp_capped_at_its_receipt() -> None:
    levels = PriceLevels("0xm", 1_700_000_000_250, ("Y",), b"", ("",))
    assert exchange_time(levels, 1_700_000_001.0) == 1_700_000_000.25
    assert exchange_time(levels, 1_699_999_999.0) == 1_699_999_999.0  # a stamp after receipt: receipt
    assert exchange_time(PriceLevels("0xm", 0, ("Y",), b"", ("",)), 5.0) == 5.0  # no stamp
    trade = LastTradePriceEvent(asset_id="Y", market="0xm", price="0.5", side="BUY", size="1",
                                timestamp="1700000000500")
    for _ in range(2):  # the second time through the class's remembered shape
        assert exchange_time(trade, 1_700_000_001.0) == 1_700_000_000.5
    assert exchange_time(SimpleNamespace(timestamp="oops"), 7.0) == 7.0


@settings(max_examples=500, deadline=None)
@given(n=st.one_of(st.integers(-(2**80), 2**80), st.integers(2**52, 2**64),
                   st.floats(-1e30, 1e30, allow_nan=False)),
       unit=st.sampled_from([1e9, 1000.0, 1.0, 3.0]))
def test_a_stamp_is_divided_to_the_float_python_gives(n, unit) -> None:
    """Receive times and venue stamps become seconds as ``n / unit`` would make them: ints of
    64 bits (divided in C when compiled), larger ones, and floats alike."""
    got, want = divided(n, unit), n / unit
    assert got == want and repr(got) == repr(want)
    big = PriceLevels("0xm", 2**70, ("Y",), b"", ("",))  # a stamp past 64 bits: past the receipt
    assert exchange_time(big, 5.0) == 5.0


def test_any_object_carrying_a_millisecond_stamp_is_read_by_it() -> None:
    # objects of one class, only some of which carry the field: each is read as it is
    assert exchange_time(SimpleNamespace(timestamp_ms=2_000, timestamp="9000"), 10.0) == 2.0
    assert exchange_time(SimpleNamespace(timestamp="3000"), 10.0) == 3.0
    assert exchange_time(SimpleNamespace(timestamp_ms=4_000), 10.0) == 4.0


# --- one feed book for the venue and the engine ---------------------------------------------

YES, NO = "1111", "2222"
MARKET = MarketInfo("0x" + "ab" * 32, (YES, NO))
T0 = 1_700_000_000 * 10**9  # receive time of the first event, ns


def _frame(kind: str, **fields) -> bytes:
    return json.dumps({"event_type": kind, "market": MARKET.condition_id, **fields}).encode()


def _stream(rng: random.Random, n: int, lag_ms: list[int], gaps: set[int]) -> list[tuple[int, object]]:
    """Snapshots of both books, then ``n`` level changes (a YES level and its NO mirror, the touch
    moving now and then) and prints, 5 ms apart; event ``i`` stamped ``lag_ms[i]`` ms before its
    receipt (0: at it), a ``Gap`` of both books before each event in ``gaps``."""
    def px(milli: int) -> str:
        return f"{milli / 1000:.3f}"

    out: list[tuple[int, object]] = []
    ns = T0
    bid, ask = 480, 520
    for token in (YES, NO):
        bids = [bid - 10 * k for k in range(6)]
        asks = [ask + 10 * k for k in range(6)]
        if token == NO:  # the mirror: NO bids at 1 - YES asks, NO asks at 1 - YES bids
            bids, asks = [1000 - p for p in asks], [1000 - p for p in bids]
        book = {"bids": [{"price": px(p), "size": "100"} for p in sorted(bids)],
                "asks": [{"price": px(p), "size": "100"} for p in sorted(asks, reverse=True)]}
        out.append((ns, decode_market_frame(_frame("book", asset_id=token, timestamp=str(ns // 10**6),
                                                   hash="h", **book))[0]))
        ns += 5_000_000
    for i in range(n):
        if i in gaps:
            out.append((ns, Gap((YES, NO), "test")))
        stamp = str(ns // 10**6 - (lag_ms[i] if i < len(lag_ms) else 0))
        r = rng.random()
        if r < 0.15:
            out.append((ns, decode_market_frame(_frame(
                "last_trade_price", asset_id=YES, price=px(bid), side="SELL", size=str(rng.randint(1, 30)),
                fee_rate_bps="0", timestamp=stamp))[0]))
        else:
            side = rng.choice(("BUY", "SELL"))
            if r < 0.45:  # the touch moves
                milli = (bid + 10 if bid + 20 < ask else bid) if side == "BUY" else (ask - 10 if ask - 20 > bid else ask)
                bid, ask = (milli, ask) if side == "BUY" else (bid, milli)
            else:
                milli = bid - 10 * rng.randint(1, 5) if side == "BUY" else ask + 10 * rng.randint(1, 5)
            size = str(rng.randint(1, 300))
            other = "SELL" if side == "BUY" else "BUY"
            ev = decode_market_frame(_frame("price_change", timestamp=stamp, price_changes=[
                {"asset_id": YES, "price": px(milli), "size": size, "side": side, "hash": "h"},
                {"asset_id": NO, "price": px(1000 - milli), "size": size, "side": other, "hash": "h"}]))[0]
            out.append((ns, price_levels_of(ev) or ev))
        ns += 5_000_000
    return out


def _maker_engine(clock: SimClock):
    """The shipped market maker on ``MARKET``'s YES token, both tokens held."""
    engine = build_engine(MarketMaker(Params(tokens=(YES,), half_spread_ticks=1)), [MARKET], clock=clock,
                          signing=Signing(None, 1), throttles=simulated_throttles(LimitsConfig(), clock),
                          risk=RiskLimits())
    for token in MARKET.tokens:
        engine.portfolio.seed(token, 500_000_000, 0)
    return engine


def _backtest(events: list[tuple[int, object]], *, own_books: bool = False) -> Backtest:
    """The shipped market maker and the simulated venue over ``events``; ``own_books``: the venue
    meets a view of every event (the same event), which keeps it in books of its own throughout."""
    clock = SimClock(0.0)
    engine = _maker_engine(clock)
    venue = SimVenue([MARKET], SimVenueConfig(seed=1, collateral=10**12, holdings=500_000_000))
    run = Backtest(engine, venue, clock, timer_s=0.5, feed_delay=True,
                   venue_view=(lambda ns, ev: ev) if own_books else None)
    run.run(events)
    return run


def _outcome(run: Backtest) -> tuple:
    """Everything a run left: our orders (with their fills), the engine's counters, positions
    and the venue's ledger."""
    orders = [(o.order_id, o.side, o.price, o.size, o.state, o.filled, o.sent_at, o.updated_at)
              for o in run.engine.orders]
    positions = {t: (p.size, p.realized_pnl) for t, p in run.engine.portfolio.positions().items()}
    return orders, run.engine.stats.as_dict(), positions, run.venue.balance()


def test_a_venue_meeting_events_with_the_engine_reads_the_engines_books() -> None:
    run = _backtest(_stream(random.Random(1), 300, [], set()))
    assert run.venue.books is run.engine.books  # each level change applied once, for both
    assert run.engine.stats.orders_sent > 0


def test_an_event_the_venue_meets_first_gives_it_books_of_its_own_until_the_engine_catches_up() -> None:
    from bot.sim.depth import book_state_equal

    lags = [0] * 100 + [3] + [0] * 99  # event 100 reaches the venue 3 ms before the engine
    events = _stream(random.Random(2), 200, lags, set())
    run = _backtest(events[:2 + 101])
    assert run.venue.books is not run.engine.books
    for token in MARKET.tokens:  # its own copy: the same state, another object
        assert book_state_equal(run.venue.books[token], run.engine.books[token])
        assert run.venue.books[token] is not run.engine.books[token]
    run = _backtest(events)
    assert run.venue.books is run.engine.books  # shared again once both books agree


def test_a_gap_marks_only_the_engines_books_stale() -> None:
    run = _backtest(_stream(random.Random(3), 50, [], {49}))
    assert all(b.stale for b in run.engine.books)
    assert not any(b.stale for b in run.venue.books)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), lags=st.lists(st.sampled_from([0, 0, 0, 1, 4]), max_size=120),
       gaps=st.sets(st.integers(0, 119), max_size=2))
def test_one_book_for_both_gives_the_answers_and_orders_of_two(seed, lags, gaps) -> None:
    events = _stream(random.Random(seed), 160, lags, gaps)
    assert _outcome(_backtest(events)) == _outcome(_backtest(events, own_books=True))


def test_a_backtest_takes_no_wall_clock_stamps() -> None:
    # tick-to-order figures time the host, not the replay: the engine reads no perf counter
    clock = SimClock(0.0)
    engine = _maker_engine(clock)
    reads: list[int] = []
    engine.perf = lambda: reads.append(1) or 0.0
    venue = SimVenue([MARKET], SimVenueConfig(seed=1, collateral=10**12, holdings=500_000_000))
    Backtest(engine, venue, clock, timer_s=0.5, feed_delay=True).run(_stream(random.Random(4), 200, [], set()))
    assert engine.stats.orders_sent > 0 and engine.stats.book_events > 0
    assert reads == [] and not engine.latencies


def test_skipped_timers_resume_on_their_grid_after_the_silence() -> None:
    clock = SimClock(0.0)
    samples: list[float] = []
    venue = SimVenue([MARKET], SimVenueConfig(seed=1, collateral=10**12, holdings=500_000_000))
    run = Backtest(_maker_engine(clock), venue, clock, timer_s=0.5, feed_delay=False, on_sample=samples.append)
    events = _stream(random.Random(5), 800, [], set())  # 5 ms apart: four seconds
    late = [(ns + 3600 * 10**9, ev) for ns, ev in events[400:]]  # the second half after an hour of silence

    def stream():
        yield from events[:400]
        run.skip_timers(late[0][0] / 1e9)
        yield from late

    run.run(stream())
    before = [t for t in samples if t <= events[399][0] / 1e9]
    after = [t for t in samples if t >= late[0][0] / 1e9]
    assert before and after and len(before) + len(after) == len(samples)
    assert all(round(t * 2) == t * 2 for t in samples)  # on the 0.5 s grid throughout
    run.skip_timers(0.0)  # a time already past: nothing moves
    assert run._next_timer > late[-1][0] / 1e9


class _FirstCancelUnanswered:
    """The simulated venue, except that the answer to the first cancel request of orders placed
    and answered before it left, all cancelled, names none of them (the engine reverts them to working and the
    router paces their next cancel); every cancel request is noted with the time it was sent."""

    def __init__(self, venue: SimVenue) -> None:
        self._venue = venue
        self.unanswered: tuple[str, ...] = ()
        self.cancels: list[tuple[float, tuple[str, ...]]] = []
        self._placed: dict[str, float] = {}  # order id -> when its place was answered

    def __getattr__(self, name: str):
        return getattr(self._venue, name)

    def due(self, now: float) -> list:
        from bot.execution.protocol import CancelsAnswered, PlacesAnswered
        from bot.execution.records import CancelResult

        out = []
        for r in self._venue.due(now):
            if type(r) is PlacesAnswered:
                self._placed.update(dict.fromkeys(r.batch.order_ids, now))
            elif type(r) is CancelsAnswered and not self.unanswered and r.batch.order_ids:
                sent = next(t for t, ids in self.cancels if ids == r.batch.order_ids)
                if all(self._placed.get(oid, sent) < sent for oid in r.batch.order_ids) \
                        and set(r.result.canceled) == set(r.batch.order_ids):
                    self.unanswered = r.batch.order_ids
                    r = CancelsAnswered(r.batch, CancelResult())
            out.append(r)
        return out

    def execute(self, actions: list, now: float) -> None:
        from bot.execution.protocol import SendCancels

        self.cancels += [(now, a.batch.order_ids) for a in actions if type(a) is SendCancels]
        self._venue.execute(actions, now)


class _BidThenNothing(Strategy):
    """One bid on YES from its first book; from the first book change 0.2 s later, no quotes."""

    t0 = None

    def on_book(self, ctx, token_id):
        if self.t0 is None:
            self.t0 = ctx.clock.now()
            return [QuoteTarget(YES, (Quote(YES, Side.BUY, 400_000, 10_000_000),))]
        return [QuoteTarget(YES)] if ctx.clock.now() > self.t0 + 0.2 else []


def test_a_paced_cancel_goes_again_when_it_comes_due_even_with_no_event_or_timer_left() -> None:
    # the cancel of the bid is answered naming nothing (the bid back to working, its next cancel
    # paced), the stream ends well before the retry is due, and the drain after it runs no timer:
    # only the router's own wake-up sends the cancel again, at the time it said
    clock = SimClock(0.0)
    engine = build_engine(_BidThenNothing(), [MARKET], clock=clock, signing=Signing(None, 1),
                          throttles=simulated_throttles(LimitsConfig(), clock), risk=RiskLimits())
    venue = _FirstCancelUnanswered(SimVenue([MARKET], SimVenueConfig(seed=1, collateral=10**12)))
    events = _stream(random.Random(6), 200, [], set())  # one second of events
    # the loop as written (a compiled build types its venue, which this wrapper is not)
    interpreted("bot.backtest.timeline").Backtest(engine, venue, clock, timer_s=0.5, feed_delay=True).run(events)
    ((first, ids), (again, same)) = venue.cancels
    retry = engine.router.config.cancel_retry_after
    assert venue.unanswered == ids == same and first + retry > events[-1][0] / 1e9  # due after the last event
    assert again == first + retry
    assert not engine.orders.working(YES)  # the venue's answer ("not open") closed it

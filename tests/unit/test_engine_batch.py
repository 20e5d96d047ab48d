"""Market updates received together: ``Engine.on_market`` applies every one, runs the strategy
once per changed token on its newest state, refuses books that waited too long, and times
tick-to-order from the receipt of the book each order was quoted from. One event at a time (a
backtest) and the whole buffer at once (live, paper) go through the same steps and end in the
same books and the same working orders."""

from __future__ import annotations

import json

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bot.core.clock import SimClock
from bot.engine.engine import Engine, EngineConfig
from bot.core.markets import MarketIndex
from bot.execution.protocol import CancelsAnswered, PlacesAnswered, SendCancels, SendPlaces, all_live
from bot.execution.records import CancelResult, OrderResult
from bot.risk import RiskGate, RiskLimits
from bot.ops.metrics import Metrics
from bot.venue.models.ws import decode_market_frame
from tests.unit.test_engine import COND, MARKET, NO, YES, book, make_engine, places, up


def price_change(token: str, price: str, size: str, side: str = "BUY", ts: int = 2) -> object:
    frame = {"event_type": "price_change", "market": COND, "timestamp": str(ts),
             "price_changes": [{"asset_id": token, "price": price, "size": size, "side": side, "hash": "x"}]}
    return decode_market_frame(json.dumps(frame).encode())


class Counting:
    """Wraps the strategy's ``on_book`` to count its calls per token."""

    def __init__(self, eng: Engine) -> None:
        self.calls: list[str] = []
        inner = eng.strategy.on_book

        def on_book(ctx, token_id):
            self.calls.append(token_id)
            return inner(ctx, token_id)

        eng.strategy.on_book = on_book


def started(clock: SimClock, **kw) -> Engine:
    eng = make_engine(clock, **kw)
    eng.start()
    eng.on_connection(up(clock))
    out = eng.on_market([book(YES, [("0.48", "100")], [("0.52", "100")]),
                               book(NO, [("0.48", "100")], [("0.52", "100")])], [clock.now(), clock.now()])
    for a in out:
        if isinstance(a, SendPlaces):
            eng.on_result(all_live(a.batch))
    return eng


def test_a_batch_runs_the_strategy_once_per_token_on_the_newest_book():
    clock = SimClock(1_000.0)
    eng = started(clock)
    calls = Counting(eng)
    # three updates of YES's bid and one of NO's: every one applied, YES quoted from the last
    evs = price_change(YES, "0.49", "100") + price_change(YES, "0.50", "100") + price_change(YES, "0.51", "100") \
        + price_change(NO, "0.49", "100")
    out = eng.on_market(evs, [clock.now()] * len(evs))
    assert sorted(calls.calls) == sorted([YES, NO])
    assert eng.books[YES].best_bid == 510_000 and eng.books[NO].best_bid == 490_000
    bid = next(o for o in places(out) if o.token_id == YES and o.side.value == "BUY")
    assert bid.price == 500_000  # mid (0.51 + 0.52) / 2 minus one tick, floored to the grid
    assert eng.stats.book_events == 2 + len(evs) and eng.stats.book_runs == 2 + 2


def answered(eng: Engine, actions: list) -> list:
    """The venue answers every request at once (places rest, cancels succeed) until the engine
    asks for nothing more; returns every action it asked for on the way."""
    seen = list(actions)
    for _ in range(50):
        results = [all_live(a.batch) if isinstance(a, SendPlaces) else CancelsAnswered(a.batch, CancelResult(
            canceled=a.batch.order_ids)) for a in actions if isinstance(a, (SendPlaces, SendCancels))]
        if not results:
            return seen
        actions = [x for r in results for x in eng.on_result(r)]
        seen += actions
    raise AssertionError("the engine kept asking")


def working(eng: Engine) -> list[tuple]:
    return sorted((o.token_id, o.side.value, o.price, o.size) for o in eng.working_orders())


def crossed(eng: Engine) -> bool:
    """The books cross, directly or through the complement (a YES bid and a NO bid summing to 1 or
    more, asks to 1 or less): a venue's never do, as its matching (minting, merging) takes what would."""
    yes, no = eng.books[YES], eng.books[NO]

    def meet(bid, ask) -> bool:
        return bid is not None and ask is not None and bid >= ask

    return (meet(yes.best_bid, yes.best_ask) or meet(no.best_bid, no.best_ask)
            or meet(yes.best_bid, None if no.best_bid is None else 1_000_000 - no.best_bid)
            or meet(None if yes.best_ask is None else 1_000_000 - yes.best_ask, no.best_ask))


def targets(eng: Engine) -> dict:
    return {t: sorted((q.side.value, q.price, q.size) for q in x.quotes) for t, x in eng.router.targets().items()}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([YES, NO]), st.integers(40, 51), st.integers(0, 300), st.booleans()),
                min_size=1, max_size=12))
def test_a_batch_ends_in_the_books_and_orders_of_the_same_updates_one_by_one(changes):
    """The same events one at a time (each answered by the venue before the next, as in a
    backtest) and as one batch (live, paper) leave the same books, the same targets and the same
    working orders once the venue has answered everything: the strategy quotes from the newest
    book either way, and every order an intermediate book asked for is cancelled again."""
    clock = SimClock(1_000.0)
    one, many = started(clock), started(clock)
    for eng in (one, many):  # no order-rate limit: both reach the final quotes, however many requotes
        eng.risk = RiskGate(RiskLimits(max_orders_per_window=None), MarketIndex([MARKET]))
        # these books never show our orders: nothing of theirs is ours to take out of the touch
        # (taken out, the touch would hang on which of our orders were working when it was read)
        eng.own_orders_shown = False
    evs = [e for t, p, s, bid in changes for e in price_change(t, f"0.{p:02d}", str(s), "BUY" if bid else "SELL")]
    singles = []
    for ev in evs:
        singles += answered(one, one.on_market([ev]))
        assume(not crossed(one))
    batched = answered(many, many.on_market(evs, [None] * len(evs)))
    for t in (YES, NO):
        assert one.books[t].top() == many.books[t].top()
        assert one.books[t].best_bid_size == many.books[t].best_bid_size
    assert targets(one) == targets(many)
    assert working(one) == working(many)
    assert one.router.settled() and many.router.settled()
    # whatever the batch sent, one by one sent too: the batch only skips intermediate quotes
    sent = lambda acts: {(o.token_id, o.side.value, o.price, o.size) for o in places(acts)}  # noqa: E731
    assert sent(batched) <= sent(singles)
    assert one.stats.book_events == many.stats.book_events


def test_a_book_that_waited_longer_than_the_max_age_is_not_quoted_from():
    clock = SimClock(1_000.0)
    perf = [100.0]
    eng = make_engine(clock, metrics=Metrics())
    eng.perf = lambda: perf[0]
    eng.config = EngineConfig(max_book_age_s=0.2)
    eng.start()
    eng.on_connection(up(clock))
    calls = Counting(eng)
    out = eng.on_market([book(YES, [("0.48", "100")], [("0.52", "100")])], [perf[0] - 0.5])
    assert calls.calls == [] and places(out) == [] and eng.stats.requotes_shed == 1
    assert eng.metrics.registry.get_sample_value("bot_requotes_shed_total") == 1
    out = eng.on_market([book(YES, [("0.47", "100")], [("0.52", "100")])], [perf[0] - 0.1])
    assert calls.calls == [YES] and places(out)


def test_tick_to_order_runs_from_the_receipt_of_the_book_quoted():
    clock = SimClock(1_000.0)
    perf = [100.0]
    eng = make_engine(clock, metrics=Metrics())
    eng.perf = lambda: perf[0]
    eng.start()
    eng.on_connection(up(clock))
    out = eng.on_market([book(YES, [("0.48", "100")], [("0.52", "100")])], [99.99])
    sends = [a for a in out if isinstance(a, SendPlaces)]
    assert sends and all(a.tick_at == 99.99 for a in sends)
    assert abs(eng.latencies[-1] - 0.01) < 1e-9
    assert eng.metrics.registry.get_sample_value("bot_tick_to_order_seconds_count") == len(sends)
    eng.stamp_sends = True  # the live shell observes at the write instead
    out = eng.on_market(price_change(YES, "0.50", "100"), [99.995])
    assert any(isinstance(a, SendPlaces) and a.tick_at == 99.995 for a in out)
    assert eng.metrics.registry.get_sample_value("bot_tick_to_order_seconds_count") == len(sends)


def test_venue_rejections_are_counted_by_reason():
    clock = SimClock(1_000.0)
    eng = make_engine(clock, metrics=Metrics())
    eng.start()
    eng.on_connection(up(clock))
    out = eng.on_market([book(YES, [("0.48", "100")], [("0.52", "100")])])
    batch = next(a.batch for a in out if isinstance(a, SendPlaces))
    refused = OrderResult(success=False, error_msg="invalid post-only order: order crosses book")
    eng.on_result(PlacesAnswered(batch, tuple(refused for _ in batch.orders)))
    get = eng.metrics.registry.get_sample_value
    assert get("bot_orders_rejected_total", {"reason": "post_only_crosses"}) == len(batch.orders)
    assert get("bot_orders_rejected_total", {"reason": "venue"}) is None


def test_the_drift_gauge_shows_a_difference_seen_unchanged_at_two_checks_and_only_while_it_lasts():
    clock = SimClock(1_000.0)
    eng = make_engine(clock, metrics=Metrics())
    gauge = lambda: eng.metrics.registry.get_sample_value("bot_position_drift_shares", {"token": YES})  # noqa: E731
    eng.reconcile_positions({YES: 5_000_000})  # a fill the venue counted, its event still on its way
    assert eng.drifts and not gauge()
    clock.advance(1.0)
    eng.reconcile_positions({YES: 3_000_000})  # not the same difference: still in flight
    assert not gauge()
    clock.advance(1.0)
    eng.reconcile_positions({YES: 3_000_000})  # the same difference a second time: drift
    assert gauge() == -3_000_000
    clock.advance(1.0)
    eng.reconcile_positions({})  # gone
    assert gauge() == 0 and eng.drifts == []

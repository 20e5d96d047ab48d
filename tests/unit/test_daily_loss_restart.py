"""The daily loss limit across a restart: an engine restored from the journal the same UTC day
keeps counting the day's PnL from the journaled day start, so it halts where a run that started
the day afresh would not."""

from __future__ import annotations

import json

import msgspec

from bot.core.clock import SimClock
from bot.engine.engine import Engine
from bot.execution.protocol import SendPlaces, TradeSeen, VenueCancelAll, all_live
from bot.execution.records import trade_record
from bot.core.markets import MarketIndex, MarketInfo
from bot.execution.journal import Journal
from bot.execution.reconciler import Reconciler, ReconcilerConfig
from bot.execution.router import Router
from bot.portfolio.pnl import DailyPnl, DayStart
from bot.risk import HaltReason, RiskGate, RiskLimits, TradingState
from bot.venue.enums import Side
from bot.venue.models.ws import decode_market_frame, decode_user_frame
from bot.venue.throttle import RateWindow, Throttle
from strategies.market_maker import MarketMaker, Params

COND = "0x" + "cd" * 32
YES, NO = "111", "222"
MARKET = MarketInfo(COND, (YES, NO))
OWNER = "owner-key"
U = 1_000_000
DAY = 19_000
LIMITS = RiskLimits(max_daily_loss=15 * U)


class FakeSigned(msgspec.Struct, frozen=True):
    hash: str


def engine(clock: SimClock, journal: Journal, day_start: DayStart | None) -> Engine:
    """Wired as ``bot.live.assembly.make_engine`` wires a journaled run."""
    markets = MarketIndex([MARKET])
    rec = Reconciler(ReconcilerConfig(owner=OWNER), journal=journal)
    n = iter(range(1, 10**6))
    big = [RateWindow(1000, 10.0)]
    router = Router(rec.orders, lambda req: FakeSigned(f"0x{next(n):04d}{req.side.value[0]}{req.price}"),
                    place_throttle=Throttle(big, clock.now), cancel_throttle=Throttle(big, clock.now))
    eng = Engine(strategy=MarketMaker(Params(half_spread_ticks=1, order_size=50 * U)), markets=markets,
                 clock=clock, router=router, reconciler=rec, risk=RiskGate(LIMITS, markets))
    eng.daily = DailyPnl.resume(day_start, clock.now(), on_new_day=journal.day_start)
    return eng


def book(token: str, bid: str, ask: str, ts: int) -> object:
    frame = {"event_type": "book", "market": COND, "asset_id": token, "timestamp": str(ts), "hash": "h",
             "bids": [{"price": bid, "size": "500"}], "asks": [{"price": ask, "size": "500"}]}
    return decode_market_frame(json.dumps([frame]).encode())[0]


def mark(eng: Engine, clock: SimClock, bid: str, ask: str) -> list:
    clock.advance(1.0)
    ts = int(clock.now() * 1000)
    return eng.on_market([book(YES, bid, ask, ts)]) + eng.on_market([book(NO, bid, ask, ts)])


def fill_bid(eng: Engine, actions: list, clock: SimClock) -> None:
    """The venue accepts our quotes, then a seller takes the whole YES bid at 0.49."""
    for a in actions:
        if isinstance(a, SendPlaces):
            eng.on_result(all_live(a.batch))
    bid = next(o for o in eng.working_orders(YES) if o.side is Side.BUY)
    assert bid.price == 490_000 and bid.size == 50 * U
    ev = {"event_type": "trade", "id": "t1", "taker_order_id": "0xother", "market": COND, "asset_id": YES,
          "side": "SELL", "size": "50", "fee_rate_bps": "0", "price": "0.49", "status": "MATCHED",
          "match_time": str(int(clock.now())), "last_update": str(int(clock.now())), "outcome": "Yes",
          "owner": "someone", "maker_address": "0x0", "trader_side": "MAKER", "type": "TRADE",
          "maker_orders": [{"order_id": bid.order_id, "owner": OWNER, "maker_address": "0x1",
                            "matched_amount": "50", "price": "0.49", "fee_rate_bps": "0", "asset_id": YES,
                            "outcome": "Yes", "side": "BUY"}]}
    eng.on_result(TradeSeen(trade_record(decode_user_frame(json.dumps(ev).encode())[0])))
    assert eng.portfolio.size(YES) == 50 * U


def first_run(path) -> SimClock:
    """Buys 50 YES at 0.49, which then fall to a 0.25 mid: 12 USDC down, within the 15 allowed;
    then the process dies without closing anything."""
    clock = SimClock(DAY * 86_400 + 9 * 3600)
    j = Journal(path, signed_type=FakeSigned)
    eng = engine(clock, j, j.restore().day_start)
    eng.start()
    out = mark(eng, clock, "0.49", "0.51")
    eng.on_timer()  # the day starts here, flat
    fill_bid(eng, out, clock)
    mark(eng, clock, "0.24", "0.26")
    eng.on_timer()
    assert eng.portfolio.total_pnl(eng.marks()) - eng.daily.baseline == -12 * U
    assert eng.state is TradingState.ACTIVE
    return clock


def reopened(path, clock: SimClock, *, resume: bool = True) -> Engine:
    """A new run on the same journal ten minutes later, restored but not started; ``resume=False``
    ignores the journaled day start (what a restart did before it was journaled)."""
    clock.advance(600)
    j = Journal(path, signed_type=FakeSigned)
    state = j.restore()
    eng = engine(clock, j, state.day_start if resume else None)
    eng.restore(state, open_orders=[], trades=[])
    return eng


def restarted(path, clock: SimClock, *, resume: bool) -> Engine:
    """``reopened``, started and marked at the morning's 0.25 mid."""
    eng = reopened(path, clock, resume=resume)
    eng.start()
    mark(eng, clock, "0.24", "0.26")
    eng.on_timer()
    assert eng.portfolio.size(YES) == 50 * U  # the position came back from the journal
    return eng


def test_restored_day_start_halts_on_the_day_loss_across_a_restart(tmp_path):
    path = tmp_path / "journal.sqlite"
    clock = first_run(path)
    eng = restarted(path, clock, resume=True)
    assert eng.daily.start == DayStart(DAY, 0)
    assert eng.state is TradingState.ACTIVE  # still 12 down for the day
    mark(eng, clock, "0.04", "0.06")  # 10 more: 22 down since the day started
    acts = eng.on_timer()
    assert eng.state is TradingState.HALTED
    assert eng.risk.status.reasons[0].reason is HaltReason.DAILY_LOSS
    assert any(isinstance(a, VenueCancelAll) for a in acts)


def test_without_the_day_start_the_same_restart_would_not_halt(tmp_path):
    path = tmp_path / "journal.sqlite"
    clock = first_run(path)
    eng = restarted(path, clock, resume=False)
    assert eng.daily.start == DayStart(DAY, -12 * U)  # the morning's loss forgotten
    mark(eng, clock, "0.04", "0.06")
    eng.on_timer()
    assert eng.state is TradingState.ACTIVE  # only 10 down "today": the limit was reset


def test_a_restart_the_next_utc_day_starts_the_day_afresh(tmp_path):
    path = tmp_path / "journal.sqlite"
    clock = first_run(path)
    clock.set((DAY + 1) * 86_400 + 60)
    eng = restarted(path, clock, resume=True)
    assert eng.daily.start == DayStart(DAY + 1, -12 * U)
    mark(eng, clock, "0.04", "0.06")
    eng.on_timer()
    assert eng.state is TradingState.ACTIVE
    assert Journal(path).restore().day_start == DayStart(DAY + 1, -12 * U)


def test_a_run_that_starts_past_its_day_loss_halts_before_its_first_quote(tmp_path):
    """Valued at the venue's mids before start (``opening_marks``), a run restarted 22 down for
    the day halts in ``start()``: the first books then bring no order at all."""
    path = tmp_path / "journal.sqlite"
    clock = first_run(path)
    eng = reopened(path, clock)
    eng.opening_marks = {YES: 50_000, NO: 950_000}  # YES fell to 0.05: 22 down since the day began
    acts = eng.start()
    assert eng.state is TradingState.HALTED
    assert eng.risk.status.reasons[0].reason is HaltReason.DAILY_LOSS
    assert any(isinstance(a, VenueCancelAll) for a in acts)
    assert not any(isinstance(a, SendPlaces) for a in acts + mark(eng, clock, "0.04", "0.06"))


def test_opening_marks_within_the_limit_leave_the_run_quoting(tmp_path):
    path = tmp_path / "journal.sqlite"
    clock = first_run(path)
    eng = reopened(path, clock)
    eng.opening_marks = {YES: 250_000, NO: 750_000}  # 12 down: within the 15 allowed
    assert not any(isinstance(a, VenueCancelAll) for a in eng.start())
    assert eng.state is TradingState.ACTIVE
    assert any(isinstance(a, SendPlaces) for a in mark(eng, clock, "0.24", "0.26"))

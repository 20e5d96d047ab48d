"""The synchronous core driven by hand-made events on a SimClock: no sockets, no sleeping."""

from __future__ import annotations

import json

from bot.core.clock import SimClock
from bot.engine.engine import Engine
from bot.execution.protocol import (
    CancelsAnswered, PlacesFailed, SendCancels, SendPlaces, SyncOrders, TradeSeen, VenueCancelAll, all_live,
)
from bot.execution.records import cancel_result, trade_record
from bot.core.markets import MarketIndex, MarketInfo
from bot.execution.orders import OrderState
from bot.execution.reconciler import Reconciler, ReconcilerConfig
from bot.execution.router import Router
from bot.ops.metrics import Metrics
from bot.portfolio import Portfolio
from bot.risk import RiskGate, RiskLimits
from bot.venue.enums import Side, TradeStatus
from bot.venue.models.ws import decode_market_frame, decode_user_frame
from bot.venue.stream import ConnectionEvent
from bot.venue.throttle import RateWindow, Throttle
from strategies.market_maker import MarketMaker, Params

COND = "0x" + "ab" * 32
YES, NO = "111", "222"
MARKET = MarketInfo(COND, (YES, NO))
OWNER = "owner-key"


class FakeSigned:
    def __init__(self, h: str) -> None:
        self.hash = h


class Signer:
    """Deterministic ids: the request's content and a counter."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, req):
        self.n += 1
        return FakeSigned(f"0x{self.n:04d}{req.side.value[0]}{req.price}")


def make_engine(clock: SimClock, seed_yes: int = 0, metrics=None, market=MARKET) -> Engine:
    markets = MarketIndex([market])
    rec = Reconciler(ReconcilerConfig(owner=OWNER))
    big = [RateWindow(1000, 10.0)]
    router = Router(rec.orders, Signer(), place_throttle=Throttle(big, clock.now),
                    cancel_throttle=Throttle(big, clock.now),
                    tick_of=lambda _t: market.tick)
    pf = Portfolio()
    if seed_yes:
        pf.seed(YES, seed_yes, 500_000)
    return Engine(strategy=MarketMaker(Params(half_spread_ticks=1)), markets=markets, clock=clock, router=router,
                  reconciler=rec, risk=RiskGate(RiskLimits(), markets), portfolio=pf, metrics=metrics,
                  perf=lambda: clock.now())


def book(token: str, bids, asks, ts: int = 1) -> object:
    frame = {"event_type": "book", "market": COND, "asset_id": token, "timestamp": str(ts), "hash": "h",
             "bids": [{"price": p, "size": s} for p, s in bids], "asks": [{"price": p, "size": s} for p, s in asks]}
    return decode_market_frame(json.dumps([frame]).encode())[0]


def up(clock: SimClock) -> ConnectionEvent:
    return ConnectionEvent(kind="connected", channel="market", shard=0, attempt=0, at=clock.now(),
                           subscriptions=(YES, NO))


def places(actions) -> list:
    return [o for a in actions if isinstance(a, SendPlaces) for o in a.batch.orders]


def start(clock: SimClock, **kw) -> tuple[Engine, list]:
    eng = make_engine(clock, **kw)
    eng.start()
    eng.on_connection(up(clock))
    out = eng.on_market([book(YES, [("0.48", "100")], [("0.52", "100")])])
    out += eng.on_market([book(NO, [("0.48", "100")], [("0.52", "100")])])
    return eng, out


def test_book_snapshot_quotes_both_tokens_and_journals_before_send():
    clock = SimClock(1_000.0)
    eng, out = start(clock, seed_yes=50_000_000)
    orders = places(out)
    by = {(o.token_id, o.side) for o in orders}
    assert by == {(YES, Side.BUY), (YES, Side.SELL), (NO, Side.BUY)}  # no NO held: no NO ask
    yes_bid = next(o for o in orders if o.token_id == YES and o.side is Side.BUY)
    # mid 0.50 skewed one tick down by the 50-share inventory, minus the half spread
    assert yes_bid.price == 480_000 and yes_bid.size == 10_000_000
    # handed to the reconciler before the shell sends it
    assert all(eng.orders.get(o.order_id).state is OrderState.PENDING_SUBMIT for o in orders)
    assert len(eng.latencies) == 2


def test_same_events_same_actions():
    def run() -> list:
        clock = SimClock(1_000.0)
        _, out = start(clock)
        return [(o.order_id, o.token_id, o.side, o.price, o.size) for o in places(out)]

    assert run() == run()


def test_ack_fill_and_settlement_reach_portfolio_then_failed_reverses():
    clock = SimClock(1_000.0)
    eng, out = start(clock)
    batch = next(a.batch for a in out if isinstance(a, SendPlaces) and a.batch.orders[0].token_id == YES)
    bid = batch.orders[0]
    eng.on_result(all_live(batch))
    assert eng.orders.get(bid.order_id).state is OrderState.LIVE
    assert eng.stats.orders_accepted == 1

    def trade(status: str) -> object:
        ev = {"event_type": "trade", "id": "t1", "taker_order_id": "0xother", "market": COND, "asset_id": YES,
              "side": "SELL", "size": "4", "fee_rate_bps": "0", "price": "0.49", "status": status,
              "match_time": "1000", "last_update": "1000", "outcome": "Yes", "owner": "someone",
              "maker_address": "0x0", "trader_side": "MAKER", "type": "TRADE",
              "maker_orders": [{"order_id": bid.order_id, "owner": OWNER, "maker_address": "0x1",
                                "matched_amount": "4", "price": "0.49", "fee_rate_bps": "0", "asset_id": YES,
                                "outcome": "Yes", "side": "BUY"}]}
        return decode_user_frame(json.dumps(ev).encode())[0]

    clock.advance(0.1)
    eng.on_result(TradeSeen(trade_record(trade("MATCHED"))))
    assert eng.portfolio.size(YES) == 4_000_000 and eng.stats.fills == 1
    eng.on_result(TradeSeen(trade_record(trade("MATCHED"))))  # duplicate: booked once
    assert eng.portfolio.size(YES) == 4_000_000
    eng.on_result(TradeSeen(trade_record(trade("MINED"))))
    eng.on_result(TradeSeen(trade_record(trade("FAILED"))))
    assert eng.settlement["t1"] is TradeStatus.FAILED
    assert eng.portfolio.size(YES) == 0 and eng.stats.reversals == 1


def test_unknown_submit_outcome_asks_for_lookup_not_resend():
    from bot.execution.protocol import LookupOrder
    clock = SimClock(1_000.0)
    eng, out = start(clock)
    batch = next(a.batch for a in out if isinstance(a, SendPlaces))
    acts = eng.on_result(PlacesFailed(batch, "transport", outcome_unknown=True))
    lookups = [a for a in acts if isinstance(a, LookupOrder)]
    assert {a.order_id for a in lookups} == set(batch.order_ids)
    assert all(eng.orders.get(i).state is OrderState.UNKNOWN for i in batch.order_ids)
    assert not places(acts)  # the same quotes are not placed again while unknown


def test_an_order_of_unknown_outcome_is_not_resent_until_positions_are_confirmed():
    """After the user channel comes back nothing new leaves until the venue's holdings are the
    booked ones: an order whose submit outcome was unknown and that the venue's listing does not
    show is closed, not resent; a resend asked for before the reconnect is not sent either."""
    from bot.execution.protocol import OpenOrders, ResendOrder
    clock = SimClock(1_000.0)
    eng, out = start(clock)
    first, *rest = [a.batch for a in out if isinstance(a, SendPlaces)]
    for batch in (first, *rest):
        eng.on_result(PlacesFailed(batch, "transport", outcome_unknown=True))
    clock.advance(1.0)
    early = eng.on_result(OpenOrders((), clock.now()))  # before the reconnect: resent
    assert {a.order_id for a in early if isinstance(a, ResendOrder)} == {o.order_id for b in (first, *rest)
                                                                          for o in b.orders}
    clock.advance(1.0)
    eng.on_connection(ConnectionEvent(kind="reconnected", channel="user", shard=0, attempt=1, at=clock.now()))
    assert not places(eng.resend(first.order_ids[0]))  # the resend asked for before: held
    clock.advance(1.0)
    acts = eng.on_result(OpenOrders((), clock.now()))
    assert not any(isinstance(a, ResendOrder) for a in acts) and not places(acts)
    assert all(eng.orders.get(i).state is OrderState.CANCELED for b in (first, *rest) for i in b.order_ids)


def test_halt_cancels_everything_and_blocks_new_orders():
    clock = SimClock(1_000.0)
    eng, out = start(clock)
    for a in out:
        if isinstance(a, SendPlaces):
            eng.on_result(all_live(a.batch))
    working = {o.order_id for o in eng.working_orders()}
    acts = eng.halt("test")
    assert any(isinstance(a, VenueCancelAll) for a in acts)
    cancelled = {i for a in acts if isinstance(a, SendCancels) for i in a.batch.order_ids}
    assert cancelled == working
    clock.advance(1.0)
    more = eng.on_market([book(YES, [("0.40", "100")], [("0.60", "100")], ts=2)])
    assert not places(more) and eng.state.value == "HALTED"


def test_market_disconnect_marks_books_stale_and_pulls_quotes():
    clock = SimClock(1_000.0)
    eng, out = start(clock)
    for a in out:
        if isinstance(a, SendPlaces):
            eng.on_result(all_live(a.batch))
    down = ConnectionEvent(kind="disconnected", channel="market", shard=0, attempt=0, at=clock.now(),
                           subscriptions=(YES, NO), reason="test")
    eng.on_connection(down)
    assert eng.books[YES].stale
    acts = eng.on_timer()  # the strategy sees stale books: empty targets, the router cancels
    cancelled = {i for a in acts if isinstance(a, SendCancels) for i in a.batch.order_ids}
    assert cancelled == {o.order_id for o in eng.orders if o.state is OrderState.PENDING_CANCEL}
    assert cancelled


def test_user_reconnect_requests_reconciliation():
    clock = SimClock(1_000.0)
    eng, _ = start(clock)
    ev = ConnectionEvent(kind="reconnected", channel="user", shard=0, attempt=1, at=clock.now())
    acts = eng.on_connection(ev)
    assert any(isinstance(a, SyncOrders) for a in acts)


def test_metrics_record_orders_and_latency():
    clock = SimClock(1_000.0)
    m = Metrics()
    eng, out = start(clock, metrics=m)
    sent = m.registry.get_sample_value("bot_orders_submitted_total", {"token": YES[-8:]})
    assert sent and sent >= 1
    assert m.registry.get_sample_value("bot_tick_to_order_seconds_count") == 2


def test_reduce_only_keeps_only_what_shrinks_exposure_and_resume_quotes_again():
    clock = SimClock(1_000.0)
    eng, out = start(clock, seed_yes=50_000_000)  # long YES: its ask reduces, the bids add
    for a in out:
        if isinstance(a, SendPlaces):
            eng.on_result(all_live(a.batch))
    acts = eng.reduce_only("operator")
    assert eng.state.value == "REDUCING" and any(isinstance(a, VenueCancelAll) for a in acts)
    cancelled = {i for a in acts if isinstance(a, SendCancels) for i in a.batch.order_ids}
    assert cancelled == {o.order_id for o in eng.working_orders() if o.state is OrderState.PENDING_CANCEL}
    for a in acts:  # the venue cancels them (until then no order goes where one is being cancelled)
        if isinstance(a, SendCancels):
            eng.on_result(CancelsAnswered(a.batch, cancel_result({"canceled": list(a.batch.order_ids)})))
    clock.advance(1.0)
    again = eng.on_market([book(YES, [("0.46", "100")], [("0.50", "100")], ts=2)])
    assert {(o.token_id, o.side) for o in places(again)} == {(YES, Side.SELL)}  # only the reducing ask
    clock.advance(1.0)
    back = eng.resume()
    assert eng.state.value == "ACTIVE"
    assert {(o.token_id, o.side) for o in places(back)} >= {(YES, Side.BUY), (NO, Side.BUY)}


def test_risk_reducing_quotes_are_marked_for_the_router():
    clock = SimClock(1_000.0)
    eng, _ = start(clock, seed_yes=50_000_000)
    flags = {(t.token_id, q.side): r for t, rs in ((x.target, x.reducing) for x in eng.router._targets.values())
             for q, r in zip(t.quotes, rs)}
    assert flags == {(YES, Side.BUY): False, (YES, Side.SELL): True, (NO, Side.BUY): True}


def test_order_updates_reach_a_strategy_with_the_hook_and_are_not_made_without_one():
    class Watching(MarketMaker):
        def __init__(self, params):
            super().__init__(params)
            self.updates = []

        def on_order_update(self, ctx, update):
            self.updates.append(update.state)

    clock = SimClock(1_000.0)
    eng, out = start(clock)
    assert eng.reconciler.updates is False  # the market maker reads no order update
    markets = MarketIndex([MARKET])
    rec = Reconciler(ReconcilerConfig(owner=OWNER))
    big = [RateWindow(1000, 10.0)]
    router = Router(rec.orders, Signer(), place_throttle=Throttle(big, clock.now), cancel_throttle=Throttle(big, clock.now))
    strategy = Watching(Params(half_spread_ticks=1))
    eng = Engine(strategy=strategy, markets=markets, clock=clock, router=router, reconciler=rec,
                 risk=RiskGate(RiskLimits(), markets), perf=lambda: clock.now())
    assert rec.updates is True
    eng.on_connection(up(clock))
    out = eng.on_market([book(YES, [("0.48", "100")], [("0.52", "100")])])
    batch = next(a.batch for a in out if isinstance(a, SendPlaces))
    eng.on_result(all_live(batch))
    assert strategy.updates == [OrderState.PENDING_SUBMIT, OrderState.LIVE]


def test_a_strategy_is_called_only_for_the_books_it_reads():
    from bot.strategy import Strategy

    class Spy(Strategy):
        def __init__(self, tokens):
            super().__init__()
            self.tokens, self.seen = tokens, []

        def book_tokens(self):
            return self.tokens

        def on_book(self, ctx, token_id):
            self.seen.append(token_id)

    def seen(tokens) -> list:
        clock = SimClock(1_000.0)
        markets = MarketIndex([MARKET])
        rec = Reconciler(ReconcilerConfig(owner=OWNER))
        big = [RateWindow(1000, 10.0)]
        router = Router(rec.orders, Signer(), place_throttle=Throttle(big, clock.now),
                        cancel_throttle=Throttle(big, clock.now))
        spy = Spy(tokens)
        eng = Engine(strategy=spy, markets=markets, clock=clock, router=router, reconciler=rec,
                     risk=RiskGate(RiskLimits(), markets), perf=lambda: clock.now())
        eng.on_connection(up(clock))
        for token in (YES, NO):
            eng.on_market([book(token, [("0.48", "100")], [("0.52", "100")])])
        frame = {"event_type": "price_change", "market": COND, "timestamp": "5", "price_changes": [
            {"asset_id": YES, "price": "0.47", "size": "10", "side": "BUY", "hash": "a"},
            {"asset_id": NO, "price": "0.53", "size": "10", "side": "SELL", "hash": "b"}]}
        eng.on_market([decode_market_frame(json.dumps(frame).encode())[0]])
        return spy.seen

    assert seen(None) == [YES, NO, YES, NO]  # every book, by default
    assert seen((YES,)) == [YES, YES]  # the NO book is never shown to a strategy that reads YES only


def test_levels_in_micro_units_requote_as_their_price_change_does(monkeypatch):
    from bot.core.book import price_levels_of
    from bot.core.levels import PriceLevels

    frames = [
        {"asset_id": YES, "price": "0.50", "size": "100", "side": "BUY", "hash": "a"},  # the touch moves up
        {"asset_id": NO, "price": "0.50", "size": "100", "side": "SELL", "hash": "b"},
    ], [
        {"asset_id": YES, "price": "0.44", "size": "100", "side": "BUY", "hash": "c"},  # a deeper level
    ]

    def run(levels: bool) -> list:
        clock = SimClock(1_000.0)
        eng, _ = start(clock, seed_yes=50_000_000)
        out = []
        for i, changes in enumerate(frames):
            frame = {"event_type": "price_change", "market": COND, "timestamp": str(10 + i), "price_changes": changes}
            ev = decode_market_frame(json.dumps(frame).encode())[0]
            clock.advance(1.0)
            out.append([(o.token_id, o.side, o.price) for o in places(eng.on_market([
                price_levels_of(ev) if levels else ev]))])
        return out

    plain = run(False)

    def unread(self):
        raise AssertionError("levels in micro-units were turned back into strings")

    monkeypatch.setattr(PriceLevels, "price_changes", property(unread))
    assert run(True) == plain
    assert plain[0] and not plain[1]  # the touch moved: a requote; a deeper level: none


def test_a_requote_sent_whole_leaves_the_router_settled():
    clock = SimClock(1_000.0)
    eng, out = start(clock, seed_yes=50_000_000)
    assert places(out)
    assert eng.router.settled() and eng.next_wakeup() is None  # no plan is needed to know it


def test_trade_statuses_kept_are_bounded_and_the_latest_are_kept():
    from bot.core.events import SettlementUpdate
    from bot.engine.engine import SETTLEMENTS_KEPT

    clock = SimClock(1_000.0)
    eng, _ = start(clock)
    n = SETTLEMENTS_KEPT + 500
    eng.absorb([SettlementUpdate(f"t{i}", TradeStatus.CONFIRMED) for i in range(n)])
    assert len(eng.settlement) == SETTLEMENTS_KEPT
    assert eng.settlement[f"t{n - 1}"] is TradeStatus.CONFIRMED and "t0" not in eng.settlement


def test_a_place_withdrawn_before_it_went_out_is_no_error_and_its_orders_end_with_nothing_placed():
    from bot.execution.protocol import WITHDRAWN
    from bot.risk import TradingState
    clock = SimClock(1_000.0)
    eng, out = start(clock)
    batch = next(a.batch for a in out if isinstance(a, SendPlaces))
    eng.on_result(PlacesFailed(batch, WITHDRAWN, False, "not sent: cancelled first"))
    assert eng.stats.send_errors == 0 and eng.risk.state is TradingState.ACTIVE
    assert all(eng.orders.get(i).state is OrderState.REJECTED for i in batch.order_ids)
    eng.on_result(PlacesFailed(batch, "transport", False))  # the same answer as an error is counted
    assert eng.stats.send_errors == 1


def test_a_take_no_order_can_carry_is_refused_with_its_set_said_and_counted_and_the_rest_goes():
    """A repair that sells 0.02 share at 0.067 cannot keep its price within a tick: risk refuses it
    (it would otherwise fail at signing), and a set with such a leg goes not at all; other takes go."""
    from structlog.testing import capture_logs

    from bot.core.intents import Take
    from bot.venue.enums import OrderType

    clock = SimClock(1_000.0)
    metrics = Metrics()
    takes = [Take(YES, Side.SELL, 67_000, 20_000, OrderType.FAK),  # 0.02 share at 0.067 on a 0.001 grid
             Take(YES, Side.SELL, 67_000, 20_000, OrderType.FOK, "set#1"),
             Take(NO, Side.BUY, 330_000, 5 * 330_000, OrderType.FOK, "set#1"),
             Take(NO, Side.BUY, 330_000, 5 * 330_000, OrderType.FAK)]
    with capture_logs() as logs:  # the engine's logger is bound inside (structlog caches it on first use)
        eng, _ = start(clock, seed_yes=50_000_000, metrics=metrics, market=MarketInfo(COND, (YES, NO), tick=1_000))
        out = eng._run(takes)
    sent = [o for o in places(out) if o.order_type.is_market]
    assert [(o.token_id, o.order_type) for o in sent] == [(NO, OrderType.FAK)]
    refused = [e for e in logs if e["event"] == "risk_reject" and e["reason"] == "amount_too_small"]
    assert [(e["token_id"], e["size"]) for e in refused] == [(YES, 20_000), (YES, 20_000)]
    assert all("too small to" in e["detail"] for e in refused)
    assert metrics.registry.get_sample_value("bot_risk_rejections_total", {"reason": "amount_too_small"}) == 2
    assert places(eng.poll()) == []  # nothing of them waits in the router


def test_a_quote_refused_for_crossing_is_not_sent_again_until_its_token_is_quoted_afresh():
    # placed again from the same target it would cross again: ten in a row halt the bot
    from bot.execution.protocol import PlacesAnswered
    from bot.execution.records import OrderResult

    clock = SimClock(1_000.0)
    metrics = Metrics()
    eng, out = start(clock, seed_yes=50_000_000, metrics=metrics)
    batch = next(a.batch for a in out if isinstance(a, SendPlaces) and a.batch.orders[0].token_id == YES)
    bid = next(o for o in batch.orders if o.side is Side.BUY)
    clock.advance(0.1)
    refused = "invalid post-only order: order crosses book"
    answer = PlacesAnswered(batch, tuple(
        OrderResult(False, error_msg=refused, order_id=o.order_id) if o is bid
        else OrderResult(True, order_id=o.order_id, status="live") for o in batch.orders))
    again = places(eng.on_result(answer))
    for _ in range(3):  # the timer and polls while the book stands still
        clock.advance(0.5)
        again += places(eng.on_timer()) + places(eng.poll())
    assert not [o for o in again if o.token_id == YES and o.side is Side.BUY]
    assert eng.orders.get(bid.order_id).state is OrderState.REJECTED
    assert metrics.registry.get_sample_value("bot_orders_rejected_total", {"reason": "post_only_crosses"}) == 1
    # the touch moves: the strategy quotes the token afresh, and its bid goes
    clock.advance(0.1)
    assert eng.router.refusing == {YES}
    moved = places(eng.on_market([book(YES, [("0.46", "100")], [("0.50", "100")], ts=2)]))
    assert [(o.side, o.price) for o in moved if o.token_id == YES and o.side is Side.BUY] == [(Side.BUY, 460_000)]
    assert eng.router.refusing == set()

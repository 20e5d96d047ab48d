"""Router: cancels first, batches <= 15, throttles spent only when granted, stale reprices dropped."""

from __future__ import annotations

import itertools

import msgspec
import pytest

from bot.core.intents import CancelAll, CancelOrder, Quote, QuoteTarget, Take
from bot.execution.orders import OrderState
from bot.execution.reconciler import Reconciler
from bot.execution.router import CancelBatch, OrderRequest, PlaceBatch, Router, RouterConfig
from bot.venue.enums import OrderType, Side
from bot.venue.throttle import RateWindow, Throttle

U = 1_000_000


class FakeSigned(msgspec.Struct, frozen=True):
    hash: str
    price: int


class Harness:
    """Router + reconciler + an instant venue: places go live, cancels cancel."""

    def __init__(self, place_cap=2400, cancel_cap=2400, config=None, routes=()):
        self.rec = Reconciler()
        self.seq = itertools.count()
        self.signed: list[OrderRequest] = []
        self.router = Router(
            self.rec.orders, self.sign,
            place_throttle=Throttle([RateWindow(place_cap, 10.0)]),
            cancel_throttle=Throttle([RateWindow(cancel_cap, 10.0)]),
            route_throttles=routes, config=config,
        )

    def sign(self, req: OrderRequest) -> FakeSigned:
        self.signed.append(req)
        return FakeSigned(f"0x{next(self.seq):04x}", req.price)

    def step(self, now: float):
        batches = self.router.poll(now)
        for b in batches:
            if isinstance(b, CancelBatch):
                self.rec.on_cancels_sent(b.order_ids, now)
                self.rec.on_cancel_result({"canceled": list(b.order_ids), "not_canceled": {}}, now)
            else:
                self.rec.on_places_sent(b.orders, now)
                self.rec.on_acks(b.order_ids, [{"success": True, "errorMsg": "", "orderID": i, "status": "live"}
                                               for i in b.order_ids], now)
        return batches

    def live(self, token):
        return sorted((o.side, o.price, o.remaining) for o in self.rec.orders.working(token))


def quotes(token, *pairs):
    return QuoteTarget(token, tuple(Quote(token, side, price, size) for side, price, size in pairs))


def test_places_quotes_and_keeps_matching_ones():
    h = Harness()
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U), (Side.SELL, 600_000, 10 * U)))
    out = h.step(0.0)
    assert len(out) == 1 and isinstance(out[0], PlaceBatch) and len(out[0].orders) == 2
    assert h.live("t") == [(Side.BUY, 400_000, 10 * U), (Side.SELL, 600_000, 10 * U)]
    bid = [o for o in h.rec.orders.working("t") if o.side is Side.BUY][0]
    # reprice the ask only: the bid keeps its queue place
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U), (Side.SELL, 590_000, 10 * U)))
    out = h.step(1.0)
    assert [type(b) for b in out] == [CancelBatch, PlaceBatch]
    assert bid.order_id not in out[0].order_ids and bid.state is OrderState.LIVE
    assert h.router.poll(2.0) == [] and h.router.next_ready(2.0) is None


def test_batches_hold_at_most_15_orders():
    h = Harness()
    h.router.set_target(quotes("t", *[(Side.BUY, 10_000 * (i + 1), U) for i in range(40)]))
    out = h.step(0.0)
    assert [len(b.orders) for b in out] == [15, 15, 10]


def test_throttle_limits_and_next_ready():
    h = Harness(place_cap=20)
    h.router.set_target(quotes("t", *[(Side.BUY, 10_000 * (i + 1), U) for i in range(30)]))
    out = h.step(0.0)
    assert sum(len(b.orders) for b in out) == 20
    assert h.router.next_ready(0.5) == pytest.approx(10.0)
    assert h.step(5.0) == []
    out = h.step(10.0)
    assert sum(len(b.orders) for b in out) == 10


def test_per_request_counting():
    h = Harness(place_cap=2, config=RouterConfig(count_per_order=False))
    h.router.set_target(quotes("t", *[(Side.BUY, 10_000 * (i + 1), U) for i in range(40)]))
    out = h.step(0.0)
    assert [len(b.orders) for b in out] == [15, 15]


def test_route_limit_is_spent_per_request():
    route = Throttle([RateWindow(1, 10.0)])
    h = Harness(routes=(route,))
    h.router.set_target(quotes("t", *[(Side.BUY, 10_000 * (i + 1), U) for i in range(20)]))
    assert [len(b.orders) for b in h.step(0.0)] == [15]
    assert h.router.next_ready(1.0) == pytest.approx(10.0)


def test_stale_reprice_dropped_not_queued():
    h = Harness(place_cap=1)
    h.router.set_target(quotes("a", (Side.BUY, 100_000, U)))
    h.step(0.0)  # spends the only token
    for px in (200_000, 300_000, 400_000):
        h.router.set_target(quotes("b", (Side.BUY, px, U)))
        assert h.step(1.0) == []
    h.step(10.0)
    assert [r.price for r in h.signed] == [100_000, 400_000]  # only the latest target was built
    assert h.live("b") == [(Side.BUY, 400_000, U)]


def test_under_pressure_cancels_then_reducing_then_others():
    h = Harness(place_cap=3)
    h.router.set_target(quotes("a", (Side.BUY, 100_000, U), (Side.BUY, 110_000, U)))
    h.step(0.0)
    h.router.set_target(quotes("a"))  # cancel both
    h.router.set_target(quotes("b", (Side.BUY, 200_000, U)))  # other
    h.router.set_target(quotes("c", (Side.SELL, 900_000, U)), reducing=True)
    h.router.take(Take("d", Side.SELL, 100_000, 5 * U), 0.0, reducing=True)
    out = h.step(0.0)  # one place token left
    assert isinstance(out[0], CancelBatch) and len(out[0].order_ids) == 2
    assert len(out) == 2 and [o.order_id for o in out[1].orders] and out[1].orders[0].order_type is OrderType.FOK
    out = h.step(10.0)
    assert [o.token_id for b in out for o in b.orders] == ["c", "b"]


def test_non_reducing_places_wait_for_their_token_cancels():
    h = Harness(cancel_cap=1)
    h.router.set_target(quotes("a", (Side.BUY, 100_000, U), (Side.BUY, 110_000, U)))
    h.step(0.0)
    h.router.set_target(quotes("a", (Side.BUY, 300_000, U)))  # two cancels, one place
    out = h.step(1.0)
    assert [type(b) for b in out] == [CancelBatch]  # only one cancel granted; no new exposure yet
    assert h.router.next_ready(1.0) == pytest.approx(11.0)  # the cancel token taken at 1.0
    out = h.step(11.0)
    assert [type(b) for b in out] == [CancelBatch, PlaceBatch]
    assert h.live("a") == [(Side.BUY, 300_000, U)]


def test_cancel_all_and_explicit_cancel():
    h = Harness()
    h.router.set_target(quotes("a", (Side.BUY, 100_000, U)))
    h.router.set_target(quotes("b", (Side.BUY, 100_000, U)))
    h.step(0.0)
    h.router.submit(CancelOrder("0xunknown"), 1.0)
    h.router.submit(CancelAll("a"), 1.0)
    out = h.step(1.0)
    assert len(out) == 1 and set(out[0].order_ids) == {"0xunknown", "0x0000"}
    assert h.live("a") == [] and len(h.live("b")) == 1
    h.router.submit(CancelAll(), 2.0)
    h.step(2.0)
    assert h.rec.orders.working() == []


def test_takes_expire_when_throttled():
    h = Harness(place_cap=1)
    h.router.take(Take("a", Side.BUY, 500_000, 10 * U), 0.0)
    h.router.take(Take("a", Side.BUY, 500_000, 20 * U), 0.0)
    assert len(h.step(0.0)) == 1
    assert h.step(10.0) == []  # the second take waited past its ttl: dropped
    assert h.signed[0].size == 20 * U and h.signed[0].amount == 10 * U  # BUY: USDC amount, share estimate


def test_config_rejects_unknown_and_bad_values():
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"max_batch": 10, "nope": 1}, RouterConfig)
    with pytest.raises(ValueError):
        RouterConfig(max_batch=16)


def cancel_emitted(batches, oid):
    return any(isinstance(b, CancelBatch) and oid in b.order_ids for b in batches)


def test_a_cancel_that_overtook_its_place_goes_again_as_soon_as_the_place_is_answered():
    h = Harness()
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    (place,) = h.router.poll(0.0)
    h.rec.on_places_sent(place.orders, 0.0)
    oid = place.order_ids[0]
    h.router.set_target(quotes("t"))
    batches = h.router.poll(0.01)
    assert cancel_emitted(batches, oid)  # a cancel does not wait for the ack
    h.rec.on_cancels_sent([oid], 0.01)
    h.rec.on_ack(oid, {"success": True, "errorMsg": "", "orderID": oid, "status": "live"}, 0.05)
    h.rec.on_cancel_result({"canceled": [], "not_canceled": {oid: "order not found"}}, 0.06, [oid])
    assert cancel_emitted(h.router.poll(0.07), oid)  # long before cancel_retry_after


def _a_cancel_sent_at_1_failed_at_1_1():
    """A harness whose one resting bid the router cancelled at 1.0 and whose cancel failed at 1.1."""
    h = Harness()
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    h.step(0.0)
    (oid,) = [o.order_id for o in h.rec.orders.working("t")]
    h.router.set_target(quotes("t"))
    assert cancel_emitted(h.router.poll(1.0), oid)
    h.rec.on_cancels_sent([oid], 1.0)
    h.rec.on_cancel_failed([oid], 1.1)
    return h, oid


def test_a_failed_cancel_of_an_answered_order_is_paced():
    h, oid = _a_cancel_sent_at_1_failed_at_1_1()
    retry = h.router.config.cancel_retry_after
    assert not cancel_emitted(h.router.poll(1.2), oid)
    assert cancel_emitted(h.router.poll(1.0 + retry), oid)


def test_a_cancel_request_that_failed_as_a_whole_goes_again_soon():
    # (a 5xx, a 425 or a 429 refused nothing: the order the router means to cancel must not rest
    # the full cancel_retry_after, e.g. beside its replacement at the same price)
    h, oid = _a_cancel_sent_at_1_failed_at_1_1()
    h.router.cancels_failed([oid], 1.1)
    soon = h.router.config.failed_cancel_retry_after
    assert soon < h.router.config.cancel_retry_after
    assert not cancel_emitted(h.router.poll(1.1 + soon - 0.01), oid)
    assert cancel_emitted(h.router.poll(1.1 + soon), oid)


def test_an_answer_that_moves_no_size_is_not_diffed_again(monkeypatch):
    import bot.execution.router as router_module

    calls: list[str] = []
    real = router_module.diff

    def counting(target, live, tick, tolerance=0):
        calls.append(target.token_id if isinstance(target, QuoteTarget) else "?")
        return real(target, live, tick, tolerance)

    monkeypatch.setattr(router_module, "diff", counting)
    h = Harness()
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    (place,) = h.router.poll(0.0)
    h.rec.on_places_sent(place.orders, 0.0)
    assert h.router.poll(0.1) == [] and calls == ["t", "t"]  # a new order: diffed again, nothing to do
    oid = place.order_ids[0]
    h.rec.on_ack(oid, {"success": True, "errorMsg": "", "orderID": oid, "status": "live"}, 0.2)
    assert h.router.poll(0.3) == [] and calls == ["t", "t"]  # acked: the same order stands for the quote
    # a partial fill moves its size: the diff runs again, and replaces it
    h.rec.on_trade_event({"id": "tr1", "taker_order_id": "0xother", "market": "m", "asset_id": "t", "side": "SELL",
                          "size": "4", "price": "0.40", "status": "MATCHED", "match_time": "1", "owner": "x",
                          "maker_orders": [{"order_id": oid, "matched_amount": "4", "price": "0.40",
                                            "asset_id": "t", "side": "BUY", "owner": ""}]}, 0.4)
    assert h.rec.orders.get(oid).remaining == 6 * U
    out = h.router.poll(0.5)  # (its replacement at that price waits for the cancel's answer)
    assert calls == ["t", "t", "t"] and [type(b) for b in out] == [CancelBatch]


def test_an_ack_leaves_a_settled_router_settled_and_a_fill_does_not():
    h = Harness()
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    (place,) = h.router.poll(0.0)
    h.rec.on_places_sent(place.orders, 0.0)
    assert not h.router.settled()  # a new order: the plan must look again
    assert h.router.poll(0.1) == [] and h.router.settled()
    oid = place.order_ids[0]
    h.rec.on_ack(oid, {"success": True, "errorMsg": "", "orderID": oid, "status": "live"}, 0.2)
    assert h.router.settled()  # the same order still stands for the quote: nothing to plan
    h.rec.on_trade_event({"id": "tr1", "taker_order_id": "0xother", "market": "m", "asset_id": "t", "side": "SELL",
                          "size": "4", "price": "0.40", "status": "MATCHED", "match_time": "1", "owner": "x",
                          "maker_orders": [{"order_id": oid, "matched_amount": "4", "price": "0.40",
                                            "asset_id": "t", "side": "BUY", "owner": ""}]}, 0.3)
    assert not h.router.settled()
    assert [type(b) for b in h.router.poll(0.4)] == [CancelBatch]  # then, once it is answered, the place
    assert not h.router.settled()  # the plan waits on that answer


def _counting_diff(monkeypatch) -> list[str]:
    import bot.execution.router as router_module

    calls: list[str] = []
    real = router_module.diff

    def counting(target, live, tick, tolerance=0):
        calls.append(target.token_id)
        return real(target, live, tick, tolerance)

    monkeypatch.setattr(router_module, "diff", counting)
    return calls


def test_a_poll_that_sent_all_its_plan_is_settled_once_recorded_without_a_new_diff(monkeypatch):
    calls = _counting_diff(monkeypatch)
    h = Harness()
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U), (Side.SELL, 600_000, 10 * U)))
    (place,) = h.router.poll(0.0)
    h.rec.on_places_sent(place.orders, 0.0)
    h.router.sent()
    assert h.router.settled() and h.router.next_ready(0.1) is None and calls == ["t"]
    # a reprice: the replaced order's cancel and the new order, both sent and recorded
    h.router.set_target(quotes("u", (Side.BUY, 300_000, 5 * U)))
    h.router.set_target(quotes("t", (Side.BUY, 410_000, 10 * U), (Side.SELL, 600_000, 10 * U)))
    cancel, place = h.router.poll(1.0)
    assert isinstance(cancel, CancelBatch) and isinstance(place, PlaceBatch) and len(place.orders) == 2
    h.rec.on_cancels_sent(cancel.order_ids, 1.0)
    h.rec.on_places_sent(place.orders, 1.0)
    h.router.sent()
    assert h.router.settled() and calls == ["t", "u", "t"]
    h.router.set_target(quotes("u", (Side.BUY, 300_000, 6 * U)))  # "t" is not diffed for it
    (cancel,) = h.router.poll(2.0)  # a resize at one price: its cancel first, the place once answered
    assert calls == ["t", "u", "t", "u"] and isinstance(cancel, CancelBatch)
    assert [h.rec.orders.get(oid).token_id for oid in cancel.order_ids] == ["u"]


def test_a_poll_that_left_work_behind_is_planned_again():
    h = Harness(place_cap=1)  # one order now, the other only when the window allows
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U), (Side.SELL, 600_000, 10 * U)))
    (place,) = h.router.poll(0.0)
    h.rec.on_places_sent(place.orders, 0.0)
    h.router.sent()
    assert not h.router.settled() and h.router.next_ready(0.1) == 10.0
    # an explicit cancel: its order no longer stands for its quote, so a plan places it again
    h = Harness()
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    h.step(0.0)
    (oid,) = [o.order_id for o in h.rec.orders.working("t")]
    h.router.cancel(oid)
    (cancel,) = h.router.poll(1.0)
    h.rec.on_cancels_sent(cancel.order_ids, 1.0)
    h.router.sent()
    assert not h.router.settled()
    h.rec.on_cancel_result({"canceled": [oid], "not_canceled": {}}, 1.05)  # no order at that price now
    (place,) = h.router.poll(1.1)
    assert [(o.side, o.price) for o in place.orders] == [(Side.BUY, 400_000)]


def _requote_across_a_blind_cancel(answer: str):
    """An order is cancelled before its place is answered and the quote comes back to its price
    before that cancel is: at most one order of ours stands at that price, whatever the answer."""
    h = Harness()
    rec, router = h.rec, h.router
    at_400 = []

    def send(now):
        for b in router.poll(now):
            if isinstance(b, CancelBatch):
                rec.on_cancels_sent(b.order_ids, now)
            else:
                rec.on_places_sent(b.orders, now)
                at_400.extend(o.order_id for o in b.orders if o.price == 400_000)
        working = [o for o in rec.orders.working("t") if o.price == 400_000]
        assert len(working) <= 1, working

    router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    send(0.0)
    a = at_400[0]
    router.set_target(quotes("t", (Side.BUY, 390_000, 10 * U)))
    send(0.1)  # a's cancel leaves before its place is answered
    assert rec.orders.get(a).state is OrderState.PENDING_CANCEL
    router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    send(0.2)  # back at a's price while its cancel is on the wire
    if answer == "not found":  # the cancel overtook the place: a stands, and is the quote
        rec.on_cancel_result({"canceled": [], "not_canceled": {a: "order not found"}}, 0.3)
        rec.on_acks([a], [{"success": True, "errorMsg": "", "orderID": a, "status": "live"}], 0.35)
    else:
        rec.on_cancel_result({"canceled": [a], "not_canceled": {}}, 0.3)
    for t in (0.4, 0.5, 6.0):
        send(t)
    return rec, at_400


def test_no_second_order_at_a_price_whose_cancel_may_come_back_not_found():
    rec, at_400 = _requote_across_a_blind_cancel("not found")
    assert len(at_400) == 1 and rec.orders.get(at_400[0]).state is OrderState.LIVE


def test_the_quote_is_placed_again_once_the_cancel_at_its_price_is_answered():
    rec, at_400 = _requote_across_a_blind_cancel("canceled")
    assert len(at_400) == 2 and rec.orders.get(at_400[1]).state is OrderState.PENDING_SUBMIT


def test_a_resize_at_one_price_cancels_first_and_places_once_the_cancel_is_answered():
    h = Harness()
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    h.step(0.0)
    (a,) = h.rec.orders.working("t")
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 8 * U)))
    out = h.router.poll(1.0)  # the cancel of a may fail and a stand: nothing goes beside it yet
    assert [type(b) for b in out] == [CancelBatch] and out[0].order_ids == (a.order_id,)
    h.rec.on_cancels_sent(out[0].order_ids, 1.0)
    h.rec.on_cancel_failed(out[0].order_ids, 1.1)  # a 5xx: a rests, still to be cancelled
    h.router.cancels_failed(out[0].order_ids, 1.1)
    assert not [b for b in h.router.poll(1.2) if isinstance(b, PlaceBatch)]
    out = h.router.poll(1.7)  # the failed cancel goes again
    assert [type(b) for b in out] == [CancelBatch]
    h.rec.on_cancels_sent(out[0].order_ids, 1.7)
    h.rec.on_cancel_result({"canceled": [a.order_id], "not_canceled": {}}, 1.8)
    out = h.router.poll(1.9)
    assert [type(b) for b in out] == [PlaceBatch] and out[0].orders[0].size == 8 * U


def test_the_cancels_the_router_remembers_stay_bounded():
    from bot.execution.router import _PRUNE_MIN

    h = Harness(cancel_cap=10**9)
    for i in range(30_000):  # an orphan cancel every 10 ms for five minutes
        h.router.cancel(f"0x{i:06x}")
        h.router.poll(i * 0.01)
    assert len(h.router._emitted_cancels) <= 2 * _PRUNE_MIN

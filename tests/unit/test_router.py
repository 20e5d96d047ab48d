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


def maker_fill(h: Harness, order_id: str, now: float) -> None:
    """Another account's sell takes 4 shares from our bid ``order_id`` at 0.40 (a MATCHED trade)."""
    h.rec.on_trade_event({"id": "tr1", "taker_order_id": "0xother", "market": "m", "asset_id": "t", "side": "SELL",
                          "size": "4", "price": "0.40", "status": "MATCHED", "match_time": "1", "owner": "x",
                          "maker_orders": [{"order_id": order_id, "matched_amount": "4", "price": "0.40",
                                            "asset_id": "t", "side": "BUY", "owner": ""}]}, now)


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
    (a_order,) = h.rec.orders.working("a")
    h.router.submit(CancelOrder("0xunknown"), 1.0)
    h.router.submit(CancelAll("a"), 1.0)
    out = h.step(1.0)
    assert len(out) == 1 and set(out[0].order_ids) == {"0xunknown", a_order.order_id}
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


def cancelled_unanswered() -> tuple[Harness, str]:
    """A bid at 0.40 placed at 0 (not answered yet), its cancel emitted and sent at 0.01."""
    h = Harness()
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    (place,) = h.router.poll(0.0)
    h.rec.on_places_sent(place.orders, 0.0)
    oid = place.order_ids[0]
    h.router.set_target(quotes("t"))
    assert cancel_emitted(h.router.poll(0.01), oid)
    h.rec.on_cancels_sent([oid], 0.01)
    return h, oid


def test_a_cancel_that_overtook_its_place_goes_again_as_soon_as_the_place_is_answered():
    h, oid = cancelled_unanswered()  # a cancel does not wait for the ack
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


def test_a_paced_cancel_beside_a_throttled_place_goes_when_it_comes_due():
    """A plan whose cancel is held back (paced) and whose place the throttle refuses is planned
    afresh when the cancel comes due, never replayed from before it: the cancel goes then."""
    h = Harness(place_cap=1)
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    h.step(0.0)
    (oid,) = [o.order_id for o in h.rec.orders.working("t")]
    h.router.set_target(quotes("t", (Side.BUY, 410_000, 10 * U)))  # its place waits for the throttle
    assert cancel_emitted(h.router.poll(1.0), oid)
    h.rec.on_cancels_sent([oid], 1.0)
    h.rec.on_cancel_failed([oid], 1.1)
    retry = h.router.config.cancel_retry_after
    assert not cancel_emitted(h.router.poll(1.2), oid)
    assert not cancel_emitted(h.router.poll(1.3), oid)
    assert cancel_emitted(h.router.poll(1.0 + retry), oid)


def test_the_router_wakes_when_a_paced_cancel_comes_due_not_at_the_next_event():
    # a plan that finds nothing to send but a paced cancel says when to poll again: the cancel
    # goes on time even if no event or timer comes first (a backtest's drain has no timer)
    h, oid = _a_cancel_sent_at_1_failed_at_1_1()
    retry = h.router.config.cancel_retry_after
    assert h.router.poll(1.2) == [] and h.router.next_ready(1.2) is None  # nothing to send now
    assert h.router.wakeup(1.2) == 1.0 + retry
    assert h.router.wakeup(1.3) == 1.0 + retry  # the quiet plan's wake, no plan made again
    assert h.router.wakeup(1.0 + retry) == 1.0 + retry  # due: the batch is ready at once
    assert cancel_emitted(h.router.poll(1.0 + retry), oid)
    h.rec.on_cancels_sent([oid], 1.0 + retry)
    h.rec.on_cancel_result({"canceled": [oid], "not_canceled": {}}, 1.1 + retry, [oid])
    assert h.router.wakeup(1.2 + retry) is None and h.router.settled()  # nothing waits


def test_the_router_wakes_for_a_failed_request_soon_and_for_a_paced_explicit_cancel():
    h, oid = _a_cancel_sent_at_1_failed_at_1_1()
    h.router.cancels_failed([oid], 1.1)
    soon = h.router.config.failed_cancel_retry_after
    assert h.router.wakeup(1.2) == 1.1 + soon
    h = Harness()
    h.router.set_target(quotes("a", (Side.BUY, 100_000, U)))
    h.step(0.0)
    (oid,) = [o.order_id for o in h.rec.orders.working("a")]
    h.router.cancel(oid)  # the target wants it kept: an explicit cancel alone
    assert cancel_emitted(h.router.poll(1.0), oid)
    h.rec.on_cancels_sent([oid], 1.0)
    h.rec.on_cancel_failed([oid], 1.1)
    h.router.cancel(oid)
    retry = h.router.config.cancel_retry_after
    assert not h.router.idle(1.2) and h.router.wakeup(1.2) == 1.0 + retry
    assert cancel_emitted(h.router.poll(h.router.wakeup(1.2)), oid)


def test_a_paced_cancel_is_due_exactly_at_the_time_the_router_gave():
    # the wake and the pacing read one sum: a plan woken at it never finds the cancel still held
    # back (at stamps where ``t + retry - t < retry`` in floats, an endless wake at one instant)
    h = Harness()
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    h.step(0.0)
    (oid,) = [o.order_id for o in h.rec.orders.working("t")]
    h.router.set_target(quotes("t"))
    t = 3.2
    retry = h.router.config.cancel_retry_after
    assert (t + retry) - t < retry  # such a stamp
    assert cancel_emitted(h.router.poll(t), oid)
    h.rec.on_cancels_sent([oid], t)
    h.rec.on_cancel_failed([oid], t + 0.1)
    wake = h.router.wakeup(t + 0.2)
    assert wake == t + retry
    assert cancel_emitted(h.router.poll(wake), oid)


def test_a_quote_the_venue_refused_as_crossing_waits_for_its_tokens_next_target():
    h = Harness()
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U), (Side.SELL, 600_000, 10 * U)))
    (place,) = h.router.poll(0.0)
    h.rec.on_places_sent(place.orders, 0.0)
    bid, ask = place.orders
    h.rec.on_acks([bid.order_id, ask.order_id], [
        {"success": False, "errorMsg": "invalid post-only order: order crosses book", "orderID": bid.order_id},
        {"success": False, "errorMsg": "not enough balance / allowance", "orderID": ask.order_id}], 0.1)
    h.router.refused("t", Side.BUY, 400_000)
    h.router.refused("u", Side.BUY, 400_000)  # a token without a target: nothing to hold
    (ask_again,) = h.step(0.2)  # the ask, refused for another reason, goes again; the bid does not
    assert [(o.side, o.price) for o in ask_again.orders] == [(Side.SELL, 600_000)]
    assert h.router.poll(0.25) == [] and h.router.wakeup(0.25) is None  # nothing waits
    assert h.live("t") == [(Side.SELL, 600_000, 10 * U)]
    h.router.set_target(quotes("u", (Side.BUY, 400_000, 10 * U)))  # another token's quote goes
    (other,) = h.step(0.3)
    assert [(o.token_id, o.price) for o in other.orders] == [("u", 400_000)]
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U), (Side.SELL, 600_000, 10 * U)))
    (again,) = h.step(0.4)  # quoted afresh: the same bid is the strategy's new word
    assert [(o.side, o.price) for o in again.orders] == [(Side.BUY, 400_000)]


class _Touch:
    """A book as ``Router.recheck`` reads it: whether a post-only order at a price would meet it."""

    def __init__(self, bid: int, ask: int) -> None:
        self.bid, self.ask = bid, ask

    def crosses(self, is_buy: bool, price: int) -> bool:
        return price >= self.ask if is_buy else price <= self.bid


def test_a_refused_quote_goes_again_from_the_same_target_once_the_book_moves_off_it():
    h = Harness()
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    (place,) = h.router.poll(0.0)
    h.rec.on_places_sent(place.orders, 0.0)
    h.rec.on_acks(place.order_ids, [{"success": False, "errorMsg": "invalid post-only order: order crosses book",
                                     "orderID": place.order_ids[0]}], 0.1)
    h.router.refused("t", Side.BUY, 400_000)
    assert h.router.refusing == {"t"}
    h.router.recheck("t", _Touch(380_000, 400_000))  # the ask still at the bid's price
    assert h.router.poll(0.2) == [] and h.router.refusing == {"t"}
    h.router.recheck("t", _Touch(380_000, 410_000))  # moved off it
    assert h.router.refusing == set()
    (again,) = h.step(0.3)
    assert [(o.side, o.price) for o in again.orders] == [(Side.BUY, 400_000)]
    h.router.recheck("t", _Touch(380_000, 410_000))  # nothing held: nothing to do
    assert h.router.refusing == set() and h.router.poll(0.4) == []
    h.router.recheck("nothing", _Touch(380_000, 410_000))  # a token without a target: nothing held


def test_of_two_refused_quotes_only_the_one_the_book_moved_off_goes_and_at_once():
    h = Harness()
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U), (Side.SELL, 420_000, 10 * U)))
    h.router.refused("t", Side.BUY, 400_000)
    h.router.refused("t", Side.SELL, 420_000)
    h.router.recheck("t", _Touch(430_000, 440_000))  # before any plan: the bid is off the book, the ask not
    assert h.router.refusing == {"t"}
    (place,) = h.step(0.1)
    assert [(o.side, o.price) for o in place.orders] == [(Side.BUY, 400_000)]
    h.router.cancel_all("t")  # the target (and what it refused) forgotten
    h.router.recheck("t", _Touch(380_000, 410_000))
    assert h.router.refusing == set()


def test_a_new_target_of_the_token_clears_what_was_refused():
    h = Harness()
    h.router.set_target(quotes("t", (Side.SELL, 600_000, 10 * U)))
    h.router.refused("t", Side.SELL, 600_000)
    assert h.router.refusing == {"t"}
    h.router.set_target(quotes("t", (Side.SELL, 610_000, 10 * U)))
    assert h.router.refusing == set()


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
    calls = _counting_diff(monkeypatch)
    h = Harness()
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    (place,) = h.router.poll(0.0)
    h.rec.on_places_sent(place.orders, 0.0)
    assert h.router.poll(0.1) == [] and calls == ["t", "t"]  # a new order: diffed again, nothing to do
    oid = place.order_ids[0]
    h.rec.on_ack(oid, {"success": True, "errorMsg": "", "orderID": oid, "status": "live"}, 0.2)
    assert h.router.poll(0.3) == [] and calls == ["t", "t"]  # acked: the same order stands for the quote
    # a partial fill moves its size: the diff runs again, and replaces it
    maker_fill(h, oid, 0.4)
    assert h.rec.orders.get(oid).remaining == 6 * U
    out = h.router.poll(0.5)  # (its replacement at that price waits for the cancel's answer)
    assert calls == ["t", "t", "t"] and [type(b) for b in out] == [CancelBatch]


def test_a_place_held_behind_a_cancel_is_not_diffed_again_while_nothing_changes(monkeypatch):
    """A plan whose place waits for a cancel in flight at its price, and whose other place waits
    for the place throttle, is the same plan while the orders and targets stand: it is not
    diffed again at each poll, and it is planned afresh once the cancel is answered."""
    calls = _counting_diff(monkeypatch)
    h = Harness(place_cap=2)  # the first two orders spend the place throttle for 10 s
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U), (Side.SELL, 600_000, 10 * U)))
    (bid, ask) = h.step(0.0)[0].orders
    maker_fill(h, bid.order_id, 0.4)  # the bid's size moved: replaced at the same price
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U), (Side.SELL, 610_000, 10 * U)))
    (cancels,) = h.router.poll(0.5)  # both cancels go; no place token is left
    assert set(cancels.order_ids) == {bid.order_id, ask.order_id}
    h.rec.on_cancels_sent(cancels.order_ids, 0.5)
    n = len(calls)
    assert h.router.poll(0.6) == [] and len(calls) == n + 1  # the ask waits for a token, the bid for its cancel
    assert h.router.poll(0.7) == [] and h.router.poll(0.8) == [] and len(calls) == n + 1
    assert h.router.next_ready(0.9) == pytest.approx(10.0) and len(calls) == n + 1
    h.rec.on_cancel_result({"canceled": list(cancels.order_ids), "not_canceled": {}}, 1.0)
    (places,) = h.router.poll(10.0)  # planned afresh: both replacements
    assert len(calls) == n + 2
    assert sorted((o.side, o.price, o.size) for o in places.orders) == [(Side.BUY, 400_000, 10 * U),
                                                                       (Side.SELL, 610_000, 10 * U)]


def test_a_kept_plan_does_not_outlive_a_cancel_all():
    """A plan kept while a place waits behind a cancel in flight is dropped by ``cancel_all``
    (a halt): the next poll sends the cancels of what still works and places nothing."""
    h = Harness(place_cap=2)  # the first two orders spend the place throttle for 10 s
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U), (Side.SELL, 600_000, 10 * U)))
    (bid, ask) = h.step(0.0)[0].orders
    maker_fill(h, bid.order_id, 0.4)
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U), (Side.SELL, 610_000, 10 * U)))
    (cancels,) = h.router.poll(0.5)
    h.rec.on_cancels_sent(cancels.order_ids, 0.5)
    assert h.router.poll(0.6) == [] and h.router.poll(0.7) == []  # the plan is kept
    h.router.cancel_all()
    assert h.router.poll(0.8) == [] and h.router.next_ready(0.8) is None  # nothing left to place
    h.rec.on_cancel_result({"canceled": list(cancels.order_ids), "not_canceled": {}}, 1.0)
    assert h.router.poll(10.0) == [] and h.router.next_ready(10.0) is None
    assert h.router.settled() and not h.rec.orders.working("t")


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
    maker_fill(h, oid, 0.3)
    assert not h.router.settled()
    assert [type(b) for b in h.router.poll(0.4)] == [CancelBatch]  # then, once it is answered, the place
    assert not h.router.settled()  # the plan waits on that answer


@pytest.mark.parametrize(("fields", "message"), [
    ({"max_batch": 0}, r"^max_batch must be within 1\.\.15, got 0$"),
    ({"max_cancel_ids": 0}, r"^max_cancel_ids must be within 1\.\.3000, got 0$"),
    ({"max_cancel_ids": 3001}, r"^max_cancel_ids must be within 1\.\.3000, got 3001$"),
    ({"size_tolerance": -1}, r"^size_tolerance, take_ttl and cancel_retry_after must be >= 0$"),
    ({"take_ttl": -0.5}, r"^size_tolerance, take_ttl and cancel_retry_after must be >= 0$"),
    ({"cancel_retry_after": -0.5, "failed_cancel_retry_after": -1.0},
     r"^size_tolerance, take_ttl and cancel_retry_after must be >= 0$"),
    ({"failed_cancel_retry_after": -0.1}, r"^failed_cancel_retry_after must be within 0\.\.cancel_retry_after$"),
    ({"failed_cancel_retry_after": 5.5}, r"^failed_cancel_retry_after must be within 0\.\.cancel_retry_after$"),
])
def test_config_refuses_each_bad_value_with_its_reason(fields, message):
    with pytest.raises(ValueError, match=message):
        RouterConfig(**fields)


def test_config_accepts_the_bounds():
    low = RouterConfig(max_batch=1, max_cancel_ids=1, size_tolerance=0, take_ttl=0.0, cancel_retry_after=0.0,
                       failed_cancel_retry_after=0.0)
    assert (low.max_batch, low.max_cancel_ids, low.take_ttl, low.cancel_retry_after) == (1, 1, 0.0, 0.0)
    assert RouterConfig(take_ttl=0.5, cancel_retry_after=0.5, failed_cancel_retry_after=0.5).take_ttl == 0.5
    assert RouterConfig(max_batch=15, max_cancel_ids=3000).max_cancel_ids == 3000


def test_a_batch_of_one_and_a_cancel_batch_of_one():
    h = Harness(config=RouterConfig(max_batch=1, max_cancel_ids=1))
    h.router.set_target(quotes("t", (Side.BUY, 100_000, U), (Side.BUY, 200_000, U)))
    assert [len(b.orders) for b in h.step(0.0)] == [1, 1]
    h.router.set_target(quotes("t"))
    assert [len(b.order_ids) for b in h.step(1.0)] == [1, 1]


def test_built_orders_carry_every_field_of_their_quote_and_are_stamped():
    h = Harness()
    target = QuoteTarget("t", (
        Quote("t", Side.BUY, 400_000, 10 * U, post_only=True, expiration=1_900_000_000),
        Quote("t", Side.SELL, 600_000, 5 * U),
    ))
    h.router.set_target(target, reducing=[False, True])
    (batch,) = h.router.poll(3.5)
    sell, buy = batch.orders  # the reducing quote first
    assert (sell.side, sell.price, sell.size, sell.order_type, sell.post_only, sell.expiration, sell.reducing) == (
        Side.SELL, 600_000, 5 * U, OrderType.GTC, False, 0, True)
    assert (buy.side, buy.price, buy.size, buy.order_type, buy.post_only, buy.expiration, buy.reducing) == (
        Side.BUY, 400_000, 10 * U, OrderType.GTD, True, 1_900_000_000, False)
    assert [r.reducing for r in h.signed] == [True, False] and [r.order_type for r in h.signed] == [
        OrderType.GTC, OrderType.GTD]
    for o in batch.orders:
        assert o.signed == FakeSigned(o.order_id, o.price) and o.token_id == "t"
        assert o.sent_at == 3.5 and o.updated_at == 3.5


def test_take_requests_carry_the_amount_and_a_share_estimate():
    h = Harness()
    h.router.take(Take("a", Side.BUY, 250_000, 10 * U, OrderType.FAK), 0.0, reducing=True)
    h.router.take(Take("b", Side.SELL, 400_000, 7 * U), 0.0)
    h.router.take(Take("c", Side.BUY, 1, 3), 0.0)  # the lowest price: no rounding lost
    h.router.take(Take("d", Side.BUY, 0, 5 * U), 0.0)  # no price: no estimate, no division
    (batch,) = h.router.poll(0.0)
    got = [(r.token_id, r.side, r.price, r.size, r.amount, r.order_type, r.reducing) for r in h.signed]
    assert got == [
        ("a", Side.BUY, 250_000, 40 * U, 10 * U, OrderType.FAK, True),
        ("b", Side.SELL, 400_000, 7 * U, 7 * U, OrderType.FOK, False),
        ("c", Side.BUY, 1, 3 * U, 3, OrderType.FOK, False),
        ("d", Side.BUY, 0, 0, 5 * U, OrderType.FOK, False),
    ]
    assert all(type(r.size) is int for r in h.signed)  # whole share units, never a float
    assert [o.reducing for o in batch.orders] == [True, False, False, False]
    assert h.router.poll(0.1) == []  # every take was sent once


def test_reducing_flags_are_per_quote_from_any_sequence_and_must_match_the_quotes():
    h = Harness(place_cap=1)
    target = quotes("t", (Side.BUY, 100_000, U), (Side.SELL, 900_000, U), (Side.BUY, 200_000, U))
    with pytest.raises(ValueError, match="^one reducing flag per quote$"):
        h.router.set_target(target, [True])
    h.router.submit(target, 0.0, reducing=[0, 1, 0])  # any sequence of truth values
    (batch,) = h.step(0.0)
    assert [(o.side, o.price) for o in batch.orders] == [(Side.SELL, 900_000)] and batch.orders[0].reducing is True
    h.router.submit(target, 0.0, reducing=(False, False, True))  # a tuple is taken as it is
    h.router.cancel_all()
    h.router.submit(target, 0.0, reducing=(False, False, True))
    assert [o.price for b in h.step(10.0) if isinstance(b, PlaceBatch) for o in b.orders] == [200_000]


def test_submit_passes_each_intent_on_with_its_time_and_flag():
    h = Harness(place_cap=1)
    h.router.submit(Take("a", Side.SELL, 400_000, U), 1.0, reducing=1)
    h.router.submit(quotes("b", (Side.BUY, 100_000, U)), 1.0)
    (batch,) = h.step(1.0)
    assert batch.orders[0].token_id == "a" and batch.orders[0].reducing is True  # reducing, first
    h.router.submit(Take("c", Side.SELL, 400_000, U), 1.5)  # not reducing by default
    h.router.take(Take("d", Side.SELL, 400_000, U), 1.5)
    assert h.step(11.0)[0].orders[0].token_id == "b"  # a quote and the takes, all equal: in order
    assert h.step(12.0) == []  # the takes' 1 s passed: dropped (sent 1.5, now 12.0)
    assert h.signed[-1].reducing is False


def test_cancel_all_on_one_token_drops_its_targets_and_takes_only():
    h = Harness()
    h.router.set_target(quotes("a", (Side.BUY, 100_000, U)))
    h.router.set_target(quotes("b", (Side.BUY, 100_000, U)))
    h.step(0.0)
    h.router.take(Take("a", Side.SELL, 400_000, U), 1.0)
    h.router.take(Take("b", Side.SELL, 400_000, U), 1.0)
    h.router.cancel_all("a")
    assert h.router.targets() == {"a": QuoteTarget("a"), "b": quotes("b", (Side.BUY, 100_000, U))}
    out = h.step(1.0)
    assert [type(b) for b in out] == [CancelBatch, PlaceBatch]
    assert [o.token_id for o in out[1].orders] == ["b"] and h.live("a") == []
    h.router.take(Take("b", Side.SELL, 400_000, U), 2.0)
    h.router.cancel_all()
    assert [type(b) for b in h.step(2.0)] == [CancelBatch]  # the take is gone with the rest
    assert h.router.targets() == {"a": QuoteTarget("a"), "b": QuoteTarget("b")}


def test_cancel_all_skips_orders_whose_cancel_is_out():
    h = Harness()
    h.router.set_target(quotes("a", (Side.BUY, 100_000, U), (Side.BUY, 110_000, U)))
    h.step(0.0)
    first, second = h.rec.orders.working("a")
    h.rec.on_cancels_sent([first.order_id], 0.5)  # its cancel is out, unanswered
    h.router.cancel_all("a")
    (batch,) = h.router.poll(1.0)
    assert batch.order_ids == (second.order_id,)


def test_a_cancel_all_after_a_settled_plan_does_not_hide_the_next_target():
    h = Harness()
    h.router.set_target(quotes("a", (Side.BUY, 100_000, U)))
    h.router.set_target(quotes("b", (Side.BUY, 100_000, U)))
    h.step(0.0)
    assert h.step(0.5) == [] and h.router.settled()
    h.router.cancel_all("c")  # nothing there
    h.router.set_target(quotes("a", (Side.BUY, 120_000, U)))
    assert [type(b) for b in h.step(1.0)] == [CancelBatch, PlaceBatch]


def test_work_that_arrives_after_a_settled_plan_is_planned():
    h = Harness()
    h.router.set_target(quotes("a", (Side.BUY, 100_000, U)))
    h.step(0.0)
    assert h.step(0.5) == [] and h.router.settled()
    (oid,) = [o.order_id for o in h.rec.orders.working("a")]
    h.router.cancel(oid)
    assert not h.router.settled()
    assert [b.order_ids for b in h.step(1.0)] == [(oid,)]
    h.step(1.5)  # the target places it again
    assert h.step(2.0) == [] and h.router.settled()
    h.router.take(Take("a", Side.BUY, 300_000, U), 2.5)
    assert not h.router.settled()
    assert [type(b) for b in h.step(2.5)] == [PlaceBatch]


def test_explicit_cancels_skip_closed_orders_and_those_whose_cancel_is_out():
    h = Harness()
    h.router.set_target(quotes("a", (Side.BUY, 100_000, U), (Side.BUY, 110_000, U), (Side.BUY, 120_000, U)))
    h.step(0.0)
    closed, pending, live = h.rec.orders.working("a")
    h.rec.on_cancels_sent([closed.order_id], 0.1)
    h.rec.on_cancel_result({"canceled": [closed.order_id], "not_canceled": {}}, 0.1)
    h.rec.on_cancels_sent([pending.order_id], 0.2)
    h.router.set_target(quotes("a", (Side.BUY, 120_000, U)))  # the target keeps only the live one
    for oid in (closed.order_id, pending.order_id, live.order_id):
        h.router.cancel(oid)
    assert [b.order_ids for b in h.router.poll(1.0)] == [(live.order_id,)]
    h.rec.on_cancel_result({"canceled": [pending.order_id], "not_canceled": {}}, 1.1)
    assert h.router.poll(1.2) == []  # a closed order's cancel is forgotten, not sent later


def test_a_paced_explicit_cancel_goes_again_when_its_time_comes():
    h = Harness()
    h.router.set_target(quotes("a", (Side.BUY, 100_000, U)))
    h.step(0.0)
    (oid,) = [o.order_id for o in h.rec.orders.working("a")]
    h.router.set_target(quotes("a", (Side.BUY, 100_000, U)))  # the target wants it kept
    h.router.cancel(oid)
    assert cancel_emitted(h.router.poll(1.0), oid)
    h.rec.on_cancels_sent([oid], 1.0)
    h.rec.on_cancel_failed([oid], 1.1)  # refused: paced
    h.router.cancel(oid)
    retry = h.router.config.cancel_retry_after
    assert h.router.poll(1.2) == [] and h.router.poll(1.0 + retry - 0.01) == []
    assert cancel_emitted(h.router.poll(1.0 + retry), oid)


def test_an_explicit_cancel_whose_request_failed_goes_again_soon():
    h = Harness()
    h.router.set_target(quotes("a", (Side.BUY, 100_000, U)))
    h.step(0.0)
    (oid,) = [o.order_id for o in h.rec.orders.working("a")]
    h.router.cancel(oid)
    assert cancel_emitted(h.router.poll(1.0), oid)
    h.rec.on_cancels_sent([oid], 1.0)
    h.rec.on_cancel_failed([oid], 1.1)
    h.router.cancels_failed([oid], 1.1)
    h.router.cancel(oid)
    soon = h.router.config.failed_cancel_retry_after
    assert h.router.poll(1.2) == [] and h.router.poll(1.1 + soon - 0.01) == []
    assert cancel_emitted(h.router.poll(1.1 + soon), oid)


def test_a_cancel_answered_not_found_before_the_ack_goes_again_once_the_ack_comes():
    h = Harness()
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    (place,) = h.router.poll(0.0)
    h.rec.on_places_sent(place.orders, 0.0)
    oid = place.order_ids[0]
    h.router.cancel(oid)
    assert cancel_emitted(h.router.poll(0.01), oid)
    h.rec.on_cancels_sent([oid], 0.01)
    h.rec.on_cancel_result({"canceled": [], "not_canceled": {oid: "order not found"}}, 0.02, [oid])
    h.router.cancel(oid)
    assert h.router.poll(0.03) == []  # unanswered still: paced
    h.rec.on_ack(oid, {"success": True, "errorMsg": "", "orderID": oid, "status": "live"}, 0.05)
    assert cancel_emitted(h.router.poll(0.06), oid)  # the place is there now: at once


def test_the_diff_reads_each_tokens_tick_and_a_tick_change_is_planned_again():
    ticks = {"t": 10_000}
    h = Harness()
    h.router = Router(h.rec.orders, h.sign, place_throttle=Throttle([RateWindow(100, 10.0)]),
                      cancel_throttle=Throttle([RateWindow(100, 10.0)]), tick_of=ticks.__getitem__)
    h.router.set_target(quotes("t", (Side.BUY, 100_000, U)))
    h.step(0.0)
    h.router.set_target(quotes("t", (Side.BUY, 104_000, U)))  # the same price on a 0.01 grid
    assert h.step(1.0) == [] and h.router.settled()
    ticks["t"] = 1_000
    h.router.invalidate()
    assert [type(b) for b in h.step(2.0)] == [CancelBatch, PlaceBatch]
    assert h.live("t") == [(Side.BUY, 104_000, U)]


def test_a_live_order_within_the_size_tolerance_stands_for_its_quote():
    h = Harness(config=RouterConfig(size_tolerance=U // 2))
    h.router.set_target(quotes("t", (Side.BUY, 100_000, 10 * U)))
    h.step(0.0)
    h.router.set_target(quotes("t", (Side.BUY, 100_000, 10 * U + U // 2)))
    assert h.step(1.0) == []
    h.router.set_target(quotes("t", (Side.BUY, 100_000, 11 * U)))
    # a resize at one price: the cancel, then the place once the cancel is answered
    assert [type(b) for b in h.step(2.0) + h.step(2.1)] == [CancelBatch, PlaceBatch]


def test_tokens_take_turns_when_the_throttle_is_tight():
    h = Harness(place_cap=1)
    for tok in ("a", "b", "c"):
        h.router.set_target(quotes(tok, (Side.BUY, 100_000, U), (Side.BUY, 200_000, U)))
    sent_to = [b.orders[0].token_id for t in range(6) for b in h.step(10.0 * t)]
    assert sent_to[:3] == ["c", "b", "a"] and sent_to[3:] == sent_to[:3]  # newest first, then in turn


def test_an_order_whose_cancel_is_out_no_longer_stands_for_a_quote():
    h = Harness()
    h.router.set_target(quotes("t", (Side.BUY, 100_000, U)))
    h.step(0.0)
    (oid,) = [o.order_id for o in h.rec.orders.working("t")]
    h.rec.on_cancels_sent([oid], 1.0)  # cancelled elsewhere (a cancel-all at the shell)
    assert h.router.poll(1.5) == []  # no order beside one being cancelled: its answer decides
    h.rec.on_cancel_result({"canceled": [oid], "not_canceled": {}}, 1.6)
    (batch,) = h.router.poll(1.7)
    assert isinstance(batch, PlaceBatch) and batch.orders[0].price == 100_000


def test_diff_cancels_are_paced_one_by_one_and_a_token_with_only_cancels_does_not_stop_the_rest():
    h = Harness()
    h.router.set_target(quotes("a", (Side.BUY, 100_000, U), (Side.BUY, 110_000, U)))
    h.step(100.0)
    first, second = (o.order_id for o in h.rec.orders.working("a"))
    h.router.set_target(quotes("a", (Side.BUY, 110_000, U)))
    assert [b.order_ids for b in h.router.poll(101.0)] == [(first,)]
    h.rec.on_cancels_sent([first], 101.0)
    h.rec.on_cancel_failed([first], 101.1)  # refused: paced
    h.router.set_target(quotes("a"))  # now both go; the first waits its turn
    h.router.set_target(quotes("b", (Side.SELL, 900_000, U)))
    out = h.router.poll(102.0)
    assert [type(b) for b in out] == [CancelBatch, PlaceBatch]
    assert out[0].order_ids == (second,) and out[1].orders[0].token_id == "b"
    h.rec.on_cancels_sent([second], 102.0)
    h.rec.on_places_sent(out[1].orders, 102.0)
    assert not cancel_emitted(h.router.poll(105.0), first)
    assert cancel_emitted(h.router.poll(101.0 + h.router.config.cancel_retry_after), first)


def test_a_take_is_sent_until_its_ttl_has_passed_whatever_the_clock():
    h = Harness()
    h.router.take(Take("a", Side.SELL, 400_000, U), 1000.0)
    h.router.take(Take("b", Side.SELL, 400_000, U), 1000.5)
    out = h.router.poll(1001.0)  # exactly the ttl after the first: still sent
    assert [o.token_id for b in out for o in b.orders] == ["a", "b"]


def test_emitted_cancels_are_swept_once_many_but_recent_ones_stay_paced():
    h = Harness(cancel_cap=100_000)
    old = [f"0xold{i}" for i in range(4000)]
    for oid in old:
        h.router.cancel(oid)
    assert sum(len(b.order_ids) for b in h.router.poll(0.0)) == 4000
    recent = [f"0xnew{i}" for i in range(200)]
    for oid in recent:
        h.router.cancel(oid)
    h.router.cancels_failed(old[1:2], 2.9)  # its request failed: it may go again at 3.4
    h.router.poll(3.0)  # 4200 remembered: swept, all still within the retry horizon
    h.router.cancels_failed(recent[:1], 3.0)
    for oid in old[:2] + recent:
        h.router.cancel(oid)
    out = h.router.poll(3.2)
    assert [b.order_ids for b in out] == [], "every remembered cancel is still paced"
    assert [b.order_ids for b in h.router.poll(3.4)] == [(old[1],)]
    soon = 3.0 + h.router.config.failed_cancel_retry_after
    assert [b.order_ids for b in h.router.poll(soon)] == [(recent[0],)]
    assert h.router.poll(soon + 0.1) == []
    late = h.router.poll(3.0 + h.router.config.cancel_retry_after)
    assert sorted(oid for b in late for oid in b.order_ids) == sorted(old[:1] + recent[1:])


def test_a_target_reducing_as_a_whole_places_reducing_orders_first():
    h = Harness(place_cap=1)
    h.router.take(Take("a", Side.BUY, 500_000, U), 0.0)  # not reducing
    h.router.set_target(quotes("b", (Side.SELL, 900_000, U)), reducing=True)
    (batch,) = h.step(0.0)
    assert batch.orders[0].token_id == "b" and batch.orders[0].reducing is True


def test_a_sent_take_is_the_one_dropped():
    h = Harness(place_cap=1, config=RouterConfig(take_ttl=100.0))
    h.router.take(Take("a", Side.BUY, 500_000, U), 0.0)
    h.router.take(Take("b", Side.BUY, 500_000, U), 0.0)
    assert [o.token_id for b in h.step(0.0) for o in b.orders] == ["a"]
    assert [o.token_id for b in h.step(10.0) for o in b.orders] == ["b"]
    assert h.step(20.0) == []


def test_an_explicit_cancel_is_sent_once():
    h = Harness()
    h.router.cancel("0xgone")  # not an order of ours (any more): the venue says
    h.router.cancel("0xgone2")
    assert [b.order_ids for b in h.router.poll(0.0)] == [("0xgone", "0xgone2")]
    assert h.router.poll(10.0) == [] and h.router.next_ready(10.0) is None


def test_a_paced_explicit_cancel_does_not_hold_back_the_next():
    h = Harness()
    h.router.cancel("0xa")
    h.router.poll(0.0)
    h.router.cancel("0xa")  # again, too soon: paced
    h.router.cancel("0xb")
    assert [b.order_ids for b in h.router.poll(1.0)] == [("0xb",)]


def test_a_cancel_sent_again_soon_is_paced_in_full_if_refused_again():
    h, oid = _a_cancel_sent_at_1_failed_at_1_1()
    h.router.cancels_failed([oid], 1.1)
    assert cancel_emitted(h.router.poll(1.6), oid)
    h.rec.on_cancels_sent([oid], 1.6)
    h.rec.on_cancel_failed([oid], 1.7)  # refused this time: the full pace from 1.6
    assert not cancel_emitted(h.router.poll(2.2), oid)
    assert cancel_emitted(h.router.poll(1.6 + h.router.config.cancel_retry_after), oid)


def test_a_cancel_answered_at_the_instant_it_left_is_not_an_answer_after_it():
    h, oid = cancelled_unanswered()
    h.rec.on_ack(oid, {"success": True, "errorMsg": "", "orderID": oid, "status": "live"}, 0.01)
    h.rec.on_cancel_result({"canceled": [], "not_canceled": {oid: "order not found"}}, 0.02, [oid])
    assert not cancel_emitted(h.router.poll(0.03), oid)  # the ack may have come first: paced


def test_throttle_tokens_are_spent_for_what_is_sent_only():
    place, cancel = Throttle([RateWindow(4, 10.0)]), Throttle([RateWindow(4, 10.0)])
    route = Throttle([RateWindow(10, 10.0)])
    h = Harness(config=RouterConfig(max_batch=2, max_cancel_ids=2), routes=(route,))
    h.router = Router(h.rec.orders, h.sign, place_throttle=place, cancel_throttle=cancel, route_throttles=(route,),
                      config=RouterConfig(max_batch=2, max_cancel_ids=2))
    h.router.set_target(quotes("t", *[(Side.BUY, 10_000 * (i + 1), U) for i in range(3)]))
    assert [len(b.orders) for b in h.step(0.0)] == [2, 1]
    assert place.available(0.0) == 1 and route.available(0.0) == 8
    h.router.set_target(quotes("t"))
    assert [len(b.order_ids) for b in h.step(0.5)] == [2, 1]
    assert cancel.available(0.5) == 1 and route.available(0.5) == 6
    h.router.set_target(quotes("t", *[(Side.BUY, 10_000 * (i + 1), U) for i in range(3)]))
    assert [len(b.orders) for b in h.step(1.0)] == [1]  # the last place token
    assert h.step(1.5) == [] and route.available(1.5) == 5  # refused places spend no route token


def test_per_request_counting_spends_one_token_per_request_at_the_time_given():
    h = Harness(place_cap=1, config=RouterConfig(count_per_order=False))
    h.router.set_target(quotes("t", *[(Side.BUY, 10_000 * (i + 1), U) for i in range(20)]))
    assert [len(b.orders) for b in h.step(0.0)] == [15]
    assert h.step(5.0) == []
    assert [len(b.orders) for b in h.step(10.0)] == [5]


def test_next_ready_for_cancels_alone_and_for_reducing_places_beside_blocked_cancels():
    h = Harness(cancel_cap=1)
    h.router.set_target(quotes("a", (Side.BUY, 100_000, U), (Side.BUY, 110_000, U)))
    h.step(0.0)
    h.router.set_target(quotes("a"))
    assert [len(b.order_ids) for b in h.step(1.0)] == [1]
    assert h.router.next_ready(1.0) == pytest.approx(11.0)  # one cancel left, its token at 11
    h.router.set_target(quotes("a", (Side.SELL, 900_000, U)), reducing=True)
    assert h.router.next_ready(2.0) == 2.0  # a reducing place need not wait for the cancel


def test_a_failed_cancel_request_after_a_paced_plan_is_planned_again():
    # one target only (the targets' revision is 1): a fill replaces the order, whose cancel fails
    place, cancel = Throttle([RateWindow(100, 1.0)]), Throttle([RateWindow(1, 1.0)])
    h = Harness()
    h.router = Router(h.rec.orders, h.sign, place_throttle=place, cancel_throttle=cancel)
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    h.step(0.0)
    assert h.step(0.5) == [] and h.router.settled()
    (old,) = [o.order_id for o in h.rec.orders.working("t")]
    maker_fill(h, old, 0.6)
    out = h.router.poll(1.0)
    assert [type(b) for b in out] == [CancelBatch]  # the replacement at its price waits for the answer
    h.rec.on_cancels_sent([old], 1.0)
    h.rec.on_cancel_failed([old], 1.1)
    assert h.router.poll(1.15) == []  # paced
    h.router.cancels_failed([old], 1.15)  # a 5xx: it may go again at 1.65
    assert h.router.poll(1.7) == []  # due, but the cancel token is back only at 2.0
    assert h.router.next_ready(1.7) == pytest.approx(2.0)
    assert cancel_emitted(h.router.poll(2.0), old)


def test_two_tokens_take_turns_too():
    h = Harness(place_cap=1)
    for tok in ("a", "b"):
        h.router.set_target(quotes(tok, (Side.BUY, 100_000, U), (Side.BUY, 200_000, U)))
    assert [b.orders[0].token_id for t in range(4) for b in h.step(10.0 * t)] == ["b", "a", "b", "a"]


def test_a_diff_cancel_that_overtook_its_place_goes_again_once_the_ack_comes():
    h, oid = cancelled_unanswered()
    h.rec.on_cancel_result({"canceled": [], "not_canceled": {oid: "order not found"}}, 0.02, [oid])
    assert h.router.poll(0.03) == []  # unanswered still: paced
    h.rec.on_ack(oid, {"success": True, "errorMsg": "", "orderID": oid, "status": "live"}, 0.05)
    assert cancel_emitted(h.router.poll(0.06), oid)


def _order_of_ours(h, oid, token, price):
    """An order the router did not place (adopted, or from before a restart), live at the venue."""
    from bot.execution.orders import OwnOrder

    h.rec.on_places_sent([OwnOrder(oid, token, Side.BUY, price, U)], 0.0)
    h.rec.on_ack(oid, {"success": True, "errorMsg": "", "orderID": oid, "status": "live"}, 0.0)


def test_cancel_all_cancels_orders_on_tokens_without_a_target():
    h = Harness()
    _order_of_ours(h, "0xz", "z", 100_000)
    h.router.cancel_all()
    assert [b.order_ids for b in h.step(1.0)] == [("0xz",)]


def test_a_tick_change_is_planned_again_after_the_very_first_target():
    ticks = {"t": 10_000}
    h = Harness()
    h.router = Router(h.rec.orders, h.sign, place_throttle=Throttle([RateWindow(100, 10.0)]),
                      cancel_throttle=Throttle([RateWindow(100, 10.0)]), tick_of=ticks.__getitem__)
    _order_of_ours(h, "0xz", "t", 100_000)
    h.router.set_target(quotes("t", (Side.BUY, 104_000, U)))  # the one target: the order stands for it
    assert h.step(1.0) == [] and h.router.settled()
    ticks["t"] = 1_000
    h.router.invalidate()
    assert [type(b) for b in h.step(2.0)] == [CancelBatch, PlaceBatch]


def test_a_settled_token_is_diffed_again_when_its_orders_change_whatever_the_tick():
    # the settled shortcut compares the orders' version with the one it saw, never with the tick
    h = Harness()
    h.router = Router(h.rec.orders, h.sign, place_throttle=Throttle([RateWindow(100, 10.0)]),
                      cancel_throttle=Throttle([RateWindow(100, 10.0)]), tick_of=lambda _t: 2)
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    (place,) = h.step(0.0)
    assert h.step(0.5) == []  # settled at the orders' first version
    oid = place.order_ids[0]
    maker_fill(h, oid, 0.6)
    assert h.rec.orders.quoting_versions["t"] == 2  # the tick, in micro-units
    assert [type(b) for b in h.step(1.0) + h.step(1.1)] == [CancelBatch, PlaceBatch]


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
    assert h.router.settled() and calls == ["t", "t", "u"]  # the target set last is diffed first
    h.router.set_target(quotes("u", (Side.BUY, 300_000, 6 * U)))  # "t" is not diffed for it
    (cancel,) = h.router.poll(2.0)  # a resize at one price: its cancel first, the place once answered
    assert calls == ["t", "t", "u", "u"] and isinstance(cancel, CancelBatch)
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


def test_a_short_budget_goes_to_the_quote_from_the_newest_book():
    """Two orders of budget, three tokens wanting quotes: the targets set last go first, and a
    token whose target is set again moves to the front (the older requotes are shed, not queued)."""
    h = Harness(place_cap=2)
    for token in ("A", "B", "C"):
        h.router.set_target(quotes(token, (Side.BUY, 400_000, 10 * U)))
    h.router.set_target(quotes("A", (Side.BUY, 410_000, 10 * U)))  # A's book moved again: newest
    placed = [o.token_id for b in h.step(1.0) for o in b.orders]
    assert placed == ["A", "C"]
    assert h.live("A") == [(Side.BUY, 410_000, 10 * U)]


def test_a_token_blocked_by_its_cancels_holds_back_only_its_own_new_orders():
    h = Harness(cancel_cap=1)
    h.router.set_target(quotes("a", (Side.BUY, 100_000, U), (Side.BUY, 110_000, U)))
    h.step(0.0)
    h.router.set_target(quotes("a", (Side.BUY, 300_000, U)))  # two cancels (one granted), one place
    h.router.set_target(quotes("b", (Side.BUY, 200_000, U)))  # another token: nothing to wait for
    h.router.set_target(quotes("c", (Side.SELL, 900_000, U)), reducing=True)
    out = h.step(1.0)
    assert [type(b) for b in out] == [CancelBatch, PlaceBatch]
    assert sorted((o.token_id, o.price) for o in out[1].orders) == [("b", 200_000), ("c", 900_000)]


def test_sent_and_settled_asked_in_any_order_are_harmless():
    h = Harness()
    h.router.sent()  # before any poll
    assert not h.router.settled()
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    (place,) = h.router.poll(0.0)
    h.rec.on_places_sent(place.orders, 0.0)
    assert not h.router.settled()  # recorded, but ``sent`` has not said so
    h.router.sent()
    assert h.router.settled()
    h.router.sent()  # again, with nothing polled since
    assert h.router.settled()
    for change in (h.router.invalidate, lambda: h.router.cancels_failed(["0xnone"], 1.0)):
        change()
        h.router.sent()
        assert not h.router.settled()
        assert h.router.poll(1.0) == [] and h.router.settled()  # the plan looks, and finds nothing


def test_a_target_changed_after_the_poll_keeps_the_router_unsettled():
    h = Harness()
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    (place,) = h.router.poll(0.0)
    h.rec.on_places_sent(place.orders, 0.0)
    h.router.sent()
    h.router.set_target(quotes("t", (Side.BUY, 390_000, 10 * U)))
    assert not h.router.settled()
    assert [type(b) for b in h.router.poll(0.1)] == [CancelBatch, PlaceBatch]


def test_a_cancel_not_recorded_keeps_the_router_unsettled():
    h = Harness()
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    h.step(0.0)
    h.router.set_target(quotes("t"))
    (cancel,) = h.router.poll(1.0)
    h.router.sent()  # the cancel batch never reached the reconciler: its order still works
    assert not h.router.settled()


def test_tokens_settled_by_a_drained_poll_are_not_diffed_again(monkeypatch):
    calls = _counting_diff(monkeypatch)
    ticks = {"a": 10_000, "b": 10_000, "c": 10_000}
    h = Harness()
    h.router = Router(h.rec.orders, h.sign, place_throttle=Throttle([RateWindow(100, 10.0)]),
                      cancel_throttle=Throttle([RateWindow(100, 10.0)]), tick_of=ticks.__getitem__)
    h.router.set_target(quotes("a", (Side.BUY, 100_000, U)))
    h.step(0.0)
    h.router.set_target(quotes("a"))  # a: cancels only
    h.router.set_target(quotes("b", (Side.BUY, 200_000, U)))  # b: places only
    out = h.router.poll(1.0)
    assert [type(b) for b in out] == [CancelBatch, PlaceBatch]
    h.rec.on_cancels_sent(out[0].order_ids, 1.0)
    h.rec.on_places_sent(out[1].orders, 1.0)
    h.router.sent()
    assert h.router.settled()
    del calls[:]
    h.router.set_target(quotes("c", (Side.BUY, 300_000, U)))
    assert [type(b) for b in h.router.poll(2.0)] == [PlaceBatch] and calls == ["c"]


def test_a_token_whose_diff_found_nothing_is_not_diffed_again(monkeypatch):
    calls = _counting_diff(monkeypatch)
    h = Harness()
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    h.step(0.0)
    assert h.step(0.5) == [] and calls == ["t", "t"]  # its orders changed: diffed, nothing to do
    h.router.set_target(quotes("u", (Side.BUY, 300_000, U)))
    h.step(1.0)
    assert calls == ["t", "t", "u"]


def test_a_cancel_at_a_price_holds_back_only_the_quote_of_its_token_at_that_price():
    h = Harness()
    h.router.set_target(quotes("a", (Side.BUY, 400_000, 10 * U)))
    h.step(0.0)
    # a: a resize at 0.40 (its cancel first) and a new quote at 0.30
    h.router.set_target(quotes("a", (Side.BUY, 400_000, 8 * U), (Side.BUY, 300_000, U)))
    out = h.router.poll(1.0)
    assert [type(b) for b in out] == [CancelBatch, PlaceBatch]
    assert [(o.token_id, o.price) for o in out[1].orders] == [("a", 300_000)]
    h.rec.on_cancels_sent(out[0].order_ids, 1.0)
    h.rec.on_places_sent(out[1].orders, 1.0)
    # while that cancel is on the wire, another token quotes at 0.40: nothing of its own is there
    h.router.set_target(quotes("b", (Side.BUY, 400_000, 10 * U)))
    out = h.router.poll(1.1)
    assert [(o.token_id, o.price) for b in out for o in b.orders] == [("b", 400_000)]


def test_a_token_whose_quotes_all_wait_for_a_cancel_does_not_stop_the_others():
    for resize_last in (False, True):  # whichever token the plan reads first
        h = Harness()
        h.router.set_target(quotes("a", (Side.BUY, 400_000, 10 * U)))
        h.step(0.0)
        if resize_last:
            h.router.set_target(quotes("b", (Side.BUY, 200_000, U)))
        h.router.set_target(quotes("a", (Side.BUY, 400_000, 8 * U)))  # a resize: its cancel first
        if not resize_last:
            h.router.set_target(quotes("b", (Side.BUY, 200_000, U)))
        out = h.router.poll(1.0)
        assert [(o.token_id, o.price) for b in out if isinstance(b, PlaceBatch) for o in b.orders] == [
            ("b", 200_000)]


def test_a_plan_waiting_for_a_cancels_answer_is_not_made_again_before_it_may_come(monkeypatch):
    calls = _counting_diff(monkeypatch)
    h = Harness()
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    h.step(0.0)
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 8 * U)))
    (cancel,) = h.router.poll(1.0)
    h.rec.on_cancels_sent(cancel.order_ids, 1.0)
    assert h.router.poll(1.1) == []  # the place waits for the answer: planned, nothing to send
    n = len(calls)
    assert h.router.poll(1.2) == [] and len(calls) == n  # nothing changed: not planned again


def test_a_poll_that_served_every_token_keeps_the_newest_target_first():
    h = Harness(place_cap=3)
    h.router.set_target(quotes("b", (Side.BUY, 100_000, U)))
    h.router.set_target(quotes("a", (Side.BUY, 100_000, U)))  # the newest
    assert len(h.step(0.0)[0].orders) == 2  # both served, the budget not short
    for o in h.rec.orders.working():
        h.router.cancel(o.order_id)
    assert [type(b) for b in h.step(1.0)] == [CancelBatch]
    (place,) = h.step(2.0)  # one order left in the window: the newest target's
    assert [o.token_id for o in place.orders] == ["a"]


def test_a_token_with_only_cancels_read_first_does_not_stop_the_others():
    h = Harness()
    h.router.set_target(quotes("a", (Side.BUY, 100_000, U)))
    h.step(0.0)
    h.router.set_target(quotes("b", (Side.BUY, 200_000, U)))
    h.router.set_target(quotes("a"))  # the newest target, read first: cancels only
    out = h.step(1.0)
    assert [type(b) for b in out] == [CancelBatch, PlaceBatch] and out[1].orders[0].token_id == "b"


def test_work_held_by_the_throttles_is_diffed_once_until_something_it_reads_changes(monkeypatch):
    calls = _counting_diff(monkeypatch)
    h = Harness(place_cap=1)
    h.router.set_target(quotes("t", (Side.BUY, 400_000, U)))
    assert len(h.step(0.0)) == 1 and calls == ["t"]
    wanted = quotes("t", (Side.BUY, 400_000, U), (Side.SELL, 600_000, U))
    h.router.set_target(wanted)
    # the ask waits for the place window: polls and wake-up times read the same plan, diffed once
    for now in (1.0, 2.0, 3.0):
        assert h.router.poll(now) == []
        assert h.router.next_ready(now) == pytest.approx(10.0)
    assert calls == ["t", "t"]
    # a new target (the same quotes) is read: diffed again, the same work still waits
    h.router.set_target(wanted)
    assert h.router.poll(4.0) == [] and calls == ["t", "t", "t"]
    # an order change is read too (a new order of the token: no longer the plan's orders)
    h.rec.on_cancels_sent([h.rec.orders.working("t")[0].order_id], 5.0)
    assert h.router.poll(5.0) == [] and calls == ["t", "t", "t", "t"]
    out = h.step(10.0)  # the window frees: the ask goes (the bid's place waits for its cancel)
    assert [[(o.side, o.price) for o in b.orders] for b in out if isinstance(b, PlaceBatch)] \
        == [[(Side.SELL, 600_000)]]


def test_held_work_is_planned_again_on_the_tokens_new_tick():
    ticks = {"t": 10_000}
    h = Harness()
    h.router = Router(h.rec.orders, h.sign, place_throttle=Throttle([RateWindow(1, 10.0)]),
                      cancel_throttle=Throttle([RateWindow(100, 10.0)]), tick_of=ticks.__getitem__)
    h.router.set_target(quotes("t", (Side.BUY, 100_000, U)))
    assert len(h.step(0.0)) == 1
    h.router.set_target(quotes("t", (Side.BUY, 104_000, U), (Side.SELL, 600_000, U)))
    assert h.step(1.0) == []  # the bid stands (the same price on a 0.01 grid); the ask waits
    ticks["t"] = 1_000  # a finer grid (a snapshot's tick): the bid no longer stands for its quote
    assert [type(b) for b in h.step(2.0)] == [CancelBatch]
    out = h.step(10.0)
    assert [[(o.side, o.price) for o in b.orders] for b in out] == [[(Side.BUY, 104_000)]]


def test_a_quote_is_signed_as_a_limit_order_without_an_amount():
    h = Harness()
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U), (Side.SELL, 600_000, 5 * U)), reducing=[False, True])
    h.router.poll(0.0)
    assert [r.amount for r in h.signed] == [0, 0]
    assert h.signed[0] == OrderRequest("t", Side.SELL, 600_000, 5 * U, OrderType.GTC, False, 0, 0, True)


def test_a_take_waiting_on_the_throttle_still_expires_when_asked_again():
    h = Harness(place_cap=1)
    h.router.take(Take("a", Side.SELL, 400_000, U), 0.0)
    assert len(h.step(0.0)) == 1  # the throttle's one token is spent
    h.router.take(Take("a", Side.SELL, 400_000, 2 * U), 0.0)
    assert h.router.next_ready(0.5) is not None  # waits for the throttle
    assert h.router.next_ready(9.0) is None  # past its ttl: dropped, nothing left to send
    assert h.router.poll(10.5) == []


def test_a_throttled_plan_asked_again_and_again_stays_planned():
    route = Throttle([RateWindow(1, 10.0)])
    assert route.try_take(1, 0.0)
    h = Harness(routes=(route,))
    assert h.router.next_ready(0.0) is None  # no target: nothing to do
    h.router.set_target(quotes("t", (Side.BUY, 400_000, 10 * U)))
    ready = [h.router.next_ready(now) for now in (0.1, 0.2, 0.3, 0.4)]
    assert ready[0] is not None and ready == [ready[0]] * 4
    assert not h.router.settled()
    assert len(h.router.poll(ready[0])) == 1


def test_under_default_pacing_what_is_ready_goes_in_one_post_of_up_to_15() -> None:
    """The live client's paced trading-write windows (``paced_writes`` of the venue's table) let the
    router send 8 tokens' two-sided quotes as one POST of 15 and the 16th in the next, not POSTs
    of 3: pacing holds the sustained rate, it does not cut batches."""
    from bot.engine.assembly import router_throttles
    from bot.venue.limits import LimitsConfig, RouteLimiter, paced_writes

    clock = [0.0]
    rec = Reconciler()
    seq = itertools.count()
    router = Router(rec.orders, lambda req: FakeSigned(f"0x{next(seq):04x}", req.price),
                    **router_throttles(RouteLimiter(paced_writes(LimitsConfig()), "clob", clock=lambda: clock[0])))
    for i in range(8):
        router.set_target(quotes(f"t{i}", (Side.BUY, 400_000, 10 * U), (Side.SELL, 600_000, 10 * U)))
    sizes = []
    while sum(sizes) < 16 and clock[0] < 5.0:
        for b in router.poll(clock[0]):
            assert isinstance(b, PlaceBatch)
            rec.on_places_sent(b.orders, clock[0])
            sizes.append(len(b.orders))
        clock[0] += 0.01
    assert sizes == [15, 1]


def test_sells_of_an_off_lot_holding_go_out_as_their_whole_lots():
    """A SELL quote or take of a 6-decimal holding is sent as its whole lots, one under a lot is
    dropped with its reducing flag, BUYs and whole-lot quotes are left as they are, and the target
    kept is the cut one (so the live order matches it: nothing is re-placed)."""
    h = Harness()
    buy = Quote("t", Side.BUY, 400_000, 10 * U)
    odd_buy = Quote("t", Side.BUY, 390_000, 5 * U + 1)  # not cut: a BUY's size is refused by risk, not changed
    target = QuoteTarget("t", (Quote("t", Side.SELL, 600_000, 11_371_898), buy, Quote("t", Side.SELL, 700_000, 9_999),
                               Quote("t", Side.SELL, 650_000, 2 * U), odd_buy))
    flags = (True, False, True, True, False)
    h.router.set_target(target, flags)
    kept = h.router.targets()["t"]
    assert kept == QuoteTarget("t", (Quote("t", Side.SELL, 600_000, 11_370_000), buy, Quote("t", Side.SELL, 650_000, 2 * U),
                                     odd_buy))
    assert kept.quotes[1] is buy and kept.quotes[2] is target.quotes[3]
    h.step(0.0)
    assert [(r.side, r.price, r.size, r.reducing) for r in h.signed] == [
        (Side.SELL, 600_000, 11_370_000, True), (Side.SELL, 650_000, 2 * U, True), (Side.BUY, 400_000, 10 * U, False),
        (Side.BUY, 390_000, 5 * U + 1, False)]
    n = len(h.signed)
    h.router.set_target(target, flags)
    assert h.step(1.0) == [] and len(h.signed) == n
    whole = quotes("u", (Side.SELL, 600_000, 2 * U))
    h.router.set_target(whole)
    assert h.router.targets()["u"] is whole
    h.router.take(Take("v", Side.SELL, 500_000, 7_654_321), 2.0, True)
    h.router.take(Take("v", Side.SELL, 500_000, 9_999), 2.0)
    h.router.take(Take("v", Side.BUY, 500_000, 3 * U + 1), 2.0)
    h.step(2.0)
    assert [(r.side, r.order_type, r.price, r.amount, r.size, r.reducing) for r in h.signed if r.token_id == "v"] == [
        (Side.SELL, OrderType.FOK, 500_000, 7_650_000, 7_650_000, True),
        (Side.BUY, OrderType.FOK, 500_000, 3 * U + 1, 6 * U + 2, False)]


def test_a_sell_cut_to_its_whole_lots_keeps_post_only_expiry_and_order_type():
    h = Harness()
    h.router.set_target(QuoteTarget("t", (Quote("t", Side.SELL, 600_000, 11_371_898, True, 1_900_000_000),)))
    assert h.router.targets()["t"].quotes == (Quote("t", Side.SELL, 600_000, 11_370_000, True, 1_900_000_000),)
    h.router.take(Take("v", Side.SELL, 500_000, 7_654_321, OrderType.FAK), 0.0)
    h.step(0.0)
    assert [(r.order_type, r.amount) for r in h.signed if r.token_id == "v"] == [(OrderType.FAK, 7_650_000)]


def legs(group: str, n: int, token: str = "e") -> list[Take]:
    return [Take(f"{token}{i}", Side.BUY, 300_000, 3 * U, OrderType.FOK, group) for i in range(n)]


def test_a_set_goes_in_one_post_only_when_the_budget_takes_all_of_it():
    h = Harness(place_cap=4)  # 4 orders a window: a 6-leg set never fits, a 3-leg one does
    for t in legs("six", 6):
        h.router.take(t, 0.0)
    for t in legs("three", 3, "f"):
        h.router.take(t, 0.0)
    assert h.step(0.0) == []  # the 6 legs wait whole (and the set behind them, in its turn)
    assert h.signed == []
    h2 = Harness(place_cap=8)
    for t in legs("six", 6) + legs("three", 3, "f"):
        h2.router.take(t, 0.0)
    out = h2.step(0.0)  # 8 tokens: the six go together; the three would need 9, so they wait whole
    assert [[o.token_id for o in b.orders] for b in out] == [[f"e{i}" for i in range(6)]]


def test_a_set_is_never_cut_across_two_posts():
    h = Harness()
    # reducing quotes go first: 12 of them, then the 6 legs, which 15 a POST would cut after 3
    h.router.set_target(quotes("q", *[(Side.BUY, 100_000 + 10_000 * i, 5 * U) for i in range(12)]), True)
    for t in legs("set", 6):
        h.router.take(t, 0.0)
    out = h.step(0.0)
    assert [len(b.orders) for b in out if isinstance(b, PlaceBatch)] == [12, 6]  # not 15 + 3
    assert {o.token_id for o in out[1].orders} == {f"e{i}" for i in range(6)}


def test_ungrouped_takes_still_go_as_far_as_the_budget_goes():
    h = Harness(place_cap=4)
    for i in range(6):
        h.router.take(Take(f"e{i}", Side.BUY, 300_000, 3 * U), 0.0)
    assert [len(b.orders) for b in h.step(0.0)] == [4]


def test_a_set_larger_than_a_post_is_dropped_not_left_blocking_the_rest():
    h = Harness()
    for t in legs("huge", 16):
        h.router.take(t, 0.0)
    h.router.take(Take("x", Side.BUY, 300_000, 3 * U), 0.0)
    out = h.step(0.0)
    assert [[o.token_id for o in b.orders] for b in out] == [["x"]]
    assert h.step(1.0) == []  # the set's legs are gone, not waiting


def test_a_sets_legs_go_together_though_another_take_came_between_them():
    h = Harness(place_cap=2)
    h.router.take(Take("e0", Side.BUY, 300_000, 3 * U, OrderType.FOK, "g"), 0.0)
    h.router.take(Take("x", Side.BUY, 300_000, 3 * U), 0.0)
    h.router.take(Take("e1", Side.BUY, 300_000, 3 * U, OrderType.FOK, "g"), 0.0)
    out = h.step(0.0)
    assert [[o.token_id for o in b.orders] for b in out] == [["e0", "e1"]]  # the set first, whole; x waits


def test_a_set_with_a_leg_on_a_token_whose_cancels_must_wait_waits_whole():
    h = Harness(cancel_cap=1)
    h.router.set_target(quotes("e0", (Side.BUY, 200_000, 5 * U), (Side.BUY, 210_000, 5 * U)))
    h.step(0.0)  # two bids rest on e0
    # both to cancel and a new bid: one cancel a window, so e0 stays blocked, its new bid too
    h.router.set_target(quotes("e0", (Side.BUY, 190_000, 5 * U)))
    for t in legs("g", 2) + legs("h", 2, "f"):
        h.router.take(t, 0.0)
    h.router.take(Take("x", Side.BUY, 300_000, 3 * U), 0.0)
    out = h.step(0.1)
    placed = [[o.token_id for o in b.orders] for b in out if isinstance(b, PlaceBatch)]
    # not e1 without e0: set g waits whole; set h (no leg blocked) and the lone take go
    assert placed == [["f0", "f1", "x"]]
    assert len([b for b in out if isinstance(b, CancelBatch)]) == 1


def test_a_set_of_as_many_legs_as_a_post_holds_goes_in_one():
    h = Harness()
    for t in legs("full", 15):
        h.router.take(t, 0.0)
    out = h.step(0.0)
    assert [len(b.orders) for b in out] == [15]


def test_a_budget_of_one_order_still_serves_a_lone_take_ahead_of_a_set():
    h = Harness(place_cap=1)
    h.router.take(Take("x", Side.SELL, 300_000, 3 * U), 0.0, reducing=True)  # reducing: first in line
    for t in legs("g", 2):
        h.router.take(t, 0.0)
    out = h.step(0.0)
    assert [[o.token_id for o in b.orders] for b in out] == [["x"]]


def test_a_reducing_set_goes_ahead_of_what_does_not_reduce():
    h = Harness(place_cap=2)
    h.router.take(Take("x", Side.BUY, 300_000, 3 * U), 0.0)
    for t in legs("g", 2):
        h.router.take(t, 0.0, reducing=True)
    out = h.step(0.0)
    assert [[o.token_id for o in b.orders] for b in out] == [["e0", "e1"]]


def test_a_take_signing_refuses_is_gone_after_the_one_poll_that_tried_it():
    h = Harness()

    def refuse(req):
        if req.token_id == "bad":
            raise ValueError("cannot sign")
        return FakeSigned(f"0x{next(h.seq):04x}", req.price)

    h.router._sign = refuse
    h.router.take(Take("bad", Side.SELL, 300_000, 3 * U, OrderType.FAK), 0.0)
    with pytest.raises(ValueError):
        h.step(0.0)
    h.router.take(Take("good", Side.SELL, 300_000, 3 * U, OrderType.FAK), 1.0)
    assert [[o.token_id for o in b.orders] for b in h.step(1.0)] == [["good"]]  # not blocked behind it
    assert h.step(2.0) == []


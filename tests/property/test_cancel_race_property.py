"""Router and reconciler against a venue that owes them no ordering: requests on separate
connections reach it in any order, and its answers come back in any order.

Whatever the interleaving of requotes, places, cancels, acks, cancel results and order listings,
once everything is answered the bot's working orders are exactly the venue's open orders, and
that is the one order the last target asks for: no order lives at the venue untracked, none is
stacked, and none the venue holds is counted closed.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.intents import CancelOrder, Quote, QuoteTarget
from bot.execution.reconciler import Reconciler
from bot.execution.protocol import LookupOrder
from bot.execution.router import CancelBatch, PlaceBatch, Router
from bot.venue.enums import Side

TOK = "tok"
U = 1_000_000
PRICES = (400_000, 410_000, 420_000)


class Unlimited:
    def delay(self, n, now):
        return 0.0

    def try_take(self, n, now):
        return True

    def take_up_to(self, n, now):
        return n

    def available(self, now):
        return 10**9


class Signed:
    def __init__(self, h: str) -> None:
        self.hash = h


class World:
    """One bot (router + reconciler) and a venue joined by unordered request and answer queues."""

    def __init__(self) -> None:
        self.rec = Reconciler()
        self.n = 0

        def sign(req):
            self.n += 1
            return Signed(f"0x{self.n:04x}")

        u = Unlimited()
        self.router = Router(self.rec.orders, sign, place_throttle=u, cancel_throttle=u)
        self.now = 0.0
        self.live: dict[str, int] = {}  # venue: open order id -> price
        self.seen: set[str] = set()  # venue: every hash it ever took
        self.requests: list[tuple] = []  # on the wire to the venue
        self.answers: list[tuple] = []  # on the wire back to the bot

    # --- bot ----------------------------------------------------------------------------
    def tick(self) -> None:
        self.now += 0.01

    def target(self, price: int | None) -> None:
        quotes = () if price is None else (Quote(TOK, Side.BUY, price, 10 * U),)
        self.router.set_target(QuoteTarget(TOK, quotes))
        self.poll()

    def poll(self) -> None:
        for batch in self.router.poll(self.now):
            if isinstance(batch, PlaceBatch):
                self.outputs(self.rec.on_places_sent(batch.orders, self.now))
                self.requests.append(("place", batch.order_ids, {o.order_id: o.price for o in batch.orders}))
            else:
                assert isinstance(batch, CancelBatch)
                self.outputs(self.rec.on_cancels_sent(batch.order_ids, self.now))
                self.requests.append(("cancel", batch.order_ids))

    def outputs(self, out) -> None:
        for x in out:
            if isinstance(x, CancelOrder):
                self.router.cancel(x.order_id)
            elif isinstance(x, LookupOrder):
                self.requests.append(("lookup", x.order_id))

    def ask_listing(self) -> None:
        self.requests.append(("list", self.now))

    def deliver(self, i: int) -> None:
        kind, *rest = self.answers.pop(i)
        if kind == "acks":
            ids, results = rest
            self.outputs(self.rec.on_acks(ids, results, self.now))
        elif kind == "cancel":
            ids, result = rest
            self.outputs(self.rec.on_cancel_result(result, self.now, requested=ids))
        elif kind == "listing":
            items, as_of = rest
            self.outputs(self.rec.on_open_orders(items, self.now, as_of))
        else:
            oid, found = rest
            self.outputs(self.rec.on_order_lookup(oid, found, self.now))
        self.poll()

    # --- venue --------------------------------------------------------------------------
    def process(self, i: int) -> None:
        kind, *rest = self.requests.pop(i)
        if kind == "place":
            ids, prices = rest
            results = []
            for oid in ids:
                if oid in self.seen:
                    results.append({"success": False, "errorMsg": "duplicate order", "orderID": "", "status": ""})
                else:
                    self.seen.add(oid)
                    self.live[oid] = prices[oid]
                    results.append({"success": True, "errorMsg": "", "orderID": oid, "status": "live"})
            self.answers.append(("acks", ids, results))
        elif kind == "cancel":
            (ids,) = rest
            canceled = [i for i in ids if self.live.pop(i, None) is not None]
            not_canceled = {i: "order not found" for i in ids if i not in canceled}
            self.answers.append(("cancel", ids, {"canceled": canceled, "not_canceled": not_canceled}))
        elif kind == "list":
            (as_of,) = rest
            self.answers.append(("listing", [self.record(o) for o in self.live], as_of))
        else:
            (oid,) = rest
            self.answers.append(("lookup", oid, self.record(oid) if oid in self.live else None))

    def record(self, oid: str) -> dict:
        return {"id": oid, "asset_id": TOK, "market": "0xm", "side": "BUY", "price": str(self.live[oid] / U),
                "original_size": "10", "size_matched": "0", "status": "LIVE", "associate_trades": None}

    # --- the end ------------------------------------------------------------------------
    def settle(self) -> None:
        """Answer everything, in order, until nothing is on the wire, letting paced cancels retry."""
        for _ in range(50):
            while self.requests or self.answers:
                if self.requests:
                    self.process(0)
                if self.answers:
                    self.deliver(0)
                self.tick()
            self.now += 10.0  # past any cancel pacing
            self.poll()
            if not self.requests and not self.answers:
                return
        raise AssertionError("the bot never came to rest")


step = st.one_of(
    st.tuples(st.just("target"), st.sampled_from(PRICES + (None,))),
    st.tuples(st.just("process"), st.integers(0, 20)),
    st.tuples(st.just("deliver"), st.integers(0, 20)),
    st.tuples(st.just("list"), st.just(0)),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(step, min_size=1, max_size=60), st.sampled_from(PRICES + (None,)))
def test_after_any_interleaving_the_bot_tracks_exactly_what_the_venue_holds(steps, last):
    w = World()
    for kind, arg in steps:
        w.tick()
        if kind == "target":
            w.target(arg)
        elif kind == "process" and w.requests:
            w.process(arg % len(w.requests))
        elif kind == "deliver" and w.answers:
            w.deliver(arg % len(w.answers))
        elif kind == "list":
            w.ask_listing()
    w.target(last)
    w.settle()
    working = {o.order_id for o in w.rec.orders.working()}
    assert working == set(w.live), (working, w.live)
    expected = [] if last is None else [last]
    assert sorted(w.live.values()) == expected

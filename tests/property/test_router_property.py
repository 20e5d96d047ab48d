"""Router properties under any flood of targets and takes, with tight throttles."""

from __future__ import annotations

import itertools
from collections import Counter

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.core.intents import Quote, QuoteTarget, Take
from bot.execution.reconciler import Reconciler
from bot.execution.router import CancelBatch, OrderRequest, PlaceBatch, Router, RouterConfig
from bot.venue.enums import Side
from bot.venue.throttle import RateWindow, Throttle

U = 1_000_000
TOKENS = ("a", "b", "c")
WINDOWS = (RateWindow(7, 1.0), RateWindow(20, 5.0))  # burst + sustained, small to force pressure
ROUTE = (RateWindow(4, 1.0),)


class FakeSigned(msgspec.Struct, frozen=True):
    hash: str


quote_st = st.builds(
    lambda tok, side, tick, size: Quote(tok, side, tick * 10_000, size * U),
    st.just("x"), st.sampled_from(Side), st.integers(1, 6), st.integers(1, 3),
)


def target_st(token: str):
    return st.tuples(
        st.lists(quote_st, max_size=8).map(lambda qs: QuoteTarget(token, tuple(
            Quote(token, q.side, q.price, q.size) for q in qs))),
        st.booleans(),
    )


step_st = st.tuples(
    st.floats(0.0, 1.5),  # time advance
    st.lists(st.sampled_from(TOKENS).flatmap(target_st), max_size=4),
    st.lists(st.tuples(st.sampled_from(TOKENS), st.booleans()), max_size=2),  # takes
    st.booleans(),  # the venue's answer to the step's cancels names none of them (left standing: paced)
)


def windows_respected(log: list[tuple[float, int]], windows) -> bool:
    for w in windows:
        for i, (t0, _) in enumerate(log):
            if sum(n for t, n in log[i:] if t < t0 + w.seconds) > w.capacity:
                return False
    return True


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step_st, min_size=1, max_size=25), st.booleans())
def test_router_converges_and_never_exceeds_limits(steps, per_order):
    rec = Reconciler()
    seq = itertools.count()

    def sign(req: OrderRequest) -> FakeSigned:
        return FakeSigned(f"0x{next(seq):05x}")

    router = Router(
        rec.orders, sign,
        place_throttle=Throttle(list(WINDOWS)), cancel_throttle=Throttle(list(WINDOWS)),
        route_throttles=(Throttle(list(ROUTE)),), config=RouterConfig(count_per_order=per_order),
    )
    place_log: list[tuple[float, int]] = []
    cancel_log: list[tuple[float, int]] = []
    route_log: list[tuple[float, int]] = []

    def run(now: float) -> None:
        batches = router.poll(now)
        seen_place = False
        seen_normal = False
        current = router.targets()
        for b in batches:
            route_log.append((now, 1))
            if isinstance(b, CancelBatch):
                assert not seen_place, "cancels come before places"
                assert 1 <= len(b.order_ids) <= 3000
                cancel_log.append((now, len(b.order_ids) if per_order else 1))
                rec.on_cancels_sent(b.order_ids, now)
                answer = [] if standing else list(b.order_ids)
                rec.on_cancel_result({"canceled": answer, "not_canceled": {}}, now, b.order_ids)
            else:
                seen_place = True
                assert isinstance(b, PlaceBatch) and 1 <= len(b.orders) <= 15
                place_log.append((now, len(b.orders) if per_order else 1))
                for o in b.orders:
                    if o.order_type.is_market:
                        continue
                    # never a stale reprice: every quote placed is in the token's current target
                    assert any((q.side, q.price, q.size) == (o.side, o.price, o.size) for q in current[o.token_id].quotes)
                    # reducing orders before the others, within one poll
                    if o.reducing:
                        assert not seen_normal
                    else:
                        seen_normal = True
                rec.on_places_sent(b.orders, now)
                rec.on_acks(
                    b.order_ids,
                    [{"success": True, "errorMsg": "", "orderID": o.order_id,
                      "status": "matched" if o.order_type.is_market else "live"} for o in b.orders],
                    now,
                )

    now = 0.0
    standing = False
    for dt, targets, takes, standing in steps:
        now += dt
        for tgt, red in targets:
            router.set_target(tgt, red)
        for tok, red in takes:
            router.take(Take(tok, Side.BUY, 500_000, U), now, red)
        run(now)
    # drain: the router reports when it can go on; follow it until nothing is left
    standing = False
    for _ in range(500):
        t = router.next_ready(now)
        wake = router.wakeup(now)
        if t is None:
            # nothing to send now: a wake-up, if any, is a paced cancel's, strictly later
            assert wake is None or wake > now
            if wake is None:
                break
            now = wake
            run(now)
            continue
        assert t >= now and wake == t
        now = max(now, t)
        run(now)
    assert router.next_ready(now) is None and router.wakeup(now) is None
    for tok, tgt in router.targets().items():
        want = Counter((q.side, q.price, q.size) for q in tgt.quotes if q.size > 0)
        have = Counter((o.side, o.price, o.remaining) for o in rec.orders.working(tok))
        assert have == want
    assert windows_respected(place_log, WINDOWS)
    assert windows_respected(cancel_log, WINDOWS)
    assert windows_respected(route_log, ROUTE)


@settings(max_examples=60, deadline=None)
@given(st.lists(quote_st, min_size=1, max_size=10), st.lists(quote_st, max_size=10))
def test_matching_orders_are_kept_across_retargets(first, second):
    rec = Reconciler()
    seq = itertools.count()
    router = Router(
        rec.orders, lambda req: FakeSigned(f"0x{next(seq):05x}"),
        place_throttle=Throttle([RateWindow(1000, 1.0)]), cancel_throttle=Throttle([RateWindow(1000, 1.0)]),
    )

    def settle(now):
        for b in router.poll(now):
            if isinstance(b, CancelBatch):
                rec.on_cancels_sent(b.order_ids, now)
                rec.on_cancel_result({"canceled": list(b.order_ids)}, now)
            else:
                rec.on_places_sent(b.orders, now)
                rec.on_acks(b.order_ids, [{"success": True, "errorMsg": "", "orderID": i, "status": "live"}
                                          for i in b.order_ids], now)

    tok = "x"
    router.set_target(QuoteTarget(tok, tuple(first)))
    settle(0.0)
    before = {o.order_id: (o.side, o.price, o.remaining) for o in rec.orders.working(tok)}
    router.set_target(QuoteTarget(tok, tuple(second)))
    settle(1.0)
    settle(1.1)  # a quote at the price of an order being cancelled goes once that cancel is answered
    after = {o.order_id: (o.side, o.price, o.remaining) for o in rec.orders.working(tok)}
    # as many old orders survive as the overlap of the two multisets allows
    overlap = Counter(before.values()) & Counter((q.side, q.price, q.size) for q in second)
    survivors = [oid for oid in after if oid in before]
    assert len(survivors) == sum(overlap.values())
    assert Counter(after.values()) == Counter((q.side, q.price, q.size) for q in second)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.floats(0.0, 3.0), st.lists(st.sampled_from(TOKENS).flatmap(target_st), max_size=2),
                          st.booleans()), min_size=1, max_size=30))
def test_an_idle_router_has_nothing_a_fresh_plan_would_find(steps):
    """``idle`` answers from counters alone; whenever it says so, a plan made afresh (nothing
    known, ``invalidate``) finds no work either, with cancels answered late (places held behind
    them) and cancels paced."""
    rec = Reconciler()
    seq = itertools.count()
    router = Router(rec.orders, lambda req: FakeSigned(f"0x{next(seq):05x}"),
                    place_throttle=Throttle(list(WINDOWS)), cancel_throttle=Throttle(list(WINDOWS)))
    in_flight: list[str] = []
    now = 0.0
    for dt, targets, answer in steps:
        now += dt
        for tgt, red in targets:
            router.set_target(tgt, red)
        if answer and in_flight:  # the venue answers the cancels sent so far
            rec.on_cancel_result({"canceled": in_flight}, now)
            in_flight = []
        if router.idle(now):
            assert router.poll(now) == []
            router.invalidate()
            assert router.next_ready(now) is None
            continue
        for b in router.poll(now):
            if isinstance(b, CancelBatch):
                rec.on_cancels_sent(b.order_ids, now)
                in_flight += b.order_ids
            else:
                rec.on_places_sent(b.orders, now)
                rec.on_acks(b.order_ids, [{"success": True, "errorMsg": "", "orderID": i, "status": "live"}
                                          for i in b.order_ids], now)


from bot.venue.units import LOT  # noqa: E402
off_lot_quote_st = st.builds(
    lambda side, tick, size: Quote("x", side, tick * 10_000, size if side is Side.SELL else size // LOT * LOT + LOT),
    st.sampled_from(Side), st.integers(1, 6), st.integers(1, 3 * U),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(off_lot_quote_st, min_size=1, max_size=8), st.integers(1, 50 * U), st.booleans())
def test_off_lot_sells_go_out_as_their_whole_lots_and_stay(quotes, amount, reducing):
    """A SELL of a 6-decimal holding (the whole of an off-lot position) rests as its whole lots, a
    quote under one lot is dropped, and the orders placed are kept as the same target comes again
    (no churn against the venue's lots); a SELL take goes out as its whole lots, or not at all."""
    rec = Reconciler()
    seq = itertools.count()
    sent: list = []

    def sign(req: OrderRequest) -> FakeSigned:
        sent.append(req)
        return FakeSigned(f"0x{next(seq):05x}")

    router = Router(rec.orders, sign, place_throttle=Throttle([RateWindow(1000, 1.0)]),
                    cancel_throttle=Throttle([RateWindow(1000, 1.0)]))

    def settle(now: float) -> list:
        batches = router.poll(now)
        for b in batches:
            if isinstance(b, CancelBatch):
                rec.on_cancels_sent(b.order_ids, now)
                rec.on_cancel_result({"canceled": list(b.order_ids)}, now)
            else:
                rec.on_places_sent(b.orders, now)
                rec.on_acks(b.order_ids, [{"success": True, "errorMsg": "", "orderID": o.order_id,
                                           "status": "matched" if o.order_type.is_market else "live"}
                                          for o in b.orders], now)
        return batches

    whole = [(q.side, q.price, q.size - q.size % LOT) for q in quotes]
    flags = tuple(reducing for _ in quotes)
    router.set_target(QuoteTarget("x", tuple(quotes)), flags)
    settle(0.0)
    settle(0.1)
    assert all(r.size % LOT == 0 for r in sent)
    want = Counter(w for w in whole if w[2] > 0)
    assert Counter((o.side, o.price, o.remaining) for o in rec.orders.working("x")) == want
    assert all(o.reducing is reducing for o in rec.orders.working("x"))
    n = len(sent)
    router.set_target(QuoteTarget("x", tuple(quotes)), flags)
    assert settle(0.2) == [] and len(sent) == n  # the same target again: nothing to do
    router.take(Take("y", Side.SELL, 400_000, amount), 0.3, reducing)
    settle(0.3)
    takes = [r for r in sent[n:] if r.token_id == "y"]
    if amount >= LOT:
        assert [(r.amount, r.size, r.reducing) for r in takes] == [(amount - amount % LOT,) * 2 + (reducing,)]
    else:
        assert takes == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.integers(1, 8), st.booleans(), st.booleans()), min_size=1, max_size=6),
    st.lists(st.integers(0, 6), min_size=1, max_size=4),
    st.integers(2, 15), st.integers(1, 30),
)
def test_every_set_goes_whole_in_one_post_or_not_at_all(sets, quotes_per_step, max_batch, cap):
    """Sets of takes (some reducing) among quotes (some reducing), under a tight budget and any batch
    size: each set's legs are either all in one PlaceBatch, or none of them is ever sent."""
    rec = Reconciler()
    seq = itertools.count()
    router = Router(rec.orders, lambda req: FakeSigned(f"0x{next(seq):05x}"),
                    place_throttle=Throttle([RateWindow(cap, 1.0)]), cancel_throttle=Throttle([RateWindow(50, 1.0)]),
                    config=RouterConfig(max_batch=max_batch, take_ttl=100.0))
    group_of: dict[str, str] = {}
    size_of: dict[str, int] = {}
    for n, (legs, reducing, _) in enumerate(sets):
        for i in range(legs):
            token = f"s{n}l{i}"
            group_of[token] = f"g{n}"
            router.take(Take(token, Side.BUY, 300_000, 3 * U, group=f"g{n}"), 0.0, reducing)
        size_of[f"g{n}"] = legs
    sent: list[list[str]] = []
    for step, q in enumerate(quotes_per_step * 3):
        now = step * 0.4
        if q:
            router.set_target(QuoteTarget("q", tuple(Quote("q", Side.BUY, (10 + i) * 10_000, U) for i in range(q))),
                              bool(step % 2))
        for b in router.poll(now):
            if isinstance(b, PlaceBatch):
                rec.on_places_sent(b.orders, now)
                rec.on_acks(b.order_ids, [{"success": True, "errorMsg": "", "orderID": i, "status": "live"}
                                          for i in b.order_ids], now)
                sent.append([o.token_id for o in b.orders])
        router.sent()
    for group, legs in size_of.items():
        posts = [[t for t in batch if group_of.get(t) == group] for batch in sent]
        posts = [p for p in posts if p]
        assert posts == [] or (len(posts) == 1 and len(posts[0]) == legs), (group, posts)
        if legs > max_batch:
            assert posts == []  # it can never go in one POST

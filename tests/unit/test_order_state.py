"""Own order state machine and the views risk reads."""

from __future__ import annotations

import pytest

from bot.execution.orders import TRANSITIONS, OrderState, OrderStore, OwnOrder, can_transition
from bot.venue.enums import OrderType, Side

S = OrderState
U = 1_000_000


def order(oid="a", token="t", side=Side.BUY, price=400_000, size=10 * U, state=S.PENDING_SUBMIT, **kw):
    return OwnOrder(oid, token, side, price, size, state=state, **kw)


def test_terminal_states_never_move():
    """FILLED is final; CANCELED only gives way to FILLED (fills of its whole size, read after a
    cancel's "already canceled or matched" closed it), never to a working state."""
    assert TRANSITIONS[S.FILLED] == frozenset()
    assert TRANSITIONS[S.CANCELED] == frozenset({S.FILLED})
    for t in (S.FILLED, S.CANCELED):
        for s in S:
            assert can_transition(t, s) == (s is t or (t is S.CANCELED and s is S.FILLED))


def test_happy_path_and_refused_moves():
    store = OrderStore()
    o = store.add(order())
    assert store.transition(o, S.LIVE, 1.0)
    assert store.transition(o, S.PARTIALLY_FILLED, 2.0)
    assert not store.transition(o, S.LIVE, 3.0)  # stale event cannot roll back
    assert not store.transition(o, S.PENDING_SUBMIT, 3.0)
    assert store.transition(o, S.FILLED, 4.0)
    assert not store.transition(o, S.CANCELED, 5.0)
    assert o.state is S.FILLED and o.updated_at == 4.0


def test_unknown_is_resolved_not_resent_blindly():
    assert can_transition(S.PENDING_SUBMIT, S.UNKNOWN)
    for s in (S.LIVE, S.REJECTED, S.FILLED, S.CANCELED, S.PENDING_SUBMIT):
        assert can_transition(S.UNKNOWN, s)


def test_pending_cancel_remembers_where_it_came_from():
    store = OrderStore()
    o = store.add(order(state=S.LIVE))
    assert store.transition(o, S.PENDING_CANCEL, 1.0)
    assert o.before_cancel is S.LIVE
    assert store.transition(o, S.LIVE, 2.0)  # cancel refused
    assert o.before_cancel is None


def test_rejection_yields_to_venue_evidence():
    assert can_transition(S.REJECTED, S.LIVE)
    assert not can_transition(S.REJECTED, S.PENDING_SUBMIT)


def test_remaining_and_reserved():
    o = order(state=S.PARTIALLY_FILLED, filled=3 * U)
    assert o.remaining == 7 * U
    assert o.reserved() == 7 * 400_000  # USDC units for 7 shares at 0.40
    o.venue_matched = 5 * U  # venue counted more than our fills so far
    assert o.remaining == 5 * U
    s = order(side=Side.SELL, state=S.LIVE)
    assert s.reserved() == 10 * U  # shares
    o.state = S.CANCELED
    assert o.remaining == 0 and o.reserved() == 0


def test_store_views():
    store = OrderStore()
    store.add(order("a", "t1", state=S.LIVE))
    store.add(order("b", "t1", side=Side.SELL, price=600_000, state=S.PENDING_SUBMIT))
    store.add(order("c", "t2", state=S.CANCELED))
    store.add(order("d", "t2", state=S.UNKNOWN, order_type=OrderType.GTC))
    assert [o.order_id for o in store.open_orders("t1")] == ["a", "b"]
    assert [o.order_id for o in store.working()] == ["a", "b", "d"]
    assert store.reserved_notional("t1") == 4 * U
    assert store.reserved_notional() == 8 * U
    assert store.reserved_shares("t1") == 10 * U
    assert sorted(store.tokens()) == ["t1", "t2"]
    assert store.add(order("a", "t9")) is store.get("a")  # ids are unique: first one stays


def test_forget_closed_keeps_working_orders():
    store = OrderStore()
    store.add(order("a", state=S.LIVE))
    c = store.add(order("c", state=S.LIVE))
    store.transition(c, S.CANCELED, 5.0)
    assert store.forget_closed(before=10.0) == 1
    assert "c" not in store and "a" in store


@pytest.mark.parametrize("state", list(S))
def test_every_state_has_a_transition_row(state):
    assert state in TRANSITIONS


def test_working_index_follows_transitions_and_keeps_age_order():
    store = OrderStore()
    a = store.add(order("a", "t1", state=S.LIVE))
    b = store.add(order("b", "t1", state=S.PENDING_SUBMIT))
    c = store.add(order("c", "t2", state=S.LIVE))
    store.add(order("d", "t1", state=S.CANCELED))  # arrives closed: never working
    assert [o.order_id for o in store.working()] == ["a", "b", "c"]
    assert store.transition(b, S.REJECTED, 1.0)
    assert [o.order_id for o in store.working("t1")] == ["a"]
    assert [o.order_id for o in store.working()] == ["a", "c"]
    # the venue shows the rejected order after all: it comes back in its age place
    assert store.transition(b, S.LIVE, 2.0)
    assert [o.order_id for o in store.working("t1")] == ["a", "b"]
    assert [o.order_id for o in store.working()] == ["a", "b", "c"]
    assert store.transition(a, S.PENDING_CANCEL, 3.0)  # still working while the cancel is out
    assert [o.order_id for o in store.working("t1")] == ["a", "b"]
    assert store.transition(a, S.CANCELED, 4.0) and store.transition(c, S.FILLED, 4.0)
    assert [o.order_id for o in store.working()] == ["b"] and store.working("t2") == []
    assert store.tokens() == ["t1"]
    assert store.forget_closed(before=10.0) == 3
    assert [o.order_id for o in store.working()] == ["b"] and len(store) == 1


def test_working_index_matches_a_full_scan_under_any_transitions():
    import random

    rng = random.Random(7)
    store = OrderStore()
    states = list(S)
    for i in range(400):
        if i % 3 == 0 or len(store) == 0:
            store.add(order(f"o{i}", rng.choice(["t1", "t2", "t3"]), state=rng.choice(states)))
        else:
            o = rng.choice(list(store))
            store.transition(o, rng.choice(states), float(i))
        if i % 50 == 49:
            store.forget_closed(before=float(i - 20))
        for token in (None, "t1", "t2", "t3"):
            scan = [o for o in store if o.state.working and (token is None or o.token_id == token)]
            assert store.working(token) == scan


def test_forget_closed_drops_exactly_the_orders_closed_before_the_horizon():
    import random

    rng = random.Random(11)
    store = OrderStore()
    states = list(S)
    for i in range(600):
        if i % 3 == 0 or len(store) == 0:
            store.add(order(f"o{i}", state=rng.choice(states), updated_at=float(rng.randint(0, i))))
        elif i % 7 == 0:
            o = rng.choice(list(store))
            store.reopen(o, S.LIVE, float(i))
        else:
            store.transition(rng.choice(list(store)), rng.choice(states), float(i))
        if i % 40 == 39:
            before = float(i - rng.randint(0, 60))
            due = {o.order_id for o in store if o.state.terminal and o.updated_at < before}
            kept = {o.order_id for o in store} - due
            assert store.forget_closed(before) == len(due)
            assert {o.order_id for o in store} == kept


class _Watched(OwnOrder):
    """An order that counts how often its state is read."""

    __slots__ = ()
    reads = 0

    def __getattribute__(self, name):
        if name == "state":
            type(self).reads += 1
        return object.__getattribute__(self, name)


def test_forget_closed_looks_only_at_what_it_forgets():
    store = OrderStore()
    old = store.add(order("old", state=S.LIVE))
    store.transition(old, S.CANCELED, 1.0)
    for i in range(200):
        o = store.add(_Watched(f"w{i}", "t", Side.BUY, 400_000, 10 * U, state=S.LIVE))
        store.transition(o, S.CANCELED, 100.0)
    _Watched.reads = 0
    assert store.forget_closed(before=50.0) == 1
    assert _Watched.reads == 0  # the orders closed after the horizon are not even looked at
    assert len(store) == 200


def test_the_allowed_moves_are_exactly_these():
    allowed = {
        S.PENDING_SUBMIT: {S.LIVE, S.PARTIALLY_FILLED, S.FILLED, S.REJECTED, S.UNKNOWN, S.CANCELED, S.PENDING_CANCEL},
        S.UNKNOWN: {S.PENDING_SUBMIT, S.LIVE, S.PARTIALLY_FILLED, S.FILLED, S.REJECTED, S.CANCELED, S.PENDING_CANCEL},
        S.LIVE: {S.PARTIALLY_FILLED, S.FILLED, S.CANCELED, S.PENDING_CANCEL},
        S.PARTIALLY_FILLED: {S.FILLED, S.CANCELED, S.PENDING_CANCEL},
        S.PENDING_CANCEL: {S.CANCELED, S.FILLED, S.LIVE, S.PARTIALLY_FILLED, S.PENDING_SUBMIT},
        S.FILLED: set(),
        S.CANCELED: {S.FILLED},
        S.REJECTED: {S.LIVE, S.PARTIALLY_FILLED, S.FILLED, S.CANCELED},
    }
    for old in S:
        for new in S:
            expected = new in allowed[old]
            store = OrderStore()
            o = store.add(order(state=old))
            assert can_transition(old, new) == (expected or new is old)
            assert store.transition(o, new, 1.0) == expected, (old, new)
            assert o.state is (new if expected else old)


def test_flags_of_each_state():
    assert {s for s in S if s.terminal} == {S.FILLED, S.CANCELED, S.REJECTED}
    assert {s for s in S if s.working} == set(S) - {S.FILLED, S.CANCELED, S.REJECTED}
    assert {s for s in S if s.quoting} == {S.PENDING_SUBMIT, S.UNKNOWN, S.LIVE, S.PARTIALLY_FILLED}


def test_an_order_built_with_defaults_and_with_every_field():
    o = OwnOrder("a", "t", Side.BUY, 400_000, U)
    assert (o.order_type, o.post_only, o.expiration, o.state, o.filled, o.venue_matched) == (
        OrderType.GTC, False, 0, S.PENDING_SUBMIT, 0, 0)
    assert (o.trade_ids, o.reducing, o.signed, o.sent_at, o.updated_at, o.reason, o.market) == (
        [], False, None, 0.0, 0.0, "", "")
    assert o.before_cancel is None and o.answered_at == 0.0 and o.cancel_blind is False
    assert type(o.sent_at) is float and type(o.answered_at) is float
    signed = object()
    o = OwnOrder("b", "t", Side.SELL, 600_000, U, order_type=OrderType.GTD, post_only=True, expiration=99,
                 state=S.LIVE, filled=2, venue_matched=3, trade_ids=("x",), reducing=True, signed=signed,
                 sent_at=1.5, updated_at=2.5, reason="why", market="m")
    assert (o.order_type, o.post_only, o.expiration, o.state, o.filled, o.venue_matched) == (
        OrderType.GTD, True, 99, S.LIVE, 2, 3)
    assert (o.trade_ids, o.reducing, o.signed, o.sent_at, o.updated_at, o.reason, o.market) == (
        ["x"], True, signed, 1.5, 2.5, "why", "m")


def test_an_order_read_back_from_strings_holds_the_members():
    o = OwnOrder("a", "t", "SELL", 400_000, U, order_type="FOK", state="LIVE")
    assert o.side is Side.SELL and o.order_type is OrderType.FOK and o.state is S.LIVE
    with pytest.raises(ValueError):
        OwnOrder("a", "t", "sideways", 400_000, U)
    assert repr(OwnOrder("0123456789abcdef", "t", Side.BUY, 400_000, U)) == (
        "OwnOrder(0123456789 t BUY 400000x1000000 PENDING_SUBMIT filled=0)")


def test_adding_a_known_id_keeps_the_known_order_and_its_fills():
    store = OrderStore()
    first = store.add(order("a", "t1", state=S.PARTIALLY_FILLED, filled=3 * U))
    seen = (store.revision, dict(store.versions), store.quoting_revision, dict(store.quoting_versions))
    again = store.add(order("a", "t2", state=S.LIVE))
    assert again is first and store.get("a") is first and first.filled == 3 * U
    assert len(store) == 1 and store.working() == [first] and store.working("t2") == []
    assert (store.revision, dict(store.versions), store.quoting_revision, dict(store.quoting_versions)) == seen


def test_reserved_shares_are_those_of_one_token():
    store = OrderStore()
    store.add(order("a", "t1", side=Side.SELL, size=3 * U, state=S.LIVE))
    store.add(order("b", "t2", side=Side.SELL, size=5 * U, state=S.LIVE))
    store.add(order("c", "t1", side=Side.BUY, size=7 * U, state=S.LIVE))
    assert store.reserved_shares("t1") == 3 * U and store.reserved_shares("t2") == 5 * U


def test_in_state_and_tokens_with_an_order_that_arrived_closed():
    store = OrderStore()
    store.add(order("a", "t1", state=S.LIVE))
    store.add(order("b", "t2", state=S.CANCELED))  # t2 never had a working order
    assert store.tokens() == ["t1"]
    assert [o.order_id for o in store.in_state(S.CANCELED, S.FILLED)] == ["b"]
    assert [o.order_id for o in store.in_state(S.LIVE)] == ["a"]


def test_change_counters_count_each_change():
    """``revision`` and ``versions`` count every change; the quoting ones only changes to what the
    diff reads (an order joining or leaving the quoting ones, or a resize)."""
    store = OrderStore()

    def counters():
        return store.revision, store.versions, store.quoting_revision, store.quoting_versions

    assert counters() == (0, {}, 0, {})
    a = store.add(order("a", "t1"))
    store.add(order("b", "t2", state=S.LIVE))
    store.add(order("c", "t1", state=S.CANCELED))
    assert counters() == (3, {"t1": 2, "t2": 1}, 3, {"t1": 2, "t2": 1})
    assert store.transition(a, S.LIVE, 1.0)  # quoting before and after: the diff reads the same
    assert counters() == (4, {"t1": 3, "t2": 1}, 3, {"t1": 2, "t2": 1})
    assert store.transition(a, S.PENDING_CANCEL, 2.0)  # leaves the quoting orders
    assert counters() == (5, {"t1": 4, "t2": 1}, 4, {"t1": 3, "t2": 1})
    assert not store.transition(a, S.PENDING_CANCEL, 3.0) and not store.transition(a, S.UNKNOWN, 3.0)
    assert counters() == (5, {"t1": 4, "t2": 1}, 4, {"t1": 3, "t2": 1})
    store.touch("t2")
    store.touch("t1", resized=False)
    store.touch("t3")
    assert counters() == (8, {"t1": 5, "t2": 2, "t3": 1}, 6, {"t1": 3, "t2": 2, "t3": 1})
    assert store.transition(a, S.CANCELED, 4.0)  # not quoting before nor after
    assert counters() == (9, {"t1": 6, "t2": 2, "t3": 1}, 6, {"t1": 3, "t2": 2, "t3": 1})
    assert store.reopen(a, S.LIVE, 5.0)
    assert counters() == (10, {"t1": 7, "t2": 2, "t3": 1}, 7, {"t1": 4, "t2": 2, "t3": 1})
    lone = OrderStore()
    assert lone.reopen(order("z", "t9", state=S.CANCELED), S.LIVE, 1.0)
    assert (lone.revision, lone.versions, lone.quoting_revision, lone.quoting_versions) == (1, {"t9": 1}, 1, {"t9": 1})


def test_leaving_a_pending_cancel_clears_what_the_cancel_left():
    store = OrderStore()
    o = store.add(order(state=S.LIVE))
    assert store.transition(o, S.PENDING_CANCEL, 1.0)
    o.cancel_blind = True
    assert store.transition(o, S.PARTIALLY_FILLED, 2.0)
    assert o.before_cancel is None and o.cancel_blind is False


def test_reopen_is_the_one_way_back_from_a_closed_state():
    store = OrderStore()
    a = store.add(order("a", state=S.LIVE))
    b = store.add(order("b", state=S.LIVE))
    assert not store.reopen(a, S.PARTIALLY_FILLED, 1.0)  # not closed: nothing to reopen
    assert store.transition(a, S.CANCELED, 1.0)
    for target in (S.FILLED, S.CANCELED, S.REJECTED, S.PENDING_CANCEL):
        assert not store.reopen(a, target, 2.0) and a.state is S.CANCELED
    a.before_cancel, a.cancel_blind = S.LIVE, True
    assert store.reopen(a, S.PARTIALLY_FILLED, 3.0) is True
    assert a.state is S.PARTIALLY_FILLED and a.updated_at == 3.0
    assert a.before_cancel is None and a.cancel_blind is False
    assert store.working("t") == [a, b] and store.working() == [a, b]  # back in its age place


def _reaches(obj, target, depth=0) -> bool:
    if obj is target:
        return True
    if depth > 4:
        return False
    if isinstance(obj, dict):
        return any(_reaches(v, target, depth + 1) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(_reaches(v, target, depth + 1) for v in obj)
    return False


def test_a_forgotten_order_is_held_nowhere_in_the_store():
    store = OrderStore()
    o = store.add(order("a", "t1", state=S.LIVE))
    store.add(order("b", "t1", state=S.LIVE))
    assert store.transition(o, S.CANCELED, 1.0)
    assert store.forget_closed(before=2.0) == 1
    assert not any(_reaches(getattr(store, name), o) for name in OrderStore.__slots__)


def test_an_order_closed_again_is_forgotten_by_its_last_closing():
    store = OrderStore()
    o = store.add(order("a", state=S.LIVE))
    assert store.transition(o, S.CANCELED, 1.0)
    assert store.reopen(o, S.LIVE, 2.0) and store.transition(o, S.FILLED, 10.0)
    assert store.forget_closed(before=10.0) == 0 and "a" in store
    assert store.forget_closed(before=10.5) == 1 and "a" not in store


def test_a_closed_order_leaves_the_working_index():
    """``working`` reads the index: an order closed through ``transition`` is out of it, as a
    state written behind the store's back afterwards shows."""
    store = OrderStore()
    closed = []
    for i, end in enumerate((S.CANCELED, S.FILLED, S.REJECTED)):
        o = store.add(order(f"o{i}", "t", state=S.LIVE if end is not S.REJECTED else S.PENDING_SUBMIT))
        assert store.transition(o, end, 1.0)
        closed.append(o)
    live = store.add(order("live", "t", state=S.LIVE))
    for o in closed:
        o.state = S.LIVE  # behind the store's back
    assert store.working("t") == [live] and store.working() == [live]


def test_the_last_orders_forgotten_stay_known_by_id_and_token():
    store = OrderStore(forgotten_kept=2)
    assert store.forgotten_kept == 2 and OrderStore().forgotten_kept == 100_000
    store.add(order("w", token="t0", state=S.LIVE))
    for i in range(4):  # closed at 1, 2, 3, 4
        o = store.add(order(f"c{i}", token=f"t{i}", state=S.LIVE))
        store.transition(o, S.CANCELED, float(i + 1))
    assert store.forget_closed(before=2.5) == 2
    assert [store.forgotten_token(i) for i in ("c0", "c1", "c2", "w", "x")] == ["t0", "t1", None, None, None]
    assert store.forget_closed(before=10.0) == 2  # two more: the oldest two leave the bound
    assert [store.forgotten_token(f"c{i}") for i in range(4)] == [None, None, "t2", "t3"]
    assert "c3" not in store and store.get("w").state is S.LIVE

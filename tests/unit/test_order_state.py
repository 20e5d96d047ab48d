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
    for t in (S.FILLED, S.CANCELED):
        assert TRANSITIONS[t] == frozenset()
        for s in S:
            assert can_transition(t, s) == (s is t)


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

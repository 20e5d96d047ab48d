"""Own order state: the life of every order this bot has sent, and the views risk reads.

Invariant: an order only moves along ``TRANSITIONS``; a terminal order (FILLED, CANCELED) never
comes back, except through ``OrderStore.reopen`` when the venue's own order listing shows it open
(the venue's records are the truth, and our reading that closed it was wrong); sizes are integer micro-units with ``0 <= filled`` and ``remaining = max(0, size -
max(filled, venue_matched))``. Only the reconciler calls the mutating methods of ``OrderStore``,
and once an order is in a store its state changes only through ``OrderStore.transition`` (its
state before ``add`` is its initial state), which keeps the store's working-order index exact.
"""

from __future__ import annotations

import enum
import heapq
from collections import OrderedDict
from typing import Any, Iterator

from bot.venue.enums import OrderType, Side
from bot.venue.units import notional


class OrderState(str, enum.Enum):
    PENDING_SUBMIT = "PENDING_SUBMIT"  # built and sent, no answer yet
    UNKNOWN = "UNKNOWN"  # send outcome unknown (timeout, 5xx, reset): resolve, never resend blindly
    LIVE = "LIVE"
    PARTIALLY_FILLED = "PARTIALLY_FILLED"
    PENDING_CANCEL = "PENDING_CANCEL"
    FILLED = "FILLED"
    CANCELED = "CANCELED"
    REJECTED = "REJECTED"

    terminal: bool  # FILLED, CANCELED, REJECTED: the order never comes back
    working: bool  # not terminal: it may rest on (or be about to reach) the book and reserves funds
    quoting: bool  # working and no cancel in flight: it can stand for a desired quote (the router's diff)


S = OrderState
_FILLED, _CANCELED, _REJECTED = S.FILLED, S.CANCELED, S.REJECTED
# Per-member flags are plain attributes, not properties: the order store and risk read them per order.
for _s in OrderState:
    _s.terminal = _s is _FILLED or _s is _CANCELED or _s is _REJECTED
    _s.working = not _s.terminal
    _s.quoting = _s.working and _s is not S.PENDING_CANCEL
_PENDING_CANCEL = S.PENDING_CANCEL
_EMPTY: dict[str, "OwnOrder"] = {}

TRANSITIONS: dict[OrderState, frozenset[OrderState]] = {
    S.PENDING_SUBMIT: frozenset(
        {S.LIVE, S.PARTIALLY_FILLED, S.FILLED, S.REJECTED, S.UNKNOWN, S.CANCELED, S.PENDING_CANCEL}
    ),
    S.UNKNOWN: frozenset(
        {S.PENDING_SUBMIT, S.LIVE, S.PARTIALLY_FILLED, S.FILLED, S.REJECTED, S.CANCELED, S.PENDING_CANCEL}
    ),
    S.LIVE: frozenset({S.PARTIALLY_FILLED, S.FILLED, S.CANCELED, S.PENDING_CANCEL}),
    S.PARTIALLY_FILLED: frozenset({S.FILLED, S.CANCELED, S.PENDING_CANCEL}),
    # a refused cancel puts the order back where it was
    S.PENDING_CANCEL: frozenset({S.CANCELED, S.FILLED, S.LIVE, S.PARTIALLY_FILLED, S.PENDING_SUBMIT}),
    S.FILLED: frozenset(),
    # the venue's answer to a cancel of an order that is no longer open ("already canceled or
    # matched") closes it as CANCELED before its fills are read; fills that match its whole size
    # then show what happened: it was FILLED
    S.CANCELED: frozenset({S.FILLED}),
    # a rejection is our reading of an ack; the venue showing the order (a resend raced the
    # original) wins over it
    S.REJECTED: frozenset({S.LIVE, S.PARTIALLY_FILLED, S.FILLED, S.CANCELED}),
}


def can_transition(old: OrderState, new: OrderState) -> bool:
    return new is old or new in TRANSITIONS[old]


class OwnOrder:
    """One own order. ``order_id`` is the signed order's hash, known before it is sent."""

    __slots__ = (
        "order_id", "token_id", "side", "price", "size", "order_type", "post_only", "expiration",
        "state", "filled", "venue_matched", "trade_ids", "reducing", "signed", "sent_at",
        "updated_at", "before_cancel", "reason", "market", "answered_at", "cancel_blind",
    )

    def __init__(
        self,
        order_id: str,
        token_id: str,
        side: Side,
        price: int,
        size: int,
        *,
        order_type: OrderType = OrderType.GTC,
        post_only: bool = False,
        expiration: int = 0,
        state: OrderState = OrderState.PENDING_SUBMIT,
        filled: int = 0,
        venue_matched: int = 0,
        trade_ids: tuple[str, ...] | list[str] = (),
        reducing: bool = False,
        signed: Any = None,
        sent_at: float = 0.0,
        updated_at: float = 0.0,
        reason: str = "",
        market: str = "",
    ) -> None:
        self.order_id = order_id
        self.token_id = token_id
        # members pass through as is; raw values are converted (and validated)
        self.side = side if type(side) is Side else Side(side)
        self.price = price
        self.size = size
        self.order_type = order_type if type(order_type) is OrderType else OrderType(order_type)
        self.post_only = post_only
        self.expiration = expiration
        self.state = state if type(state) is OrderState else OrderState(state)
        self.filled = filled
        self.venue_matched = venue_matched
        self.trade_ids: list[str] = list(trade_ids)
        self.reducing = reducing
        self.signed = signed
        self.sent_at = sent_at
        self.updated_at = updated_at
        self.before_cancel: OrderState | None = None
        self.reason = reason
        self.market = market
        # when the venue first showed it has the order (an accepted ack, an order event, a
        # listing or lookup); 0.0 until then, and for orders restored from a journal
        self.answered_at = 0.0
        # the cancel in flight left before the submit was answered: it may overtake the place,
        # so a "not found" answer to it proves nothing
        self.cancel_blind = False

    @property
    def matched(self) -> int:
        """Shares matched, by our fills or by the venue's count, whichever is further."""
        return max(self.filled, self.venue_matched)

    @property
    def remaining(self) -> int:
        if self.state.terminal:
            return 0
        f, v = self.filled, self.venue_matched  # ``matched``, inlined: risk and the diff read this
        r = self.size - (f if f >= v else v)
        return r if r > 0 else 0

    @property
    def is_working(self) -> bool:
        return self.state.working

    def reserved(self) -> int:
        """Funds this order holds: USDC units for a BUY, share units for a SELL."""
        rem = self.remaining
        return notional(self.price, rem) if self.side is Side.BUY else rem

    def __repr__(self) -> str:
        return (
            f"OwnOrder({self.order_id[:10]} {self.token_id} {self.side.value} {self.price}x{self.size}"
            f" {self.state.value} filled={self.filled})"
        )


class OrderStore:
    """All own orders by id, with the per-token views the router and risk read.

    Besides every order (``_orders``, by token in ``_by_token``) the store indexes the working
    (non-terminal) ones, globally and per token, both oldest first: ``add`` files an order by the
    state it arrives in and ``transition`` moves it in or out, so the hot reads (``working``) cost
    what is live, not what has closed since the last ``forget_closed``. Each closing (an order
    added terminal, or a transition to a terminal state) is also stamped in a heap by its time, so
    ``forget_closed`` costs what it forgets, not what the store holds. The last ``forgotten_kept``
    orders it forgot stay known by id and token (``forgotten_token``): a trade of one read late
    (a fill whose user event was lost) is still ours.
    """

    __slots__ = ("_orders", "_by_token", "_working", "_working_by_token", "versions", "revision", "_closings",
                 "_closing_seq", "quoting_versions", "quoting_revision", "_forgotten", "forgotten_kept")

    def __init__(self, forgotten_kept: int = 100_000) -> None:
        self._orders: dict[str, OwnOrder] = {}
        self._by_token: dict[str, dict[str, OwnOrder]] = {}
        self._working: dict[str, OwnOrder] = {}
        self._working_by_token: dict[str, dict[str, OwnOrder]] = {}
        # token -> a counter bumped by every add or state change of its orders: "has anything of
        # ours on this token changed since I last looked" (the router skips unchanged tokens)
        self.versions: dict[str, int] = {}
        self.revision = 0  # the same, for all tokens at once
        # token -> a counter bumped when the orders that can stand for a quote (``quoting``) change:
        # one joins or leaves them, or the size left of one moves (``touch``); a state change
        # among them (an ack) leaves it alone. What the router's diff reads changed iff it moved.
        self.quoting_versions: dict[str, int] = {}
        self.quoting_revision = 0  # the same, for all tokens at once
        # (updated_at when it closed, sequence, order): an order terminal now with ``updated_at < t``
        # has an entry stamped with that ``updated_at`` (older entries of it may remain: skipped)
        self._closings: list[tuple[float, int, OwnOrder]] = []
        self._closing_seq = 0
        # order id -> token of the orders ``forget_closed`` dropped, oldest first, at most ``forgotten_kept``
        self._forgotten: OrderedDict[str, str] = OrderedDict()
        self.forgotten_kept = forgotten_kept

    # --- reads -----------------------------------------------------------------------------
    def get(self, order_id: str) -> OwnOrder | None:
        return self._orders.get(order_id)

    def __contains__(self, order_id: object) -> bool:
        return order_id in self._orders

    def __iter__(self) -> Iterator[OwnOrder]:
        return iter(self._orders.values())

    def __len__(self) -> int:
        return len(self._orders)

    def forgotten_token(self, order_id: str) -> str | None:
        """The token of ``order_id`` if it is one of the last ``forgotten_kept`` orders
        ``forget_closed`` dropped, else None."""
        return self._forgotten.get(order_id)

    def working(self, token_id: str | None = None) -> list[OwnOrder]:
        """Non-terminal orders (on one token, or all), oldest first."""
        src = self._working if token_id is None else self._working_by_token.get(token_id, _EMPTY)
        # the index holds exactly the working orders; the state test only guards against a state
        # written behind ``transition``'s back
        return [o for o in src.values() if o.state.working]

    def open_orders(self, token_id: str) -> list[OwnOrder]:
        """What may rest on the book of ``token_id`` now (risk's view of open exposure)."""
        return self.working(token_id)

    def tokens(self) -> list[str]:
        """Tokens with working orders, in the order they were first seen."""
        wbt = self._working_by_token
        return [t for t in self._by_token if any(o.state.working for o in wbt.get(t, _EMPTY).values())]

    def in_state(self, *states: OrderState) -> list[OwnOrder]:
        return [o for o in self._orders.values() if o.state in states]

    def reserved_notional(self, token_id: str | None = None) -> int:
        """USDC units held by working BUY orders (on one token, or all)."""
        return sum(o.reserved() for o in self.working(token_id) if o.side is Side.BUY)

    def reserved_shares(self, token_id: str) -> int:
        """Share units of ``token_id`` held by working SELL orders."""
        return sum(o.reserved() for o in self.working(token_id) if o.side is Side.SELL)

    # --- writes (reconciler only) ----------------------------------------------------------
    def add(self, order: OwnOrder) -> OwnOrder:
        """File ``order`` under the state it has now; an id already known keeps the known order."""
        existing = self._orders.get(order.order_id)
        if existing is not None:
            return existing
        oid, token = order.order_id, order.token_id
        self.versions[token] = self.versions.get(token, 0) + 1
        self.quoting_versions[token] = self.quoting_versions.get(token, 0) + 1
        self.quoting_revision += 1
        self.revision += 1
        self._orders[oid] = order
        self._by_token.setdefault(token, {})[oid] = order
        if order.state.working:
            self._working[oid] = order
            self._working_by_token.setdefault(token, {})[oid] = order
        else:
            self._closed_at(order.updated_at, order)
        return order

    def transition(self, order: OwnOrder, new: OrderState, now: float) -> bool:
        """Move ``order`` to ``new`` if the state machine allows it; returns whether it changed."""
        old = order.state
        if new is old or not can_transition(old, new):
            return False
        if new is _PENDING_CANCEL:
            order.before_cancel = old
        elif old is _PENDING_CANCEL:
            order.before_cancel = None
            order.cancel_blind = False
        order.state = new
        order.updated_at = now
        token = order.token_id
        self.versions[token] = self.versions.get(token, 0) + 1
        if new.quoting is not old.quoting:
            self.quoting_versions[token] = self.quoting_versions.get(token, 0) + 1
            self.quoting_revision += 1
        self.revision += 1
        if new.terminal:
            self._closed_at(now, order)
            if not old.terminal:
                self._unindex(order)
        elif old.terminal:  # REJECTED -> LIVE...: the venue showed the order after all
            self._reindex(order.token_id)
        return True

    def touch(self, token_id: str, resized: bool = True) -> None:
        """An order of ``token_id`` changed in place: a fill moved its remaining size, or
        (``resized`` False) only what the diff does not read (a reason, its trades)."""
        self.versions[token_id] = self.versions.get(token_id, 0) + 1
        if resized:
            self.quoting_versions[token_id] = self.quoting_versions.get(token_id, 0) + 1
            self.quoting_revision += 1
        self.revision += 1

    def reopen(self, order: OwnOrder, state: OrderState, now: float) -> bool:
        """The venue lists ``order`` open although we hold it closed: it is ``state`` (LIVE or
        PARTIALLY_FILLED) again. The only way back from a terminal state; returns whether it moved."""
        if not order.state.terminal or state.terminal or state is _PENDING_CANCEL:
            return False
        order.state = state
        order.updated_at = now
        order.before_cancel = None
        order.cancel_blind = False
        self.versions[order.token_id] = self.versions.get(order.token_id, 0) + 1
        self.quoting_versions[order.token_id] = self.quoting_versions.get(order.token_id, 0) + 1
        self.quoting_revision += 1
        self.revision += 1
        if self._orders.get(order.order_id) is order:
            self._reindex(order.token_id)
        return True

    def forget_closed(self, before: float) -> int:
        """Drop terminal orders last updated before ``before`` (memory bound); returns how many.
        Each stays known by id and token (``forgotten_token``) among the last ``forgotten_kept``."""
        closings = self._closings
        orders = self._orders
        forgotten = self._forgotten
        n = 0
        while closings and closings[0][0] < before:
            o = heapq.heappop(closings)[2]
            oid = o.order_id
            # gone already, reopened, or closed again later (a later entry stands for it)
            if orders.get(oid) is not o or not o.state.terminal or not o.updated_at < before:
                continue
            del orders[oid]
            self._by_token[o.token_id].pop(oid, None)
            self._unindex(o)
            forgotten[oid] = o.token_id
            if len(forgotten) > self.forgotten_kept:
                forgotten.popitem(last=False)
            n += 1
        return n

    # --- index -----------------------------------------------------------------------------
    def _closed_at(self, stamp: float, order: OwnOrder) -> None:
        self._closing_seq += 1
        heapq.heappush(self._closings, (stamp, self._closing_seq, order))

    def _unindex(self, order: OwnOrder) -> None:
        oid = order.order_id
        if self._working.pop(oid, None) is not None:
            d = self._working_by_token.get(order.token_id)
            if d is not None:
                d.pop(oid, None)

    def _reindex(self, token_id: str) -> None:
        """Rebuild the working index from the store (rare: an order came back to life), so it
        stays oldest first."""
        self._working = {oid: o for oid, o in self._orders.items() if o.state.working}
        self._working_by_token[token_id] = {
            oid: o for oid, o in self._by_token.get(token_id, _EMPTY).items() if o.state.working
        }

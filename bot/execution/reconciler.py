"""The only writer of own order state: acks, cancel results, user-stream events, REST pages.

Invariants (the races are named where they are guarded):

- each fill ``(trade_id, order_id)`` is emitted exactly once, at first sight, whatever the order,
  duplication or source (user stream, ``/data/trades``, restart) of the trade's records;
- a trade that ends ``FAILED`` has each of its fills reversed exactly once; a trade's status only
  moves forward (MATCHED < RETRYING < MINED < CONFIRMED|FAILED), so a late, stale record never
  rolls it back, and the last ``SettlementUpdate`` of a trade is its final status;
- *fill before ack*: a trade naming an order we do not know yet is held and matched as soon as
  the order becomes known (sent or adopted: an ack or a venue record only ever names an order
  known already);
- *fill after forget*: a trade naming an own order closed and dropped from memory since
  (``OrderStore.forget_closed``; its user event lost, read later from ``/data/trades``) is still
  ours: the store remembers the last orders it forgot, and the fill is booked (the order stays closed);
- *unknown submit outcome* (timeout, 5xx, reset): the order goes UNKNOWN and is resolved by a
  lookup; it is resent (the same signed order, same hash) only when the venue shows it absent;
- *cancel vs place*: a cancel sent before the order's submit was answered may reach the venue
  first (separate connections, no ordering promise), so its "not found" proves nothing, whether
  it comes back before the ack or after it: the order goes back to what we know of it (the ack,
  or a lookup, decides) and is never closed on that answer;
- *an order is terminal only on evidence*: an accepted cancel, a user-channel event, a lookup, a
  trade, or its absence from a complete ``/data/orders`` listing asked for after the venue had
  shown it the order (``answered_at``); an order the listing shows open that we do not know, or
  that we had closed before the listing was asked for, is an orphan, handled by ``orphan_policy``;
- fills only ever come from trades: acks and order events move states, never positions;
- *a record we cannot book*: a trade record that cannot be read, or a leg of ours (or maybe
  ours) whose amounts cannot be read, never stops the records after it: it is kept in
  ``unbooked`` with the tokens it may move (told once, as ``TradeUnbooked``), the trades cursor
  is held before it so each read tries it again (the same bytes read the same: what can change is
  the venue's record, or the bot reading it), and it leaves ``unbooked`` (``TradeBooked``) once a
  record of it books; an unreadable leg of another trader's order is no concern of ours;
- what is remembered stays bounded: a settled trade is forgotten once no source can bring its
  records back as news (``forget_settled``), so its fills are still never emitted twice.

Plain object, no clock, no I/O: every method takes ``now`` and returns the events for the core
and the requests (``LookupOrder``, ``ResendOrder``, ``CancelOrder``, ``FetchTrades``) for the shell.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from typing import Any, Iterable, Protocol, Sequence

import msgspec

from bot.core.events import Fill, FillReversal, SettlementUpdate
from bot.core.intents import CancelOrder
from bot.execution.orders import OrderState, OrderStore, OwnOrder
from bot.execution.protocol import FetchTrades, LookupOrder, ResendOrder, TradeBooked, TradeUnbooked
from bot.execution.records import (
    OrderRecord,
    OrderResult,
    RecordError,
    TradeRecord,
    cancel_result,
    order_record,
    order_result,
    trade_names,
    trade_record,
)
from bot.venue.enums import OrderType, Side, TradeStatus, is_canceled_status
from bot.venue.fees import booked_fee, record_schedule
from bot.venue.pagination import cursor_offset
from bot.venue.units import UNIT, fill_cash, makers_cash

S = OrderState
_PENDING_SUBMIT, _PENDING_CANCEL, _UNKNOWN = S.PENDING_SUBMIT, S.PENDING_CANCEL, S.UNKNOWN  # bound once

TRADES_CURSOR = "trades"
_END_CURSORS = ("", "LTE=")

_RANK = {
    TradeStatus.MATCHED: 0,
    TradeStatus.MATCHED_NOT_BROADCASTED: 0,
    TradeStatus.RETRYING: 1,
    TradeStatus.MINED: 2,
    TradeStatus.CONFIRMED: 3,
    TradeStatus.FAILED: 3,
}


def advance_status(old: TradeStatus, new: TradeStatus) -> TradeStatus:
    """The settlement status after seeing ``new``: forward only, and terminal is final."""
    if old.terminal or _RANK[new] <= _RANK[old]:
        return old
    return new


class ReconcilerConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    owner: str = ""  # our API key: marks our maker legs in trades even before we know the order
    orphan_policy: str = "cancel"  # a live venue order we do not know: "adopt", "cancel" or "ignore"
    max_held_trades: int = 10_000  # bound on trades held for orders not known yet
    taker_fee: bool = True  # book the venue's fee rule (bot.venue.fees) on our fills: taker fees, maker rebates
    # a settled trade leaves memory this long after it was last seen, once behind the trades
    # cursor (``Reconciler.forget_settled``); longer than any user event's delay
    trade_retention_s: float = 600.0
    # the venue lists trades again (``/data/trades`` pages): a settled trade leaves memory only once
    # behind the trades cursor. False where no listing exists (a simulated venue answers each
    # trade once): it leaves ``trade_retention_s`` after it was last seen.
    trades_listed: bool = True
    # closed orders forgotten but still known by id and token (``OrderStore.forgotten_kept``)
    forgotten_kept: int = 100_000

    def __post_init__(self) -> None:
        if self.orphan_policy not in ("adopt", "cancel", "ignore"):
            raise ValueError(f"orphan_policy must be adopt, cancel or ignore, not {self.orphan_policy!r}")
        if not 1 <= self.max_held_trades <= 10_000_000:
            raise ValueError(f"max_held_trades must be within 1..10000000, got {self.max_held_trades}")
        if not 1.0 <= self.trade_retention_s <= 30 * 86400.0:
            raise ValueError(f"trade_retention_s must be within 1..2592000, got {self.trade_retention_s}")


class OrderUpdate(msgspec.Struct, frozen=True):
    """An own order changed (state, matched size); sent to the strategy."""

    order_id: str
    token_id: str
    state: OrderState
    filled: int
    remaining: int
    reason: str = ""


class Unbooked:
    """A trade record kept for another try: why it could not be booked, the tokens it may move,
    the record itself (a ``TradeRecord``, or the item as it came when it could not be read)."""

    __slots__ = ("trade_id", "reason", "tokens", "item", "since")

    def __init__(self, trade_id: str, reason: str, tokens: tuple[str, ...], item: Any, since: float) -> None:
        self.trade_id = trade_id
        self.reason = reason
        self.tokens = tokens
        self.item = item
        self.since = since


Output = (Fill | FillReversal | SettlementUpdate | OrderUpdate | LookupOrder | ResendOrder | CancelOrder | FetchTrades
          | TradeUnbooked | TradeBooked)


class JournalSink(Protocol):
    def order(self, order: OwnOrder) -> None: ...
    def fill(self, fill: Fill) -> None: ...
    def reversal(self, fill: Fill) -> None: ...
    def trade_status(self, trade_id: str, status: TradeStatus) -> None: ...
    def cursor(self, name: str, value: str) -> None: ...
    def commit(self) -> None: ...


class TradeState:
    """What we know of one trade: its settlement status and our fills in it; when a record of it
    was last seen, and its position in the venue's trades list (-1 until a page shows it)."""

    __slots__ = ("status", "record", "fills", "reversed", "seen_at", "offset")

    def __init__(self, status: TradeStatus, record: TradeRecord | None = None, seen_at: float = 0.0) -> None:
        self.status = status
        self.record = record
        self.fills: dict[str, Fill] = {}
        self.reversed: set[str] = set()
        self.seen_at = seen_at
        self.offset = -1


class Leg(msgspec.Struct, frozen=True):
    """One order's part in a trade; ``fee_rate_bps`` is the rate the trade carries for it (0: none,
    the market's rule applies), ``owner`` (the API key that placed it) for maker legs only.
    ``cash``: its USDC when its price is off the 6-decimal grid (``MakerLeg.cash``); ``fault``: why
    its amounts could not be read (it is then never booked)."""

    order_id: str
    token_id: str
    side: Side
    price: int
    size: int
    is_maker: bool
    fee_rate_bps: int = 0
    owner: str = ""
    cash: int | None = None
    fault: str = ""


def trade_legs(rec: TradeRecord) -> list[Leg]:
    """Every order leg of a trade: the taker order, then each maker order at its own price. A
    maker leg that does not say its side took the other side of the taker's token, or the same
    side of its complement (a taker buying YES matched with a maker buying NO: shares minted);
    one whose side could not be read is placed so too (it is never booked).

    A leg whose price times size is not a whole micro-unit (a 6-decimal fill) carries the cash the
    venue moved for it (``fill_cash``: a maker buyer pays its price rounded down, a maker seller is
    paid it rounded up), and the taker the sum of its makers' ends, as the venue settles it."""
    makers: list[Leg] = []
    taker = rec.side
    for m in rec.maker_orders:
        side = m.side
        if side is None and taker is not None:
            side = taker if m.token_id and rec.token_id and m.token_id != rec.token_id else taker.opposite
        if side is None or not m.order_id:
            continue
        cash = m.cash
        if cash is None and not m.fault and m.price * m.matched_amount % UNIT:
            cash = fill_cash(m.price, m.matched_amount, buyer=side is Side.BUY)
        makers.append(Leg(m.order_id, m.token_id or rec.token_id, side, m.price, m.matched_amount, True,
                          m.fee_rate_bps or rec.fee_rate_bps, m.owner, cash=cash, fault=m.fault))
    legs: list[Leg] = []
    if rec.taker_order_id and taker is not None:
        cash = rec.cash
        if cash is None and not rec.fault and (rec.price * rec.size % UNIT or any(m.cash is not None for m in makers)):
            cash = _taker_cash(rec, taker, makers)
        legs.append(Leg(rec.taker_order_id, rec.token_id, taker, rec.price, rec.size, False, rec.fee_rate_bps,
                        cash=cash, fault=rec.fault))
    legs.extend(makers)
    return legs


def _taker_cash(rec: TradeRecord, taker: Side, makers: list[Leg]) -> int:
    """What the taker of ``rec`` paid or got: its makers' ends (the other end of a minted or merged
    pair for a maker on the complement), when they cover its size; else its own price times size,
    rounded against it."""
    if makers and not any(m.fault for m in makers) and sum(m.size for m in makers) == rec.size:
        return makers_cash(rec.token_id, ((m.token_id, m.cash if m.cash is not None else m.price * m.size // UNIT,
                                           m.size) for m in makers))
    return fill_cash(rec.price, rec.size, buyer=taker is not Side.BUY)


class Reconciler:
    """Turns everything the venue says about our orders into order state, fills and settlements."""

    def __init__(
        self,
        config: ReconcilerConfig | None = None,
        store: OrderStore | None = None,
        journal: JournalSink | None = None,
    ) -> None:
        self.config = config or ReconcilerConfig()
        self.orders = store if store is not None else OrderStore(self.config.forgotten_kept)
        self._journal = journal
        self.fees: dict = {}  # token id -> its market's FeeSchedule (bot.venue.fees); absent: none
        self._trades: dict[str, TradeState] = {}
        self._held: OrderedDict[str, None] = OrderedDict()  # trade ids waiting for an order, oldest first
        self._held_by_order: dict[str, set[str]] = {}
        # (when to look again, trade id) of settled trades, for ``forget_settled``
        self._settled: list[tuple[float, str]] = []
        self.cursors: dict[str, str] = {}
        # orders the venue listed open that we did not count as working: never heard of, or
        # already closed here (a wrong reading, set right by the listing)
        self.orphans_unknown = 0
        self.orphans_closed = 0
        # whether order changes are told as ``OrderUpdate`` outputs (off when nobody reads them)
        self.updates = True
        self.cursor_held = False  # this trades read met a trade of ours not settled: resume there
        self.unbooked: dict[str, Unbooked] = {}  # trade id -> a record we cannot book yet

    # --- reads -----------------------------------------------------------------------------
    def trade_status(self, trade_id: str) -> TradeStatus | None:
        st = self._trades.get(trade_id)
        return st.status if st else None

    def fills(self) -> list[Fill]:
        """Every fill of the trades remembered (reversed ones included), in first-sight order per
        trade (see ``forget_settled``)."""
        return [f for st in self._trades.values() for f in st.fills.values()]

    def is_reversed(self, trade_id: str, order_id: str) -> bool:
        st = self._trades.get(trade_id)
        return bool(st and order_id in st.reversed)

    @property
    def held_trades(self) -> list[str]:
        return list(self._held)

    @property
    def trades_cursor(self) -> str:
        return self.cursors.get(TRADES_CURSOR, "MA==")

    # --- what we sent ----------------------------------------------------------------------
    def on_places_sent(self, orders: Iterable[OwnOrder], now: float) -> list[Output]:
        """Orders about to be POSTed (call before the request leaves): PENDING_SUBMIT, journaled."""
        out: list[Output] = []
        for o in orders:
            known = self.orders.get(o.order_id)
            if known is None:
                o.state = _PENDING_SUBMIT  # its initial state: the store files it as it is added
                o.sent_at = o.updated_at = now
                self.orders.add(o)
                self._changed(o, out, resized=False)
                self._claim_held(o.order_id, now, out)
            elif known.state is _UNKNOWN:  # a resend of the same signed order
                self.orders.transition(known, _PENDING_SUBMIT, now)
                known.sent_at = now
                self._changed(known, out, resized=False)
        self._commit()
        return out

    def on_cancels_sent(self, order_ids: Iterable[str], now: float) -> list[Output]:
        """Cancels about to be sent: PENDING_CANCEL, noting those whose submit is unanswered."""
        out: list[Output] = []
        for oid in order_ids:
            o = self.orders.get(oid)
            if o is not None and self.orders.transition(o, _PENDING_CANCEL, now):
                before = o.before_cancel
                o.cancel_blind = before is _PENDING_SUBMIT or before is _UNKNOWN
                self._changed(o, out, resized=False)
        self._commit()
        return out

    # --- answers to what we sent -----------------------------------------------------------
    def on_ack(self, order_id: str, result: Any, now: float) -> list[Output]:
        """One POST /order(s) result for our order ``order_id`` (its precomputed hash)."""
        return self.on_acks([order_id], [result], now)

    def on_acks(self, order_ids: Sequence[str], results: Sequence[Any], now: float) -> list[Output]:
        """A POST /orders response: ``results[i]`` answers ``order_ids[i]`` (request order)."""
        out: list[Output] = []
        for oid, raw in zip(order_ids, results):
            self._apply_ack(oid, order_result(raw), now, out)
        self._commit()
        return out

    def _apply_ack(self, oid: str, r: OrderResult, now: float, out: list[Output]) -> None:
        o = self.orders.get(oid)
        if o is None:
            return
        if r.accepted:
            if not o.answered_at:
                o.answered_at = now
            if o.state is S.PENDING_CANCEL:
                if o.before_cancel in (S.PENDING_SUBMIT, S.UNKNOWN):
                    o.before_cancel = S.PARTIALLY_FILLED if o.matched > 0 else S.LIVE
                if o.order_type.is_market:  # it never rests: a cancel can only find it gone
                    o.cancel_blind = False
                return
            market = o.order_type.is_market
            if market and r.status == "matched":
                target = S.FILLED
            elif o.matched > 0:
                target = S.FILLED if o.matched >= o.size else S.PARTIALLY_FILLED
            else:
                target = S.LIVE
            if self.orders.transition(o, target, now):
                self._changed(o, out, resized=False)
            return
        # not accepted: a fill or the venue showing the order outranks our reading of the ack
        if o.matched > 0 or o.state not in (S.PENDING_SUBMIT, S.UNKNOWN, S.PENDING_CANCEL):
            return
        o.reason = r.error_msg or r.status or "rejected"
        target = S.CANCELED if o.state is S.PENDING_CANCEL else S.REJECTED
        if self.orders.transition(o, target, now):
            self._changed(o, out, resized=False)

    def on_place_failed(self, order_ids: Iterable[str], now: float, *, unknown: bool, reason: str = "") -> list[Output]:
        """The POST failed as a whole. ``unknown`` (timeout, 5xx, reset): maybe placed → look up.

        Otherwise (400, 425, 429...) nothing was placed: the orders are rejected and the router
        places again from the latest target if it still wants them.
        """
        out: list[Output] = []
        for oid in order_ids:
            o = self.orders.get(oid)
            if o is None:
                continue
            if unknown:
                if o.state is S.PENDING_SUBMIT and self.orders.transition(o, S.UNKNOWN, now):
                    o.reason = reason
                    self._changed(o, out, resized=False)
                if o.state is S.UNKNOWN or (o.state is S.PENDING_CANCEL and o.before_cancel is S.PENDING_SUBMIT):
                    if o.state is S.PENDING_CANCEL:
                        o.before_cancel = S.UNKNOWN
                    out.append(LookupOrder(oid))
            elif o.state in (S.PENDING_SUBMIT, S.UNKNOWN, S.PENDING_CANCEL) and o.matched == 0:
                o.reason = reason or "request failed"
                if self.orders.transition(o, S.CANCELED if o.state is S.PENDING_CANCEL else S.REJECTED, now):
                    self._changed(o, out, resized=False)
        self._commit()
        return out

    def on_cancel_result(self, result: Any, now: float, requested: Iterable[str] = ()) -> list[Output]:
        """A cancel response ``{canceled, not_canceled}``; ids requested but in neither are reverted."""
        r = cancel_result(result)
        out: list[Output] = []
        for oid in r.canceled:
            o = self.orders.get(oid)
            if o is not None:
                self._close(o, now, out)
        closed: list[str] = []
        for oid, reason in r.not_canceled.items():
            o = self.orders.get(oid)
            if o is None or o.state.terminal:
                continue
            pending = o.state is S.PENDING_CANCEL
            before = o.before_cancel if pending else o.state
            if (pending and o.cancel_blind) or before in (S.PENDING_SUBMIT, S.UNKNOWN):
                # race *cancel vs place*: the cancel may have reached the venue before the order
                # did, so "not found" proves nothing. Back to what we know now: still unanswered
                # (the ack decides), or acked meanwhile (live: the router cancels it again)
                if pending and self._back_from_cancel(o, before, now):
                    self._changed(o, out, resized=False)
                if before is S.UNKNOWN:
                    out.append(LookupOrder(oid))
                continue
            # answered before the cancel left, now "not cancelable": it is closed on the venue
            o.reason = reason
            self._close(o, now, out)
            closed.append(oid)
        answered = set(r.canceled) | set(r.not_canceled)
        out.extend(self._revert_cancels([i for i in requested if i not in answered], now))
        if closed:
            out.append(FetchTrades(tuple(closed)))
        self._commit()
        return out

    def on_cancel_failed(self, order_ids: Iterable[str], now: float) -> list[Output]:
        """The cancel request failed as a whole: the orders are back where they were."""
        out = self._revert_cancels(order_ids, now)
        self._commit()
        return out

    def _revert_cancels(self, order_ids: Iterable[str], now: float) -> list[Output]:
        out: list[Output] = []
        for oid in order_ids:
            o = self.orders.get(oid)
            if o is not None and o.state is S.PENDING_CANCEL and o.before_cancel is not None:
                if self._back_from_cancel(o, o.before_cancel, now):
                    self._changed(o, out, resized=False)
        return out

    def _back_from_cancel(self, o: OwnOrder, before: OrderState, now: float) -> bool:
        """A cancel of ``o`` came to nothing: ``o`` goes back to ``before``. The store leads a cancel
        back to UNKNOWN (the submit failed unanswered meanwhile) only through PENDING_SUBMIT."""
        if before is _UNKNOWN:
            return self.orders.transition(o, _PENDING_SUBMIT, now) and self.orders.transition(o, _UNKNOWN, now)
        return self.orders.transition(o, before, now)

    # --- what the venue tells ---------------------------------------------------------------
    def on_order_event(self, event: Any, now: float) -> list[Output]:
        """A user-stream ``order`` event (PLACEMENT / UPDATE / CANCELLATION)."""
        out: list[Output] = []
        rec = order_record(event)
        o = self.orders.get(rec.order_id)
        if o is None:
            if rec.event != "CANCELLATION" and _is_open_status(rec.status):
                self._orphan(rec, now, out)
        else:
            self._apply_order(o, rec, now, out)
        self._commit()
        return out

    def on_trade_event(self, event: Any, now: float) -> list[Output]:
        """A user-stream ``trade`` event (the same id is re-emitted on each status change)."""
        out: list[Output] = []
        self._read_trade(event, now, out)
        self._commit()
        return out

    def blocked_tokens(self) -> set[str]:
        """The tokens a record we cannot book yet may move (see ``unbooked``)."""
        return {t for u in self.unbooked.values() for t in u.tokens}

    def _read_trade(self, item: Any, now: float, out: list[Output]) -> TradeRecord | None:
        """One trade record into the state; a record that cannot be read is kept in ``unbooked``
        (and ``None`` returned), never raised: the records after it are read all the same."""
        try:
            rec = trade_record(item)
        except RecordError as exc:
            self._unreadable(item, exc, now, out)
            return None
        self._apply_trade(rec, now, out)
        return rec

    def _unreadable(self, item: Any, exc: RecordError, now: float, out: list[Output]) -> None:
        """A record that cannot be read: it may hold a fill of ours on the tokens of legs of
        ours it names (orders we know, or our owner key), else on every token it names (a
        ``/data/trades`` record is always one of ours)."""
        names = trade_names(item)
        orders, owner = self.orders, self.config.owner
        ours = [t for oid, t, who, maker in names
                if oid in orders or orders.forgotten_token(oid) is not None or (maker and owner and who == owner)]
        tokens = tuple(sorted({t for t in (ours or [n[1] for n in names]) if t}))
        trade_id = exc.trade_id or "?" + _digest(item)
        self._keep_unbooked(trade_id, exc.reason, tokens, item, now, out)

    def _keep_unbooked(self, trade_id: str, reason: str, tokens: tuple[str, ...], item: Any, now: float,
                       out: list[Output]) -> None:
        u = self.unbooked.get(trade_id)
        if u is None:
            self.unbooked[trade_id] = Unbooked(trade_id, reason, tokens, item, now)
            out.append(TradeUnbooked(trade_id, reason, tokens))
        else:
            u.reason, u.tokens, u.item = reason, tokens, item

    def _booked(self, trade_id: str, out: list[Output]) -> None:
        u = self.unbooked.pop(trade_id, None)
        if u is not None:
            out.append(TradeBooked(trade_id, u.tokens))

    def on_trades_page(
        self, items: Iterable[Any], now: float, cursor: str | None = None, next_cursor: str | None = None
    ) -> list[Output]:
        """One ``GET /data/trades`` page fetched with ``cursor``; remembers where to resume.

        The next read resumes no later than the first page (of the read that began at the stored
        cursor) holding a trade of ours not settled yet: its end (CONFIRMED or FAILED) is read
        again even if the user channel's event of it was lost (the venue does not replay them)."""
        out: list[Output] = []
        unsettled = False
        trades = self._trades
        at = cursor_offset(cursor)  # None for no cursor
        for i, item in enumerate(items):
            rec = self._read_trade(item, now, out)
            if rec is None:
                unsettled = True  # kept for another try: the next read starts no later than here
                continue
            if rec.trade_id in self.unbooked:
                unsettled = True
            st = trades.get(rec.trade_id)
            if st is None:
                continue
            if at is not None:
                st.offset = at + i
            if st.fills and st.status not in (TradeStatus.CONFIRMED, TradeStatus.FAILED):
                unsettled = True
        if cursor is not None and cursor == self.cursors.get(TRADES_CURSOR, "MA=="):
            self.cursor_held = False  # a read that starts where the last one left off
        if next_cursor is not None and not self.cursor_held:
            if unsettled:
                self.cursor_held = True  # later pages of this read do not move it on
                resume = cursor
            else:
                resume = cursor if next_cursor in _END_CURSORS else next_cursor
            if resume:
                self._set_cursor(TRADES_CURSOR, resume)
        self.forget_settled(now)
        self._commit()
        return out

    def forget_settled(self, now: float) -> int:
        """Drop from memory the trades settled (CONFIRMED, or FAILED with every fill reversed) that
        no source can bring back as news; returns how many.

        Safe because a forgotten trade is never seen again: it lies before the stored trades cursor
        (a page showed it there, and reads only start at that cursor, which never moves back); no
        record of it has arrived for ``trade_retention_s`` (the user channel does not replay, and
        delays, duplicates or reorders an event by far less); and no held trade waits on it. A
        restart reads its fills from the journal. Trades known only from the journal or the user
        channel, or when the cursor is not an offset, are kept, unless no listing exists
        (``trades_listed`` False). Costs what it forgets (a heap)."""
        heap = self._settled
        horizon = now - self.config.trade_retention_s
        if not heap or heap[0][0] >= horizon:
            return 0
        trades = self._trades
        behind = cursor_offset(self.cursors.get(TRADES_CURSOR))
        listed = self.config.trades_listed
        n = 0
        while heap and heap[0][0] < horizon:
            tid = heapq.heappop(heap)[1]
            st = trades[tid]  # a settled trade has one entry, and leaves memory only here
            if st.seen_at >= horizon:  # seen again since: looked at once the window has passed it
                heapq.heappush(heap, (st.seen_at, tid))
                continue
            if tid in self._held or tid in self.unbooked or listed and (behind is None or not 0 <= st.offset < behind):
                heapq.heappush(heap, (now, tid))  # a read may still show it: looked at later
                continue
            del trades[tid]
            n += 1
        return n

    def on_order_lookup(self, order_id: str, found: Any | None, now: float, as_of: float | None = None) -> list[Output]:
        """``GET /data/order/{id}``, asked at ``as_of``: the order, or ``None`` when the venue does
        not have it. Absence proves nothing for an order on its way (PENDING_SUBMIT), nor for one
        (re)sent or answered after the lookup was asked (a resend may reach the venue later)."""
        out: list[Output] = []
        o = self.orders.get(order_id)
        if o is not None:
            if found is not None:
                self._apply_order(o, order_record(found), now, out)
            elif not (o.state is _PENDING_SUBMIT or (as_of is not None and (o.sent_at > as_of
                                                                           or o.answered_at > as_of))):
                self._absent(o, now, out)
        self._commit()
        return out

    def on_open_orders(
        self, items: Iterable[Any], now: float, as_of: float, *, resend_unknown: bool = True, pages: int = 1
    ) -> list[Output]:
        """A complete ``GET /data/orders`` listing, requested at ``as_of``, read in ``pages`` pages.

        Unknown live orders are orphans (adopted or cancelled per config); orders we think open
        but absent are closed (filled if fully matched, else canceled) and their trades fetched;
        orders sent after ``as_of`` are left alone (the listing could not show them). An UNKNOWN
        order absent with no fill is resent, or closed when ``resend_unknown`` is false. A
        listing of several pages is no snapshot: its pages are read at different moments, and
        the venue's offset cursors shift under orders closing meanwhile, so a page can skip an
        order still open. Its absences prove nothing: each such order is looked up instead.
        """
        out: list[Output] = []
        seen: set[str] = set()
        for item in items:
            rec = order_record(item)
            seen.add(rec.order_id)
            o = self.orders.get(rec.order_id)
            if o is None:
                self._orphan(rec, now, out)
            elif o.state.terminal and o.updated_at < as_of and _is_open_status(rec.status):
                self._reopen(o, rec, now, out)  # closed here before the listing was asked for
            else:
                self._apply_order(o, rec, now, out)
        closed: list[str] = []
        for o in self.orders.working():
            # only an order the venue had shown us before the listing was asked for can be
            # judged by its absence (one answered later may have reached the venue later)
            if o.order_id in seen or o.sent_at > as_of or o.answered_at > as_of or o.state is S.PENDING_SUBMIT:
                continue
            if o.state is S.PENDING_CANCEL and o.before_cancel is S.PENDING_SUBMIT:
                continue
            if pages > 1:
                out.append(LookupOrder(o.order_id))
                continue
            if self._absent(o, now, out, resend=resend_unknown):
                closed.append(o.order_id)
        if closed:
            out.append(FetchTrades(tuple(closed)))
        self._commit()
        return out

    # --- restart ----------------------------------------------------------------------------
    def load(
        self,
        orders: Iterable[OwnOrder],
        fills: Iterable[Fill],
        reversed_keys: Iterable[tuple[str, str]],
        trade_statuses: dict[str, TradeStatus],
        cursors: dict[str, str],
    ) -> None:
        """Rebuild from a journal: nothing is emitted, what was seen before is not seen again."""
        for o in orders:
            self.orders.add(o)
        for tid, status in trade_statuses.items():
            self._trades[tid] = TradeState(status)
        for f in fills:
            st = self._trades.setdefault(f.trade_id, TradeState(f.status))
            st.fills[f.order_id] = f
        for tid, oid in reversed_keys:
            st = self._trades.get(tid)
            if st is not None:
                st.reversed.add(oid)
        self.cursors.update(cursors)

    # --- internals --------------------------------------------------------------------------
    def _apply_order(self, o: OwnOrder, rec: OrderRecord, now: float, out: list[Output]) -> None:
        changed = resized = False
        if not o.answered_at:
            o.answered_at = now
        if rec.size_matched > o.venue_matched:
            o.venue_matched = rec.size_matched
            changed = resized = True
        for t in rec.associate_trades:
            if t not in o.trade_ids:
                o.trade_ids.append(t)
                changed = True
        if not o.market and rec.market:
            o.market = rec.market
        status = rec.status
        target: OrderState | None
        if rec.event == "CANCELLATION" or is_canceled_status(status):
            target = S.FILLED if o.matched >= o.size else S.CANCELED
            if status:
                o.reason = status
        elif status == "MATCHED":
            target = S.FILLED
        elif status in ("LIVE", "DELAYED", ""):
            if o.state is S.PENDING_CANCEL:
                if o.before_cancel in (S.PENDING_SUBMIT, S.UNKNOWN):
                    o.before_cancel = S.PARTIALLY_FILLED if o.matched > 0 else S.LIVE
                target = S.FILLED if o.matched >= o.size else None
            elif o.matched >= o.size and o.size > 0:
                target = S.FILLED
            else:
                target = S.PARTIALLY_FILLED if o.matched > 0 else S.LIVE
        elif status in ("UNMATCHED", "INVALID"):
            o.reason = status
            target = S.REJECTED if o.state in (S.PENDING_SUBMIT, S.UNKNOWN) else S.CANCELED
        else:
            target = None
        # (the store refuses PARTIALLY_FILLED -> LIVE: a stale LIVE never undoes a fill)
        if target is not None and self.orders.transition(o, target, now):
            changed = True
        if changed:  # a state change alone was counted by the store
            self._changed(o, out, resized)

    def _absent(self, o: OwnOrder, now: float, out: list[Output], resend: bool = True) -> bool:
        """The venue does not show ``o`` as open. Returns True when it was closed here."""
        if resend and o.state is S.UNKNOWN and o.matched == 0:
            out.append(ResendOrder(o.order_id, o.signed))
            return False
        self._close(o, now, out)
        return True

    def _close(self, o: OwnOrder, now: float, out: list[Output]) -> None:
        target = S.FILLED if o.matched >= o.size and o.size > 0 else S.CANCELED
        if self.orders.transition(o, target, now):
            self._changed(o, out, resized=False)

    def _orphan(self, rec: OrderRecord, now: float, out: list[Output]) -> None:
        """A venue order open that we never heard of: adopted, cancelled or left alone.

        A cancel is asked for each time the venue shows the order open (the router paces them)."""
        self.orphans_unknown += 1
        policy = self.config.orphan_policy
        if policy == "adopt" and rec.side is not None and rec.token_id:
            o = OwnOrder(
                rec.order_id, rec.token_id, rec.side, rec.price, rec.original_size,
                order_type=_order_type(rec.order_type), state=S.PARTIALLY_FILLED if rec.size_matched > 0 else S.LIVE,
                venue_matched=rec.size_matched, trade_ids=rec.associate_trades, sent_at=now, updated_at=now,
                market=rec.market, reason="adopted",
            )
            o.answered_at = now
            self.orders.add(o)
            self._changed(o, out, resized=False)
            self._claim_held(o.order_id, now, out)
        elif policy == "cancel":
            out.append(CancelOrder(rec.order_id))

    def _reopen(self, o: OwnOrder, rec: OrderRecord, now: float, out: list[Output]) -> None:
        """The listing shows open an order we had closed before asking: our reading was wrong and
        the venue's records are the truth. It counts as working again (risk and the router see it),
        then ``orphan_policy`` applies: adopt keeps it (the router cancels it unless a target wants
        it), cancel cancels it, ignore leaves it closed here."""
        self.orphans_closed += 1
        if self.config.orphan_policy == "ignore":
            return
        if rec.size_matched > o.venue_matched:
            o.venue_matched = rec.size_matched
        if not self.orders.reopen(o, S.PARTIALLY_FILLED if o.matched > 0 else S.LIVE, now):
            return
        o.answered_at = now
        o.reason = "listed open after close"
        self._changed(o, out, resized=False)
        if self.config.orphan_policy == "cancel":
            out.append(CancelOrder(o.order_id))

    def _apply_trade(self, rec: TradeRecord, now: float, out: list[Output]) -> None:
        if not rec.trade_id:
            return
        st = self._trades.get(rec.trade_id)
        changed = False
        if st is None:
            st = self._trades[rec.trade_id] = TradeState(rec.status, rec, now)
            changed = True
        else:
            st.seen_at = now
            if st.record is None or not st.record.maker_orders and rec.maker_orders:
                st.record = rec
            new = advance_status(st.status, rec.status)
            if new is not st.status:
                st.status = new
                changed = True
        if changed:
            self._journal_trade(rec.trade_id, st.status)
            if st.status.terminal:
                heapq.heappush(self._settled, (now, rec.trade_id))
        self._settle(rec.trade_id, st, rec, now, out, status_changed=changed)

    def _settle(
        self, trade_id: str, st: TradeState, rec: TradeRecord, now: float, out: list[Output], status_changed: bool
    ) -> None:
        """Emit first-sight fills of our legs, the settlement update, and reversals if FAILED."""
        new_fills = False
        legs = trade_legs(rec)
        orders = self.orders
        known = bool(st.fills) or any(
            leg.order_id in orders or orders.forgotten_token(leg.order_id) is not None for leg in legs
        )
        waiting: list[str] = []
        faults: list[Leg] = []  # legs of ours, or maybe ours, that cannot be read
        owner = self.config.owner
        for leg in legs:
            if leg.order_id in st.fills:  # booked already (its order may have left memory since)
                continue
            o = orders.get(leg.order_id)
            # an order closed and forgotten before this trade was read (its user event lost): the
            # fill is still ours, and only the fill is news
            token = o.token_id if o is not None else orders.forgotten_token(leg.order_id)
            if token is None:
                # nothing of ours known in it yet: any leg may be ours (fill before ack);
                # otherwise only a maker leg carrying our owner key is
                mine = owner and leg.is_maker and leg.owner == owner
                if not known or mine:
                    waiting.append(leg.order_id)
                    # an unreadable leg another key placed is not ours, whatever the rest
                    if leg.fault and (mine or not (owner and leg.is_maker and leg.owner)):
                        faults.append(leg)
                continue
            if leg.fault:
                faults.append(leg if leg.token_id else msgspec.structs.replace(leg, token_id=token))
                continue
            fill = self._fill(trade_id, leg, token, st.status, rec.match_time)
            st.fills[leg.order_id] = fill
            new_fills = True
            if self._journal is not None:
                self._journal.fill(fill)
            out.append(fill)
            if o is None:
                continue
            o.filled += leg.size
            if trade_id not in o.trade_ids:
                o.trade_ids.append(trade_id)
            self._after_fill(o, now)
            self._changed(o, out)
        if st.fills and (new_fills or status_changed):
            out.append(SettlementUpdate(trade_id, st.status))
        if st.status is TradeStatus.FAILED:
            for oid, fill in st.fills.items():
                if oid in st.reversed:
                    continue
                st.reversed.add(oid)
                if self._journal is not None:
                    self._journal.reversal(fill)
                out.append(FillReversal(fill))
                o = self.orders.get(oid)
                if o is not None:
                    o.filled = max(0, o.filled - fill.size)
                    self._changed(o, out)
        if waiting:
            self._hold(trade_id, waiting)
        elif trade_id in self._held and st.fills:
            self._unhold(trade_id)
        if faults:
            tokens = tuple(sorted({leg.token_id for leg in faults if leg.token_id}))
            self._keep_unbooked(trade_id, f"order {faults[0].order_id[:18]}: {faults[0].fault}", tokens, rec, now, out)
        elif trade_id in self.unbooked:
            self._booked(trade_id, out)

    def _fill(self, trade_id: str, leg: Leg, token: str, status: TradeStatus, ts: float) -> Fill:
        """Our fill in ``leg``, its fee by the market's rule at the record's rate
        (``bot.venue.fees.booked_fee``): a taker seller pays in USDC, a taker buyer in shares (it
        receives fewer, and the fee is their worth), a maker books its rebate as a negative fee.
        Off the price grid the leg's cash is booked (``Fill.notional_e12``), the fee shares' worth
        taken from it pro rata."""
        tok = leg.token_id or token
        size, fee = leg.size, 0
        notional = None if leg.cash is None else leg.cash * UNIT  # None: ``price * size`` is the cash
        if self.config.taker_fee:
            size, fee = booked_fee(leg.side, leg.price, leg.size,
                                   record_schedule(self.fees.get(tok), leg.fee_rate_bps), leg.is_maker)
            if notional is not None and size != leg.size:  # a taker buyer's fee shares, worth their share of the cash
                kept = notional * size // leg.size
                fee, notional = (notional - kept) // UNIT, kept
        return Fill(
            trade_id=trade_id, order_id=leg.order_id, token_id=tok, side=leg.side,
            price=leg.price, size=size, fee=fee, is_maker=leg.is_maker, status=status, ts=ts,
            notional_e12=notional,
        )

    def _after_fill(self, o: OwnOrder, now: float) -> None:
        full = o.size > 0 and o.matched >= o.size
        if o.state in (S.PENDING_SUBMIT, S.UNKNOWN, S.LIVE, S.REJECTED):
            self.orders.transition(o, S.FILLED if full else S.PARTIALLY_FILLED, now)
        elif o.state in (S.PARTIALLY_FILLED, S.PENDING_CANCEL, S.CANCELED) and full:
            # CANCELED: closed on a cancel's "already canceled or matched" before its fills were read
            self.orders.transition(o, S.FILLED, now)

    def _hold(self, trade_id: str, order_ids: list[str]) -> None:
        """Hold ``trade_id`` until one of ``order_ids`` becomes known; a later record of a held
        trade may name legs the first did not (a taker's view has no makers): they are added."""
        for oid in order_ids:
            self._held_by_order.setdefault(oid, set()).add(trade_id)
        if trade_id in self._held:
            return
        self._held[trade_id] = None
        while len(self._held) > self.config.max_held_trades:
            old, _ = self._held.popitem(last=False)
            self._unindex(old)

    def _unhold(self, trade_id: str) -> None:
        self._held.pop(trade_id, None)
        self._unindex(trade_id)

    def _unindex(self, trade_id: str) -> None:
        for oid, tids in list(self._held_by_order.items()):
            tids.discard(trade_id)
            if not tids:
                del self._held_by_order[oid]

    def _claim_held(self, order_id: str, now: float, out: list[Output]) -> None:
        """Race *fill before ack*: replay held trades that name ``order_id`` now that it is known."""
        tids = self._held_by_order.pop(order_id, None)
        if not tids:
            return
        for tid in sorted(tids):
            st = self._trades[tid]  # held with the record that named the order, never forgotten
            self._unhold(tid)  # out of the index too: the settle holds it again for legs still unknown
            self._settle(tid, st, st.record, now, out, status_changed=False)

    def _changed(self, o: OwnOrder, out: list[Output], resized: bool = True) -> None:
        """``o`` changed: journaled, and told as an ``OrderUpdate`` (unless ``updates`` is off).
        ``resized`` False: its size left did not move (a state change, which the store counted)."""
        self.orders.touch(o.token_id, resized)
        if self._journal is not None:
            self._journal.order(o)
        if self.updates:
            out.append(OrderUpdate(o.order_id, o.token_id, o.state, o.filled, o.remaining, o.reason))

    def _journal_trade(self, trade_id: str, status: TradeStatus) -> None:
        if self._journal is not None:
            self._journal.trade_status(trade_id, status)

    def _set_cursor(self, name: str, value: str) -> None:
        self.cursors[name] = value
        if self._journal is not None:
            self._journal.cursor(name, value)

    def _commit(self) -> None:
        if self._journal is not None:
            self._journal.commit()


def _digest(item: Any) -> str:
    """A short stable name for a record without a readable id."""
    import hashlib

    return hashlib.sha1(repr(item).encode()).hexdigest()[:16]


def _is_open_status(status: str) -> bool:
    return status in ("LIVE", "DELAYED", "")


def _order_type(text: str) -> OrderType:
    try:
        return OrderType(text.upper())
    except ValueError:
        return OrderType.GTC

"""After a restart: merge what the journal remembers with what the exchange shows, purely.

Invariant: after the merge, (1) no fill the journal already holds is delivered again, and every
trade the exchange lists that we had not seen is delivered once, so journal fills plus new fills
minus reversals is the exchange's position (no duplicated fill, no lost position); (2) every
order the exchange shows open is known to us (adopted) or cancelled (orphan policy); (3) every
order we thought open but the exchange does not show is closed, and none is resent: a strategy
re-quotes from its targets instead of reviving orders signed before the crash.

Before the merge, ``check_fills`` holds the journal to the venue's records (the journal may be
silently wrong: a flipped bit passes SQLite's integrity check; or it may have lost its tail with
its WAL): (4) every journaled fill of a trade in the venue's trades window equals, field by field
(order id, token, side, price, size, fee, maker), the fill the venue's record makes of it, and is
replaced by that fill when it does not; (5) an order of ours that the trades name but the journal
lost is rebuilt from them, so its fills are booked (read again from the venue) rather than held
forever for an order that never becomes known (unless ``orphan_policy`` is ``ignore``: other
processes share the key, and their orders are not ours to rebuild).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import msgspec

from bot.core.events import Fill
from bot.execution.journal import JournalState
from bot.execution.orders import OrderState, OwnOrder
from bot.execution.reconciler import Output, Reconciler, ReconcilerConfig, trade_legs
from bot.execution.records import RecordError, TradeRecord, order_record, trade_record

S = OrderState


def _copy(o: OwnOrder) -> OwnOrder:
    c = OwnOrder(
        o.order_id, o.token_id, o.side, o.price, o.size, order_type=o.order_type, post_only=o.post_only,
        expiration=o.expiration, state=o.state, filled=o.filled, venue_matched=o.venue_matched,
        trade_ids=list(o.trade_ids), reducing=o.reducing, signed=o.signed, sent_at=o.sent_at,
        updated_at=o.updated_at, reason=o.reason, market=o.market,
    )
    return c


def restore(
    rec: Reconciler,
    journal: JournalState,
    open_orders: Iterable[Any],
    trades: Iterable[Any],
    now: float,
    trades_cursor: str | None = None,
    next_cursor: str | None = None,
) -> list[Output]:
    """Load ``journal`` into the fresh reconciler ``rec``, then merge ``GET /data/trades`` items
    and a complete ``GET /data/orders`` listing; returns what the merge found (new fills,
    reversals, orphans to cancel, closed orders...) for the caller to absorb.

    The journal state given in is not modified (its orders are copied); nothing is emitted for
    what the journal already held.
    """
    orders = [_copy(o) for o in journal.orders]
    for o in orders:
        # a cancel or a submit in flight at the crash is unanswered forever: ask the venue again
        if o.state is S.PENDING_CANCEL:
            o.state = S.PARTIALLY_FILLED if o.matched > 0 else S.LIVE
        elif o.state is S.PENDING_SUBMIT:
            o.state = S.UNKNOWN
    rec.load(orders, journal.fills, journal.reversed, dict(journal.trade_statuses), dict(journal.cursors))
    out: list[Output] = []
    # trades first, so an order that closed by filling is seen filled before the listing closes it
    out += rec.on_trades_page(trades, now, cursor=trades_cursor, next_cursor=next_cursor)
    out += rec.on_open_orders(open_orders, now, as_of=now, resend_unknown=False)
    return out


# the fields of a fill that the venue's record decides (its status moves on; the merge follows it)
CHECKED_FIELDS = ("order_id", "token_id", "side", "price", "size", "fee", "is_maker")
REBUILT = "rebuilt from the venue's trades"


class FillRepair(msgspec.Struct, frozen=True):
    """One journaled fill that the venue's record of its trade contradicts, and what replaces it."""

    trade_id: str
    fields: tuple[str, ...]  # of ``CHECKED_FIELDS``, those that differed
    journaled: Fill
    venue: Fill


class FillCheck(msgspec.Struct):
    """``check_fills``' answer: the journal state to restore (repaired), and what was changed."""

    state: JournalState
    repairs: list[FillRepair]
    rebuilt: list[str]  # order ids the journal had lost, rebuilt from the trades naming them
    checked: int = 0  # journaled fills of trades in the venue's window, compared field by field

    def replaced(self) -> dict[str, tuple[list[Fill], set[str]]]:
        """Each repaired trade's fills as they now stand, with the order ids among them reversed:
        what ``Journal.replace_fills`` writes in place of the journaled ones."""
        out: dict[str, tuple[list[Fill], set[str]]] = {r.trade_id: ([], set()) for r in self.repairs}
        for f in self.state.fills:
            if f.trade_id in out:
                out[f.trade_id][0].append(f)
        for tid, oid in self.state.reversed:
            if tid in out:
                out[tid][1].add(oid)
        return out


def our_legs(rec: TradeRecord, owner: str) -> list[Any]:
    """The legs of a trade from the account's own trade list that are ours: the taker leg when the
    account took, else the maker legs its API key (``owner``) placed."""
    legs = trade_legs(rec)
    side = rec.trader_side.upper()
    if side == "TAKER":
        return [leg for leg in legs if not leg.is_maker][:1]
    if side == "MAKER" and owner:
        return [leg for leg in legs if leg.is_maker and leg.owner == owner]
    return []


def _rebuild(journal: JournalState, records: list[TradeRecord], open_orders: Iterable[Any],
             owner: str) -> list[OwnOrder]:
    """Orders of ours the trades name and the journal does not hold (a lost tail): as the venue
    lists them when still open, else closed, sized by what the trades matched."""
    known = {o.order_id for o in journal.orders}
    listed = {r.order_id: r for r in (order_record(o) for o in open_orders)}
    found: dict[str, OwnOrder] = {}
    for rec in records:
        for leg in our_legs(rec, owner):
            oid = leg.order_id
            if oid in known:
                continue
            o = found.get(oid)
            if o is None:
                r = listed.get(oid)
                if r is not None and r.side is not None:
                    o = OwnOrder(oid, r.token_id or leg.token_id, r.side, r.price, r.original_size,
                                 state=S.PARTIALLY_FILLED if r.size_matched > 0 else S.LIVE,
                                 venue_matched=r.size_matched, sent_at=rec.match_time, updated_at=rec.match_time,
                                 reason=REBUILT, market=r.market or rec.market)
                else:
                    o = OwnOrder(oid, leg.token_id, leg.side, leg.price, 0, state=S.FILLED, sent_at=rec.match_time,
                                 updated_at=rec.match_time, reason=REBUILT, market=rec.market)
                o.answered_at = rec.match_time
                found[oid] = o
            if o.reason == REBUILT and o.state is S.FILLED:
                o.size += leg.size
    return list(found.values())


def _differs(a: Fill, b: Fill) -> tuple[str, ...]:
    return tuple(f for f in CHECKED_FIELDS if getattr(a, f) != getattr(b, f))


def check_fills(journal: JournalState, trades: Iterable[Any], open_orders: Iterable[Any],
                config: ReconcilerConfig | None = None, fees: Mapping[str, Any] | None = None) -> FillCheck:
    """The journal held to the venue's trades (invariants 4 and 5 above), purely: the venue's
    records are booked by a scratch reconciler holding the journal's orders (the same rules as the
    live path: taker fee, maker prices), and each trade's journaled fills are compared with what
    it books. A journaled fill whose order the venue's trade does not name, while a leg of ours
    in it is not journaled, is that leg damaged (its order id). Trades outside the window, and
    fills the venue's records do not explain, are left as they are. ``fees``: each token's fee
    rule (``Reconciler.fees``), so fees and rebates are booked as the live path books them; a
    record that cannot be read proves nothing and is passed over (the live read keeps it aside)."""
    config = config or ReconcilerConfig()
    records = []
    for t in trades:
        try:
            records.append(trade_record(t))
        except RecordError:
            continue
    # ``ignore``: other processes trade on this key (docs/operations.md), so a trade of the key is
    # not proof that an order unknown here was this process's: nothing is rebuilt
    rebuilt = _rebuild(journal, records, open_orders, config.owner) if config.orphan_policy != "ignore" else []
    scratch = Reconciler(msgspec.structs.replace(config, orphan_policy="ignore"))
    scratch.updates = False
    scratch.fees = dict(fees or {})
    scratch.load([_copy(o) for o in [*journal.orders, *rebuilt]], (), (), {}, {})
    venue: dict[str, dict[str, Fill]] = {}
    for out in scratch.on_trades_page(records, 0.0):
        if type(out) is Fill:
            venue.setdefault(out.trade_id, {})[out.order_id] = out
    fills: list[Fill] = []
    reversed_keys = set(map(tuple, journal.reversed))
    repairs: list[FillRepair] = []
    checked = 0
    by_trade: dict[str, list[Fill]] = {}
    for f in journal.fills:
        by_trade.setdefault(f.trade_id, []).append(f)
    for f in journal.fills:
        theirs = venue.get(f.trade_id)
        if not theirs:
            fills.append(f)
            continue
        checked += 1
        e = theirs.get(f.order_id)
        if e is None:  # the order id itself is wrong: the leg of ours the journal does not hold
            journaled = {g.order_id for g in by_trade[f.trade_id]}
            spare = [v for oid, v in theirs.items() if oid not in journaled]
            if len(spare) != 1:
                fills.append(f)  # not explained by the venue's record: left as it is
                continue
            e = spare[0]
            by_trade[f.trade_id].append(e)  # taken: a second stray fill of the trade is not matched to it
        diff = _differs(f, e)
        if not diff:
            fills.append(f)
            continue
        fixed = msgspec.structs.replace(e, status=f.status)
        fills.append(fixed)
        repairs.append(FillRepair(f.trade_id, diff, f, fixed))
        if (f.trade_id, f.order_id) in reversed_keys:
            reversed_keys.discard((f.trade_id, f.order_id))
            reversed_keys.add((fixed.trade_id, fixed.order_id))
    state = JournalState([*journal.orders, *rebuilt], fills, sorted(reversed_keys), dict(journal.trade_statuses),
                         dict(journal.cursors), journal.day_start) if repairs or rebuilt else journal
    return FillCheck(state, repairs, [o.order_id for o in rebuilt], checked)

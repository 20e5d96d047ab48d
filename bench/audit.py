"""Own orders and fills checked against the venue's own records, during a run and after it.

Invariant: an order is *untracked* only on proof, never on timing luck: the venue lists it open,
and the bot either never heard of it or had closed it before the listing was asked for (an order
closed afterwards may have been open when the listing was made). An order the bot counts as
working, or one still in flight, is never untracked.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from bot.core.vocabulary import UNIT
from bot.venue.units import fill_cash, makers_cash
from bot.execution.orders import OrderState

# order id -> (terminal, time of the last state change: for a terminal order, when it closed)
OrderView = Mapping[str, tuple[bool, float]]


def untracked(listed: Iterable[str], known: OrderView, asked_at: float) -> list[str]:
    """Ids the venue listed open that the bot does not count as working, for a listing asked for
    at ``asked_at`` (the clock of ``known``)."""
    out = []
    for oid in listed:
        state = known.get(oid)
        if state is None or (state[0] and state[1] < asked_at):
            out.append(oid)
    return out


def store_view(orders: Iterable[object]) -> dict[str, tuple[bool, float]]:
    """``OrderView`` of an order store (``OwnOrder`` objects)."""
    return {o.order_id: (o.state.terminal, o.updated_at) for o in orders}  # type: ignore[attr-defined]


def journal_view(path: str | Path) -> dict[str, tuple[bool, float]]:
    """``OrderView`` of a bot's journal, read-only while the bot runs (WAL: committed rows only)."""
    db = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True, timeout=5)
    try:
        rows = db.execute("SELECT order_id, state, updated_at FROM orders").fetchall()
    finally:
        db.close()
    return {oid: (OrderState(state).terminal, at) for oid, state, at in rows}


# --- the closing audit: the bot's journal against the venue's books -----------------------------

_BUY = "BUY"


class FillLine(msgspec.Struct, frozen=True):
    """One account's part of one trade: ``(trade_id, order_id)`` is its key everywhere."""

    trade_id: str
    order_id: str
    token_id: str
    side: str  # BUY or SELL, in ``token_id``
    price: int
    size: int
    fee: int = 0  # the taker's fee: token units on a BUY, collateral units on a SELL
    is_maker: bool = True
    cash: int | None = None  # collateral units the fill moved before fees, when not ``price * size // UNIT``


def exchange_fills(trades: Iterable[Any], account: str) -> dict[tuple[str, str], tuple[FillLine, str]]:
    """The account's fills in the venue's trade views (``bot.sim.events.TradeView``), keyed by
    ``(trade_id, order_id)``, each with the trade's status (``TradeStatus`` value)."""
    out: dict[tuple[str, str], tuple[FillLine, str]] = {}
    for t in trades:
        status = getattr(t.status, "value", t.status)
        if t.account == account:
            ends = makers_cash(t.asset_id, ((m.asset_id, fill_cash(m.price, m.matched_amount, buyer=_side(m.side) == _BUY),
                                              m.matched_amount) for m in t.maker_orders))
            out[(t.id, t.taker_order_id)] = (FillLine(t.id, t.taker_order_id, t.asset_id, _side(t.side), t.price,
                                                       t.size, t.fee, False, ends if t.maker_orders else None),
                                             status)
        for m in t.maker_orders:
            if m.account == account:
                cash = fill_cash(m.price, m.matched_amount, buyer=_side(m.side) == _BUY)
                out[(t.id, m.order_id)] = (FillLine(t.id, m.order_id, m.asset_id, _side(m.side), m.price,
                                                     m.matched_amount, 0, True, cash), status)
    return out


def journal_fills(path: str | Path) -> dict[tuple[str, str], tuple[FillLine, bool, str]]:
    """The fills of a journal keyed by ``(trade_id, order_id)``: the line, whether it was
    reversed, and the last settlement status the bot recorded for its trade ("" when none)."""
    db = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True, timeout=5)
    try:
        statuses = dict(db.execute("SELECT trade_id, status FROM trades").fetchall())
        rows = db.execute("SELECT trade_id, order_id, token_id, side, price, size, fee, is_maker, reversed, status,"
                          " notional_e12 FROM fills").fetchall()
    finally:
        db.close()
    return {(tid, oid): (FillLine(tid, oid, token, side, price, size, fee, bool(maker), _booked_cash(
        side, size, fee, bool(maker), notional)), bool(rev), statuses.get(tid, status))
            for tid, oid, token, side, price, size, fee, maker, rev, status, notional in rows}


def _booked_cash(side: str, size: int, fee: int, maker: bool, notional_e12: int | None) -> int | None:
    """The collateral a journaled fill moved before fees, from the cash it was booked with (off the
    price grid or lot: ``Fill.notional_e12``); a taker buyer's fee shares were taken out of it."""
    if notional_e12 is None:
        return None
    return notional_e12 // UNIT + (fee if side == _BUY and not maker else 0)


class FillAudit(msgspec.Struct, frozen=True):
    """``missed``: the venue's fills the bot never booked (or booked smaller, or reversed while
    the venue kept the trade); ``double_counted``: fills the bot books that the venue does not
    hold (never made, booked larger, or FAILED while the bot had already read a final status);
    ``pending_at_stop``: trades the venue failed after the bot's last word on them (the bot
    rightly still counts them, as pending; they are excluded from both sides' holdings)."""

    missed: tuple[tuple[str, str], ...]
    double_counted: tuple[tuple[str, str], ...]
    pending_at_stop: tuple[tuple[str, str], ...]


_FINAL_SEEN = ("CONFIRMED", "FAILED")


def compare_fills(venue: Mapping[tuple[str, str], tuple[FillLine, str]],
                  booked: Mapping[tuple[str, str], tuple[FillLine, bool, str]]) -> FillAudit:
    """Fill by fill, the venue's records against the bot's journal (see ``FillAudit``)."""
    missed, double, pending = [], [], []
    for key, (line, status) in venue.items():
        mine = booked.get(key)
        failed = status == "FAILED"
        if mine is None:
            if not failed:
                missed.append(key)
            continue
        ours, reversed_, seen = mine
        if failed and not reversed_:
            (double if seen in _FINAL_SEEN else pending).append(key)
        elif not failed and reversed_:
            missed.append(key)
        elif not failed and ours.size != line.size:
            (missed if ours.size < line.size else double).append(key)
    double.extend(k for k, (_, rev, _s) in booked.items() if k not in venue and not rev)
    return FillAudit(tuple(sorted(missed)), tuple(sorted(double)), tuple(sorted(pending)))


def holdings_change(lines: Iterable[FillLine]) -> tuple[int, dict[str, int]]:
    """What fills did to an account: collateral change and shares change per token, in micro-units
    (the venue's own arithmetic: each fill's ``cash``, else ``price * size // UNIT``, the taker's fee
    in tokens on a BUY and in collateral on a SELL)."""
    cash = 0
    shares: dict[str, int] = {}
    for f in lines:
        cost = f.cash if f.cash is not None else f.price * f.size // UNIT
        if f.side == _BUY:
            cash -= cost
            shares[f.token_id] = shares.get(f.token_id, 0) + f.size - (0 if f.is_maker else f.fee)
        else:
            cash += cost - (0 if f.is_maker else f.fee)
            shares[f.token_id] = shares.get(f.token_id, 0) - f.size
    return cash, shares


def duplicate_groups(live: Iterable[tuple[str, str, int, str]], states: Mapping[str, str]) -> list[frozenset[str]]:
    """Ids of the orders at one ``(token, side, price)``, where there is more than one, among an
    account's live orders ``(token, side, price, order id)`` that the bot has not closed
    (``states``: the journal's order states). An order being cancelled counts: the bot places no
    order where one of its own is being cancelled (``bot.execution.router``), since that cancel
    may come back refused or "not found" and the order stand. One the bot has closed, or never
    journaled, is an orphan, counted apart."""
    seen: dict[tuple[str, str, int], set[str]] = {}
    for token, side, price, oid in live:
        state = states.get(oid)
        if state is None or OrderState(state).terminal:
            continue
        seen.setdefault((token, side, price), set()).add(oid)
    return [frozenset(ids) for ids in seen.values() if len(ids) > 1]


def lasting_duplicates(before: Iterable[frozenset[str]], now: Iterable[frozenset[str]]) -> int:
    """Extra orders that stood beside another at one price in two samples running: an intent
    placed twice. (The bot keeps at most one order per token, side and price; the grace of one
    sample covers the venue's listing and the journal being read a moment apart.)"""
    before = list(before)
    return sum(max((len(g & p) for p in before), default=0) - 1 for g in now
               if any(len(g & p) > 1 for p in before))


def journal_states(path: str | Path) -> dict[str, str]:
    """Each journaled order's last state (``OrderState`` value), read-only while the bot runs."""
    db = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True, timeout=5)
    try:
        return dict(db.execute("SELECT order_id, state FROM orders").fetchall())
    finally:
        db.close()


def _side(side: Any) -> str:
    return str(getattr(side, "value", side))


class BooksAudit(msgspec.Struct, frozen=True, kw_only=True):
    """The bot's journal against the venue's books at one moment (``audit_books``)."""

    orders_sent: int  # orders the journal holds (each is committed before it is sent)
    orders_received: int  # orders the venue accepted from the account
    orders_unknown: tuple[str, ...]  # accepted by the venue, never journaled
    fills: int  # the venue's fills of the account
    fill_audit: FillAudit
    position_diff: dict[str, int]  # token -> journal minus venue, share micro-units
    cash_diff: int  # journal minus venue, USDC micro-units
    pnl_diff: int  # the differences valued at the venue's mids

    def errors(self) -> list[str]:
        out = []
        if self.orders_unknown:
            out.append(f"{len(self.orders_unknown)} orders the venue received were never journaled")
        if self.fill_audit.missed:
            out.append(f"{len(self.fill_audit.missed)} fills missed")
        if self.fill_audit.double_counted:
            out.append(f"{len(self.fill_audit.double_counted)} fills double-counted")
        if self.position_diff:
            out.append(f"position differs on {len(self.position_diff)} tokens")
        if self.cash_diff:
            out.append(f"cash differs by {self.cash_diff}")
        if self.pnl_diff:
            out.append(f"PnL differs by {self.pnl_diff}")
        return out


def audit_books(engine: Any, account: str, start: Any, journal: str | Path) -> BooksAudit:
    """The journal at ``journal`` against a matching engine's records (``bot.sim.matching``) of
    ``account``, whose ledger balance was ``start`` before the bot's first order.

    The bot's holdings are ``start`` plus every fill it books (not reversed); the venue's are its
    ledger now, with the trades it failed after the bot's last word on them counted as the bot
    rightly still counts them (pending). Read on the engine's own thread."""
    venue = exchange_fills(engine.trades_of(account), account)
    booked = journal_fills(journal)
    fa = compare_fills(venue, booked)
    known = journal_view(journal)
    received = {o.id for o in engine.orders.values() if o.account == account}
    end = engine.balance(account)
    bot_cash, bot_shares = holdings_change(line for line, rev, _ in booked.values() if not rev)
    late_cash, late_shares = holdings_change(venue[k][0] for k in fa.pending_at_stop)
    position_diff = {}
    for t in sorted(set(start.tokens) | set(end.tokens) | set(bot_shares)):
        ours = start.tokens.get(t, 0) + bot_shares.get(t, 0)
        theirs = end.tokens.get(t, 0) + late_shares.get(t, 0)
        if ours != theirs:
            position_diff[t] = ours - theirs
    cash_diff = start.collateral + bot_cash - (end.collateral + late_cash)
    pnl_diff = cash_diff + sum(d * (engine.midpoint(t) or 0) // UNIT for t, d in position_diff.items())
    return BooksAudit(orders_sent=len(known), orders_received=len(received),
                      orders_unknown=tuple(sorted(received - set(known))), fills=len(venue), fill_audit=fa,
                      position_diff=position_diff, cash_diff=cash_diff, pnl_diff=pnl_diff)

"""Own orders checked against the venue's own records, during a run.

Invariant: an order is *untracked* only on proof, never on timing luck: the venue lists it open,
and the bot either never heard of it or had closed it before the listing was asked for (an order
closed afterwards may have been open when the listing was made). An order the bot counts as
working, or one still in flight, is never untracked.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path

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

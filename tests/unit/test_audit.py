"""Audit: an order is untracked only on proof, read from a live order store or a bot's journal."""

from __future__ import annotations

from bot.execution.journal import Journal
from bot.execution.orders import OrderState, OrderStore, OwnOrder
from bot.ops.audit import journal_view, store_view, untracked
from bot.venue.enums import Side

S = OrderState


def orders():
    working = OwnOrder("0xw", "t", Side.BUY, 400_000, 10, state=S.LIVE, updated_at=1.0)
    pending = OwnOrder("0xp", "t", Side.BUY, 400_000, 10, state=S.PENDING_CANCEL, updated_at=1.0)
    closed_early = OwnOrder("0xc", "t", Side.BUY, 400_000, 10, state=S.CANCELED, updated_at=2.0)
    closed_late = OwnOrder("0xl", "t", Side.BUY, 400_000, 10, state=S.CANCELED, updated_at=6.0)
    return [working, pending, closed_early, closed_late]


def test_untracked_is_unknown_or_closed_before_the_listing_was_asked_for():
    store = OrderStore()
    for o in orders():
        store.add(o)
    listed = ["0xw", "0xp", "0xc", "0xl", "0xstranger"]
    assert untracked(listed, store_view(store), asked_at=5.0) == ["0xc", "0xstranger"]
    assert untracked(listed, store_view(store), asked_at=1.5) == ["0xstranger"]  # the close may be later


def test_the_journal_gives_the_same_view_as_the_store(tmp_path):
    path = tmp_path / "j.sqlite"
    journal = Journal(str(path))
    for o in orders():
        journal.order(o)
    journal.commit()
    store = OrderStore()
    for o in orders():
        store.add(o)
    assert journal_view(path) == store_view(store)
    journal.close()

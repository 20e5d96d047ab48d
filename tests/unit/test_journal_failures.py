"""The journal's failures never reach the core as exceptions, and one process holds a journal."""

from __future__ import annotations

import os

import pytest

from bot.core.events import Fill
from bot.execution.exclusive import Exclusive, InUse, lock_path
from bot.execution.journal import Journal, JournalConfig
from bot.execution.orders import OwnOrder
from bot.venue.enums import Side

U = 1_000_000


def order(i: int) -> OwnOrder:
    return OwnOrder(f"0x{i:064x}", "tok", Side.BUY, 500_000, 10 * U, sent_at=float(i), updated_at=float(i),
                    reason="r" * 500)


def test_a_full_journal_fails_once_and_then_writes_nothing(tmp_path):
    path = tmp_path / "j.sqlite"
    Journal(path).close()
    told: list[str] = []
    j = Journal(path, max_bytes=path.stat().st_size + 2 * 4096)
    j.on_failure = told.append
    j.hold()
    for i in range(200):  # more than two pages of rows: the commit cannot be made
        j.order(order(i))
    j.commit()
    j.release()  # no exception: the failure is recorded
    assert "full" in j.failed and told == [j.failed]
    j.fill(Fill("t", "0x1", "tok", Side.BUY, 500_000, U))
    j.order(order(999))
    j.commit()
    j.close()
    assert told == [told[0]]  # told once
    assert len(Journal(path).restore().orders) < 200  # what failed was not made durable


def test_a_journal_within_its_bound_writes_as_usual(tmp_path):
    path = tmp_path / "j.sqlite"
    j = Journal(path, max_bytes=10_000_000)
    for i in range(50):
        j.order(order(i))
    j.commit()
    assert not j.failed
    j.close()
    assert len(Journal(path).restore().orders) == 50


def test_max_bytes_must_not_be_negative():
    with pytest.raises(ValueError, match="max_bytes"):
        JournalConfig(max_bytes=-1)


def test_one_holder_per_journal_and_the_second_is_told_its_pid(tmp_path):
    path = tmp_path / "j.sqlite"
    first = Journal.from_config(JournalConfig(path=str(path)))
    with pytest.raises(InUse, match=f"journal {path} is in use by process {os.getpid()}"):
        Journal.from_config(JournalConfig(path=str(path)))
    assert lock_path(path).read_text().strip() == str(os.getpid())
    first.close()  # released with the journal
    Journal.from_config(JournalConfig(path=str(path))).close()


def test_the_lock_is_released_when_its_holder_is_gone(tmp_path):
    held = Exclusive(tmp_path / "results", "results folder", inside=True)
    assert held.path == tmp_path / "results" / ".lock"
    with pytest.raises(InUse, match="results folder"):
        Exclusive(tmp_path / "results", "results folder", inside=True)
    del held  # as when the process ends: the descriptor closes, the lock goes with it
    Exclusive(tmp_path / "results", "results folder", inside=True).release()

"""Journal commits held over one turn of the live loop are made once, at release."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bot.execution.journal import Journal
from bot.execution.orders import OrderState, OwnOrder
from bot.venue.enums import Side


class Connection:
    """A sqlite3 connection that counts commits."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.commits = 0

    def commit(self) -> None:
        self.commits += 1
        self.db.commit()

    def __getattr__(self, name):
        return getattr(self.db, name)


def test_held_commits_are_made_once_at_release_and_are_then_durable(tmp_path: Path):
    path = tmp_path / "j.sqlite"
    j = Journal(path)
    conn = j._db = Connection(j._db)
    j.hold()
    for name in ("a", "b", "c"):
        j.cursor(name, "1")
        j.commit()
    assert conn.commits == 0
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM cursors").fetchone()[0] == 0  # not yet
    j.release()
    assert conn.commits == 1
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM cursors").fetchone()[0] == 3
    j.release()  # nothing asked for since: no commit
    j.commit()  # not held: at once
    assert conn.commits == 2
    j.close()


def test_a_held_journal_says_when_a_commit_is_owed(tmp_path: Path):
    j = Journal(tmp_path / "j.sqlite")
    j.hold()
    assert not j.due
    j.cursor("a", "1")
    j.commit()
    assert j.due
    j.release()
    assert not j.due
    j.close()


class Statements(Connection):
    """A counting connection that also records which statements ran, one by one or as one batch."""

    def __init__(self, db: sqlite3.Connection) -> None:
        super().__init__(db)
        self.single: list[str] = []
        self.batches: list[tuple[str, int]] = []

    def execute(self, sql, params=()):
        self.single.append(sql.split("(")[0].strip())
        return self.db.execute(sql, params)

    def executemany(self, sql, rows):
        rows = list(rows)
        self.batches.append((sql.split("(")[0].strip(), len(rows)))
        return self.db.executemany(sql, rows)


def own(oid: str, state: OrderState = OrderState.PENDING_SUBMIT, filled: int = 0) -> OwnOrder:
    return OwnOrder(oid, "tok", Side.BUY, 500_000, 10_000_000, state=state, filled=filled, signed={"salt": 7})


def test_a_turns_orders_are_written_at_its_commit_one_statement_per_table(tmp_path: Path):
    path = tmp_path / "j.sqlite"
    j = Journal(path, signed_type=None)
    conn = j._db = Statements(j._db)
    j.hold()
    for oid in ("0xa", "0xb", "0xc"):
        j.order(own(oid))
        j.commit()
    j.order(own("0xa", OrderState.LIVE))  # the same order twice in a turn: the last write wins
    j.commit()
    assert conn.single == [] and conn.batches == []  # nothing written in the turn itself
    j.release()
    assert [n for _, n in conn.batches] == [4, 4] and conn.single == [] and conn.commits == 1
    state = Journal(path, signed_type=None).restore()  # another connection: committed, in order
    assert [(o.order_id, o.state) for o in state.orders] == [
        ("0xa", OrderState.LIVE), ("0xb", OrderState.PENDING_SUBMIT), ("0xc", OrderState.PENDING_SUBMIT)]
    assert state.orders[0].signed == {"salt": 7}
    assert j.state_history("0xa") == [("PENDING_SUBMIT", 0), ("LIVE", 0)]
    j.close()


def test_rows_held_without_a_commit_are_written_before_later_ones(tmp_path: Path):
    path = tmp_path / "j.sqlite"
    j = Journal(path, signed_type=None)
    j.hold()
    j.order(own("0xa"))
    j.release()  # no commit was asked for: the row is written, not committed
    j.order(own("0xa", OrderState.LIVE))  # not held: written at once, after the earlier row
    j.commit()
    assert [o.state for o in Journal(path, signed_type=None).restore().orders] == [OrderState.LIVE]
    assert j.state_history("0xa") == [("PENDING_SUBMIT", 0), ("LIVE", 0)]
    j.close()


def test_the_journal_says_whether_its_commit_waits_for_the_disk(tmp_path: Path):
    levels = {level: Journal(tmp_path / f"{level}.sqlite", synchronous=level) for level in ("FULL", "EXTRA", "normal")}
    assert {level: j.commit_fsyncs for level, j in levels.items()} == {"FULL": True, "EXTRA": True, "normal": False}
    for j in levels.values():
        j.close()

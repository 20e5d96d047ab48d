"""Journal commits held over one turn of the live loop are made once, at release."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bot.execution.journal import Journal


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

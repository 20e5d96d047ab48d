"""SQLite journal of every order sent and every fill seen, so a restart resumes exactly.

Invariant: whatever was committed before a crash (even ``kill -9``) is restored as it was: own
orders with their signed bytes and last state, the fills already delivered (so they are never
delivered again), which of them were reversed, trade settlement statuses, the REST cursors and
the current trading day's start (so the daily loss limit keeps counting after a restart).

Durability: WAL mode with ``synchronous=FULL`` by default. The reconciler commits orders as
PENDING_SUBMIT before the shell sends them; FULL fsyncs the WAL at each commit, so even a power
loss cannot forget an order the venue may hold (that would be an orphan we could not explain).
``NORMAL`` survives a process crash but may lose the last commits on power loss; fills lost that
way are re-read from ``/data/trades`` and orders show up as orphans, so it is an acceptable
speed option (config), not the default. Commits are per reconciler input, grouped by the live
shell into one per turn of its loop (``hold`` / ``release``), always before the turn's requests leave.
While held, order rows are kept in memory and written with one statement per table at the commit
(``release``), so a turn pays one write for all its orders; every commit writes all that was given
before it. A commit that fsyncs (``commit_fsyncs``: FULL, EXTRA) is made by the live shell in a
worker thread so the loop serves the sockets meanwhile; one that does not (NORMAL) costs tens of
microseconds and is made inline, in the turn.

One process per journal: ``bot run`` opens it ``exclusive`` (``bot.execution.exclusive``: an OS
lock on ``<path>.lock``, released however the process ends), so a second run on the same journal
is refused before it sends anything, and a restart merges a journal no one else writes.

A write that fails (disk full, an I/O error, a file made read-only meanwhile) never raises into
the core: the journal records the first failure (``failed``), writes nothing more, and the live
shell halts quoting and stops (its cancels go first: they need no journal). A journal that cannot
be written at all (read-only mount, immutable file) is refused at open (``JournalUnwritable``).
``max_bytes`` bounds the file (SQLite's ``max_page_count``): past it, writes fail as on a full disk.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from bot.core.clock import DayStart
from bot.core.events import Fill
from bot.execution.exclusive import Exclusive
from bot.execution.orders import OrderState, OwnOrder
from bot.venue.enums import OrderType, Side, TradeStatus

_SCHEMA = """
CREATE TABLE IF NOT EXISTS orders (
    order_id TEXT PRIMARY KEY,
    token_id TEXT NOT NULL,
    side TEXT NOT NULL,
    price INTEGER NOT NULL,
    size INTEGER NOT NULL,
    order_type TEXT NOT NULL,
    post_only INTEGER NOT NULL,
    expiration INTEGER NOT NULL,
    state TEXT NOT NULL,
    filled INTEGER NOT NULL,
    venue_matched INTEGER NOT NULL,
    trade_ids TEXT NOT NULL,
    reducing INTEGER NOT NULL,
    signed BLOB,
    sent_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    reason TEXT NOT NULL,
    market TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS order_states (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    order_id TEXT NOT NULL,
    state TEXT NOT NULL,
    filled INTEGER NOT NULL,
    at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS fills (
    trade_id TEXT NOT NULL,
    order_id TEXT NOT NULL,
    token_id TEXT NOT NULL,
    side TEXT NOT NULL,
    price INTEGER NOT NULL,
    size INTEGER NOT NULL,
    fee INTEGER NOT NULL,
    is_maker INTEGER NOT NULL,
    status TEXT NOT NULL,
    ts REAL NOT NULL,
    reversed INTEGER NOT NULL DEFAULT 0,
    seq INTEGER NOT NULL,
    notional_e12 INTEGER,
    PRIMARY KEY (trade_id, order_id)
);
CREATE TABLE IF NOT EXISTS trades (
    trade_id TEXT PRIMARY KEY,
    status TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cursors (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS day_start (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    day INTEGER NOT NULL,
    total INTEGER NOT NULL
);
"""

_UPSERT_ORDER = """
INSERT INTO orders (order_id, token_id, side, price, size, order_type, post_only, expiration, state,
                    filled, venue_matched, trade_ids, reducing, signed, sent_at, updated_at, reason, market)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(order_id) DO UPDATE SET
    state = excluded.state, filled = excluded.filled, venue_matched = excluded.venue_matched,
    trade_ids = excluded.trade_ids, updated_at = excluded.updated_at, reason = excluded.reason,
    market = excluded.market, sent_at = excluded.sent_at,
    signed = COALESCE(orders.signed, excluded.signed)
"""
_INSERT_STATE = "INSERT INTO order_states (order_id, state, filled, at) VALUES (?, ?, ?, ?)"
_FSYNCING = frozenset({"FULL", "EXTRA"})  # the levels whose commit waits for the disk


_FILL_INSERT = (" INTO fills (trade_id, order_id, token_id, side, price, size, fee, is_maker, status, ts, reversed,"
                " seq, notional_e12) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")


def _fill_row(f: Fill, reversed_: bool, seq: int) -> tuple:
    """A fill's row of the ``fills`` table (``_FILL_INSERT``): every field, the cash it was booked
    at included."""
    return (f.trade_id, f.order_id, f.token_id, f.side.value, f.price, f.size, f.fee, int(f.is_maker),
            f.status.value, f.ts, int(reversed_), seq, f.notional_e12)


class JournalError(ValueError):
    """A journal that cannot be trusted (not SQLite, truncated, corrupt rows): the bot refuses to
    start on it rather than trade on a state it cannot read."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"journal {path} is damaged ({detail}); the bot will not trade on it: move it aside "
                         f"(or delete it) and the next run rebuilds its state from the exchange")
        self.path = path
        self.detail = detail


class JournalUnwritable(JournalError):
    """A journal the bot cannot write (read-only mount or file, immutable file): refused at open,
    before anything is sent."""

    def __init__(self, path: str, detail: str) -> None:
        ValueError.__init__(self, f"journal {path} cannot be written ({detail}); the bot will not trade without "
                                  f"recording what it does: make it writable or give [journal] path another file")
        self.path = path
        self.detail = detail


class JournalConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    path: str = "state/journal.sqlite"
    synchronous: str = "FULL"  # or NORMAL (see module docstring)
    max_bytes: int = 0  # the file's size bound (0: none); past it a write fails as on a full disk

    def __post_init__(self) -> None:
        if self.synchronous.upper() not in ("FULL", "NORMAL", "EXTRA"):
            raise ValueError(f"synchronous must be FULL, EXTRA or NORMAL, not {self.synchronous!r}")
        if self.max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {self.max_bytes}")


class JournalState(msgspec.Struct):
    """Everything ``restore`` gives back."""

    orders: list[OwnOrder]
    fills: list[Fill]
    reversed: list[tuple[str, str]]
    trade_statuses: dict[str, TradeStatus]
    cursors: dict[str, str]
    day_start: DayStart | None = None  # the last trading day's start (UTC day, total PnL)


def _unwritable(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text


def _default_signed_type() -> Any:
    try:
        from bot.venue.orders import SignedOrder
    except Exception:  # pragma: no cover - venue signing not installed
        return None
    return SignedOrder


class Journal:
    """The reconciler's ``JournalSink`` on SQLite; one writer at a time (the core task, which may
    hand a ``release`` to a worker thread while it waits for it)."""

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: str = "FULL",
        signed_type: Any = ...,
        exclusive: bool = False,
        max_bytes: int = 0,
    ) -> None:
        self.path = str(path)
        self.failed = ""  # the first write that failed (see module docstring); "" while all went well
        self.on_failure: Callable[[str], None] | None = None  # told the first failure, once
        self._lock: Exclusive | None = None
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            if exclusive:  # before the file is touched: the holder may be writing it
                self._lock = Exclusive(self.path, "journal")
        mode = JournalConfig(path=self.path, synchronous=synchronous, max_bytes=max_bytes).synchronous.upper()
        self._fsyncs = mode in _FSYNCING
        try:
            self._db = sqlite3.connect(self.path, isolation_level="DEFERRED", check_same_thread=False)
        except sqlite3.Error as exc:
            self._unlock()
            raise JournalUnwritable(self.path, str(exc)) from None
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={mode}")
            check = self._db.execute("PRAGMA quick_check").fetchall()
            if check != [("ok",)]:
                raise sqlite3.DatabaseError(str(check[0][0]) if check else "no answer to its integrity check")
            self._db.executescript(_SCHEMA)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(fills)")}
            if "notional_e12" not in columns:  # a journal written before fills off the price grid
                self._db.execute("ALTER TABLE fills ADD COLUMN notional_e12 INTEGER")
            self._db.commit()
            self._fill_seq = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM fills").fetchone()[0]
        except sqlite3.OperationalError as exc:
            self._db.close()
            self._unlock()
            if _unwritable(exc):
                raise JournalUnwritable(self.path, str(exc)) from None
            raise JournalError(self.path, str(exc)) from None
        except sqlite3.DatabaseError as exc:
            self._db.close()
            self._unlock()
            raise JournalError(self.path, str(exc)) from None
        if self.path != ":memory:":  # a file that opens but cannot be written is found now, not mid-run
            denied = [p for p in (self.path, str(Path(self.path).parent)) if not os.access(p, os.W_OK)]
            if denied:
                self._db.close()
                self._unlock()
                raise JournalUnwritable(self.path, f"{denied[0]} is read-only")
        if max_bytes:
            page = self._db.execute("PRAGMA page_size").fetchone()[0]
            self._db.execute(f"PRAGMA max_page_count = {max(1, max_bytes // page)}")
        self._signed_type = _default_signed_type() if signed_type is ... else signed_type
        self._last_state: dict[str, tuple[str, int]] = {}
        self._held = False  # commits grouped until release (see hold)
        self._due = False
        self._order_rows: list[tuple[Any, ...]] = []  # written at the next commit (see _write_held)
        self._state_rows: list[tuple[Any, ...]] = []

    @classmethod
    def from_config(cls, config: JournalConfig) -> "Journal":
        """The journal a run writes: held by this process alone (``exclusive``)."""
        return cls(config.path, synchronous=config.synchronous, exclusive=True, max_bytes=config.max_bytes)

    def _unlock(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _fail(self, exc: BaseException) -> None:
        """The first failed write: remembered, told once; nothing is written from now on."""
        if self.failed:
            return
        self.failed = f"{type(exc).__name__}: {exc}"[:200]
        self._order_rows.clear()
        self._state_rows.clear()
        try:
            self._db.rollback()
        except sqlite3.Error:
            pass
        if self.on_failure is not None:
            self.on_failure(self.failed)

    def _write(self, sql: str, args: tuple[Any, ...]) -> None:
        if self.failed:
            return
        try:
            self._db.execute(sql, args)
        except sqlite3.Error as exc:
            self._fail(exc)

    # --- JournalSink -----------------------------------------------------------------------
    def order(self, o: OwnOrder) -> None:
        signed = msgspec.json.encode(o.signed) if o.signed is not None else None
        row = (
            o.order_id, o.token_id, o.side.value, o.price, o.size, o.order_type.value, int(o.post_only),
            o.expiration, o.state.value, o.filled, o.venue_matched, msgspec.json.encode(o.trade_ids).decode(),
            int(o.reducing), signed, o.sent_at, o.updated_at, o.reason, o.market,
        )
        key = (o.state.value, o.filled)
        state = None
        if self._last_state.get(o.order_id) != key:
            self._last_state[o.order_id] = key
            state = (o.order_id, o.state.value, o.filled, o.updated_at)
        if o.state.terminal:  # what is remembered stays bounded by the working orders
            self._last_state.pop(o.order_id, None)
        if self._held:
            self._order_rows.append(row)
            if state is not None:
                self._state_rows.append(state)
            return
        self._write(_UPSERT_ORDER, row)
        if state is not None:
            self._write(_INSERT_STATE, state)

    def _write_held(self) -> None:
        """Write the order rows kept while held, in the order given: one statement per table."""
        if self.failed:
            self._order_rows.clear()
            self._state_rows.clear()
            return
        try:
            if self._order_rows:
                rows, self._order_rows = self._order_rows, []
                self._db.executemany(_UPSERT_ORDER, rows)
            if self._state_rows:
                rows, self._state_rows = self._state_rows, []
                self._db.executemany(_INSERT_STATE, rows)
        except sqlite3.Error as exc:
            self._fail(exc)

    def _commit(self) -> None:
        self._write_held()
        if self.failed:
            return
        try:
            self._db.commit()
        except sqlite3.Error as exc:
            self._fail(exc)

    def fill(self, f: Fill) -> None:
        self._fill_seq += 1
        self._write("INSERT OR IGNORE" + _FILL_INSERT, _fill_row(f, False, self._fill_seq))

    def replace_fills(self, trade_id: str, fills: list[Fill], reversed_ids: set[str]) -> None:
        """A trade's fills as the venue's records tell them, in place of the journaled ones (a
        restart's repair of silent damage: ``bot.execution.restart.check_fills``); committed at once."""
        seqs = [r[0] for r in self._db.execute("SELECT seq FROM fills WHERE trade_id = ? ORDER BY seq", (trade_id,))]
        self._write("DELETE FROM fills WHERE trade_id = ?", (trade_id,))
        for i, f in enumerate(fills):
            if i < len(seqs):
                seq = seqs[i]
            else:
                self._fill_seq += 1
                seq = self._fill_seq
            self._write("INSERT OR REPLACE" + _FILL_INSERT, _fill_row(f, f.order_id in reversed_ids, seq))
        self._commit()

    def reversal(self, f: Fill) -> None:
        self._write("UPDATE fills SET reversed = 1 WHERE trade_id = ? AND order_id = ?", (f.trade_id, f.order_id))

    def trade_status(self, trade_id: str, status: TradeStatus) -> None:
        self._write(
            "INSERT INTO trades (trade_id, status) VALUES (?, ?)"
            " ON CONFLICT(trade_id) DO UPDATE SET status = excluded.status",
            (trade_id, status.value),
        )

    def cursor(self, name: str, value: str) -> None:
        self._write(
            "INSERT INTO cursors (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
            (name, value),
        )

    def day_start(self, start: DayStart) -> None:
        """Record a new trading day's start and commit at once (it is written once a day, outside
        any reconciler input, and a restart the same day must find it)."""
        self._write(
            "INSERT INTO day_start (id, day, total) VALUES (1, ?, ?)"
            " ON CONFLICT(id) DO UPDATE SET day = excluded.day, total = excluded.total",
            (start.day, start.total),
        )
        self._commit()

    def commit(self) -> None:
        """Make what was written durable now, or at ``release`` while commits are held."""
        if self._held:
            self._due = True
            return
        self._commit()

    def hold(self) -> None:
        """Group the commits asked for from now on into one, made by ``release``: the live shell
        holds them over one turn of its loop and releases before any request of the turn leaves,
        so an order is still durable before it is sent, for one sync per turn, not per input."""
        self._held = True

    @property
    def due(self) -> bool:
        """A held commit is owed (``release`` will sync)."""
        return self._due

    @property
    def commit_fsyncs(self) -> bool:
        """A commit waits for the disk (FULL, EXTRA): worth a worker thread so the event loop is
        not stalled; without (NORMAL) a commit is cheaper than the hop to a thread."""
        return self._fsyncs

    def release(self) -> None:
        """Stop holding: write the rows kept while held, then commit once if a commit was asked
        for meanwhile."""
        self._held = False
        if self._due:
            self._due = False
            self._commit()
        else:
            self._write_held()

    def close(self) -> None:
        self._held = self._due = False
        self._commit()
        self._db.close()
        self._unlock()

    # --- restart ---------------------------------------------------------------------------
    def restore(self) -> JournalState:
        """Own orders, fills, reversals, trade statuses, cursors and day start as last committed;
        a row that does not read back (a damaged file, a bad value) is a ``JournalError``."""
        try:
            return self._restore()
        except (sqlite3.DatabaseError, ValueError, TypeError, msgspec.DecodeError) as exc:
            raise JournalError(self.path, f"{type(exc).__name__}: {exc}"[:200]) from None

    def _restore(self) -> JournalState:
        orders: list[OwnOrder] = []
        for row in self._db.execute(
            "SELECT order_id, token_id, side, price, size, order_type, post_only, expiration, state, filled,"
            " venue_matched, trade_ids, reducing, signed, sent_at, updated_at, reason, market"
            " FROM orders ORDER BY sent_at, rowid"
        ):
            (oid, token, side, price, size, otype, post_only, exp, state, filled, vm, tids, reducing, signed,
             sent_at, updated_at, reason, market) = row
            orders.append(
                OwnOrder(
                    oid, token, Side(side), price, size, order_type=OrderType(otype), post_only=bool(post_only),
                    expiration=exp, state=OrderState(state), filled=filled, venue_matched=vm,
                    trade_ids=msgspec.json.decode(tids), reducing=bool(reducing), signed=self._decode_signed(signed),
                    sent_at=sent_at, updated_at=updated_at, reason=reason, market=market,
                )
            )
            self._last_state[oid] = (state, filled)
        fills: list[Fill] = []
        rev: list[tuple[str, str]] = []
        for row in self._db.execute(
            "SELECT trade_id, order_id, token_id, side, price, size, fee, is_maker, status, ts, reversed,"
            " notional_e12 FROM fills ORDER BY seq"
        ):
            tid, oid, token, side, price, size, fee, is_maker, status, ts, reversed_, notional_e12 = row
            fills.append(
                Fill(tid, oid, token, Side(side), price, size, fee=fee, is_maker=bool(is_maker),
                     status=TradeStatus(status), ts=ts, notional_e12=notional_e12)
            )
            if reversed_:
                rev.append((tid, oid))
        statuses = {tid: TradeStatus(s) for tid, s in self._db.execute("SELECT trade_id, status FROM trades")}
        cursors = dict(self._db.execute("SELECT name, value FROM cursors"))
        row = self._db.execute("SELECT day, total FROM day_start WHERE id = 1").fetchone()
        day_start = DayStart(*row) if row is not None else None
        return JournalState(orders, fills, rev, statuses, cursors, day_start)

    def state_history(self, order_id: str) -> list[tuple[str, int]]:
        """The recorded (state, filled) changes of one order, oldest first."""
        return [
            (s, f) for s, f in self._db.execute(
                "SELECT state, filled FROM order_states WHERE order_id = ? ORDER BY seq", (order_id,)
            )
        ]

    def _decode_signed(self, blob: bytes | None) -> Any:
        if blob is None:
            return None
        if self._signed_type is not None:
            try:
                return msgspec.json.decode(blob, type=self._signed_type)
            except msgspec.ValidationError:
                pass
        return msgspec.json.decode(blob)

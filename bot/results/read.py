"""Read a run's results, from a results folder (backtest) or a journal (live or paper), into one
in-memory form the report and later comparisons consume.

- A results folder (``bot.results.folder``) holds the orders' changes, the fills, the sampled
  series and the summary: read as written, from Parquet tables or JSON lines (a table's ``.parquet``
  file when there is one, else its ``.jsonl``).
- A journal (``bot.execution.journal``, SQLite) holds the orders with their state history and the
  fills, but no series: the series is rebuilt on a fixed clock from the fills (position, realized
  PnL, fees) and the orders (our best bid and ask); the books (best bid and ask, marks, hence
  unrealized PnL and markouts) come from a recording of the same time when one is given, and are
  absent otherwise (``RunResults.notes`` says what is missing).

Invariants: money stays integer micro-units, as written; a reversed fill is not a fill (it is
kept apart in ``reversed``); a journal is opened read-only, so a running bot's journal is never
changed; bad input is a ``ResultsError`` naming the file (and line) and what is wrong, never a
traceback; the rebuilt series has at most ``MAX_SAMPLES`` samples however long the run (its step
grows instead).
"""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Annotated, Any, Callable, Iterable, Iterator, Sequence

import msgspec

from bot.core.events import Fill
from bot.execution.orders import OrderState
from bot.portfolio.positions import Portfolio
from bot.results.folder import TOKEN_FIELDS, Summary

HORIZONS: tuple[float, ...] = (1.0, 10.0, 60.0)  # markout horizons, s: books are read this far past a run
from bot.venue.enums import Side, TradeStatus

MAX_SAMPLES = 200_000  # a rebuilt series never holds more samples than this (its step grows)
RESULT_FILES = ("orders.parquet", "fills.parquet", "series.parquet", "orders.jsonl", "fills.jsonl", "series.jsonl")
BATCH_ROWS = 65_536  # rows of a Parquet table decoded at a time
Time = Annotated[float, msgspec.Meta(ge=0, le=1e11)]  # unix seconds a calendar can show
Amount = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]  # micro-units, as the journal stores them


class ResultsError(ValueError):
    """A path that cannot be read as a run's results (what is wrong, in one line)."""


# --- the in-memory results ---------------------------------------------------------------------


class OrderChange(msgspec.Struct, frozen=True, array_like=True):  # array-like: a journal row
    """An order reached ``state`` with ``filled`` shares filled at ``at`` (unix seconds)."""

    state: OrderState
    filled: Amount
    at: Time


class RunOrder(msgspec.Struct, frozen=True):
    """One own order and its changes in the order they happened."""

    order_id: str
    token_id: str
    side: Side
    price: Amount
    size: Amount
    sent_at: Time
    changes: tuple[OrderChange, ...]
    reason: str = ""

    @property
    def final(self) -> OrderChange | None:
        return self.changes[-1] if self.changes else None

    @property
    def ended_at(self) -> float | None:
        """When the order became terminal (filled, canceled, rejected); ``None`` while working."""
        for c in self.changes:
            if c.state.terminal:
                return c.at
        return None


class FillRecord(msgspec.Struct, frozen=True):
    """One fill of ours, as journaled (``side`` is our side; ``fee`` in USDC micro-units)."""

    trade_id: str
    order_id: str
    token_id: str
    side: Side
    price: Amount
    size: Amount
    fee: Amount
    is_maker: bool
    status: TradeStatus
    ts: Time
    reversed: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return (self.trade_id, self.order_id)

    def as_fill(self) -> Fill:
        return Fill(self.trade_id, self.order_id, self.token_id, self.side, self.price, self.size, fee=self.fee,
                    is_maker=self.is_maker, status=self.status, ts=self.ts)


class TokenSample(msgspec.Struct, frozen=True):
    """One token at one sample: our position, its mark, the book's best bid and ask, ours."""

    position: Amount = 0
    mark: Amount | None = None
    bid: Amount | None = None
    ask: Amount | None = None
    our_bid: Amount | None = None
    our_ask: Amount | None = None

    @property
    def mid(self) -> float | None:
        """The book's mid (micro-units, may end in .5), else the mark, else ``None``."""
        if self.bid is not None and self.ask is not None:
            return (self.bid + self.ask) / 2
        return float(self.mark) if self.mark is not None else None


class Sample(msgspec.Struct, frozen=True):
    """PnL and tokens at time ``t``; ``unrealized`` and ``total`` are ``None`` without marks."""

    t: Time
    realized: Amount
    fees: Amount
    unrealized: Amount | None = None
    total: Amount | None = None
    tokens: dict[str, TokenSample] = {}


class RunResults(msgspec.Struct, frozen=True):
    """Everything a report shows of one run, read from its files only."""

    source: str  # the folder or journal read
    mode: str  # backtest, paper or live
    orders: tuple[RunOrder, ...]
    fills: tuple[FillRecord, ...]  # in the order seen, reversed ones left out
    reversed: tuple[FillRecord, ...] = ()
    series: tuple[Sample, ...] = ()
    summary: Summary | None = None  # the run's own summary, when it wrote one
    notes: tuple[str, ...] = ()  # what the files do not hold (said on the charts that need it)

    @property
    def tokens(self) -> list[str]:
        """Every token the run traded, quoted or sampled, in first-seen order."""
        seen: dict[str, None] = {}
        for o in self.orders:
            seen.setdefault(o.token_id)
        for f in self.fills:
            seen.setdefault(f.token_id)
        for s in self.series:
            for t in s.tokens:
                seen.setdefault(t)
        return list(seen)


# --- one entry point ---------------------------------------------------------------------------


MarketEvents = Callable[[Sequence[str]], Iterable[tuple[int, Any]]]
"""The market events ``(receive ns, event)`` of a run's time for the tokens it traded, from which a
journal's books are rebuilt: a recording's (``bot.backtest.replay.recorded``)."""


def read_run(path: str | Path, *, recording: MarketEvents | None = None, every_s: float = 1.0) -> RunResults:
    """A results folder or a journal file at ``path`` (``recording``: the books of a journal's run)."""
    p = Path(path)
    if p.is_dir():
        if recording is not None:
            raise ResultsError(f"{p}: a results folder holds its own books; --recording is for journals")
        return read_results(p)
    if p.is_file():
        return read_journal(p, recording=recording, every_s=every_s)
    raise ResultsError(f"{p}: no such results folder or journal")


# --- results folders ---------------------------------------------------------------------------


class _OrderLine(msgspec.Struct, frozen=True):
    order_id: str
    token_id: str
    side: Side
    price: Amount
    size: Amount
    state: OrderState
    filled: Amount
    sent_at: Time
    updated_at: Time
    reason: str = ""


def read_results(folder: str | Path) -> RunResults:
    """The results folder ``folder`` as written by ``bot.results.folder.ResultsSink``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ResultsError(f"{folder}: not a folder")
    if not any((folder / name).is_file() for name in (*RESULT_FILES, "summary.json")):
        raise ResultsError(f"{folder}: not a results folder (no orders, fills or series table, no summary.json)")
    orders = _group_orders(_table(folder, "orders", _OrderLine))
    fills, rev = split_reversed(_table(folder, "fills", FillRecord))
    series = tuple(_table(folder, "series", Sample))
    summary = None
    if (folder / "summary.json").is_file():
        try:
            summary = msgspec.json.decode((folder / "summary.json").read_bytes(), type=Summary)
        except msgspec.MsgspecError as exc:
            raise ResultsError(f"{folder / 'summary.json'}: {exc}") from None
    notes = () if series else ("no series samples: PnL, inventory, quotes and markouts need them",)
    return RunResults(source=str(folder), mode=summary.mode if summary else "backtest", orders=orders,
                      fills=fills, reversed=rev, series=series, summary=summary, notes=notes)


def _table(folder: Path, name: str, kind: type) -> Iterator[Any]:
    """The rows of table ``name`` of ``folder`` as ``kind``: its Parquet file, else its JSON lines."""
    path = folder / f"{name}.parquet"
    if not path.is_file():
        return _lines(folder / f"{name}.jsonl", kind)
    rows = _parquet_rows(path, kind)
    return _samples(rows, path) if kind is Sample else rows




def _parquet_rows(path: Path, kind: type) -> Iterator[Any]:
    """Each row of the Parquet file ``path`` as ``kind`` (a series row as a dict, see ``_samples``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 0
    try:
        pf = pq.ParquetFile(path)
        for batch in pf.iter_batches(batch_size=BATCH_ROWS):
            for row in batch.to_pylist():
                n += 1
                yield row if kind is Sample else msgspec.convert(row, kind)
    except (pa.ArrowException, OSError) as exc:
        raise ResultsError(f"{path}: not a readable Parquet table ({str(exc)[:200]})") from None
    except msgspec.ValidationError as exc:
        raise ResultsError(f"{path}: row {n}: {exc}") from None


def _samples(rows: Iterable[dict[str, Any]], path: Path) -> Iterator[Sample]:
    """Series rows (one per sample and token, a sample's rows together) as samples."""
    head: tuple | None = None
    tokens: dict[str, Any] = {}
    n = 0
    try:
        for row in rows:
            n += 1
            key = (row["t"], row["realized"], row["fees"], row["unrealized"], row["total"])
            if key != head:
                if head is not None:
                    yield _sample(head, tokens)
                head, tokens = key, {}
            if row["token_id"] is not None:
                tokens[row["token_id"]] = {k: row[k] for k in TOKEN_FIELDS}
        if head is not None:
            yield _sample(head, tokens)
    except (KeyError, msgspec.ValidationError) as exc:
        raise ResultsError(f"{path}: row {n}: {exc}") from None


def _sample(head: tuple, tokens: dict[str, Any]) -> Sample:
    t, realized, fees, unrealized, total = head
    return msgspec.convert({"t": t, "realized": realized, "fees": fees, "unrealized": unrealized, "total": total,
                            "tokens": tokens}, Sample)


def _lines(path: Path, kind: type) -> Iterator[Any]:
    """Each JSON line of ``path`` decoded as ``kind`` (a missing file has none)."""
    if not path.is_file():
        return
    dec = msgspec.json.Decoder(kind)
    with path.open("rb") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield dec.decode(line)
            except msgspec.MsgspecError as exc:
                raise ResultsError(f"{path}:{n}: {exc}") from None


def _group_orders(lines: Iterable[_OrderLine]) -> tuple[RunOrder, ...]:
    """Order lines (one per change) as one record per order, in first-seen order."""
    first: dict[str, _OrderLine] = {}
    changes: dict[str, list[OrderChange]] = {}
    for ln in lines:
        if ln.order_id not in first:
            first[ln.order_id] = ln
            changes[ln.order_id] = []
        changes[ln.order_id].append(OrderChange(ln.state, ln.filled, ln.updated_at))
    return tuple(
        RunOrder(oid, o.token_id, o.side, o.price, o.size, o.sent_at, tuple(changes[oid]), o.reason)
        for oid, o in first.items()
    )


def split_reversed(rows: Iterable[FillRecord]) -> tuple[tuple[FillRecord, ...], tuple[FillRecord, ...]]:
    """(fills that stand, fills reversed): a reversal line (or flag) removes its fill wherever it is."""
    rows = list(rows)
    gone = {r.key for r in rows if r.reversed}
    seen: set[tuple[str, str]] = set()
    fills, rev = [], []
    for r in rows:
        if r.key in seen:
            continue
        seen.add(r.key)
        if r.key in gone:
            rev.append(msgspec.structs.replace(r, reversed=True))
        else:
            fills.append(r)
    return tuple(fills), tuple(rev)


# --- journals ----------------------------------------------------------------------------------


def read_journal(path: str | Path, *, recording: MarketEvents | None = None, every_s: float = 1.0) -> RunResults:
    """A live or paper journal (SQLite), its series rebuilt every ``every_s`` seconds of its span
    (or more, to stay within ``MAX_SAMPLES``), with the books of the market events ``recording``
    gives over that span and the longest markout horizon after it, when given."""
    if not (every_s > 0 and math.isfinite(every_s)):
        raise ResultsError(f"the sampling step must be a positive number of seconds, not {every_s}")
    path = Path(path)
    rows = journal_rows(path)  # a bad journal is said before any recording is read
    books = None
    if recording is not None:
        orders, fills, _ = rows
        times = [o.sent_at for o in orders] + [f.ts for f in fills]
        ends = [c.at for o in orders for c in o.changes] + times
        if times:
            start, end = min(times), max(ends) + max(HORIZONS)  # the books after the last fill: its markouts
            every_s = series_step(start, end, every_s)
            tokens = [o.token_id for o in orders] + [f.token_id for f in fills]
            books = list(sample_books(recording(tokens), every_s, start=start, end=end))
        else:
            books = []
    return journal_results(path, rows, books, every_s=every_s)


def series_step(start: float, end: float, every_s: float) -> float:
    """The sampling step over ``[start, end]``: ``every_s``, or more to stay within ``MAX_SAMPLES``."""
    return max(every_s, (end - start) / (MAX_SAMPLES - 2))


def journal_results(path: Path, rows: tuple[tuple[RunOrder, ...], tuple[FillRecord, ...], tuple[FillRecord, ...]],
                    books: Sequence[BookSample] | None, *, every_s: float = 1.0) -> RunResults:
    """A journal's ``rows`` (orders, fills, reversed fills) with their series rebuilt over ``books``."""
    orders, fills, rev = rows
    mode = "paper" if path.name.endswith(".paper.sqlite") else "live"
    notes = ["positions and PnL count from the journal's first fill: holdings from before it (a wallet's, "
             "paper holdings) are not journaled"]
    if books is None:
        notes.append("no recording given (bot report JOURNAL --recording PATH): no books, so no marks, "
                     "unrealized PnL, best bid and ask, or markouts")
    elif not books:
        notes.append("the recording holds no book of this run's time: no marks, unrealized PnL or markouts")
    series = rebuild_series(orders, fills, books, every_s=every_s)
    return RunResults(source=str(path), mode=mode, orders=orders, fills=fills, reversed=rev, series=series,
                      notes=tuple(notes))


class _JournalOrder(msgspec.Struct, frozen=True, array_like=True):
    order_id: str
    token_id: str
    side: Side
    price: Amount
    size: Amount
    sent_at: Time
    state: OrderState
    filled: Amount
    updated_at: Time
    reason: str


def journal_rows(path: Path) -> tuple[tuple[RunOrder, ...], tuple[FillRecord, ...], tuple[FillRecord, ...]]:
    """The journal's orders (with their state history), standing fills and reversed fills."""
    if not path.is_file():
        raise ResultsError(f"{path}: no such journal")
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ResultsError(f"{path}: cannot open: {exc}") from None
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = {"orders", "order_states", "fills"} - tables
        if missing:
            raise ResultsError(f"{path}: not a journal (no {', '.join(sorted(missing))} table)")
        history: dict[str, list[OrderChange]] = {}
        for oid, *change in db.execute("SELECT order_id, state, filled, at FROM order_states ORDER BY seq"):
            history.setdefault(oid, []).append(msgspec.convert(change, OrderChange))
        orders = []
        for row in db.execute(
            "SELECT order_id, token_id, side, price, size, sent_at, state, filled, updated_at, reason"
            " FROM orders ORDER BY sent_at, rowid"
        ):
            o = msgspec.convert(row, _JournalOrder)
            changes = history.get(o.order_id) or [OrderChange(o.state, o.filled, o.updated_at)]
            orders.append(RunOrder(o.order_id, o.token_id, o.side, o.price, o.size, o.sent_at, tuple(changes),
                                      o.reason))
        names = FillRecord.__struct_fields__
        rows = [  # lax: the journal stores booleans as 0 and 1
            msgspec.convert(dict(zip(names, row)), FillRecord, strict=False)
            for row in db.execute(f"SELECT {', '.join(names)} FROM fills ORDER BY seq")
        ]
    except sqlite3.DatabaseError as exc:
        raise ResultsError(f"{path}: not a journal ({exc})") from None
    except msgspec.ValidationError as exc:  # a value this version cannot read (a new state, a bad number)
        raise ResultsError(f"{path}: {exc}") from None
    finally:
        db.close()
    fills, rev = split_reversed(rows)
    return tuple(orders), fills, rev


# --- books from a recording --------------------------------------------------------------------


class BookSample(msgspec.Struct, frozen=True):
    """Best bid and ask of each token at ``t`` (``None``: that side empty or the book stale)."""

    t: float
    quotes: dict[str, tuple[int | None, int | None]]


def sample_books(events: Iterable[tuple[int, Any]], every_s: float, *, start: float | None = None,
                 end: float | None = None) -> Iterator[BookSample]:
    """The books the market ``events`` build, sampled at every multiple of ``every_s`` seconds of
    receive time (a sample at ``g`` holds every event received at or before ``g``), from the last
    multiple at or before ``start`` to the first at or after ``end`` when given (the events after
    that are not read). A ``Gap`` leaves its tokens' books stale (no quote) until their next
    snapshot, from the stream or from REST (``RestBook``)."""
    from bot.core.book import Books

    books = Books(track_all=True)
    first = math.floor(start / every_s) * every_s if start is not None else None
    last = math.ceil(end / every_s) * every_s if end is not None else None
    next_at: float | None = None
    for ns, ev in events:
        t = ns / 1e9
        if next_at is None:
            next_at = math.ceil(t / every_s) * every_s
        while t > next_at:
            if first is None or next_at >= first - 1e-9:
                yield _book_sample(books, next_at)
            if last is not None and next_at >= last - 1e-9:
                return
            next_at += every_s
        kind = type(ev).__name__
        if kind == "Gap":
            books.mark_stale(getattr(ev, "tokens", None) or None)
        elif kind == "RestBook":
            books.apply_book(ev)
        elif kind != "MarketMeta":
            books.apply_event(ev)
    if next_at is not None and (first is None or next_at >= first - 1e-9):
        yield _book_sample(books, next_at)


def _book_sample(books: Any, t: float) -> BookSample:
    return BookSample(t, {b.token_id: (None, None) if b.stale else (b.best_bid, b.best_ask) for b in books})


# --- the series of a journal -------------------------------------------------------------------


def rebuild_series(orders: Sequence[RunOrder], fills: Sequence[FillRecord], books: Sequence[BookSample] | None,
                   *, every_s: float = 1.0) -> tuple[Sample, ...]:
    """Samples every ``every_s`` seconds over the run's span (orders, fills and books), as the
    backtest samples them: position, realized PnL and fees from the fills up to ``t``, our best
    bid and ask among the orders working at ``t``, the books' best bid and ask and mid (the mark)
    from the last book sample at or before ``t``; unrealized PnL values each token at its last mid
    seen (a book gone stale or one-sided keeps it). Without ``books``, unrealized and total are
    ``None``. A reversed fill counts at no time (a journal
    does not say when it was reversed). At most ``MAX_SAMPLES`` samples."""
    times = [o.sent_at for o in orders] + [f.ts for f in fills]
    ends = [c.at for o in orders for c in o.changes] + times
    if books:
        times.append(books[0].t)
        ends.append(books[-1].t)
    if not times:
        return ()
    start, end = min(times), max(ends)
    step = series_step(start, end, every_s)
    count = int((end - start) / step + 1e-9) + 1
    if start + (count - 1) * step < end:
        count += 1

    fills_by_t = sorted(fills, key=lambda f: f.ts)
    # (time, +1 start / -1 end, order): an order works from its send until its first terminal state
    edges = []
    for o in orders:
        edges.append((o.sent_at, 1, o))
        end_at = o.ended_at
        if end_at is not None:
            edges.append((max(end_at, o.sent_at), -1, o))
    edges.sort(key=lambda e: (e[0], -e[1]))
    tokens = list(dict.fromkeys([o.token_id for o in orders] + [f.token_id for f in fills]
                                + [t for b in books or () for t in b.quotes]))

    pf = Portfolio()
    working: dict[str, dict[str, RunOrder]] = {t: {} for t in tokens}
    quotes: dict[str, tuple[int | None, int | None]] = {}
    marks: dict[str, int] = {}  # the last mid seen of each token: a stale or one-sided book keeps it
    fi = ei = bi = 0
    out = []
    for k in range(count):
        t = start + k * step
        while fi < len(fills_by_t) and fills_by_t[fi].ts <= t:
            pf.apply_fill(fills_by_t[fi].as_fill())
            fi += 1
        while ei < len(edges) and edges[ei][0] <= t:
            _, kind, o = edges[ei]
            if kind > 0:
                working[o.token_id][o.order_id] = o
            else:
                working[o.token_id].pop(o.order_id, None)
            ei += 1
        while books and bi < len(books) and books[bi].t <= t:
            quotes = books[bi].quotes
            bi += 1
        per_token = {}
        for tok in tokens:
            bid, ask = quotes.get(tok, (None, None))
            mark = (bid + ask) // 2 if bid is not None and ask is not None else None
            if mark is not None:
                marks[tok] = mark
            ours = working[tok].values()
            bids = [o.price for o in ours if o.side is Side.BUY]
            asks = [o.price for o in ours if o.side is Side.SELL]
            per_token[tok] = TokenSample(pf.size(tok), mark, bid, ask, max(bids) if bids else None,
                                         min(asks) if asks else None)
        realized, fees = pf.realized_pnl, pf.fees
        unrealized = pf.unrealized_pnl(marks) if books else None
        total = realized + unrealized - fees if unrealized is not None else None
        out.append(Sample(t, realized, fees, unrealized, total, per_token))
    return tuple(out)

"""The results folder of a run (backtest or paper): every order change and fill, the PnL and
inventory series, and the summary, as Parquet tables (or JSON lines) a reader or a report can use.

Layout (micro-units as integers, times in unix seconds)::

    orders.parquet  one row per own-order change: order_id, token_id, side, price, size, state,
                    filled, sent_at, updated_at, reason
    fills.parquet   one row per fill seen (trade_id, order_id, token_id, side, price, size, fee,
                    is_maker, status, ts, reversed); a reversal repeats the fill with reversed true
    series.parquet  one row per sample and token: t, realized, unrealized, fees, total, token_id,
                    position, mark, bid, ask, our_bid, our_ask (a sample of no token: one row,
                    token_id null)
    summary.json    the figures of ``Summary``

``format="jsonl"`` writes ``orders.jsonl``, ``fills.jsonl`` and ``series.jsonl`` instead: one JSON
object a line, the same fields (a series line holds its tokens as a ``tokens`` object, a fill
line has ``"reversed": true`` only on a reversal).

Invariants: the sink is a journal sink (``bot.execution.reconciler.JournalSink``): it sees every
order change and fill the reconciler makes, in order, so the files hold the run's whole story.
Its memory does not grow with the run: rows go out in blocks (JSON lines) or row groups
(Parquet, ``ROW_GROUP`` rows), files are closed by ``close``, and what the summary counts per
order is held only while the order is open (and for the last ``CLOSED_KEPT`` closed ones).
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any, Iterable

import msgspec

from bot.core.events import Fill
from bot.execution.orders import OwnOrder
from bot.portfolio.sets import totals
from bot.venue.enums import Side, TradeStatus

_enc = msgspec.json.Encoder()

FORMATS = ("parquet", "jsonl")
ROW_GROUP = 16_384  # rows a Parquet table holds in memory before they go out as one row group
CHUNK = 1_024  # of which rows held as Python values (the rest as Arrow columns)
CLOSED_KEPT = 10_000  # closed orders whose counts the sink remembers (an order may be listed open again)
_ACCEPTED, _FILLED = 1, 2

# Each table's columns (Parquet types); pyarrow, tens of MB once imported, loads only to write them.
COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "orders": (("order_id", "string"), ("token_id", "string"), ("side", "string"), ("price", "int64"),
               ("size", "int64"), ("state", "string"), ("filled", "int64"), ("sent_at", "float64"),
               ("updated_at", "float64"), ("reason", "string")),
    "fills": (("trade_id", "string"), ("order_id", "string"), ("token_id", "string"), ("side", "string"),
              ("price", "int64"), ("size", "int64"), ("fee", "int64"), ("is_maker", "bool_"), ("status", "string"),
              ("ts", "float64"), ("reversed", "bool_")),
    "series": (("t", "float64"), ("realized", "int64"), ("unrealized", "int64"), ("fees", "int64"), ("total", "int64"),
               ("token_id", "string"), ("position", "int64"), ("mark", "int64"), ("bid", "int64"), ("ask", "int64"),
               ("our_bid", "int64"), ("our_ask", "int64")),
}
# a series row's figures of one token: the columns after ``token_id``
TOKEN_FIELDS = tuple(name for name, _ in COLUMNS["series"][[n for n, _ in COLUMNS["series"]].index("token_id") + 1:])


# what a run writes into its results folder (a backtest's, a comparison's; a sweep adds its own)
RUN_FILES = ("summary.json", "report.html", *(f"{name}.{ext}" for name in COLUMNS for ext in ("parquet", "jsonl")))


def claim(folder: Path, command: str, *, force: bool, names: tuple[str, ...] = RUN_FILES) -> str | None:
    """Make ``folder`` ready for a run's results: ``None`` when it is new or empty (but for its
    lock), or with ``force``, after removing what a run writes there (``names``: files, or folders
    of runs); otherwise the one line that refuses it. Other files in it are left alone."""
    if folder.exists() and not folder.is_dir():
        return f"{command}: --out {folder} is a file, not a results folder"
    held = sorted(p.name for p in folder.iterdir() if p.name != ".lock") if folder.is_dir() else []
    if not held:
        return None
    if not force:
        shown = ", ".join(held[:3]) + (", ..." if len(held) > 3 else "")
        return (f"{command}: {folder} already holds results ({shown}); --force replaces them, "
                "or choose another --out")
    import shutil

    for name in names:
        path = folder / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    return None


class _Table:
    """One Parquet table written in row groups of ``rows`` rows. Rows gather as Python tuples
    ``CHUNK`` at a time (one append a row; turned into columns in one pass), then as Arrow columns
    (a few bytes a value, not an object each) until a row group is whole; the file is byte for
    byte the one a group gathered as Python values makes."""

    def __init__(self, path: Path, columns: tuple[tuple[str, str], ...], rows: int) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.pa = pa
        self.schema = pa.schema([(name, getattr(pa, kind)()) for name, kind in columns])
        self.pending: list[tuple] = []  # rows not yet Arrow columns
        self.rows = rows
        self.chunk = min(CHUNK, rows)
        self.batches: list[Any] = []  # the row group's rows made Arrow columns, in order
        self.held = 0  # rows in ``batches``
        self.writer = pq.ParquetWriter(path, self.schema, compression="zstd")

    def add(self, row: tuple) -> None:
        pending = self.pending
        pending.append(row)
        n = len(pending)
        if n >= self.chunk or self.held + n >= self.rows:
            self._to_arrow()
            if self.held >= self.rows:
                self.flush()

    def _to_arrow(self) -> None:
        pending = self.pending
        if not pending:
            return
        pa = self.pa
        arrays = [pa.array(col, type=field.type) for col, field in zip(zip(*pending), self.schema)]
        self.batches.append(pa.RecordBatch.from_arrays(arrays, schema=self.schema))
        self.held += len(pending)
        self.pending = []

    def flush(self) -> None:
        """What the table holds goes out as one row group."""
        self._to_arrow()
        if not self.batches:
            return
        self.writer.write_table(self.pa.Table.from_batches(self.batches, schema=self.schema), row_group_size=self.rows)
        self.batches = []
        self.held = 0

    def close(self) -> None:
        self.flush()
        self.writer.close()


class Summary(msgspec.Struct, frozen=True, kw_only=True):
    """What a run came to (micro-units unless named otherwise)."""

    mode: str
    events: int
    seconds: float  # simulated (or live) time covered
    wall_seconds: float
    events_per_s: float
    orders_sent: int
    orders_rejected: int
    cancels_sent: int
    fills: int
    maker_fills: int
    volume: int  # shares
    notional: int  # USDC
    fill_rate: float  # orders with any fill / orders accepted
    maker_share: float  # maker volume / volume
    realized: int
    unrealized: int
    fees: int  # net: fees paid less rebates earned
    pnl: int
    max_drawdown: int  # largest fall of total PnL from a previous high
    inventory: dict[str, tuple[int, int]]  # token -> (lowest, highest) position
    final_position: dict[str, int]
    seed: int | None = None
    assumptions: tuple[str, ...] = ()
    # what the books themselves were, among the assumptions (a top-of-book dataset's notes: L1
    # only, the depth the fill model assumes, staleness, settlement); none for recordings
    data_notes: tuple[str, ...] = ()
    estimates: dict[str, dict[str, float]] = {}  # token -> what the strategy estimated at the end
    # several strategies on one account: name -> fills, volume, realized_pnl, rejections
    strategies: dict[str, dict[str, int]] = {}
    fees_paid: int = 0  # USDC units of taker fees (a BUY's fee shares at their fill price)
    rebates: int = 0  # USDC units of maker rebates earned
    # the run was interrupted (Ctrl-C): every figure covers only the events read before it stopped
    partial: bool = False
    halts: tuple[str, ...] = ()  # why trading halted during the run ("reason: detail"), in order
    warnings: tuple[str, ...] = ()  # what the configuration made impossible (an order size no market takes)
    # complete sets held at the end (``bot.portfolio.sets``), valued at their payout in ``unrealized``:
    sets: int = 0  # shares held in complete sets
    sets_value: int = 0  # what they pay whatever happens (USDC): the locked value
    sets_edge: int = 0  # locked value less what the sets cost (USDC): edge realized, whatever the mids
    mergeable: int = 0  # of them, a market's YES+NO pairs (shares): merging frees as many USDC
    mergeable_cost: int = 0  # the capital locked in those pairs (what they cost, USDC)


class ResultsSink:
    """Journal sink writing the run's orders and fills, plus the series the runner samples."""

    def __init__(self, folder: str | Path | None, block: int = 512, *, format: str = "parquet",
                 row_group: int = ROW_GROUP) -> None:
        """``folder`` None: count what the summary needs, write nothing. ``format``: ``parquet``
        or ``jsonl`` (see the module doc)."""
        if format not in FORMATS:
            raise ValueError(f"results format must be one of {', '.join(FORMATS)}, not {format!r}")
        self.folder = Path(folder) if folder is not None else None
        self.format = format
        self._files: dict[str, Any] = {}
        self._tables: dict[str, _Table] = {}
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
            if format == "jsonl":
                self._files = {name: (self.folder / f"{name}.jsonl").open("wb") for name in COLUMNS}
            else:
                self._tables = {name: _Table(self.folder / f"{name}.parquet", columns, row_group)
                                for name, columns in COLUMNS.items()}
        self._buf: dict[str, list[bytes]] = {name: [] for name in self._files}
        self._block = block
        self._columnar = bool(self._tables)
        self.accepted_orders = 0  # orders the venue answered (acked, or known to it)
        self.filled_orders = 0  # orders with any fill
        self._open: dict[str, int] = {}  # open order id -> what was counted of it (_ACCEPTED, _FILLED)
        self._closed: OrderedDict[str, int] = OrderedDict()  # the same of the last CLOSED_KEPT closed orders
        self.maker_volume = 0
        self.volume = 0
        self.fill_count = 0
        self.maker_fills = 0
        self.fees_paid = 0  # fills' positive fees, USDC units
        self.rebates = 0  # fills' negative fees (maker rebates), USDC units

    # --- JournalSink ----------------------------------------------------------------------
    def order(self, o: OwnOrder) -> None:
        state = o.state
        self._count(o.order_id, _ACCEPTED if o.answered_at else 0, state.terminal)
        if self._columnar:
            # an enum member's ``_value_`` is its value, read without ``Enum.value``'s descriptor
            # (the run's most frequent row: a few orders' changes per book event)
            self._tables["orders"].add((o.order_id, o.token_id, o.side._value_, o.price, o.size, state._value_,
                                        o.filled, o.sent_at, o.updated_at, o.reason))
            return
        if not self._files:  # counting only: no row is built
            return
        self._write("orders", {
            "order_id": o.order_id, "token_id": o.token_id, "side": o.side.value, "price": o.price, "size": o.size,
            "state": state.value, "filled": o.filled, "sent_at": o.sent_at, "updated_at": o.updated_at,
            "reason": o.reason,
        })

    def fill(self, f: Fill) -> None:
        self.fill_count += 1
        self.volume += f.size
        self._fee(f, 1)
        if f.is_maker:
            self.maker_fills += 1
            self.maker_volume += f.size
        self._count(f.order_id, _FILLED, None)
        if self._columnar:
            self._tables["fills"].add(_fill_values(f, False))
        elif self._files:
            self._write("fills", _fill_row(f))

    def _fee(self, f: Fill, sign: int) -> None:
        if f.fee > 0:
            self.fees_paid += sign * f.fee
        else:
            self.rebates -= sign * f.fee

    def reversal(self, f: Fill) -> None:
        self.fill_count -= 1
        self.volume -= f.size
        self._fee(f, -1)
        if f.is_maker:
            self.maker_fills -= 1
            self.maker_volume -= f.size
        if self._columnar:
            self._tables["fills"].add(_fill_values(f, True))
        elif self._files:
            self._write("fills", {**_fill_row(f), "reversed": True})

    def _count(self, oid: str, seen: int, terminal: bool | None) -> None:
        """Count ``oid`` once as accepted and once as filled, whatever the number of its changes:
        ``seen`` is what this change shows of it, ``terminal`` whether it is closed now (None for
        a fill, which does not say). An open order's flags stay until it closes, a closed one's
        among the last ``CLOSED_KEPT`` (a late fill, or the order listed open again, finds them)."""
        open_, closed = self._open, self._closed
        had = open_.get(oid)
        if had is None:
            had = closed.get(oid, 0)
        new = seen & ~had
        if new & _ACCEPTED:
            self.accepted_orders += 1
        if new & _FILLED:
            self.filled_orders += 1
        now = had | new
        if terminal is False or (terminal is None and oid in open_):
            open_[oid] = now
            if terminal is False and oid in closed:
                del closed[oid]
            return
        open_.pop(oid, None)
        closed[oid] = now
        closed.move_to_end(oid)
        if len(closed) > CLOSED_KEPT:
            closed.popitem(last=False)

    def trade_status(self, trade_id: str, status: TradeStatus) -> None:
        pass

    def cursor(self, name: str, value: str) -> None:
        pass

    def day_start(self, start: Any) -> None:
        pass

    def commit(self) -> None:
        pass

    # --- series -------------------------------------------------------------------------
    def sample(self, row: dict[str, Any]) -> None:
        if not self._columnar:
            self._write("series", row)
            return
        head = (row["t"], row["realized"], row["unrealized"], row["fees"], row["total"])
        table = self._tables["series"]
        tokens = row.get("tokens") or {}
        for token, figures in tokens.items():
            table.add((*head, token, *(figures.get(k) for k in TOKEN_FIELDS)))
        if not tokens:
            table.add((*head, None, None, None, None, None, None, None))

    def write_summary(self, summary: Summary) -> None:
        if self.folder is None:
            return
        (self.folder / "summary.json").write_bytes(msgspec.json.format(_enc.encode(summary), indent=2) + b"\n")

    def close(self) -> None:
        for name, f in self._files.items():
            self._flush(name)
            f.close()
        for table in self._tables.values():
            table.close()

    @property
    def writes(self) -> bool:
        """Whether rows go to files (a folder was given), or the sink only counts."""
        return bool(self._files or self._tables)

    @property
    def held(self) -> int:
        """Order ids the sink holds to count them (open orders, and the last closed ones)."""
        return len(self._open) + len(self._closed)

    def _write(self, name: str, row: dict[str, Any]) -> None:
        if not self._files:
            return
        buf = self._buf[name]
        buf.append(_enc.encode(row))
        if len(buf) >= self._block:
            self._flush(name)

    def _flush(self, name: str) -> None:
        buf = self._buf[name]
        if buf:
            self._files[name].write(b"\n".join(buf) + b"\n")
            buf.clear()


def _fill_values(f: Fill, reversed_: bool) -> tuple:
    return (f.trade_id, f.order_id, f.token_id, f.side.value, f.price, f.size, f.fee, f.is_maker, f.status.value, f.ts,
            reversed_)


def _fill_row(f: Fill) -> dict[str, Any]:
    return {"trade_id": f.trade_id, "order_id": f.order_id, "token_id": f.token_id, "side": f.side.value,
            "price": f.price, "size": f.size, "fee": f.fee, "is_maker": f.is_maker, "status": f.status.value,
            "ts": f.ts}


class Series:
    """Samples of PnL and inventory on the run's clock, every ``every_s`` seconds, and what the
    summary needs of them (drawdown, inventory range)."""

    def __init__(self, sink: ResultsSink | None, every_s: float) -> None:
        self.sink = sink
        self.every_s = every_s
        self.next_at: float | None = None
        self.high: int | None = None
        self.max_drawdown = 0
        self.inventory: dict[str, tuple[int, int]] = {}
        self.last_marks: dict[str, int] = {}  # the last mark seen of each token (books may end stale)

    def due(self, now: float) -> bool:
        return self.next_at is None or now >= self.next_at

    def take(self, engine: Any, now: float) -> None:
        """One sample of ``engine`` (its portfolio at the books' marks, the books, our quotes)."""
        self.next_at = now + self.every_s
        marks = engine.marks()
        self.last_marks.update(marks)
        pf = engine.portfolio
        realized, fees = pf.realized_pnl, pf.fees
        unrealized = pf.unrealized_pnl(marks)
        total = realized + unrealized - fees
        if self.high is None or total > self.high:
            self.high = total
        self.max_drawdown = max(self.max_drawdown, self.high - total)
        tokens: dict[str, Any] = {}
        for m in engine.markets:
            for t in m.tokens:
                size = pf.size(t)
                lo, hi = self.inventory.get(t, (size, size))
                self.inventory[t] = (min(lo, size), max(hi, size))
                if self.sink is None:
                    continue
                book = engine.books.get(t)
                ours = engine.working_orders(t)
                bids = [o.price for o in ours if o.side is Side.BUY]
                asks = [o.price for o in ours if o.side is Side.SELL]
                tokens[t] = {
                    "position": size, "mark": marks.get(t),
                    "bid": book.best_bid if book is not None else None,
                    "ask": book.best_ask if book is not None else None,
                    "our_bid": max(bids) if bids else None, "our_ask": min(asks) if asks else None,
                }
        if self.sink is not None:
            self.sink.sample({"t": now, "realized": realized, "unrealized": unrealized, "fees": fees,
                              "total": total, "tokens": tokens})


def summarize(engine: Any, sink: ResultsSink, series: Series, *, mode: str, events: int, seconds: float,
              wall_seconds: float, seed: int | None, assumptions: Iterable[str] = ()) -> Summary:
    """The run's summary from the engine's final state and what the sink and series saw; open
    positions are valued at their books' marks, or the last marks seen where a book ended stale."""
    marks = {**series.last_marks, **engine.marks()}
    pf = engine.portfolio
    realized, fees, unrealized = pf.realized_pnl, pf.fees, pf.unrealized_pnl(marks)
    st = engine.stats
    tokens = [t for m in engine.markets for t in m.tokens]
    held = totals(pf.complete_sets())
    return Summary(
        mode=mode, events=events, seconds=seconds, wall_seconds=wall_seconds,
        events_per_s=events / wall_seconds if wall_seconds > 0 else 0.0,
        orders_sent=st.orders_sent, orders_rejected=st.orders_rejected, cancels_sent=st.cancels_sent,
        fills=sink.fill_count, maker_fills=sink.maker_fills, volume=sink.volume, notional=st.notional,
        fill_rate=sink.filled_orders / sink.accepted_orders if sink.accepted_orders else 0.0,
        maker_share=sink.maker_volume / sink.volume if sink.volume else 0.0,
        realized=realized, unrealized=unrealized, fees=fees, pnl=realized + unrealized - fees,
        max_drawdown=series.max_drawdown, inventory={t: series.inventory.get(t, (0, 0)) for t in tokens},
        final_position={t: pf.size(t) for t in tokens}, seed=seed, assumptions=tuple(assumptions),
        estimates=strategy_estimates(engine.strategy),
        strategies=getattr(engine.strategy, "figures", dict)(), fees_paid=sink.fees_paid, rebates=sink.rebates,
        halts=tuple(f"{t.reason.value}: {t.detail}" for t in engine.risk.status.reasons),
        warnings=tuple(getattr(engine, "warnings", ())),
        sets=held.sets, sets_value=held.value, sets_edge=held.edge, mergeable=held.mergeable,
        mergeable_cost=held.mergeable_cost,
    )


def strategy_estimates(strategy: Any) -> dict[str, dict[str, float]]:
    """What ``strategy`` estimates (``Strategy.estimates``), numbers only, as plain floats."""
    found = getattr(strategy, "estimates", None)
    if found is None:
        return {}
    return {str(token): {str(k): float(v) for k, v in values.items()
                         if isinstance(v, (int, float)) and not isinstance(v, bool)}
            for token, values in found().items()}

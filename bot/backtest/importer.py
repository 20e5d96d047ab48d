"""The top-of-book dataset (``quotes`` Parquet files, or CSV of the same shape) as replay events.

Each row is one poll of one market: ``ts`` (UTC), ``slug``, ``bid`` and ``ask`` (the best prices
of the market's first outcome, either may be empty) and ``segment`` (a series number: the
collector was down between segments). There are no sizes, no depth, no trade prints.

Invariants:

- a market ``SLUG`` becomes a binary market with condition id ``SLUG`` and tokens ``SLUG:yes``
  and ``SLUG:no``; its tick is 0.001 when any of its prices needs three decimals, else 0.01;
- each usable row becomes two L1 ``book`` snapshots (the venue's ``BookEvent``), one per token,
  each level ``depth`` shares: the ``yes`` book is ``bid``/``ask``, the ``no`` book its complement
  (bid ``1 - ask``, ask ``1 - bid``), so both books agree as the venue's would;
- events come in time order (ties in file order, then ``yes`` before ``no``), with the row's time
  as the receive time in nanoseconds; a market's first row of a new segment is preceded by a
  :class:`~bot.backtest.recording.Gap` of its tokens (the books were not continuous);
- a row with no price, or a price outside ``(0, 1)`` or with more than six decimals, is skipped
  and counted, never replayed; a crossed row (``ask < bid``) is replayed as it is and counted;
- only the chosen markets' rows are held, in compact columns (24 bytes a row), sorted by time; row
  groups that cannot hold a chosen market (by the file's slug statistics) are not read.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Iterable, Iterator, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from bot.backtest.recording import Gap, MarketMeta, RecordingError
from bot.backtest.sources import COLUMNS
from bot.venue.models.book import Level
from bot.venue.models.ws import BookEvent
from bot.venue.units import UNIT, format_units

OPTIONAL = ("segment",)
BATCH_ROWS = 65_536
FINE_TICK = 1_000  # 0.001 in micro-units
COARSE_TICK = 10_000  # 0.01


def tokens_of(slug: str) -> tuple[str, str]:
    """The two token ids of a dataset market."""
    return f"{slug}:yes", f"{slug}:no"


class TopOfBook:
    """The rows of the chosen markets of one file (``.parquet`` or ``.csv``), ready to replay.

    ``slugs`` chooses markets by slug; ``limit`` takes the first markets in the file's order (of
    ``slugs``, if given); neither: every market of the file (its rows are all held: choose).
    A file that cannot be read, or lacks a column, is a RecordingError.
    """

    def __init__(self, path: str | os.PathLike[str], *, slugs: Iterable[str] | None = None,
                 limit: int | None = None, depth: str = "1000") -> None:
        self.path = Path(path)
        self.depth = depth
        self.rows = 0  # usable rows held
        self.skipped = 0  # rows with no usable price
        self.crossed = 0  # rows with ask < bid (replayed as they are)
        self._slug_ids: dict[str, int] = {}  # slug -> its number, in order of first sight
        wanted = None if slugs is None else set(slugs)
        if limit is not None and limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        try:
            table = self._read(wanted, limit)
        except (pa.ArrowException, OSError) as exc:
            raise RecordingError(f"{self.path}: not a readable top-of-book file ({exc})"[:400]) from None
        self._table = table
        self._slugs = list(self._slug_ids)
        self._ticks = _ticks(table, self._slugs)

    # -- reading -----------------------------------------------------------------------------

    def _batches(self, wanted: set[str] | None) -> Iterator[pa.RecordBatch]:
        suffix = self.path.suffix.lower()
        if suffix == ".csv":
            options = pacsv.ConvertOptions(
                column_types={"ts": pa.timestamp("us"), "slug": pa.string(), "bid": pa.float64(),
                              "ask": pa.float64(), "segment": pa.int64()},
                include_columns=None, strings_can_be_null=True)
            reader = pacsv.open_csv(self.path, convert_options=options)
            _check_columns(self.path, reader.schema.names)
            yield from reader
            return
        pf = pq.ParquetFile(self.path)
        names = pf.schema_arrow.names
        _check_columns(self.path, names)
        columns = [c for c in (*COLUMNS, *OPTIONAL) if c in names]
        groups = list(range(pf.metadata.num_row_groups))
        if wanted is not None:
            groups = [g for g in groups if _may_hold(pf.metadata.row_group(g), names.index("slug"), wanted)]
        if groups:
            yield from pf.iter_batches(batch_size=BATCH_ROWS, row_groups=groups, columns=columns)

    def _read(self, wanted: set[str] | None, limit: int | None) -> pa.Table:
        parts: list[pa.Table] = []
        value_set = None if wanted is None else pa.array(sorted(wanted), pa.string())
        for batch in self._batches(wanted):
            table = pa.Table.from_batches([batch])
            if value_set is not None:
                table = table.filter(pc.fill_null(pc.is_in(table["slug"], value_set=value_set), False))
            table = self._compact(table, limit)
            if table.num_rows:
                parts.append(table)
        if not parts:
            return _empty()
        table = pa.concat_tables(parts)
        self.rows = table.num_rows
        self.crossed = pc.sum(pc.fill_null(pc.less(table["ask"], table["bid"]), False)).as_py() or 0
        return table.take(pc.sort_indices(table["t"]))  # a stable sort: ties keep the file's order

    def _compact(self, table: pa.Table, limit: int | None) -> pa.Table:
        """The columns replay needs, small: time (ns), the slug's number (in order of first sight),
        bid and ask in micro-units, segment; rows with no usable price dropped and counted."""
        bid = price_column_units(table["bid"])
        ask = price_column_units(table["ask"])
        usable = pc.and_(pc.is_valid(table["slug"]), pc.is_valid(table["ts"]))
        usable = pc.fill_null(pc.and_(usable, pc.or_(pc.is_valid(bid), pc.is_valid(ask))), False)
        ids = self._slug_ids
        if limit is None or len(ids) < limit:
            for slug in pc.unique(table["slug"].filter(usable)).to_pylist():
                if slug not in ids and (limit is None or len(ids) < limit):
                    ids[slug] = len(ids)
        number = pc.index_in(table["slug"], value_set=pa.array(list(ids), pa.string()))
        chosen = pc.is_valid(number)
        n_chosen = pc.sum(chosen).as_py() or 0
        keep = pc.and_(chosen, usable)
        segment = table["segment"] if "segment" in table.column_names else pa.nulls(table.num_rows, pa.int32())
        out = pa.table({
            "t": pc.cast(pc.cast(table["ts"], pa.timestamp("ns")), pa.int64()),
            "slug": pc.cast(number, pa.int32()),
            "bid": pc.cast(bid, pa.int32()),
            "ask": pc.cast(ask, pa.int32()),
            "segment": pc.cast(segment, pa.int32()),
        }).filter(keep)
        self.skipped += n_chosen - out.num_rows
        return out

    # -- what a backtest reads -----------------------------------------------------------------

    def intervals(self) -> pa.Array:
        """The times (ns) between two consecutive polls of one market, within a segment."""
        t = self._table.sort_by([("slug", "ascending"), ("t", "ascending")])
        if t.num_rows < 2:
            return pa.array([], pa.int64())
        head, tail = t.slice(0, t.num_rows - 1), t.slice(1)
        same = pc.and_(pc.equal(head["slug"], tail["slug"]),
                       pc.fill_null(pc.equal(head["segment"], tail["segment"]), True))
        return pc.subtract(tail["t"], head["t"]).filter(same).combine_chunks()

    def markets(self) -> list[MarketMeta]:
        """One market per slug held, in the order of their first row in the file."""
        return [MarketMeta(condition_id=slug, tokens=list(tokens_of(slug)), outcomes=["Yes", "No"],
                           tick_size=format_units(self._ticks[slug]), question=slug, slug=slug)
                for slug in self._slugs if slug in self._ticks]

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        depth = self.depth
        names = [(slug, *tokens_of(slug), format_units(self._ticks.get(slug, COARSE_TICK))) for slug in self._slugs]
        segments: dict[int, int | None] = {}
        for batch in self._table.to_batches(max_chunksize=BATCH_ROWS):
            cols = batch.to_pydict()
            for t, number, bid, ask, seg in zip(cols["t"], cols["slug"], cols["bid"], cols["ask"], cols["segment"]):
                slug, yes, no, tick = names[number]
                if number in segments and segments[number] != seg:
                    yield t, Gap((yes, no), f"{slug}: segment {segments[number]} ended, {seg} begins "
                                            "(the collector was down)")
                segments[number] = seg
                ms = str(t // 1_000_000)
                yield t, _book(yes, slug, ms, tick, bid, ask, depth)
                yield t, _book(no, slug, ms, tick, None if ask is None else UNIT - ask,
                               None if bid is None else UNIT - bid, depth)


def _book(token: str, market: str, ms: str, tick: str, bid: int | None, ask: int | None, depth: str) -> BookEvent:
    return BookEvent(market=market, asset_id=token, timestamp=ms, tick_size=tick,
                     bids=[] if bid is None else [Level(price=format_units(bid), size=depth)],
                     asks=[] if ask is None else [Level(price=format_units(ask), size=depth)])


def price_column_units(prices: pa.ChunkedArray) -> pa.ChunkedArray:
    """Prices as int64 micro-units; null where absent, not in (0, 1) or not a whole micro-unit."""
    scaled = pc.multiply(pc.cast(prices, pa.float64()), float(UNIT))
    rounded = pc.round(scaled)
    exact = pc.less_equal(pc.abs(pc.subtract(scaled, rounded)), 1e-6)
    inside = pc.and_(pc.greater(rounded, 0.0), pc.less(rounded, float(UNIT)))
    ok = pc.fill_null(pc.and_(exact, inside), False)
    return pc.if_else(ok, pc.cast(pc.if_else(ok, rounded, 0.0), pa.int64()), pa.scalar(None, pa.int64()))


def _ticks(table: pa.Table, slugs: list[str]) -> dict[str, int]:
    """Each slug's tick: 0.001 when a price of it is off the 0.01 grid, else 0.01."""
    if table.num_rows == 0:
        return {}
    off = pc.or_(pc.not_equal(pc.fill_null(_mod(table["bid"], COARSE_TICK), 0), 0),
                 pc.not_equal(pc.fill_null(_mod(table["ask"], COARSE_TICK), 0), 0))
    by = pa.table({"slug": table["slug"], "off": off}).group_by("slug").aggregate([("off", "any")])
    return {slugs[number]: FINE_TICK if fine else COARSE_TICK
            for number, fine in zip(by["slug"].to_pylist(), by["off_any"].to_pylist())}


def _mod(values: pa.ChunkedArray, m: int) -> pa.ChunkedArray:
    return pc.subtract(values, pc.multiply(pc.divide(values, m), m))


def _empty() -> pa.Table:
    return pa.table({"t": pa.array([], pa.int64()), "slug": pa.array([], pa.int32()),
                     "bid": pa.array([], pa.int32()), "ask": pa.array([], pa.int32()),
                     "segment": pa.array([], pa.int32())})


def _check_columns(path: Path, names: Sequence[str]) -> None:
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        raise RecordingError(f"{path}: not a top-of-book file: no column {', '.join(missing)} "
                             f"(it has {', '.join(names[:12])})")


def _may_hold(group: Any, column: int, wanted: set[str]) -> bool:
    stats = group.column(column).statistics
    if stats is None or not stats.has_min_max:
        return True
    lo, hi = stats.min, stats.max
    if isinstance(lo, bytes):
        lo, hi = lo.decode("utf-8", "replace"), hi.decode("utf-8", "replace")
    return any(lo <= s <= hi for s in wanted)


def quote_events(paths: Iterable[str | os.PathLike[str]], **choice: Any) -> tuple[list[MarketMeta], Iterator[tuple[int, Any]]]:
    """The markets and the merged events (by time) of several top-of-book files (days), each file
    read as :class:`TopOfBook` with the same choice (``slugs``, ``limit``, ``depth``)."""
    return merge_books([TopOfBook(p, **choice) for p in paths])


def merge_books(books: Sequence[TopOfBook]) -> tuple[list[MarketMeta], Iterator[tuple[int, Any]]]:
    """The markets (the finer tick where files differ) and the events merged by time of
    ``books`` already read; none of either without books."""
    if not books:
        return [], iter(())
    markets: dict[str, MarketMeta] = {}
    for b in books:
        for m in b.markets():
            known = markets.get(m.condition_id)
            if known is None or m.tick_size < known.tick_size:  # the finer tick of the two
                markets[m.condition_id] = m
    events: Iterator[tuple[int, Any]] = iter(books[0]) if len(books) == 1 else heapq.merge(*books, key=itemgetter(0))
    return list(markets.values()), events

"""A top-of-book dataset as a backtest's data source: its files, the markets chosen from it, its
polling cadence, and what its books do not hold.

The dataset (``bot.backtest.importer``) is a table of polls: each row the best bid and ask of one
market at one time, a sweep of every market every minute or two, no depth, no trade prints.

Invariants:

- a folder stands for every top-of-book file under it (``*.parquet``, ``*.csv`` holding the
  columns ``ts``, ``slug``, ``bid``, ``ask``; partition folders such as ``quotes/dt=...`` included),
  sorted by path; the dataset's other tables (markets, labels, data quality) are not such files;
- markets are chosen by slug (exact, or a shell pattern ``*``, ``?``, ``[...]``), by category,
  or neither, then ranked (most polls with a price, or narrowest mean spread among the markets
  polled at least ``SPREAD_FLOOR`` as often as the most polled one) and the first ``count``
  taken; a slug or category that matches nothing is an error naming it, never an empty run;
- the cadence is the median time between two polls of one market (within a file and a segment),
  over the chosen markets: a book counts as stale only after ``stale_polls`` cadences without a
  poll, never sooner than the configured ``[feed] stale_after_s``;
- a pause is a stretch longer than that in which the source polled no market at all (its
  collector stopped): it says nothing of any one market, so it ages no book (``Feed.pause``);
- every figure here is read from the files alone: the same files and choice give the same
  markets, cadence and notes.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bot.backtest.importer import COLUMNS, TopOfBook, merge_books, price_column_units, tokens_of
from bot.backtest.recording import RecordingError
from bot.venue.units import UNIT, format_units

RANKS = ("snapshots", "spread")
PATTERN_CHARS = frozenset("*?[")
SPREAD_FLOOR = 0.9  # ranking by spread: markets polled at least this share as often as the most polled one


# --- choosing markets ------------------------------------------------------------------------


def choose_markets(files: Sequence[Path], *, slugs: Sequence[str] = (), category: str = "",
                   count: int | None = None, rank: str = "snapshots") -> list[str]:
    """The slugs of the markets to replay from ``files`` (see the module invariants); ``count``
    None: every market ``slugs`` names, else one."""
    if rank not in RANKS:
        raise ValueError(f"rank must be one of {', '.join(RANKS)}, got {rank!r}")
    stats = market_stats(files, category)
    if category and not stats:
        raise RecordingError(f"no market of category {category!r} in {_files_text(files)}"
                             f" (categories: {', '.join(categories(files)) or 'none'})")
    if slugs:
        chosen: dict[str, None] = {}
        for s in slugs:
            if PATTERN_CHARS & set(s):
                matched = fnmatch.filter(stats, s)
            else:
                matched = [s] if s in stats else []
            if not matched:
                where = f" of category {category!r}" if category else ""
                raise RecordingError(f"no market{where} matches slug {s!r} in {_files_text(files)}")
            chosen.update(dict.fromkeys(matched))
        stats = {s: stats[s] for s in chosen}
    if count is None:
        count = len(stats) if slugs else 1
    return ranked(stats, rank)[:count]


def ranked(stats: dict[str, tuple[int, int, int]], rank: str) -> list[str]:
    """Slugs by ``rank`` from ``slug -> (polls with a price, two-sided polls, summed spread in
    micro-units)``: ``snapshots`` most polls first, then narrowest mean spread; ``spread``
    narrowest mean spread first among the markets polled at least ``SPREAD_FLOOR`` as often as the
    most polled one (the rest after them), then most polls; ties by slug."""

    def mean_spread(s: str) -> float:
        _, two, total = stats[s]
        return total / two if two else float("inf")

    if rank == "snapshots":
        return sorted(stats, key=lambda s: (-stats[s][0], mean_spread(s), s))
    most = max((v[0] for v in stats.values()), default=0)
    return sorted(stats, key=lambda s: (stats[s][0] < SPREAD_FLOOR * most, mean_spread(s), -stats[s][0], s))


def market_stats(files: Sequence[Path], category: str = "") -> dict[str, tuple[int, int, int]]:
    """``slug -> (polls with a price, two-sided polls, summed spread in micro-units)`` over
    ``files``, of the markets of ``category`` when one is given."""
    out: dict[str, list[int]] = {}
    for path in files:
        for table in _tables(path, ["slug", "bid", "ask", *(["category"] if category else [])]):
            if category:
                table = table.filter(pc.fill_null(pc.equal(table["category"], category), False))
            bid, ask = price_column_units(table["bid"]), price_column_units(table["ask"])
            priced = pc.fill_null(pc.or_(pc.is_valid(bid), pc.is_valid(ask)), False)
            two = pc.fill_null(pc.and_(pc.is_valid(bid), pc.is_valid(ask)), False)
            spread = pc.if_else(two, pc.subtract(ask, bid), 0)
            t = pa.table({"slug": table["slug"], "priced": pc.cast(priced, pa.int64()),
                          "two": pc.cast(two, pa.int64()), "spread": spread}).filter(pc.is_valid(table["slug"]))
            agg = t.group_by("slug").aggregate([("priced", "sum"), ("two", "sum"), ("spread", "sum")])
            for slug, n, k, s in zip(*(agg[c].to_pylist() for c in ("slug", "priced_sum", "two_sum", "spread_sum"))):
                acc = out.setdefault(slug, [0, 0, 0])
                acc[0] += n
                acc[1] += k
                acc[2] += s or 0
    return {s: (v[0], v[1], v[2]) for s, v in out.items() if v[0] > 0}


def categories(files: Sequence[Path]) -> list[str]:
    """The categories the files hold, sorted."""
    seen: set[str] = set()
    for path in files:
        for table in _tables(path, ["category"]):
            seen.update(c for c in pc.unique(table["category"]).to_pylist() if c)
    return sorted(seen)


def _tables(path: Path, columns: list[str]) -> Iterator[pa.Table]:
    """``columns`` of ``path`` (a RecordingError when it cannot be read or lacks one)."""
    try:
        if path.suffix.lower() == ".csv":
            import pyarrow.csv as pacsv

            table = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(
                column_types={"slug": pa.string(), "category": pa.string(), "bid": pa.float64(),
                              "ask": pa.float64()}, strings_can_be_null=True))
            missing = [c for c in columns if c not in table.column_names]
            if missing:
                raise RecordingError(f"{path}: no column {', '.join(missing)}")
            yield table.select(columns)
            return
        pf = pq.ParquetFile(path)
        missing = [c for c in columns if c not in pf.schema_arrow.names]
        if missing:
            raise RecordingError(f"{path}: no column {', '.join(missing)}")
        for batch in pf.iter_batches(batch_size=1 << 20, columns=columns):
            yield pa.Table.from_batches([batch])
    except (pa.ArrowException, OSError) as exc:
        raise RecordingError(f"{path}: not a readable top-of-book file ({exc})"[:400]) from None


def _files_text(files: Sequence[Path]) -> str:
    return str(files[0]) if len(files) == 1 else f"{len(files)} top-of-book files"


# --- cadence -----------------------------------------------------------------------------------


def cadence_of(intervals: Sequence[pa.Array]) -> float | None:
    """The median of the intervals, in seconds (the lower middle value: one of the intervals);
    ``None`` without any."""
    joined = pa.concat_arrays([a for a in intervals if len(a)]) if any(len(a) for a in intervals) else None
    if joined is None:
        return None
    return pc.quantile(joined, q=0.5, interpolation="lower")[0].as_py() / 1e9


def sweep_times(files: Sequence[Path]) -> list[int]:
    """Every time (ns) any market of ``files`` was polled, sorted, each once."""
    seen: set[int] = set()
    for path in files:
        for table in _tables(path, ["ts"]):
            ts = pc.cast(pc.cast(table["ts"], pa.timestamp("ns")), pa.int64())
            seen.update(v for v in pc.unique(ts).to_pylist() if v is not None)
    return sorted(seen)


def outcomes(files: Sequence[Path], slugs: Sequence[str]) -> dict[str, int]:
    """``slug -> 1`` (resolved YES) or ``0`` (NO) of the markets ``slugs`` that the authoritative
    labels beside the files hold (``labels.parquet`` in the nearest folder above a file, rows of
    ``source`` ``api`` only: the dataset's inferred labels are biased); none without such a file."""
    found: dict[str, int] = {}
    wanted = pa.array(sorted(set(slugs)), pa.string())
    for labels in dict.fromkeys(_labels_file(p) for p in files):
        if labels is None:
            continue
        try:
            table = pq.read_table(labels, columns=["slug", "y", "source"])
        except (pa.ArrowException, OSError, KeyError):
            continue
        keep = pc.and_(pc.is_in(table["slug"], value_set=wanted), pc.equal(table["source"], "api"))
        for slug, y in zip(*(table.filter(pc.fill_null(keep, False))[c].to_pylist() for c in ("slug", "y"))):
            if y in (0, 1):
                found[slug] = y
    return found


def _labels_file(path: Path) -> Path | None:
    for folder in path.resolve().parents:
        if (folder / "labels.parquet").is_file():
            return folder / "labels.parquet"
    return None


# --- the source --------------------------------------------------------------------------------


class Dataset:
    """The chosen markets of some top-of-book files, ready to replay, with their cadence and the
    notes a run's summary carries (see the module invariants)."""

    def __init__(self, files: Sequence[Path], *, slugs: Sequence[str] = (), category: str = "",
                 count: int | None = None, rank: str = "snapshots", depth: int = 1000,
                 stale_polls: float = 3.0) -> None:
        self.files = list(files)
        self.depth = depth
        self.stale_polls = stale_polls
        self.slugs = choose_markets(self.files, slugs=slugs, category=category, count=count, rank=rank)
        books = [TopOfBook(p, slugs=self.slugs, depth=str(depth)) for p in self.files]
        self.metas, self.events = merge_books(books)
        self.rows = sum(b.rows for b in books)
        self.skipped = sum(b.skipped for b in books)
        self.crossed = sum(b.crossed for b in books)
        self.cadence_s = cadence_of([b.intervals() for b in books])
        self.sweeps = sweep_times(self.files)
        self.outcomes = outcomes(self.files, self.slugs)

    def pauses(self, stale_after_s: float) -> list[tuple[float, float]]:
        """``(last poll, next poll)`` in seconds, where the source polled no market at all for
        longer than ``stale_after_s`` (its collector stopped)."""
        t = self.sweeps
        limit = stale_after_s * 1e9
        return [(a / 1e9, b / 1e9) for a, b in zip(t, t[1:]) if b - a > limit]

    def stale_after_s(self, configured: float) -> float:
        """How long a book may go without a poll before it is stale: ``stale_polls`` cadences,
        never less than ``configured``."""
        if self.cadence_s is None:
            return configured
        return max(configured, self.stale_polls * self.cadence_s)

    def notes(self, stale_after_s: float) -> tuple[str, ...]:
        """What the run assumed of these books, for its summary and report."""
        cadence = "unknown" if self.cadence_s is None else f"every {self.cadence_s:g} s"
        pauses = self.pauses(stale_after_s)
        paused = ""
        if pauses:
            longest = max(b - a for a, b in pauses)
            paused = (f"; the source itself polled nothing {len(pauses)} time(s) for longer (the longest "
                      f"{duration(longest)}): that time does not age the books, no timer runs in it, and orders "
                      "resting through it meet the first books after it")
        return (
            f"books are L1 only: {len(self.slugs)} market(s) of a top-of-book dataset ({self.rows:,} polls, "
            f"{self.skipped:,} without a usable price skipped, {self.crossed:,} crossed), best bid and ask only: "
            "no depth, no queue, no trade prints",
            f"depth: each polled best price is taken to hold {self.depth:,} shares and nothing behind it; with "
            "no trade prints, the queue ahead of a resting order moves only as the queue model reads a polled "
            "level shrink or leave the touch, and the order fills when a later poll's opposite best price "
            "crosses its price, up to those shares; a take fills at once against them",
            f"staleness judged against the source's cadence: a market is polled {cadence}; a book with no poll "
            f"for {stale_after_s:g} s is stale{paused}",
        )

    def settlement(self, portfolio: Any, marked_pnl: int) -> str:
        """What the positions held at the end come to when their markets resolve (``outcomes``):
        a winning share pays 1 USDC, a losing one nothing; empty when nothing is held."""
        tokens = [t for m in self.metas for t in m.tokens]
        held = sorted({t.rsplit(":", 1)[0] for t in tokens if portfolio.size(t)})
        if not held:
            return ""
        missing = [s for s in held if s not in self.outcomes]
        if missing:
            return (f"settlement: {len(missing)} of the {len(held)} market(s) held at the end have no "
                    "authoritative label (labels.parquet, source api): PnL values them at the last books only")
        marks: dict[str, int] = {}
        for slug in held:
            yes, no = tokens_of(slug)
            marks[yes], marks[no] = UNIT * self.outcomes[slug], UNIT * (1 - self.outcomes[slug])
        won = sum(self.outcomes[s] for s in held)
        return (f"settlement: the {len(held)} market(s) held at the end resolved ({won} YES, {len(held) - won} NO; "
                f"labels.parquet, source api): settled at 1 or 0 a share, PnL is {format_units(portfolio.total_pnl(marks))} "
                f"USDC, against {format_units(marked_pnl)} at the last books")


def duration(seconds: float) -> str:
    """``seconds`` as a person reads them: seconds below ten minutes, then minutes, hours, days."""
    if seconds < 600:
        return f"{seconds:g} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    if seconds < 172_800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86_400:.1f} days"

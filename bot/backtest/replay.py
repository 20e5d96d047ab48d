"""Replay of recordings: ``(recv_ns, event)`` in receive-time order across files, runs and tokens.

Events are what the engine consumes: the venue's market events exactly as ``decode_market_frame``
decodes the recorded frames (``book``, ``price_change``, ``last_trade_price``,
``tick_size_change``, ...), or, read through the derived cache, :class:`~bot.core.levels.PriceLevels`
in place of a ``price_change`` (the same books, without parsing); a :class:`Gap` where the books
named were not continuous (the consumer marks them stale until their next snapshot); a
:class:`RestBook` for a recorded REST snapshot; a :class:`MarketMeta` for recorded metadata.

Invariants:

- the files of one run are read one after the other in their order (``header.file``), a missing
  one replayed as a gap; runs are merged by receive time with ``heapq.merge``: one open file per
  run and one cache chunk at a time, whatever the recordings' length;
- equal receive times keep the order of the runs as given, and within a run the file's order;
  within a file ``t`` never decreases (a decreasing one is held at the previous value, counted);
- every event a frame decodes to is yielded with that frame's receive time, in the frame's order;
  a frame the live stream would have skipped (a recognised event with a bad shape) is skipped
  and counted, never a crash;
- a file's unreadable line, damaged compressed data, cut-short end (no ``end`` line) and a
  stop (``end`` other than ``rotate``) are gaps of all the file's tokens; ``strict=True`` raises
  on an unreadable line instead;
- with the cache on, a file with a valid cache is read from it, and any other file is read from
  its lines and its cache built on the way (kept only when the whole file was read); either way a
  ``price_change`` comes out as ``PriceLevels`` and every other event as without the cache, in
  the same order at the same times.
"""

from __future__ import annotations

import functools
import heapq
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any

import msgspec
import structlog

from bot.backtest.cache import CACHED_TYPES, CacheWriter, Chunk, open_cache
from bot.backtest.recording import (
    BookLine, Damage, EndLine, FileReader, Gap, GapLine, Header, LineError, MarketLine, MarketMeta, ReadMeter,
    RestBook, UnknownKind, WsLine, decode_line, fast_ws, is_damage, raw_lines, recording_files,
)
from bot.core.book import price_levels_of
from bot.venue.models.ws import PriceChangeEvent, decode_market_frame

__all__ = ["Events", "Gap", "MarketMeta", "RestBook", "ReplayStats", "replay", "file_events", "markets", "run_spans",
           "runs", "session_breaks"]

log = structlog.get_logger("bot.backtest.replay")


class ReplayStats:
    """Counts of one replay (all files together)."""

    __slots__ = ("files", "lines", "frames", "frame_errors", "ignored_frames", "bad_lines",
                 "unknown_lines", "damaged_files", "held_times", "gaps", "unreadable", "cached_files", "cached_events",
                 "built_caches")

    def __init__(self) -> None:
        for name in self.__slots__:
            setattr(self, name, 0)

    def as_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in self.__slots__}


class Events(chain):
    """``(t, event)`` pairs, iterated in C (a ``chain`` of the per-file streams); ``close()``
    closes every file still open (a replay left unfinished writes no cache); ``meter`` (when
    given) tells how much of the files has been read."""

    _closers: list[Any]
    meter: ReadMeter | None

    @classmethod
    def of(cls, parts: Iterable[Iterable[tuple[int, Any]]], closers: list[Any],
           meter: ReadMeter | None = None) -> "Events":
        events = cls.from_iterable(parts)
        events._closers = closers
        events.meter = meter
        return events

    def close(self) -> None:
        for gen in reversed(self._closers):
            gen.close()
        self._closers.clear()

    def __enter__(self) -> "Events":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _File:
    """The per-file state every line is read against: the file's tokens, the last receive time,
    whether the last record was an ``end`` line."""

    __slots__ = ("path", "header", "tokens", "t", "ended", "stats", "strict", "levels", "frame_line")

    def __init__(self, path: Path, header: Header, stats: ReplayStats, *, strict: bool,
                 levels: bool = True) -> None:
        self.path = path
        self.header = header
        self.tokens = header.all_tokens()
        self.t = header.t
        self.ended = False
        self.stats = stats
        self.strict = strict
        self.levels = levels  # price_change frames come out as PriceLevels
        self.frame_line = False  # the last line was a ws frame

    def start(self) -> list[tuple[int, Any]]:
        return [(self.header.t, m) for m in self.header.markets]

    def _time(self, t: int) -> int:
        if t < self.t:
            self.stats.held_times += 1
            return self.t
        self.t = t
        return t

    def gap(self, reason: str, tokens: Iterable[str] | None = None) -> tuple[int, Gap]:
        self.stats.gaps += 1
        if is_damage(reason):  # read from the file or from its cache alike
            self.stats.unreadable += 1
        return self.t, Gap(self.tokens if tokens is None else tuple(tokens), reason)

    def damage(self, item: Damage) -> list[tuple[int, Any]]:
        self.ended = False
        return [self.gap(item.reason)]

    def finish(self) -> list[tuple[int, Any]]:
        if self.ended:
            return []
        return [self.gap("no end line: the file was cut short")]

    def line(self, line: bytes) -> list[tuple[int, Any]]:
        """The events of one line (see the module invariants)."""
        stats = self.stats
        stats.lines += 1
        self.ended = False
        self.frame_line = True
        fast = fast_ws(line)
        if fast is not None:
            try:
                events = decode_market_frame(fast[1])
            except Exception:  # noqa: BLE001 - as the live stream: a frame it cannot decode is skipped
                stats.frames += 1
                stats.frame_errors += 1
                self._time(fast[0])
                return []
            if events:
                stats.frames += 1
                t = self._time(fast[0])
                if self.levels and len(events) == 1 and type(events[0]) is PriceChangeEvent:
                    pl = price_levels_of(events[0])
                    if pl is not None:
                        return [(t, pl)]
                return [(t, ev) for ev in events]
        try:
            rec = decode_line(line)
        except UnknownKind:
            stats.unknown_lines += 1
            return []
        except LineError as exc:
            stats.bad_lines += 1
            if self.strict:
                raise LineError(f"{self.path}: {exc}") from None
            return [self.gap(f"unreadable line: {exc}"[:300])]
        t = self._time(rec.t)
        kind = type(rec)
        self.frame_line = kind is WsLine
        if kind is WsLine:
            stats.frames += 1
            try:
                events = decode_market_frame(rec.frame)
            except Exception:  # noqa: BLE001 - as the live stream: a frame it cannot decode is skipped
                stats.frame_errors += 1
                return []
            if not events:
                stats.ignored_frames += 1
            return [(t, ev) for ev in events]
        if kind is BookLine:
            return [(t, rec.book)]
        if kind is MarketLine:
            return [(t, rec.market)]
        if kind is GapLine:
            return [self.gap(rec.reason or "gap", rec.tokens)]
        if kind is EndLine:
            self.ended = True
            return [] if rec.reason == "rotate" else [self.gap(f"recording ended: {rec.reason}")]
        # a header again (files concatenated): a new start, books not continuous
        return [self.gap("another header: files joined")]


def _json_parts(reader: FileReader, st: _File) -> Iterator[list[tuple[int, Any]]]:
    yield st.start()
    for item in reader.lines():
        if type(item) is bytes:
            yield st.line(item)
        else:
            st.stats.damaged_files += 1
            yield st.damage(item)
    yield st.finish()


def _building_parts(reader: FileReader, st: _File, writer: CacheWriter) -> Iterator[list[tuple[int, Any]]]:
    """Lines read from the recording, and recorded into its cache on the way; the cache is kept
    only when the whole file was read."""
    done = False
    try:
        yield st.start()
        add = writer.add
        for item in reader.lines():
            if type(item) is bytes:
                out = st.line(item)
                if out and st.frame_line and all(type(ev) in CACHED_TYPES for _, ev in out):
                    for t, ev in out:
                        add(t, ev)
                else:
                    add(st.t, item)
                yield out
            else:
                st.stats.damaged_files += 1
                add(st.t, msgspec.json.encode(GapLine(t=st.t, reason=item.reason)))
                yield st.damage(item)
        yield st.finish()
        done = True
    finally:
        if done:
            try:
                writer.commit()
                st.stats.built_caches += 1
            except OSError as exc:
                writer.abort()
                log.warning("replay_cache_not_written", file=str(st.path), error=str(exc)[:200])
        else:
            writer.abort()


def _cached_parts(st: _File, chunks: Iterator[Chunk]) -> Iterator[Iterable[tuple[int, Any]]]:
    """Cached events as they are (a chunk of them is a ``zip`` of its columns, iterated in C);
    line bytes read as from the file."""
    yield st.start()
    stats = st.stats
    for chunk in chunks:
        times, items = chunk.t, chunk.items
        stats.cached_events += len(items) - chunk.lines
        if not chunk.lines:
            yield zip(times, items)
            st.t, st.ended = times[-1], False
            continue
        for t, item in zip(times, items):
            if type(item) is bytes:
                yield st.line(item)
            else:
                st.t, st.ended = t, False
                yield ((t, item),)
    yield st.finish()


def file_events(path: str | os.PathLike[str], *, cache: bool = False, strict: bool = False,
                stats: ReplayStats | None = None, closers: list[Any] | None = None,
                meter: ReadMeter | None = None) -> Events:
    """``(t, event)`` of one file (see the module invariants). The file is opened (its header
    read) before this returns; ``meter`` counts its reading."""
    stats = stats if stats is not None else ReplayStats()
    closers = closers if closers is not None else []
    path = Path(path)
    parts: Iterator[Iterable[tuple[int, Any]]] | None = None
    if cache:
        found = open_cache(path, meter)
        if found is not None:
            header_line, chunks = found
            header = decode_line(header_line)
            if isinstance(header, Header):
                stats.files += 1
                stats.cached_files += 1
                closers.append(chunks)
                parts = _cached_parts(_File(path, header, stats, strict=strict), chunks)
            else:
                chunks.close()
    if parts is None:
        reader = FileReader(path, strict=strict, meter=meter)
        closers.append(reader.lines())
        stats.files += 1
        st = _File(path, reader.header, stats, strict=strict, levels=cache)
        if cache:
            try:
                writer = CacheWriter(path, msgspec.json.encode(reader.header))
            except OSError as exc:
                log.warning("replay_cache_not_written", file=str(path), error=str(exc)[:200])
            else:
                parts = _building_parts(reader, st, writer)
        if parts is None:
            parts = _json_parts(reader, st)
    closers.append(parts)
    return Events.of(parts, closers)


def runs(paths: Iterable[str | os.PathLike[str]]) -> list[list[tuple[Path, Header]]]:
    """The recording files named (directories expanded), grouped by run in order of first
    appearance, each run in file order; a file named twice counts once. Reads only the headers;
    a RecordingError names a path that is not a recording."""
    groups: dict[str, list[tuple[Path, Header]]] = {}
    seen: set[Path] = set()
    for path in recording_files(paths):
        resolved = path.resolve()
        if resolved in seen:
            continue
        seen.add(resolved)
        reader = FileReader(path)
        reader.close()
        header = reader.header
        groups.setdefault(header.run or f"file:{resolved}", []).append((path, header))
    return [sorted(g, key=lambda item: item[1].file) for g in groups.values()]


class _Stamp(msgspec.Struct):
    t: int = 0


def run_spans(groups: list[list[tuple[Path, Header]]]) -> list[tuple[float, float]]:
    """Each run's (``runs``) receive times (epoch seconds) of its first line, from its header, and
    of its last readable line, from its last file, whose lines are read as bytes with only their
    time decoded (no frame is); in order of first appearance."""
    stamp = msgspec.json.Decoder(_Stamp)
    out = []
    for group in groups:
        first = group[0][1].t
        last = first
        for line in raw_lines(group[-1][0]):
            if type(line) is not Damage:
                try:
                    last = max(last, stamp.decode(line).t)
                except msgspec.DecodeError:
                    continue
        out.append((first / 1e9, last / 1e9))
    return out


def session_breaks(spans: Iterable[tuple[float, float]], longer_than_s: float) -> list[tuple[float, float]]:
    """The stretches no run covers (``(end of what came before, start of the next run)``) longer
    than ``longer_than_s``: recordings of different sessions, between which nothing was recorded."""
    out = []
    covered = None
    for start, end in sorted(spans):
        if covered is not None and start - covered > longer_than_s:
            out.append((covered, start))
        covered = end if covered is None else max(covered, end)
    return out


def markets(paths: Iterable[str | os.PathLike[str]]) -> list[MarketMeta]:
    """The metadata of every market the recordings cover, from their headers (the latest header
    wins for a market recorded more than once): what a backtest builds its market list from."""
    found: dict[str, tuple[int, MarketMeta]] = {}
    for group in runs(paths):
        for _, header in group:
            for m in header.markets:
                known = found.get(m.condition_id)
                if known is None or header.t >= known[0]:
                    found[m.condition_id] = (header.t, m)
    return [m for _, m in found.values()]


def _run_parts(files: list[tuple[Path, Header]], cache: bool, strict: bool, stats: ReplayStats,
               closers: list[Any], meter: ReadMeter) -> Iterator[Iterable[tuple[int, Any]]]:
    prev: int | None = None
    for path, header in files:
        if prev is not None and header.file > prev + 1:
            stats.gaps += 1
            missing = f"files {prev + 1}..{header.file - 1}" if header.file > prev + 2 else f"file {prev + 1}"
            yield ((header.t, Gap(header.all_tokens(), f"run {header.run}: {missing} missing")),)
        yield file_events(path, cache=cache, strict=strict, stats=stats, closers=closers, meter=meter)
        prev = header.file


_T = itemgetter(0)


def replay(paths: Iterable[str | os.PathLike[str]], *, cache: bool = True, strict: bool = False,
           stats: ReplayStats | None = None) -> Events:
    """``(t, event)`` of every recording named, merged by receive time (see the module invariants).

    The files are opened (headers read) before this returns, so a path that is not a recording
    is a RecordingError here, not in the middle of a replay. ``close()`` (or ``with``) closes the
    files of a replay left unfinished. Its ``meter`` tells how much of the files has been read."""
    stats = stats if stats is not None else ReplayStats()
    closers: list[Any] = []
    runs_ = []
    groups = runs(paths)
    meter = ReadMeter(path for group in groups for path, _ in group)
    for group in groups:
        parts = _run_parts(group, cache, strict, stats, closers, meter)
        closers.append(parts)
        runs_.append(chain.from_iterable(parts))
    if len(runs_) == 1:
        return Events.of((runs_[0],), closers, meter)
    merged = heapq.merge(*runs_, key=_T)
    closers.append(merged)
    return Events.of((merged,), closers, meter)


def recorded(paths: Sequence[str | Path]) -> Callable[[Sequence[str]], Iterator[tuple[int, Any]]] | None:
    """The books of a journal's run from the recordings ``paths`` (``bot.results.read.MarketEvents``),
    or ``None`` when no recording is named."""
    return functools.partial(recording_events, tuple(paths)) if paths else None


def recording_events(paths: Sequence[str | Path], tokens: Iterable[str] = ()) -> Iterator[tuple[int, Any]]:
    """The market events of the recordings ``paths`` as ``(receive ns, event)``; top-of-book
    files among them (or under a folder) give the books of the dataset markets ``tokens`` name
    (``SLUG:yes``, ``SLUG:no``), if any. A file that cannot be read is a ``ResultsError``."""
    from bot.backtest.sources import split_sources
    from bot.results.read import ResultsError

    try:
        recordings, tables = split_sources(paths)
        slugs = sorted({t.rsplit(":", 1)[0] for t in tokens if t.endswith((":yes", ":no"))})
        streams: list[Iterator[tuple[int, Any]]] = []
        if recordings:
            streams.append(replay([str(p) for p in recordings], cache=False))
        if tables and slugs:
            from bot.backtest.dataset import Dataset  # pyarrow: only for top-of-book files

            streams.append(Dataset(tables, slugs=slugs).events)
        if streams:
            yield from streams[0] if len(streams) == 1 else heapq.merge(*streams, key=lambda item: item[0])
    except (OSError, ValueError) as exc:
        raise ResultsError(f"recording: {exc}") from None

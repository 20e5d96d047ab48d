"""The recorder: the market stream of chosen markets, written to rotating recording files.

Invariants:

- every frame the market channel delivers (``PONG`` aside) is written exactly as received, with
  its receive time, through the stream's tap: nothing is decoded on the way to the file;
- a REST book snapshot of every token is written after each connection of a shard comes up (the
  first time and after every reconnect) and at the start of every new file; the market metadata
  is in every file's header and is fetched again and written after every reconnect;
- a connection that goes stale or down is written as a gap of the tokens it carried, before
  anything of the next connection;
- blocks end at least every ``flush_s`` (a timer ticks the writer even when nothing arrives), so
  a killed recorder loses at most the block it was filling; a stop (``request_stop``, the
  duration, SIGTERM, SIGINT) closes the current file cleanly;
- memory stays flat however long it runs: one block of lines, the stream's own buffers, the
  markets' metadata.
"""

from __future__ import annotations

import signal
from collections.abc import Iterable, Sequence
from typing import Any

import anyio
import msgspec
import structlog

from bot.backtest.recording import MarketMeta, RecordingWriter, WriterConfig, market_meta
from bot.venue.errors import VenueError
from bot.venue.stream import ConnectionEvent, MarketStream, StreamConfig

log = structlog.get_logger("bot.backtest.recorder")

SNAPSHOT_BATCH = 50  # tokens per POST /books (interface.md 8)


class RecorderConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Files and the market stream's settings (its ``url`` is the venue's WebSocket base)."""

    writer: WriterConfig = WriterConfig()
    stream: StreamConfig = StreamConfig()
    snapshot_retry_s: float = 1.0  # wait before the one retry of a failed REST snapshot


class RecorderSummary(msgspec.Struct, frozen=True):
    """What a run wrote."""

    files: list[str]
    frames: int
    lines: int
    bytes: int
    gaps: int
    snapshots: int
    stop_reason: str


class ChoiceError(ValueError):
    """A chosen token, market or event that the venue does not list (the venue's words kept)."""


async def resolve_markets(clob: Any, catalog: Any = None, *, tokens: Sequence[str] = (),
                          markets: Sequence[str] = (), events: Sequence[str] = (),
                          tag: str | None = None, limit: int = 0) -> list[MarketMeta]:
    """The metadata of the markets chosen by token id (its market), condition id, event slug (its
    markets) or catalog filter (active open markets of ``tag``, at most ``limit``), in that order,
    each market once. A choice the venue does not know is a ChoiceError naming it."""
    conditions: dict[str, None] = {}
    for token in tokens:
        book = await _asking(f"token {token}", clob.book, token)
        conditions[book.market] = None
    conditions.update(dict.fromkeys(markets))
    if (events or tag or limit) and catalog is None:
        raise ValueError("choosing markets by event or catalog filter needs the catalog")
    for slug in events:
        event = await _asking(f"event {slug}", catalog.event_by_slug, slug)
        conditions.update(dict.fromkeys(m.condition_id for m in event.markets or ()))
    if tag or limit:
        listed = await catalog.markets(tag=tag, active=True, closed=False, limit=limit or None)
        conditions.update(dict.fromkeys(m.condition_id for m in listed))
    return [market_meta(await _asking(f"market {cond}", clob.market, cond)) for cond in conditions]


async def _asking(what: str, call: Any, arg: str) -> Any:
    try:
        return await call(arg)
    except VenueError as exc:
        if getattr(exc, "status", None) in (400, 404):
            raise ChoiceError(f"{what}: {exc}") from None
        raise


class Recorder:
    """Records the market stream of ``markets`` through ``clob`` (REST snapshots and metadata)."""

    def __init__(self, clob: Any, markets: Sequence[MarketMeta], config: RecorderConfig | None = None) -> None:
        if not markets:
            raise ValueError("nothing to record: no market chosen")
        self.clob = clob
        self.config = config or RecorderConfig()
        self.markets = list(markets)
        self.tokens = list(dict.fromkeys(t for m in self.markets for t in m.tokens))
        self.writer: RecordingWriter | None = None
        self.gaps = 0
        self.snapshots = 0
        self.stop_reason = ""
        self._stop = anyio.Event()
        self._want: dict[str, None] = {}  # tokens due for a REST snapshot
        self._want_meta: dict[str, None] = {}  # condition ids due for fresh metadata
        self._wake = anyio.Event()

    # -- control -----------------------------------------------------------------------------

    def request_stop(self, reason: str = "requested") -> None:
        if not self._stop.is_set():
            self.stop_reason = reason
            self._stop.set()

    async def run(self, duration: float | None = None, *, signals: bool = True) -> RecorderSummary:
        """Record until stopped (``request_stop``, ``duration``, and SIGTERM or SIGINT when
        ``signals``); the current file is always closed cleanly."""
        cfg = self.config
        writer = self.writer = RecordingWriter(cfg.writer, source=cfg.stream.url, tokens=self.tokens,
                                               markets=self.markets)
        writer.on_rotate = lambda _path: self._snapshot(self.tokens)
        stream = MarketStream(self._on_event, self.tokens, cfg.stream, tap=self._on_frame)
        log.info("recording", file=str(writer.path), tokens=len(self.tokens), markets=len(self.markets))
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(stream.run)
                tg.start_soon(self._ticks)
                tg.start_soon(self._fetches)
                if signals:
                    tg.start_soon(self._signals)
                if duration is not None:
                    tg.start_soon(self._deadline, duration)
                await self._stop.wait()
                tg.cancel_scope.cancel()
        finally:
            writer.close(self.stop_reason or "stop")
        log.info("recording_closed", files=len(writer.files), frames=writer.frames, reason=self.stop_reason)
        return RecorderSummary(files=[str(p) for p in writer.files], frames=writer.frames, lines=writer.lines,
                               bytes=writer.bytes_written, gaps=self.gaps, snapshots=self.snapshots,
                               stop_reason=self.stop_reason or "stop")

    # -- the stream --------------------------------------------------------------------------

    def _on_frame(self, shard: int, frame: bytes, recv_ns: int) -> None:
        if frame == b"PONG":
            return
        assert self.writer is not None
        self.writer.ws(shard, frame, recv_ns)

    def _on_event(self, ev: Any) -> None:
        if type(ev) is not ConnectionEvent:
            return  # market events: the frames are already written, as received
        assert self.writer is not None
        if ev.kind in ("stale", "disconnected"):
            self.gaps += 1
            self.writer.gap(f"{ev.kind}: {ev.reason}"[:200] if ev.reason else ev.kind, ev.subscriptions)
        elif ev.kind == "connected":
            self._snapshot(ev.subscriptions)
        elif ev.kind == "reconnected":
            subs = set(ev.subscriptions)
            self._want_meta.update(dict.fromkeys(m.condition_id for m in self.markets if subs & set(m.tokens)))
            self._snapshot(ev.subscriptions)

    def _snapshot(self, tokens: Iterable[str]) -> None:
        self._want.update(dict.fromkeys(tokens))
        self._wake.set()

    # -- tasks -------------------------------------------------------------------------------

    async def _ticks(self) -> None:
        """End blocks and rotate files on time even when nothing arrives."""
        assert self.writer is not None
        interval = min(self.config.writer.flush_s / 2, 0.5)
        while True:
            await anyio.sleep(interval)
            self.writer.tick()

    async def _fetches(self) -> None:
        """REST snapshots and metadata, written as they arrive."""
        writer = self.writer
        assert writer is not None
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            metas, self._want_meta = list(self._want_meta), {}
            for cond in metas:
                meta = await self._retrying(self.clob.market, cond)
                if meta is not None:
                    writer.market(market_meta(meta))
            todo, self._want = list(self._want), {}
            for i in range(0, len(todo), SNAPSHOT_BATCH):
                books = await self._retrying(self.clob.books, todo[i:i + SNAPSHOT_BATCH])
                for book in books or ():
                    writer.rest_book(book)
                    self.snapshots += 1

    async def _retrying(self, call: Any, arg: Any) -> Any:
        for attempt in (0, 1):
            try:
                return await call(arg)
            except (VenueError, OSError) as exc:
                log.warning("recorder_fetch_failed", call=getattr(call, "__name__", "?"), attempt=attempt,
                            error=str(exc)[:200])
                if attempt == 0:
                    await anyio.sleep(self.config.snapshot_retry_s)
        return None

    async def _signals(self) -> None:
        try:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for signum in signals:
                    self.request_stop(signal.Signals(signum).name)
                    return
        except (NotImplementedError, ValueError, RuntimeError):  # no signals off the main thread
            await anyio.sleep_forever()

    async def _deadline(self, duration: float) -> None:
        await anyio.sleep(duration)
        self.request_stop("duration")

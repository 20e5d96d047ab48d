"""The live shell: the loop around the synchronous ``Engine`` in a live or paper run. Its event
sources are the venue's market channel (and REST books when a feed goes stale); what executes the
engine's actions is an executor (``bot.execution.executor``): the venue over HTTP in a live run
(``bot.live.executor.LiveExecutor``, the default), the simulated venue in paper trading
(``bot.sim.venue.SimVenue``, which meets the market through ``market_tap``).

Invariants:

- the engine is touched only by the core loop task: the executor's answers and news and the
  pollers' results go into one inbox (an anyio memory stream), the market channel appends its
  events (with the time each frame came off the socket) to a market buffer as the frame comes off
  the socket, and the core loop feeds them to the engine, so the core stays single-threaded and
  deterministic; whatever fills the inbox or the buffer rings the core's bell (a future the idle
  core awaits), so a frame is one hop of the event loop from the engine;
- under load the bot sheds work instead of queueing it: each turn of the core loop takes the
  whole market buffer as one batch (``Engine.on_market``: every update applied, the
  strategy run once per changed token), after at most ``MAX_INBOX_PER_TURN`` inbox messages, so
  answers and periodic tasks never starve the market stream nor the other way round; a market
  buffer past ``MAX_MARKET_PENDING`` events holds the socket reader until the core takes it;
- the journal's commits are grouped per turn and made before the turn's actions reach the
  executor: in a worker thread when a commit fsyncs (``Journal.commit_fsyncs``), inline when it
  does not; a turn whose journal write failed (``Journal.failed``: disk full, I/O error) sends
  none of its orders (they were not made durable): quoting halts, one line says why, and the bot
  stops;
- on stop (duration, SIGINT/SIGTERM, or ``request_stop``) the shell lets the trading requests
  already on the wire finish (a POST answered after a cancel-all would leave its order resting),
  then the executor cancels every own order (``Executor.stop``) and reads what it did one last
  time (``Executor.final_reads``), before it returns; nothing is left resting and every fill is
  booked. The stop cancels first and writes after: the journal's writes of the stop are held
  until the cancels are answered (a full disk never keeps an order resting), and
  ``cancelled_all`` says whether the venue answered the cancel of everything;
- the venue's holdings, read by the executor, are reconciled here: a difference from the booked
  fills that outlives a trades read halts the bot, and after a reconnect nothing new is sent
  until they agree (``Engine.reconcile_positions``).
"""

from __future__ import annotations

import asyncio
import signal
import time
from typing import Any, Callable

import anyio
import msgspec
import structlog
from anyio.lowlevel import checkpoint

from bot.engine.engine import Engine
from bot.execution.executor import Executor
from bot.execution.protocol import FetchTrades, PlacesFailed, SendPlaces, SyncOrders
from bot.live.gauges import StreamGauges
from bot.live.inbox import STOP, Msg
from bot.live.venue import Venue
from bot.ops.config import ShellConfig
from bot.venue.errors import VenueError
from bot.venue.stream import ConnectionEvent, MarketStream

log = structlog.get_logger("bot.live")

# risk limits exported as ``bot_risk_limit{limit=...}`` (shares or USDC), for the alert rules
RISK_LIMIT_GAUGES = ("max_position", "max_daily_loss", "max_total_loss")
MAX_INBOX_PER_TURN = 1_000  # inbox messages handled before the market buffer gets its turn
MAX_MARKET_PENDING = 50_000  # market events buffered before the socket reader waits for the core


class LiveShell:
    """Runs one engine against the venue's market until stopped; see the module invariants."""

    def __init__(self, engine: Engine, venue: Venue, *, config: ShellConfig | None = None,
                 on_timer: Callable[[], None] | None = None, journal: Any = None,
                 executor: Executor | None = None, market_tap: Callable[[Any, float], None] | None = None) -> None:
        """``executor``: what executes the engine's actions (by default the venue's,
        ``LiveExecutor``). ``market_tap(event, now)`` meets each market event just before the
        engine does (paper trading: the simulated venue's ``on_market``, so its orders meet the
        books the strategy sees)."""
        self.engine = engine
        self.venue = venue
        self.config = config or ShellConfig()
        if executor is None:
            from bot.live.executor import LiveExecutor

            executor = LiveExecutor(engine, venue, self.config)
        self.executor = executor
        self.market_tap = market_tap
        self.on_timer = on_timer
        self.journal = journal
        self._send, self._inbox = anyio.create_memory_object_stream[Any](10_000)
        self._stop = anyio.Event()
        self._tg: Any = None
        # the market buffer: events in arrival order, each with its frame's socket receipt time
        self._events: list[Any] = []
        self._received: list[float | None] = []
        self._drained: Any = None  # set when the core takes a buffer that was full (made in ``run``)
        self._full = False  # the buffer reached MAX_MARKET_PENDING: the socket's reading waits for ``_drained``
        self._bell: asyncio.Future[None] | None = None  # what the idle core awaits (``_ring``)
        self._market: MarketStream | None = None
        self.stop_reason = ""
        self.cancelled_all = False  # the stop's cancel of everything was answered (``_shutdown``)
        self._journal_halted = False
        self.drifts: list[Any] = []
        if engine.metrics is not None and hasattr(engine.metrics, "watch_strategy"):
            engine.metrics.watch_strategy(engine.strategy)  # the strategy's estimates, at each scrape

    # --- control -------------------------------------------------------------------------
    def request_stop(self, reason: str = "requested") -> None:
        if not self._stop.is_set():
            self.stop_reason = reason
            self._stop.set()
            try:
                self._send.send_nowait(STOP)
            except anyio.WouldBlock:
                pass  # the loop is busy with a full inbox; it sees the event next turn
            self._ring()

    def submit(self, kind: str, a: Any = None) -> None:
        """Queue a control message for the core loop (``halt``, ``reduce``, ``resume``, ``sync``,
        ``trades``)."""
        self._send.send_nowait(Msg(kind, a))
        self._ring()

    def _ring(self) -> None:
        """Wake the core if it waits: the inbox or the market buffer has something."""
        bell = self._bell
        if bell is not None and not bell.done():
            bell.set_result(None)

    async def _post(self, msg: Any) -> None:
        """Into the inbox (waiting while it is full), and the core woken."""
        await self._send.send(msg)
        self._ring()

    async def _idle(self, timeout: float) -> None:
        """Until the bell rings or ``timeout`` seconds pass."""
        loop = asyncio.get_running_loop()
        bell = self._bell = loop.create_future()
        timer = loop.call_later(timeout, self._ring)
        try:
            await bell
        finally:
            timer.cancel()
            self._bell = None

    # --- run -----------------------------------------------------------------------------
    async def run(self, duration: float | None = None) -> None:
        """Trade until ``duration`` seconds pass or a stop is requested; always cancels all."""
        eng = self.engine
        tokens = [t for m in eng.markets for t in m.tokens]
        scfg = msgspec.structs.replace(self.config.stream, url=self.venue.ws_url)
        ring = self._ring
        self._drained = anyio.Event()

        def market_sink(ev: Any) -> Any:
            """Called as the frame comes off the socket (``MarketStream``: a plain callable)."""
            events = self._events
            if not events:
                ring()
            events.append(ev)
            self._received.append(None if type(ev) is ConnectionEvent else market.rx_at)
            if len(events) >= MAX_MARKET_PENDING:
                self._full = True
                return self._drained.wait()  # the reader waits for the core to take the batch
            return None

        market = self._market = MarketStream(market_sink, tokens, scfg)
        async with anyio.create_task_group() as writes:
            try:
                async with anyio.create_task_group() as tg:
                    self._tg = tg
                    self.executor.open(tg, writes, self._post)
                    tg.start_soon(market.run)
                    tg.start_soon(self._signals)
                    tg.start_soon(self._every, self.config.book_poll_s, "books")
                    if eng.metrics is not None:
                        tg.start_soon(self._gauges, StreamGauges(eng.metrics, "market", market))
                    if duration is not None:
                        tg.start_soon(self._deadline, duration)
                    await self._core()
                    tg.cancel_scope.cancel()
            finally:
                self._tg = None
                with anyio.CancelScope(shield=True):
                    await self._shutdown()
                writes.cancel_scope.cancel()  # whatever outlived the stop timeout

    async def _deadline(self, duration: float) -> None:
        await anyio.sleep(duration)
        self.request_stop("duration")

    async def _signals(self) -> None:
        """SIGINT/SIGTERM stop (cancelling everything); SIGUSR1 switches to REDUCING, SIGUSR2
        resumes ACTIVE trading (``kill -USR1 <pid>``: the operator's controls)."""
        try:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2) as sigs:
                async for s in sigs:
                    if s == signal.SIGUSR1:
                        self.submit("reduce", "SIGUSR1")
                    elif s == signal.SIGUSR2:
                        self.submit("resume")
                    else:
                        self.request_stop(signal.Signals(s).name)
                        return
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            await anyio.sleep_forever()

    async def _gauges(self, market: StreamGauges, interval: float = 1.0) -> None:
        """Export what the core does not see: the market channel's health, book staleness,
        throttle tokens, the day's PnL, the risk limits they are judged against, the event loop's
        tasks."""
        m = self.engine.metrics
        risk = self.engine.risk.limits
        for name in RISK_LIMIT_GAUGES:
            value = getattr(risk, name)
            if value is not None:
                m.risk_limit.labels(name).set(value / 1e6)
        while True:
            now = time.time()
            market.observe()
            for book in self.engine.books:
                if book.timestamp_ms:
                    m.book_staleness.labels(book.token_id[-8:]).set(max(now - book.timestamp_ms / 1000, 0.0))
            for name, level in self.venue.throttle_levels(now).items():
                m.throttle_tokens.labels(name).set(level)
            m.daily_pnl.set(self.engine.daily.pnl / 1e6)
            m.tasks.set(len(anyio.get_running_tasks()))
            await anyio.sleep(interval)

    async def _every(self, interval: float, kind: str) -> None:
        if interval <= 0:
            return
        while True:
            await anyio.sleep(interval)
            await self._post(Msg(kind))


    # --- the core loop -------------------------------------------------------------------
    async def _core(self) -> None:
        eng = self.engine
        journal = self.journal if hasattr(self.journal, "hold") else None  # only the core touches it
        actions = eng.start()
        if journal is not None and getattr(journal, "failed", ""):
            actions = self._journal_failed(actions)
        self._dispatch(actions)
        next_timer = eng.clock.now() + self.config.timer_interval_s
        ex = self.executor
        fsyncs = getattr(journal, "commit_fsyncs", True)
        sync_stage = eng.metrics.live_stage.labels("sync") if eng.metrics is not None else None
        inbox = self._inbox
        while not self._stop.is_set():
            now = eng.clock.now()
            wake = next_timer
            ready = eng.next_wakeup()
            if ready is not None:
                wake = min(wake, ready)
            due = ex.next_due()
            if due is not None:
                wake = min(wake, due)
            timeout = max(0.0, wake - now)
            msg = None
            if not self._events:
                try:
                    msg = inbox.receive_nowait()
                except anyio.WouldBlock:
                    if timeout > 0:
                        await self._idle(timeout)  # rung by the market buffer's first event or the inbox
            if journal is not None:
                journal.hold()
            actions: list[Any] = []
            try:
                if msg is not None and msg is not STOP:
                    actions += self._handle(msg)
                # what is already queued, up to a bound, then the market buffer as one batch
                for _ in range(MAX_INBOX_PER_TURN):
                    try:
                        msg = inbox.receive_nowait()
                    except anyio.WouldBlock:
                        break
                    actions += self._handle(msg)
                actions += self._market_turn()
                now = eng.clock.now()
                if now >= next_timer:
                    next_timer = now + self.config.timer_interval_s
                    actions += self._guarded("timer", eng.on_timer)
                    if self.on_timer is not None:
                        self.on_timer()
                ready = eng.next_wakeup()
                if ready is not None and ready <= eng.clock.now():
                    actions += self._guarded("poll", eng.poll)
                for result in ex.due(eng.clock.now()):  # what the executor scheduled by now
                    actions += self._handle(result)
            except BaseException:
                if journal is not None:
                    journal.release()
                raise
            if journal is not None:  # the turn's orders are durable before the executor gets them
                if journal.due:
                    synced = time.perf_counter()
                    if fsyncs:  # a sync waiting for the disk runs in a worker thread: the loop serves the sockets
                        await anyio.to_thread.run_sync(journal.release)
                    else:  # a commit without fsync costs less than the hop to a thread
                        journal.release()
                    if sync_stage is not None:
                        sync_stage.observe(time.perf_counter() - synced)
                else:
                    journal.release()
                if getattr(journal, "failed", "") and not self._journal_halted:
                    actions = self._journal_failed(actions)
            self._dispatch(actions)
            await checkpoint()  # the socket readers and senders run between turns

    def _journal_failed(self, actions: list[Any]) -> list[Any]:
        """The journal could not be written: the turn's places never leave (they are not durable;
        answered as never sent), quoting halts (cancel all), the bot stops. Said in one line."""
        self._journal_halted = True
        journal = self.journal
        log.error("journal_write_failed", path=getattr(journal, "path", ""), error=journal.failed,
                  action="halt, cancel all, stop")
        eng = self.engine
        if eng.metrics is not None:
            eng.metrics.errors.labels("journal").inc()
        kept: list[Any] = []
        for a in actions:
            if type(a) is SendPlaces:
                kept += self._handle(PlacesFailed(a.batch, "journal", False, "not sent: the journal failed"))
            else:
                kept.append(a)
        kept += eng.halt("journal")
        self.request_stop("journal_write_failed")
        return [a for a in kept if type(a) is not SendPlaces]

    def _market_turn(self) -> list[Any]:
        """The market buffer as it stands, into the engine: book events in batches, split at
        connection events (which mark books stale in order); the lag of each frame (venue
        timestamp to now, when its events reach the books) is observed."""
        events, received = self._events, self._received
        if not events:
            return []
        self._events, self._received = [], []
        if self._full:
            self._full = False
            self._drained.set()
            self._drained = anyio.Event()  # made here, in a task (the sink runs in a socket's callback)
        eng = self.engine
        tap = self.market_tap
        begun = time.perf_counter()
        if eng.metrics is not None:
            self._observe_lag(events, received, begun)
        out: list[Any] = []
        start = 0
        n = len(events)
        for i in range(n + 1):
            if i < n and type(events[i]) is not ConnectionEvent:
                continue
            try:
                if i > start:
                    batch = events[start:i]
                    if tap is not None:  # paper: the simulated venue meets the books as the strategy does
                        now = eng.clock.now()
                        for ev in batch:
                            tap(ev, now)
                    out += eng.on_market(batch, received[start:i])
                if i < n:
                    out += eng.on_connection(events[i])
            except Exception as exc:  # noqa: BLE001 - one bad input must not end the run
                self._core_error("market", exc)
            start = i + 1
        if eng.metrics is not None:
            eng.metrics.live_stage.labels("core").observe(time.perf_counter() - begun)
        return out

    def _observe_lag(self, events: list[Any], received: list[float | None], begun: float) -> None:
        """Venue timestamp to now, and receipt to ``begun`` (the turn's start: the ``wait`` stage),
        once per frame (the events of one frame share a receipt)."""
        m = self.engine.metrics
        lag = m.message_lag.labels("market")
        wait = m.live_stage.labels("wait")
        wall = time.time()
        last = None
        for ev, at in zip(events, received):
            if at is None or at == last:
                continue
            last = at
            wait.observe(begun - at)
            ts = getattr(ev, "timestamp", None)
            if isinstance(ts, str) and ts.isdigit():
                lag.observe(max(wall - int(ts) / 1000.0, 0.0))

    def _handle(self, msg: Any) -> list[Any]:
        """Feed one inbox message (a typed result, or a ``Msg``) to the engine; returns the
        actions it asks for."""
        eng = self.engine
        k = "result"
        try:
            if type(msg) is not Msg:
                orphans = eng.stats.orphans
                actions = eng.on_result(msg)
                if eng.stats.orphans > orphans:
                    log.warning("orphan_orders", count=eng.stats.orphans - orphans,
                                policy=eng.reconciler.config.orphan_policy)
                return actions
            k = msg.kind
            if k == "ws":  # the user channel's connection events (market data: ``_market_turn``)
                return eng.on_connection(msg.a)
            elif k == "market":
                return []  # a wake-up: the turn takes the market buffer
            elif k == "rest_books":
                return eng.on_rest_books(msg.a)
            elif k == "positions_seen":
                actions = eng.reconcile_positions(msg.a)
                self.drifts = eng.drifts
                if self.drifts:
                    log.warning("position_drift", tokens=len(self.drifts),
                                detail=[(d.token_id[-8:], d.ours, d.venue) for d in self.drifts][:4])
                return actions
            elif k == "books":
                for batch in eng.due_polls():
                    self._spawn(self._fetch_books, batch)
            elif k == "trades":
                self.executor.execute([FetchTrades()], eng.clock.now())
            elif k == "sync":
                self.executor.execute([SyncOrders()], eng.clock.now())
            elif k == "resend":
                return eng.resend(msg.a)
            elif k == "halt":
                return eng.halt(str(msg.a or "manual"))
            elif k == "reduce":
                log.warning("reduce_only", by=str(msg.a or "manual"))
                return eng.reduce_only(str(msg.a or "manual"))
            elif k == "resume":
                log.warning("resume")
                return eng.resume()
        except Exception as exc:  # noqa: BLE001 - one bad input must not end the run
            self._core_error(k, exc)
        return []

    def _guarded(self, kind: str, call: Callable[[], list[Any]]) -> list[Any]:
        """``call()``'s actions; an error in it logged and counted as one core error (``[]``)."""
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - one bad turn must not end the run
            self._core_error(kind, exc)
            return []

    def _core_error(self, kind: str, exc: Exception) -> None:
        log.error("core_error", kind=kind, error=f"{type(exc).__name__}: {exc}"[:300])
        if self.engine.metrics is not None:
            self.engine.metrics.errors.labels("core").inc()

    def _dispatch(self, actions: list[Any]) -> None:
        """The turn's actions to the executor, in the engine's order."""
        if actions:
            self.executor.execute(actions, self.engine.clock.now())

    # --- market data over REST -------------------------------------------------------------
    def _spawn(self, fn: Callable[..., Any], *args: Any) -> None:
        if self._tg is not None:
            self._tg.start_soon(fn, *args)

    async def _fetch_books(self, batch: list[str]) -> None:
        try:
            books = await self.venue.clob.books(batch)
        except VenueError as exc:
            log.warning("rest_books_failed", tokens=len(batch), error=str(exc)[:200])
            return
        await self._post(Msg("rest_books", books))

    # --- stop ----------------------------------------------------------------------------
    async def _shutdown(self) -> None:
        """Cancel every own order, within ``stop_timeout_s``: first the trading writes still on
        the wire are answered (their orders are then at the venue, or known not to be), then the
        executor cancels everything (``Executor.stop``: the venue's cancel-all, then the engine's
        last cancels for anything it left); then, within a budget of its own, its last reads."""
        eng = self.engine
        ex = self.executor
        journal = self.journal if hasattr(self.journal, "hold") else None
        if journal is not None:  # cancels first, writes after: a failing disk never delays them
            journal.hold()
        cancelled = False
        with anyio.move_on_after(self.config.stop_timeout_s) as scope:
            actions = eng.stop()
            for answer in ex.withdraw():  # writes still held never leave now
                actions += self._handle(answer)
            while True:  # answers (and fills) of the writes on the wire, until none is left
                msg = None
                if ex.in_flight():
                    with anyio.move_on_after(0.05):
                        msg = await self._inbox.receive()
                else:
                    try:
                        msg = self._inbox.receive_nowait()
                    except anyio.WouldBlock:
                        break
                if msg is not None and (type(msg) is not Msg or msg.kind == "ws"):
                    actions += self._handle(msg)  # answers, fills, order news
            cancelled = await ex.stop(actions, eng.clock.now(), self._handle)
        self.cancelled_all = cancelled and not scope.cancelled_caught
        if journal is not None:
            journal.release()
        if scope.cancelled_caught:
            log.error("stop_cancel_incomplete", timeout_s=self.config.stop_timeout_s, in_flight=ex.in_flight())
        with anyio.move_on_after(self.config.stop_timeout_s) as scope:  # a budget of its own
            await ex.final_reads(self._handle)
        if scope.cancelled_caught:
            log.error("stop_trades_incomplete", timeout_s=self.config.stop_timeout_s)
        log.info("stopped", reason=self.stop_reason or "done")

"""The live shell: async I/O tasks around the synchronous ``Engine``.

Invariants:

- the engine is touched only by the core loop task: pollers, senders and the user channel put
  their results into one inbox (an anyio memory stream), the market channel appends its events
  (with the time each frame came off the socket) to a market buffer, and the core loop feeds them
  to the engine, so the core stays single-threaded and deterministic;
- under load the bot sheds work instead of queueing it: each turn of the core loop takes the
  whole market buffer as one batch (``Engine.on_market``: every update applied, the
  strategy run once per changed token), after at most ``MAX_INBOX_PER_TURN`` inbox messages, so
  answers and periodic tasks never starve the market stream nor the other way round; a market
  buffer past ``MAX_MARKET_PENDING`` events holds the socket reader until the core takes it;
- the journal's commits are grouped per turn and made before the turn's requests leave: in a
  worker thread when a commit fsyncs (``Journal.commit_fsyncs``), inline when it does not; a turn
  whose journal write failed (``Journal.failed``: disk full, I/O error) sends none of its orders
  (they were not made durable): quoting halts, one line says why, and the bot stops;
- trading writes (POST /orders, DELETE /orders) go out through a client *without* client-side
  throttling: the router already spent the very same ``orders``/``cancels``/``clob:all``
  throttles the limiter owns, so nothing is charged twice and no window is exceeded;
- a POST that times out or fails with a 5xx is reported with ``outcome_unknown`` and resolved by
  lookup, never resent blindly (the reconciler decides);
- on stop (duration, SIGINT/SIGTERM, or ``request_stop``) the shell lets the trading requests
  already on the wire finish (a POST answered after a cancel-all would leave its order resting),
  then sends DELETE /cancel-all and cancels every own order, then reads the trades pages one
  last time (fills the user channel had not delivered yet), before it returns; nothing is left
  resting and every fill is booked. The stop cancels first and writes after: the journal's writes
  of the stop are held until the cancels are answered (a full disk never keeps an order resting),
  and ``cancelled_all`` says whether the venue answered the cancel-all;
- every ``orders_sync_s`` the complete ``GET /data/orders`` listing is reconciled: what the venue
  holds open and the bot does not count as working is an orphan, handled by the configured policy;
- the venue's holdings are read every ``positions_poll_s`` and, after the user channel comes back,
  at once: a difference from the booked fills that outlives a trades read halts the bot, and
  after a reconnect nothing new is sent until they agree (``Engine.reconcile_positions``);
- no secret is ever logged (credentials only reach the auth headers and the user channel).
"""

from __future__ import annotations

import signal
import time
from typing import Any, AsyncIterator, Awaitable, Callable

import anyio
import msgspec
import structlog
from anyio.abc import TaskGroup
from anyio.lowlevel import checkpoint

from bot.core.markets import MarketIndex, MarketInfo, RewardTerms
from bot.engine.engine import Engine
from bot.execution.protocol import (
    CancelsAnswered, CancelsFailed, CheckPositions, FetchTrades, LookupOrder, OpenOrders, OrderLookup, OrderSeen,
    PlacesAnswered, PlacesFailed, RequestFailed, ResendOrder, SendCancels, SendPlaces, SyncOrders, TradeBooked,
    TradeSeen, TradeUnbooked, TradesPage, VenueCancelAll,
)
from bot.execution.records import cancel_result, order_record, order_result
from bot.execution.router import CancelBatch
from bot.live.writes import crossed_own
from bot.ops.config import ShellConfig
from bot.venue.account import AccountClient
from bot.venue.auth import AuthConfig, Credentials
from bot.venue.clob import ClobClient
from bot.venue.errors import NotFound, VenueError, error_kind
from bot.venue.fees import NO_FEE, FeeError, FeeSchedule, schedule_from_wire
from bot.venue.limits import LimitsConfig, RouteLimiter, paced_writes
from bot.venue.pagination import cursor_pages
from bot.venue.shared_throttle import SharedLimitsConfig, SharedThrottles
from bot.venue.stream import ConnectionEvent, MarketStream, UserStream
from bot.venue.throttle import RateWindow
from bot.venue.transport import Transport, TransportConfig
from bot.venue.models.timestamps import epoch_ms
from bot.venue.units import UnitsError, parse_units

log = structlog.get_logger("bot.live")

# risk limits exported as ``bot_risk_limit{limit=...}`` (shares or USDC), for the alert rules
RISK_LIMIT_GAUGES = ("max_position", "max_daily_loss", "max_total_loss")
MAX_TRADES_PAGES = 50  # trades pages one read walks before it waits for the next
# connections the trading writes keep open and idle: a turn's POSTs (one per batch) and a
# DELETE are written at once, none waits for a connect (a TLS handshake with the venue)
WARM_WRITE_CONNECTIONS = 4


class Venue:
    """The clients of one venue: reads go through the rate limiter, trading writes do not (the
    router spends the limiter's write throttles itself)."""

    def __init__(self, *, clob_url: str, data_url: str, ws_url: str, creds: Any, address: str,
                 chain_id: int = 137, limits: LimitsConfig | None = None,
                 timeouts: TransportConfig | None = None, holder: str | None = None,
                 window_margin_s: float = 0.3, timestamp_unit: str = "ms",
                 shared: SharedLimitsConfig | None = None) -> None:
        creds = as_credentials(creds) if creds is not None else None  # None: public data only (paper)
        # ``[throttle]`` backend "redis": every scope's windows shared by the processes on this key
        self.shared = None
        make = None
        if shared is not None and shared.backend == "redis":
            if creds is None:
                raise ValueError("a throttle shared on Redis needs the API key it is shared under")
            self.shared = make = SharedThrottles(shared, creds.api_key)
        # wall clock: the engine's router spends these throttles with its (wall) clock
        # the venue's windows with a margin, trading writes paced inside them with headroom (``paced_writes``)
        self.limiter = RouteLimiter(paced_writes(with_margin(limits or LimitsConfig(), window_margin_s)), "clob",
                                    clock=time.time, make_throttle=make)
        self.account_limiter = RouteLimiter(limits or LimitsConfig(), "account", clock=time.time, make_throttle=make)
        self._reads_t = Transport(clob_url, limiter=self.limiter, config=timeouts)
        self._writes_t = Transport(clob_url, limiter=None, config=timeouts, direct=True)
        self._data_t = Transport(data_url, limiter=self.account_limiter, config=timeouts)
        auth = AuthConfig(timestamp_unit=timestamp_unit)
        self.clob = ClobClient(self._reads_t, creds=creds, address=address, chain_id=chain_id, auth=auth)
        self.writes = ClobClient(self._writes_t, creds=creds, address=address, chain_id=chain_id, auth=auth)
        self.account = AccountClient(self._data_t)
        self.ws_url = ws_url
        self.creds = creds
        self.address = address
        self.holder = holder or address  # whose positions count (the funder when there is one)

    async def keep_warm(self) -> None:
        """Keep the trading writes' connections open and ready until the venue closes, so an
        order is written in the turn that decided it (``WARM_WRITE_CONNECTIONS``)."""
        await self._writes_t.keep_warm(WARM_WRITE_CONNECTIONS)

    def observe(self, metrics: Any) -> None:
        """Report HTTP latency by route and status, and every throttle wait, to ``metrics``."""

        def on_response(route: str, status: int, seconds: float) -> None:
            metrics.http_latency.labels(route, str(status)).observe(seconds)

        def on_wait(route: str, seconds: float) -> None:
            metrics.throttle_wait.labels(route).inc(seconds)

        for t in (self._reads_t, self._writes_t, self._data_t):
            t.on_response = on_response
        self.limiter.on_wait = on_wait
        self.account_limiter.on_wait = on_wait
        metrics.shared_throttle_up.set(1)
        if self.shared is not None:
            self.shared.on_state = lambda _name, _reason: metrics.shared_throttle_up.set(1 if self.shared.up else 0)

    def throttle_levels(self, now: float) -> dict[str, int]:
        """Tokens available now in the throttles the router spends."""
        return {name: self.limiter.throttle(name).available(now) for name in ("orders", "cancels", "clob:all")}

    def throttles(self) -> dict[str, Any]:
        """What the router spends: ``place``, ``cancel`` and the per-request ``routes``."""
        from bot.engine.assembly import router_throttles

        return router_throttles(self.limiter)

    async def aclose(self) -> None:
        for t in (self._reads_t, self._writes_t, self._data_t):
            with anyio.CancelScope(shield=True):
                await t.aclose()


def as_credentials(creds: Any) -> Credentials:
    """``bot.venue.auth.Credentials`` from it, or from any object with api key, secret and
    passphrase (camelCase ``apiKey`` accepted)."""
    if isinstance(creds, Credentials):
        return creds
    key = getattr(creds, "api_key", None) or getattr(creds, "apiKey", None)
    return Credentials(key, creds.secret, creds.passphrase)


def with_margin(limits: LimitsConfig, margin_s: float) -> LimitsConfig:
    """The CLOB windows lengthened by ``margin_s``: the venue stamps a request when it arrives,
    after we spent the token, so a window we think has just freed may still be full there
    (request latency, batches in flight). Capacities are unchanged."""
    if margin_s <= 0:
        return limits
    scopes = tuple(
        msgspec.structs.replace(sc, windows=tuple(RateWindow(w.capacity, w.seconds + margin_s) for w in sc.windows))
        for sc in limits.clob.scopes
    )
    return msgspec.structs.replace(limits, clob=msgspec.structs.replace(limits.clob, scopes=scopes))


class _Msg(msgspec.Struct, frozen=True):
    kind: str
    a: Any = None
    b: Any = None
    c: Any = None


_STOP = _Msg("stop")  # wakes the core loop; the stop event says the rest
_MARKET = _Msg("market")  # wakes the core loop: the market buffer has events
MAX_INBOX_PER_TURN = 1_000  # inbox messages handled before the market buffer gets its turn
MAX_MARKET_PENDING = 50_000  # market events buffered before the socket reader waits for the core


MARKET_LOOKUPS = 8  # GET /clob-markets requests in flight at once while markets load


async def load_markets(clob: ClobClient, condition_ids: tuple[str, ...] = (), limit: int | None = None,
                       neg_risk: bool | None = None) -> list[MarketInfo]:
    """Markets to trade: the given condition ids, else every open market taking orders (the first
    ``limit`` of them when given; only neg-risk ones, or only others, when ``neg_risk`` says)."""
    out: list[MarketInfo] = []
    async for m in clob.iter_markets():
        if condition_ids and m.condition_id not in condition_ids:
            continue
        if not condition_ids and (m.closed or m.accepting_orders is False or (
                neg_risk is not None and bool(m.neg_risk) != neg_risk)):
            continue
        if len(m.tokens) != 2:
            continue
        tick = _units(m.minimum_tick_size, 10_000)
        min_size = _units(m.minimum_order_size, 5_000_000)
        out.append(MarketInfo(
            condition_id=m.condition_id, tokens=(m.tokens[0].token_id, m.tokens[1].token_id),
            tick=tick, min_size=min_size, neg_risk=bool(m.neg_risk),
            event_id=m.neg_risk_market_id or "", outcomes=(m.tokens[0].outcome, m.tokens[1].outcome),
            end_ts=_end_ts(m.end_date_iso), rewards=reward_terms(m.rewards),
        ))
        if not condition_ids and limit is not None and len(out) >= limit:
            break
    # each market's fee rule: ``fd`` of GET /clob-markets/{condition_id}, a few asked at once (each
    # request still passes the client's rate limiter), so start-up does not wait them out in turn
    fds: dict[str, Any] = {}
    slots = anyio.Semaphore(MARKET_LOOKUPS)

    async def fee_of(condition_id: str) -> None:
        async with slots:
            try:
                fds[condition_id] = (await clob.clob_market(condition_id)).fee
            except NotFound:
                log.warning("fee_schedule_missing", market=condition_id)
                fds[condition_id] = None

    async with anyio.create_task_group() as tg:
        for info in out:
            tg.start_soon(fee_of, info.condition_id)
    return [msgspec.structs.replace(info, fee=fee_schedule(fds[info.condition_id])) for info in out]


def fee_schedule(fd: Any) -> FeeSchedule:
    """A market's ``fd`` (``r``, ``e``, ``to``, rebate ``rb``) as the fee rule its fills are booked
    with; a market without one, or with values the rule cannot use, books no fee (logged)."""
    if fd is None:
        return NO_FEE
    try:
        return schedule_from_wire(fd.rate, fd.exponent, fd.rebate, fd.taker_only)
    except FeeError as exc:
        log.warning("fee_schedule_unusable", error=str(exc))
        return NO_FEE


def _units(value: Any, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, float):
        value = repr(value)
    return parse_units(str(value))


def _end_ts(text: Any) -> int:
    """A market's end date as unix seconds; 0 when absent or unreadable (it only informs quoting)."""
    try:
        ms = epoch_ms(text)
    except ValueError:
        return 0
    return ms // 1000 if ms and ms > 0 else 0


def reward_terms(rewards: Any) -> RewardTerms | None:
    """The venue's ``rewards`` object (interface 2.13: daily rates per asset, ``min_size`` in shares,
    ``max_spread`` in cents) as micro-units; ``None`` for a market without a programme."""
    if rewards is None:
        return None
    try:
        rate = sum(_units(r.rewards_daily_rate, 0) for r in rewards.rates or ())
        terms = RewardTerms(daily_rate=rate, min_size=_units(rewards.min_size, 0),
                            max_spread=_units(rewards.max_spread, 0) // 100)  # cents -> price units
    except (UnitsError, ValueError):
        return None
    return terms if terms.active else None


def venue_positions(items: list[Any], markets: MarketIndex) -> dict[str, int]:
    """``GET /positions`` items as token -> share units for the tracked markets (an item names
    its token by id, or as ``condition:outcome_index``)."""
    out: dict[str, int] = {}
    for p in items:
        token = p.asset
        cond, sep, idx = token.partition(":")
        if sep and idx.isdigit():
            try:
                token = markets.by_condition(cond).tokens[int(idx)]
            except (KeyError, IndexError):
                continue
        if markets.get(token) is None:
            continue
        out[token] = _units(p.size, 0)
    return out


class LiveShell:
    """Runs one engine against the venue until stopped; see the module invariants."""

    def __init__(self, engine: Engine, venue: Venue, *, config: ShellConfig | None = None,
                 on_timer: Callable[[], None] | None = None, journal: Any = None, sim: Any = None) -> None:
        """``sim`` (a ``bot.sim.venue.SimVenue``) makes it paper trading: the venue's live market
        data, orders executed by the simulated venue on those books; nothing is ever sent to the
        venue, no user channel, no key."""
        self.engine = engine
        self.venue = venue
        self.sim = sim
        self.config = config or ShellConfig()
        self.on_timer = on_timer
        self.journal = journal
        self._send, self._inbox = anyio.create_memory_object_stream[Any](10_000)
        self._stop = anyio.Event()
        self._trades_busy = False
        self._sync_busy = False
        self._tg: TaskGroup | None = None
        self._sends: TaskGroup | None = None  # trading writes: not cancelled at stop, awaited
        self._in_flight = 0  # trading writes held or sent, not answered yet
        self._held: list[tuple[Any, set[tuple[str, str]]]] = []  # writes, the answers they wait for
        self._cancelling: dict[str, Any] = {}  # order id -> our order, its cancel on the wire
        self._placing: dict[str, None] = {}  # order ids whose POST is on the wire
        # the market buffer: events in arrival order, each with its frame's socket receipt time
        self._events: list[Any] = []
        self._received: list[float | None] = []
        self._drained: anyio.Event | None = None  # set when the core takes a buffer that was full
        self._market: MarketStream | None = None
        self.stop_reason = ""
        self.cancelled_all = False  # the stop's cancel-all was answered (``_shutdown``)
        self._journal_halted = False
        self.heartbeats_ok = 0
        self.drifts: list[Any] = []
        if engine.metrics is not None and hasattr(engine.metrics, "watch_strategy"):
            engine.metrics.watch_strategy(engine.strategy)  # the strategy's estimates, at each scrape

    # --- control -------------------------------------------------------------------------
    def request_stop(self, reason: str = "requested") -> None:
        if not self._stop.is_set():
            self.stop_reason = reason
            self._stop.set()
            try:
                self._send.send_nowait(_STOP)
            except anyio.WouldBlock:
                pass  # the loop is busy with a full inbox; it sees the event next turn

    def submit(self, kind: str, a: Any = None) -> None:
        """Queue a control message for the core loop (``halt``, ``reduce``, ``resume``, ``sync``,
        ``trades``)."""
        self._send.send_nowait(_Msg(kind, a))

    # --- run -----------------------------------------------------------------------------
    async def run(self, duration: float | None = None) -> None:
        """Trade until ``duration`` seconds pass or a stop is requested; always cancels all."""
        eng = self.engine
        tokens = [t for m in eng.markets for t in m.tokens]
        conds = [m.condition_id for m in eng.markets]
        scfg = msgspec.structs.replace(self.config.stream, url=self.venue.ws_url)
        send = self._send

        def market_sink(ev: Any) -> Any:
            events = self._events
            if not events:
                try:
                    send.send_nowait(_MARKET)
                except anyio.WouldBlock:
                    pass  # the core is behind on the inbox; it takes the buffer every turn
            events.append(ev)
            self._received.append(None if type(ev) is ConnectionEvent else market.rx_at)
            if len(events) >= MAX_MARKET_PENDING:
                if self._drained is None:
                    self._drained = anyio.Event()
                return self._drained.wait()  # the reader waits for the core to take the batch
            return None

        async def user_sink(ev: Any) -> None:
            await send.send(_user_result(ev))

        market = self._market = MarketStream(market_sink, tokens, scfg)
        if eng.metrics is not None:
            eng.stamp_sends = self.sim is None  # live: tick-to-order ends where the request is written
        streams: tuple[Any, ...] = (market,)
        async with anyio.create_task_group() as sends:
            self._sends = sends
            try:
                async with anyio.create_task_group() as tg:
                    self._tg = tg
                    tg.start_soon(market.run)
                    tg.start_soon(self._signals)
                    tg.start_soon(self._every, self.config.book_poll_s, "books")
                    if self.sim is None:  # the account's side of the venue: live only
                        tg.start_soon(self.venue.keep_warm)
                        user = UserStream(user_sink, self.venue.creds, conds, scfg)
                        streams = (market, user)
                        tg.start_soon(user.run)
                        if self.config.heartbeats:
                            tg.start_soon(self._heartbeats)
                        tg.start_soon(self._every, self.config.trades_poll_s, "trades")
                        tg.start_soon(self._every, self.config.positions_poll_s, "positions")
                        tg.start_soon(self._every, self.config.orders_sync_s, "sync")
                    if eng.metrics is not None:
                        tg.start_soon(self._gauges, streams)
                    if duration is not None:
                        tg.start_soon(self._deadline, duration)
                    await self._core()
                    tg.cancel_scope.cancel()
            finally:
                self._tg = None
                with anyio.CancelScope(shield=True):
                    await self._shutdown()
                sends.cancel_scope.cancel()  # whatever outlived the stop timeout
        self._sends = None

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

    async def _gauges(self, streams: tuple[Any, ...], interval: float = 1.0) -> None:
        """Export what the core does not see: stream health, book staleness, throttle tokens, the
        day's PnL, the risk limits they are judged against, the event loop's tasks."""
        m = self.engine.metrics
        risk = self.engine.risk.limits
        for name in RISK_LIMIT_GAUGES:
            value = getattr(risk, name)
            if value is not None:
                m.risk_limit.labels(name).set(value / 1e6)
        seen_errors = {s: 0 for s in streams}
        seen_message = {s: None for s in streams}
        while True:
            now = time.time()
            for stream in streams:
                c = stream.counters
                name = "market" if stream is streams[0] else "user"
                if c.decode_errors > seen_errors[stream]:
                    m.decode_errors.labels(name).inc(c.decode_errors - seen_errors[stream])
                    seen_errors[stream] = c.decode_errors
                if name == "user" and c.last_message_at != seen_message[stream]:  # market: per frame (core)
                    seen_message[stream] = c.last_message_at
                    m.message_lag.labels(name).observe(max(c.last_lag_s, 0.0))
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
            await self._send.send(_Msg(kind))

    async def _heartbeats(self) -> None:
        while True:
            try:
                await self.venue.clob.heartbeat()
                self.heartbeats_ok += 1
                self._metric("heartbeats", "ok")
            except VenueError as exc:
                self._metric("heartbeats", "error")
                log.warning("heartbeat_failed", error=str(exc)[:200])
                await self._send.send(RequestFailed(error_kind(exc)))
            await anyio.sleep(self.config.heartbeat_interval_s)

    def _metric(self, name: str, label: str) -> None:
        m = self.engine.metrics
        if m is not None:
            getattr(m, name).labels(label).inc()

    # --- the core loop -------------------------------------------------------------------
    async def _core(self) -> None:
        eng = self.engine
        journal = self.journal if hasattr(self.journal, "hold") else None  # only the core touches it
        actions = eng.start()
        if journal is not None and getattr(journal, "failed", ""):
            actions = self._journal_failed(actions)
        self._dispatch(actions)
        next_timer = eng.clock.now() + self.config.timer_interval_s
        sim = self.sim
        fsyncs = getattr(journal, "commit_fsyncs", True)
        sync_stage = eng.metrics.live_stage.labels("sync") if eng.metrics is not None else None
        inbox = self._inbox
        while not self._stop.is_set():
            now = eng.clock.now()
            wake = next_timer
            ready = eng.next_wakeup()
            if ready is not None:
                wake = min(wake, ready)
            if sim is not None and (due := sim.next_due()) is not None:
                wake = min(wake, due)
            timeout = max(0.0, wake - now)
            msg = None
            if not self._events:
                with anyio.move_on_after(timeout):
                    msg = await inbox.receive()
            if journal is not None:
                journal.hold()
            actions: list[Any] = []
            try:
                if msg is not None and msg is not _STOP:
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
                    actions += eng.on_timer()
                    if self.on_timer is not None:
                        self.on_timer()
                ready = eng.next_wakeup()
                if ready is not None and ready <= eng.clock.now():
                    actions += eng.poll()
                if sim is not None:
                    actions += self._sim_answers(eng.clock.now())
            except BaseException:
                if journal is not None:
                    journal.release()
                raise
            if journal is not None:  # the turn's orders are durable before any request leaves
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
        if self._drained is not None:
            self._drained.set()
            self._drained = None
        eng = self.engine
        sim = self.sim
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
                    if sim is not None:  # paper: the simulated venue sees the books as the strategy does
                        now = eng.clock.now()
                        for ev in batch:
                            sim.on_market(ev, now)
                    out += eng.on_market(batch, received[start:i])
                if i < n:
                    out += eng.on_connection(events[i])
            except Exception as exc:  # noqa: BLE001 - one bad input must not end the run
                log.error("core_error", kind="market", error=f"{type(exc).__name__}: {exc}"[:300])
                if eng.metrics is not None:
                    eng.metrics.errors.labels("core").inc()
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

    def _sim_answers(self, now: float) -> list[Any]:
        """Paper trading: what the simulated venue has done by ``now``, into the engine."""
        out: list[Any] = []
        for result in self.sim.due(now):
            out += self._handle(result)
        return out

    def _handle(self, msg: Any) -> list[Any]:
        """Feed one inbox message (a typed result, or a ``_Msg``) to the engine; returns the
        actions it asks for."""
        eng = self.engine
        k = "result"
        try:
            if type(msg) is not _Msg:
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
            elif k == "trades":
                self._spawn(self._fetch_trades)
            elif k == "positions":
                self._spawn(self._fetch_positions)
            elif k == "books":
                for batch in eng.due_polls():
                    self._spawn(self._fetch_books, batch)
            elif k == "sync":
                self._spawn(self._sync_orders)
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
            log.error("core_error", kind=k, error=f"{type(exc).__name__}: {exc}"[:300])
            if eng.metrics is not None:
                eng.metrics.errors.labels("core").inc()
        return []

    # --- actions -------------------------------------------------------------------------
    def _spawn(self, fn: Callable[..., Any], *args: Any) -> None:
        if self._tg is not None:
            self._tg.start_soon(fn, *args)

    def _write(self, action: Any) -> None:
        """Send a trading write in its own task; it runs to its answer even through a stop.
        Writes on the same orders keep their order on the wire (``bot.live.writes``): a cancel
        of an order whose POST is on the wire waits for its answer (else it could overtake the
        POST, find nothing, and leave the order resting), and a place batch that would cross one
        of our own orders whose cancel is on the wire waits for that cancel's answer. Nothing
        else waits, and nothing waits for a held write (no cycle can form)."""
        if self._sends is None:
            return
        self._in_flight += 1
        if type(action) is SendCancels:
            placing = self._placing
            waits = {("place", oid) for oid in action.batch.order_ids if oid in placing}
        else:
            waits = {("cancel", oid) for oid in crossed_own(action, self._cancelling, self._complement)} \
                if self._cancelling else None
        if waits:
            self._held.append((action, waits))
        else:
            self._start_write(action)

    def _start_write(self, action: Any) -> None:
        """On the wire: only writes on the wire are waited for (they all end, answered or timed
        out), so held writes never wait on each other."""
        if self._sends is None:
            return
        ids = action.batch.order_ids
        if type(action) is SendCancels:
            store = self.engine.reconciler.orders
            for oid in ids:
                o = store.get(oid)
                if o is not None:
                    self._cancelling[oid] = o
            self._sends.start_soon(self._run_write, action, 0.0, None)
            return
        self._placing.update(dict.fromkeys(ids))
        started = time.perf_counter()
        self._sends.start_soon(self._run_write, action, started, self._start_place(action, started))

    def _release_held(self, answered: set[tuple[str, str]]) -> None:
        """Writes answered: send the held writes that no longer wait for any."""
        held, self._held = self._held, []
        for action, waits in held:
            waits.difference_update(answered)
            if waits:
                self._held.append((action, waits))
            else:
                self._start_write(action)

    def _complement(self, token_id: str) -> str | None:
        m = self.engine.markets.get(token_id)
        return m.complement(token_id) if m is not None else None

    def _unsent(self) -> list[Any]:
        """Empty the held writes; their answers as never sent: places failed with nothing
        placed, cancels failed (their orders are where they were, for the stop's cancel-all)."""
        held, self._held = self._held, []
        self._in_flight -= len(held)
        return [PlacesFailed(a.batch, "stopped", False, "not sent: stopping") if type(a) is SendPlaces
                else CancelsFailed(a.batch, "stopped", "not sent: stopping") for a, _ in held]

    async def _run_write(self, action: Any, started: float = 0.0, flight: Any = None) -> None:
        cancel = type(action) is SendCancels
        try:
            await (self._cancel(action) if cancel else self._place(action, started, flight))
        finally:
            self._in_flight -= 1
            ids = action.batch.order_ids
            if cancel:
                for oid in ids:
                    self._cancelling.pop(oid, None)
            else:
                for oid in ids:
                    self._placing.pop(oid, None)
            if self._held:
                self._release_held({("cancel" if cancel else "place", oid) for oid in ids})

    def _dispatch(self, actions: list[Any]) -> None:
        if self.sim is not None:
            self._simulate(actions)
            return
        for a in actions:
            if isinstance(a, (SendPlaces, SendCancels)):
                self._write(a)
            elif isinstance(a, (TradeUnbooked, TradeBooked)):
                report_unbooked(a)
            elif isinstance(a, VenueCancelAll):
                self._spawn(self._cancel_all, a.reason)
            elif isinstance(a, SyncOrders):
                self._spawn(self._sync_orders)
            elif isinstance(a, LookupOrder):
                self._spawn(self._lookup, a.order_id)
            elif isinstance(a, ResendOrder):
                self._spawn(self._resend, a)
            elif isinstance(a, FetchTrades):
                self._spawn(self._fetch_trades)
            elif isinstance(a, CheckPositions):
                self._spawn(self._check_positions, a.delay_s)

    def _simulate(self, actions: list[Any]) -> None:
        """Paper trading: the engine's actions go to the simulated venue (listings, lookups and
        trade pages are not needed: it tells every change of our orders and trades)."""
        sim, now = self.sim, self.engine.clock.now()
        for a in actions:
            if isinstance(a, SendPlaces):
                sim.place(a.batch, now)
            elif isinstance(a, SendCancels):
                sim.cancel(a.batch, now)
            elif isinstance(a, VenueCancelAll):
                sim.cancel_all(now)

    def _written(self, action: SendPlaces, started: float) -> Callable[[], None] | None:
        """What to call as the POST is written: tick-to-order (the frame off the socket to this
        request written) and the send stage (the write started to written) observed."""
        m = self.engine.metrics
        if m is None:
            return None
        tick = action.tick_at

        def written() -> None:
            now = time.perf_counter()
            if tick is not None:
                m.tick_to_order.observe(now - tick)
            if started:
                m.live_stage.labels("send").observe(now - started)

        return written

    def _start_place(self, action: SendPlaces, started: float) -> Any:
        """The POST written at once if a kept-alive connection is free (no task to wait for
        first): what ``_place`` finishes; a failure to start is handed on as it is."""
        try:
            return self.venue.writes.start_post_orders([o.signed for o in action.batch.orders],
                                                       on_written=self._written(action, started))
        except Exception as exc:  # noqa: BLE001 - ``_place`` reports it as it would a failed send
            return exc

    async def _place(self, action: SendPlaces, started: float = 0.0, flight: Any = None) -> None:
        batch = action.batch
        try:
            if isinstance(flight, Exception):
                raise flight
            results = await self.venue.writes.post_orders(
                [o.signed for o in batch.orders], flight=flight,
                on_written=self._written(action, started) if flight is None else None)
        except VenueError as exc:
            await self._send.send(PlacesFailed(batch, error_kind(exc), exc.outcome_unknown, str(exc)[:200]))
            return
        except Exception as exc:  # noqa: BLE001 - unknown failure: the orders may have reached the venue
            await self._send.send(PlacesFailed(batch, "unexpected", True, f"{type(exc).__name__}: {exc}"[:200]))
            return
        await self._send.send(PlacesAnswered(batch, tuple(order_result(r) for r in results)))

    async def _cancel(self, action: SendCancels) -> None:
        batch = action.batch
        try:
            result = await self.venue.writes.cancel_orders(list(batch.order_ids))
        except Exception as exc:  # noqa: BLE001 - whatever failed, the orders are where they were
            await self._send.send(CancelsFailed(batch, error_kind(exc), str(exc)[:200]))
            return
        await self._send.send(CancelsAnswered(batch, cancel_result(result)))

    async def _cancel_all(self, reason: str) -> None:
        try:
            await self.venue.clob.cancel_all()
            log.warning("cancel_all", reason=reason)
        except VenueError as exc:
            log.error("cancel_all_failed", reason=reason, error=str(exc)[:200])

    async def _sync_orders(self) -> None:
        """One complete open-order listing at a time, stamped with when it was asked for."""
        if self._sync_busy:
            return
        self._sync_busy = True
        try:
            as_of = self.engine.clock.now()
            items: list[Any] = []
            pages = 0
            async for page in cursor_pages(lambda c: self.venue.clob.orders_page(cursor=c)):
                items += page.data
                pages += 1
        except VenueError as exc:
            log.warning("sync_orders_failed", error=str(exc)[:200])
            return
        finally:
            self._sync_busy = False
        await self._send.send(OpenOrders(tuple(order_record(o) for o in items), as_of, pages))

    async def _lookup(self, order_id: str) -> None:
        as_of = self.engine.clock.now()
        try:
            found = await self.venue.clob.get_order(order_id)
        except NotFound:
            found = None
        except VenueError as exc:
            log.warning("lookup_failed", order_id=order_id[:12], error=str(exc)[:200])
            return
        await self._send.send(OrderLookup(order_id, order_record(found) if found is not None else None, as_of))

    async def _resend(self, action: ResendOrder) -> None:
        """Wait for a place token (resends bypass the router), then let the core resend."""
        if action.signed is None:
            return
        th = self.venue.limiter.throttle("orders")
        while not th.try_take(1, time.time()):
            await anyio.sleep(max(0.01, th.delay(1, time.time())))
        await self._send.send(_Msg("resend", action.order_id))

    async def _fetch_trades(self) -> None:
        if self._trades_busy:
            return
        self._trades_busy = True
        try:
            async for page in self._trades_pages(lambda c: self.venue.clob.trades_page(cursor=c)):
                await self._send.send(page)
        except VenueError as exc:
            log.warning("trades_poll_failed", error=str(exc)[:200])
        finally:
            self._trades_busy = False

    async def _fetch_positions(self, retry_s: float | None = None) -> None:
        """The venue's holdings to the core; a failed read is given up, or with ``retry_s`` read
        again after that many seconds until it succeeds."""
        while True:
            try:
                items = await held_positions(self.venue)
            except VenueError as exc:
                log.warning("positions_poll_failed", error=str(exc)[:200], retry_s=retry_s)
                if retry_s is None:
                    return
                await anyio.sleep(retry_s)
                continue
            await self._send.send(_Msg("positions_seen", venue_positions(items, self.engine.markets)))
            return

    async def _check_positions(self, delay_s: float) -> None:
        """The venue's holdings after ``delay_s``, read again every second until they are."""
        await anyio.sleep(delay_s)
        await self._fetch_positions(retry_s=1.0)

    async def _trades_pages(self, fetch: Callable[[str | None], Awaitable[Any]]) -> AsyncIterator[TradesPage]:
        """The trades pages from the reconciler's cursor on, at most ``MAX_TRADES_PAGES``;
        ``fetch(cursor)`` reads one (``None``: stop there)."""
        cursor = self.engine.reconciler.trades_cursor
        for _ in range(MAX_TRADES_PAGES):
            page = await fetch(cursor)
            if page is None:
                return
            # the items as decoded: the reconciler reads each one, and one it cannot book
            # never stops the others (``Reconciler.unbooked``)
            yield TradesPage(tuple(page.data), cursor, page.next_cursor)
            if page.is_last or not page.next_cursor:
                return
            cursor = page.next_cursor

    async def _fetch_books(self, batch: list[str]) -> None:
        try:
            books = await self.venue.clob.books(batch)
        except VenueError as exc:
            log.warning("rest_books_failed", tokens=len(batch), error=str(exc)[:200])
            return
        await self._send.send(_Msg("rest_books", books))

    # --- stop ----------------------------------------------------------------------------
    async def _shutdown(self) -> None:
        """Cancel every own order, inline, retried through 429s, 5xx and resets until done or
        ``stop_timeout_s`` passes: first the trading writes still on the wire are answered (their
        orders are then at the venue, or known not to be), then one DELETE /cancel-all clears
        the venue whatever the cancel throttle holds, then the router's cancels go for anything
        it left."""
        eng = self.engine
        if self.sim is not None:  # paper: everything is cancelled in the simulated venue
            self._dispatch(eng.stop())
            self._dispatch(self._sim_answers(float("inf")))
            self.cancelled_all = True
            log.info("stopped", reason=self.stop_reason or "done")
            return
        journal = self.journal if hasattr(self.journal, "hold") else None
        if journal is not None:  # cancels first, writes after: a failing disk never delays them
            journal.hold()
        result = None
        with anyio.move_on_after(self.config.stop_timeout_s) as scope:
            actions = eng.stop()
            for answer in self._unsent():  # writes still held never leave now
                actions += self._handle(answer)
            while True:  # answers (and fills) of the writes on the wire, until none is left
                msg = None
                if self._in_flight:
                    with anyio.move_on_after(0.05):
                        msg = await self._inbox.receive()
                else:
                    try:
                        msg = self._inbox.receive_nowait()
                    except anyio.WouldBlock:
                        break
                if msg is not None and (type(msg) is not _Msg or msg.kind == "ws"):
                    actions += self._handle(msg)  # answers, fills, order news
            done: set[str] = set()
            result = await _retrying(self.venue.writes.cancel_all)
            if result is not None:
                eng.on_result(CancelsAnswered(CancelBatch(()), cancel_result(result)))
                done.update(result.canceled or ())
            for a in actions:
                if isinstance(a, SendCancels):
                    ids = [i for i in a.batch.order_ids if i not in done]
                    if not ids:
                        continue
                    answer = await _retrying(lambda ids=ids: self.venue.writes.cancel_orders(ids))
                    if answer is not None:
                        eng.on_result(CancelsAnswered(a.batch, cancel_result(answer)))
        self.cancelled_all = result is not None and not scope.cancelled_caught
        if journal is not None:
            journal.release()
        if scope.cancelled_caught:
            log.error("stop_cancel_incomplete", timeout_s=self.config.stop_timeout_s,
                      in_flight=self._in_flight)
        with anyio.move_on_after(self.config.stop_timeout_s) as scope:  # a budget of its own
            await self._last_trades()
        if scope.cancelled_caught:
            log.error("stop_trades_incomplete", timeout_s=self.config.stop_timeout_s)
        log.info("stopped", reason=self.stop_reason or "done")


    async def _last_trades(self) -> None:
        """Once nothing of ours rests, the trades pages are read one last time: fills the user
        channel has not delivered yet (it may lag) are booked before the run ends."""
        async for page in self._trades_pages(lambda c: _retrying(lambda: self.venue.clob.trades_page(cursor=c))):
            self.engine.on_result(page)


async def _retrying(call: Callable[[], Any]) -> Any:
    """``await call()`` until it succeeds; waits out 429s (their Retry-After) and retries 5xx and
    transport failures; any other venue error is logged and gives ``None``."""
    from bot.venue.errors import RateLimited, ServerError, TransportError

    while True:
        try:
            return await call()
        except RateLimited as exc:
            await anyio.sleep(min(2.0, exc.retry_after or 0.25))
        except (ServerError, TransportError):
            await anyio.sleep(0.2)
        except VenueError as exc:
            log.warning("stop_cancel_failed", error=str(exc)[:200])
            return None


def report_unbooked(a: Any) -> None:
    """The log line of a trade record the bot cannot book (the engine tells each one once), or of
    its booking at last."""
    if isinstance(a, TradeUnbooked):
        log.error("trade_unbooked", trade_id=a.trade_id, reason=a.reason[:200],
                  tokens=[t[-10:] for t in a.tokens][:8], quoting="stopped on these tokens until booked")
    else:
        log.warning("trade_booked", trade_id=a.trade_id, tokens=[t[-10:] for t in a.tokens][:8])


def _user_result(ev: Any) -> Any:
    """A user-channel frame as the engine takes it: a typed result, or a connection event."""
    if isinstance(ev, ConnectionEvent):
        return _Msg("ws", ev, None)
    tag = type(ev).__struct_config__.tag
    return OrderSeen(order_record(ev)) if tag == "order" else TradeSeen(ev)


# --- assembly -------------------------------------------------------------------------------


def make_engine(
    strategy: Any,
    markets: list[MarketInfo],
    venue: Venue,
    *,
    private_key: Any,  # 0x-hex key or a ``Wallet``
    chain_id: int = 137,
    risk_limits: Any = None,
    router_config: Any = None,
    reconciler_config: Any = None,
    engine_config: Any = None,
    feed_config: Any = None,
    metrics: Any = None,
    journal: Any = None,
    day_start: Any = None,
    clock: Any = None,
    signature_type: int = 0,
    funder: str | None = None,
    builder_code: str | None = None,
    log_: Any = None,
) -> Engine:
    """An engine wired for live trading on ``venue`` (``bot.engine.assembly.build_engine``): a
    real ``OrderBuilder`` signs with OS-random salts on the wall clock, the router spends the venue
    limiter's write throttles, the reconciler and the day's PnL journal when ``journal`` is given
    (restored from it: see ``Engine.restore``)."""
    from bot.core.clock import LiveClock
    from bot.engine.assembly import Signing, build_engine
    from bot.venue.eip712 import Wallet
    from bot.venue.orders import OrderBuilder

    wallet = private_key if isinstance(private_key, Wallet) else Wallet(private_key)
    builder = OrderBuilder(wallet, chain_id, maker=funder, signature_type=signature_type,
                           builder_code=builder_code or None)
    if metrics is not None:
        venue.observe(metrics)
    return build_engine(
        strategy, markets, clock=clock or LiveClock(), signing=Signing(builder), throttles=venue.throttles(),
        risk=risk_limits, router=router_config, reconciler=reconciler_config, engine=engine_config, feed=feed_config,
        owner=venue.creds.api_key,
        journal=journal, day_start=day_start, metrics=metrics, log=log_,
    )


async def held_positions(venue: Venue) -> list[Any]:
    """Every position of the account's holder, all pages to the first empty one (a venue that
    serves fewer than asked per page is read to the end too), however small (the venue's listing
    hides balances under one share unless asked)."""
    return [p async for p in venue.account.iter_positions(venue.holder, size_threshold=0)]


async def opening_mids(engine: Engine, venue: Venue) -> dict[str, int]:
    """Each tracked token's mid now, ``(best bid + best ask) // 2`` where both exist, read with
    ``POST /books`` a batch of the feed's ``batch_size`` tokens at a time (the most the venue names
    in one request); a ``VenueError`` is the caller's."""
    tokens = [t for m in engine.markets for t in m.tokens]
    batch = engine.feed.config.batch_size
    mids: dict[str, int] = {}
    for i in range(0, len(tokens), batch):
        for b in await venue.clob.books(tokens[i:i + batch]):
            bids = [parse_units(lv.price) for lv in b.bids or ()]
            asks = [parse_units(lv.price) for lv in b.asks or ()]
            if bids and asks:
                mids[b.asset_id] = (max(bids) + min(asks)) // 2
    return mids


async def seed_positions(engine: Engine, venue: Venue) -> dict[str, int]:
    """Start the portfolio from the venue's holdings of the tracked tokens, valued at the
    current mid (so PnL counts only what this run trades). Fills already in the portfolio
    (restored from a journal) are part of the venue's figure and are not counted twice. These
    mids become the engine's ``opening_marks``: at ``start()``, before anything trades, the day's
    PnL is valued at them (a fresh day starts, and is journaled, there; a day start restored from
    the journal goes on unchanged) and a day already past its loss limit halts."""
    try:
        items = await held_positions(venue)
        mids = await opening_mids(engine, venue)
    except VenueError as exc:
        log.warning("seed_positions_failed", error=str(exc)[:200])
        return {}
    held = venue_positions(items, engine.markets)
    for token, size in held.items():
        base = size - engine.portfolio.size(token)
        if base:
            engine.portfolio.seed(token, base, mids.get(token, 0))
    engine.opening_marks = mids  # start() values the day and judges the loss limits here
    return held

"""WebSocket clients for the market and user channels (venue.md 9.1).

Invariants:

- Every connection opens with the channel's complete first frame carrying *all* its current
  subscriptions; later changes are sent as ``subscribe``/``unsubscribe`` operations, and a change
  made while a connection is down simply waits for the next first frame.
- A market connection carries at most ``max_assets_per_connection`` assets; more assets open more
  connections (shards). Shard ids are stable for the life of the stream.
- Keepalive is the text ``PING`` every ``ping_interval_s``; a connection with nothing received
  (``PONG`` or any message) for ``stale_after_s``, checked every ``check_interval_s``, is stale: it is
  closed and reopened after a full-jitter backoff ``random() * min(base * 2**attempt, cap)``.
- A malformed frame is counted (``decode_errors``) and skipped; neither the connection nor the stream
  stops for bad input. Only cancellation (or a failing consumer) ends the stream.
- Connection changes are delivered in-band as :class:`ConnectionEvent` so the consumer can mark
  books stale, start new epochs and reconcile orders after a user-channel reconnect.
- Credentials are sent only inside the user channel's first frame; they are never logged.
- A ``tap`` given to a stream sees every frame exactly as received (``PONG`` included), with its
  shard and its receive time (``time.time_ns()``), before it is decoded; without a tap the frame
  path does nothing more than a ``None`` check.
- A frame's receive time is taken where its last bytes came off the socket (the connection's
  ``data_received``), not when the reader got to it: ``rx_at`` (perf counter) and ``rx_wall``
  (unix seconds) hold it while the frame's events are delivered, so time spent queued in the
  client counts in the message lag and in tick-to-order.
- A consumer that is a plain callable gets a frame's events as its bytes come off the socket, in
  the connection's ``data_received`` (no hop through the WebSocket library's queue and the
  reader task); frames already queued for the reader go first, so events arrive in the order
  the venue sent them, and the connection events of a (re)connect before any of its frames. A
  consumer that asks to be waited for (returns an awaitable) holds the socket's reading until it
  is done: the frame's remaining events are delivered first.
"""

from __future__ import annotations

import asyncio
import inspect
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Literal

import anyio
import msgspec
import structlog
from anyio.abc import ObjectSendStream, TaskGroup
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.frames import DATA_OPCODES, Frame, Opcode

from bot.venue.models.bodies import ApiCreds
from bot.venue.models.decoding import DecodeError
from bot.venue.models.ws import (
    MarketSubscribe,
    SubscriptionUpdate,
    UserSubscribe,
    decode_market_frame,
    decode_user_frame,
)

log = structlog.get_logger("bot.venue.stream")

VENUE_WS_URL = "wss://ws-subscriptions-clob.polymarket.com"


class StreamConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Connection settings for either channel; every interval is in seconds."""

    url: str = VENUE_WS_URL  # base; the channel path (/ws/market, /ws/user) is appended
    ping_interval_s: float = 10.0
    stale_after_s: float = 30.0
    check_interval_s: float = 5.0
    backoff_base_s: float = 0.25
    backoff_cap_s: float = 30.0
    max_assets_per_connection: int = 500
    open_timeout_s: float = 10.0
    close_timeout_s: float = 2.0
    max_frame_bytes: int = 64 * 2**20  # the initial book dump of 500 assets is one frame
    custom_feature_enabled: bool = False
    use_env_proxy: bool = True

    def __post_init__(self) -> None:
        if self.max_assets_per_connection < 1:
            raise ValueError("max_assets_per_connection must be >= 1")
        if min(self.ping_interval_s, self.stale_after_s, self.check_interval_s) <= 0:
            raise ValueError("keepalive intervals must be positive")


Channel = Literal["market", "user"]
ConnectionKind = Literal["connected", "reconnected", "stale", "disconnected"]


class ConnectionEvent(msgspec.Struct, frozen=True, kw_only=True):
    """A change of one connection's state.

    ``connected``: first open of this shard; ``reconnected``: open after a loss (``attempt`` =
    backoff rounds it took; the consumer starts new book epochs, or reconciles orders and trades
    on the user channel); ``stale``: silent for too long, about to be closed; ``disconnected``:
    the connection is gone (``reason`` says why), a reconnect follows. ``subscriptions`` are the
    assets (market) or markets (user) the connection carries.
    """

    kind: ConnectionKind
    channel: Channel
    shard: int
    attempt: int
    at: float  # wall clock, unix seconds
    subscriptions: tuple[str, ...] = ()
    reason: str = ""


class StreamCounters:
    """Metric-ready counters of one stream (all connections together)."""

    __slots__ = ("frames", "messages", "events", "pongs", "decode_errors", "ignored_frames",
                 "connects", "reconnects", "stale", "disconnects", "last_message_at", "last_lag_s")

    def __init__(self) -> None:
        self.frames = 0  # frames received, PONG included
        self.messages = 0  # frames that carried JSON
        self.events = 0  # events delivered
        self.pongs = 0
        self.decode_errors = 0
        self.ignored_frames = 0  # non-JSON text other than PONG, or only unknown event types
        self.connects = 0
        self.reconnects = 0
        self.stale = 0
        self.disconnects = 0
        self.last_message_at = 0.0  # wall clock of the last frame received
        self.last_lag_s = 0.0  # receive time minus the venue timestamp of the last event

    def as_dict(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in self.__slots__}


def backoff_delay(attempt: int, base: float, cap: float, rnd: Callable[[], float] = random.random) -> float:
    """Full-jitter backoff: uniform in ``[0, min(base * 2**attempt, cap))``."""
    return rnd() * min(base * 2.0 ** min(attempt, 64), cap)


def shard_assets(asset_ids: Iterable[str], cap: int) -> list[list[str]]:
    """Split assets (deduplicated, order kept) into groups of at most ``cap``."""
    unique = list(dict.fromkeys(asset_ids))
    return [unique[i:i + cap] for i in range(0, len(unique), cap)]


Sink = Callable[[Any], "Awaitable[None] | None"] | ObjectSendStream
Tap = Callable[[int, bytes, int], None]  # (shard, frame bytes as received, receive time in ns)


def _deliver_now(sink: Sink) -> Callable[[Any], Any] | None:
    """The sink called as it is, when it is a plain callable (not a stream, not a coroutine
    function): what may take a frame's events in ``data_received``."""
    if isinstance(sink, ObjectSendStream) or inspect.iscoroutinefunction(sink) \
            or inspect.iscoroutinefunction(getattr(sink, "__call__", None)):
        return None
    return sink


def _make_deliver(sink: Sink) -> Callable[[Any], Awaitable[None]]:
    if isinstance(sink, ObjectSendStream):
        return sink.send

    async def deliver(item: Any) -> None:
        out = sink(item)
        if out is not None and hasattr(out, "__await__"):
            await out

    return deliver


_encoder = msgspec.json.Encoder()


class StampedConnection(ClientConnection):
    """A client connection that notes when each message's last bytes came off the socket:
    ``rx_stamps`` holds one perf-counter time per complete data message, in the order ``recv``
    returns them (the reader pops one per message). With ``direct`` set, an unfragmented message
    that finds nothing queued for the reader is handed to ``direct(bytes, receive time)`` at once
    instead; an awaitable it returns pauses the socket's reading until it is done."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rx_stamps: deque[float] = deque()
        self._rx_now = 0.0
        self.direct: Callable[[bytes, float], Any] | None = None
        self._held: asyncio.Future[Any] | None = None

    def data_received(self, data: bytes) -> None:
        self._rx_now = time.perf_counter()
        super().data_received(data)

    def process_event(self, event: Any) -> None:
        if type(event) is Frame and event.fin and event.opcode in DATA_OPCODES:
            direct = self.direct
            if direct is not None and event.opcode is not Opcode.CONT and not len(self.recv_messages.frames):
                held = direct(bytes(event.data), self._rx_now)
                if held is not None:
                    self._hold(held)
                return
            self.rx_stamps.append(self._rx_now)
        super().process_event(event)

    def _hold(self, held: Awaitable[Any]) -> None:
        """No more bytes read until the consumer's ``held`` is done (the frames of the bytes
        already read are still handed on)."""
        if self._held is not None:
            if hasattr(held, "close"):
                held.close()  # type: ignore[union-attr]  # one wait at a time: the first one holds
            return
        self.transport.pause_reading()
        self._held = asyncio.ensure_future(held)
        self._held.add_done_callback(self._release)

    def _release(self, done: asyncio.Future[Any]) -> None:
        self._held = None
        if not done.cancelled():
            done.exception()  # retrieved: a wait that failed holds nothing more
        if not self.transport.is_closing():
            self.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._held is not None:
            self._held.cancel()
        super().connection_lost(exc)


class _Link:
    """One WebSocket connection with its subscriptions, keepalive and reconnect loop."""

    __slots__ = ("stream", "shard", "subs", "ws", "attempt", "scope", "last_rx", "ever_up", "failed")

    def __init__(self, stream: "_Stream", shard: int, subs: Iterable[str]) -> None:
        self.stream = stream
        self.shard = shard
        self.subs: dict[str, None] = dict.fromkeys(subs)
        self.ws: ClientConnection | None = None
        self.attempt = 0
        self.scope: anyio.CancelScope | None = None
        self.last_rx = 0.0
        self.ever_up = False
        self.failed: BaseException | None = None  # the consumer's failure in ``data_received``

    async def run(self) -> None:
        st = self.stream
        cfg = st.config
        with anyio.CancelScope() as scope:
            self.scope = scope
            while True:
                reason = await self._connect_once()
                st.counters.disconnects += 1
                await st._emit("disconnected", self, reason)
                delay = backoff_delay(self.attempt, cfg.backoff_base_s, cfg.backoff_cap_s, st.rnd)
                self.attempt += 1
                await anyio.sleep(delay)

    async def _connect_once(self) -> str:
        st = self.stream
        cfg = st.config
        try:
            async with connect(
                st.endpoint,
                ping_interval=None,
                open_timeout=cfg.open_timeout_s,
                close_timeout=cfg.close_timeout_s,
                max_size=cfg.max_frame_bytes,
                proxy=True if cfg.use_env_proxy else None,
                create_connection=StampedConnection,
            ) as ws:
                self.ws = ws
                self.last_rx = time.monotonic()
                await ws.send(st._first_frame(self))
                if self.ever_up:
                    st.counters.reconnects += 1
                    await st._emit("reconnected", self)
                else:
                    self.ever_up = True
                    st.counters.connects += 1
                    await st._emit("connected", self)
                return await self._session(ws)
        except ConnectionClosed as exc:
            return f"closed: {exc}"
        except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as exc:
            return f"{type(exc).__name__}: {exc}"
        finally:
            self.ws = None

    async def _session(self, ws: ClientConnection) -> str:
        st = self.stream
        cfg = st.config
        outcome = ["closed"]

        async def keepalive(tg: TaskGroup) -> None:
            next_ping = time.monotonic() + cfg.ping_interval_s
            while True:
                now = time.monotonic()
                wait = min(cfg.check_interval_s, max(0.0, next_ping - now))
                await anyio.sleep(wait)
                now = time.monotonic()
                if now - self.last_rx > cfg.stale_after_s:
                    outcome[0] = "stale"
                    st.counters.stale += 1
                    await st._emit("stale", self, f"nothing received for {now - self.last_rx:.1f}s")
                    tg.cancel_scope.cancel()
                    return
                if now >= next_ping:
                    next_ping = now + cfg.ping_interval_s
                    try:
                        await ws.send("PING")
                    except ConnectionClosed:
                        return  # the reader sees the close too

        async with anyio.create_task_group() as tg:
            tg.start_soon(keepalive, tg)
            stamps: deque[float] | None = getattr(ws, "rx_stamps", None)
            perf = time.perf_counter
            wall = time.time() - perf()  # perf counter -> unix seconds, fixed per connection (monotone)
            if isinstance(ws, StampedConnection):  # from now on a frame needs no reader to reach the consumer
                ws.direct = st._direct(self, wall)
            try:
                while True:
                    frame = await ws.recv(decode=False)
                    self.last_rx = time.monotonic()
                    at = stamps.popleft() if stamps else perf()
                    await st._on_frame(self, frame, at, at + wall)
            except ConnectionClosed as exc:
                failed, self.failed = self.failed, None
                if failed is not None:
                    raise failed
                outcome[0] = f"closed: {exc}"
            tg.cancel_scope.cancel()
        return outcome[0]

    async def send_op(self, payload: bytes) -> None:
        ws = self.ws
        if ws is None:
            return  # the next first frame carries the change
        try:
            await ws.send(payload.decode())
        except ConnectionClosed:
            pass

    def stop(self) -> None:
        if self.scope is not None:
            self.scope.cancel()


class _Stream:
    """Shared machinery of both channels: links, delivery, counters."""

    channel: Channel = "market"
    path = "/ws/market"

    def __init__(self, sink: Sink, config: StreamConfig | None = None,
                 *, rnd: Callable[[], float] = random.random, tap: Tap | None = None) -> None:
        self.config = config or StreamConfig()
        self.counters = StreamCounters()
        self.rnd = rnd
        self.tap = tap
        self._deliver = _make_deliver(sink)
        self._deliver_now = _deliver_now(sink)
        self._links: dict[int, _Link] = {}
        self._next_shard = 0
        self._tg: TaskGroup | None = None
        self.endpoint = self.config.url.rstrip("/") + self.path
        self.rx_at = 0.0  # perf-counter receipt of the frame being delivered (see the invariants)
        self.rx_wall = 0.0  # the same instant in unix seconds

    # -- lifecycle ------------------------------------------------------------------------

    async def run(self) -> None:
        """Run every connection until cancelled (use inside a task group)."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                for link in list(self._links.values()):
                    tg.start_soon(link.run)
                await anyio.sleep_forever()
            finally:
                self._tg = None

    def _new_link(self, subs: Iterable[str]) -> _Link:
        link = _Link(self, self._next_shard, subs)
        self._next_shard += 1
        self._links[link.shard] = link
        if self._tg is not None:
            self._tg.start_soon(link.run)
        return link

    def _drop_link(self, link: _Link) -> None:
        self._links.pop(link.shard, None)
        link.stop()

    @property
    def shards(self) -> dict[int, tuple[str, ...]]:
        """Shard id -> the subscriptions it carries."""
        return {s: tuple(link.subs) for s, link in self._links.items()}

    def connected(self, shard: int) -> bool:
        link = self._links.get(shard)
        return link is not None and link.ws is not None

    # -- frames ---------------------------------------------------------------------------

    def _first_frame(self, link: _Link) -> str:
        raise NotImplementedError

    _decode: Callable[[bytes], list] = staticmethod(decode_market_frame)

    async def _emit(self, kind: ConnectionKind, link: _Link, reason: str = "") -> None:
        ev = ConnectionEvent(kind=kind, channel=self.channel, shard=link.shard,
                             attempt=link.attempt, at=time.time(),
                             subscriptions=tuple(link.subs), reason=reason)
        log.info("ws_connection", channel=self.channel, kind=kind, shard=link.shard,
                 attempt=link.attempt, subscriptions=len(link.subs), reason=reason)
        await self._deliver(ev)

    def _direct(self, link: _Link, wall: float) -> Callable[[bytes, float], Any] | None:
        """What a connection of ``link`` hands a frame to in ``data_received`` (``wall``: its
        perf counter -> unix seconds offset); None when the consumer must be awaited (a stream,
        a coroutine function): the reader task delivers then."""
        if self._deliver_now is None:
            return None
        take = self._take_frame
        monotonic = time.monotonic

        def direct(frame: bytes, rx_at: float) -> Any:
            link.last_rx = monotonic()
            try:
                return take(link, frame, rx_at, rx_at + wall)
            except Exception as exc:  # the consumer failed: the reader raises it, as its own failure
                link.failed = exc
                ws = link.ws
                if ws is not None:
                    ws.direct = None
                    ws.transport.close()  # wakes the reader
                return None

        return direct

    async def _on_frame(self, link: _Link, frame: bytes, rx_at: float | None = None,
                        rx_wall: float | None = None) -> None:
        """One frame received at ``rx_at`` (perf counter) = ``rx_wall`` (unix seconds); both
        default to now."""
        if rx_at is None:
            rx_at = time.perf_counter()
        if rx_wall is None:
            rx_wall = time.time()
        if self._deliver_now is not None:
            held = self._take_frame(link, frame, rx_at, rx_wall)
            if held is not None:
                await held
            return
        events = self._events_of(link, frame, rx_at, rx_wall)
        if events:
            deliver = self._deliver
            for ev in events:
                await deliver(ev)
            self.counters.events += len(events)

    def _take_frame(self, link: _Link, frame: bytes, rx_at: float, rx_wall: float) -> Any:
        """A frame's events to a plain callable consumer, all of them; the first awaitable it
        returns (it asks the reader to wait), else None."""
        events = self._events_of(link, frame, rx_at, rx_wall)
        if not events:
            return None
        deliver = self._deliver_now
        held = None
        for ev in events:
            out = deliver(ev)  # type: ignore[misc]
            if out is not None and hasattr(out, "__await__"):
                if held is None:
                    held = out
                elif hasattr(out, "close"):
                    out.close()  # the same wait asked again: one is enough
        self.counters.events += len(events)
        return held

    def _events_of(self, link: _Link, frame: bytes, rx_at: float, rx_wall: float) -> list | None:
        """A frame counted, tapped and decoded: its events to deliver (``rx_at``/``rx_wall`` set
        to its receipt), or None (a ``PONG``, a bad frame, nothing known in it)."""
        tap = self.tap
        if tap is not None:
            tap(link.shard, frame, int(rx_wall * 1e9))
        c = self.counters
        c.frames += 1
        c.last_message_at = now = rx_wall
        if frame == b"PONG":
            c.pongs += 1
            return None
        link.attempt = 0  # the connection proved healthy: the backoff starts over
        try:
            events = self._decode(frame)
        except DecodeError as exc:
            c.decode_errors += 1
            log.warning("ws_decode_error", channel=self.channel, shard=link.shard,
                        error=str(exc)[:300], frame=frame[:200])
            return None
        except Exception as exc:  # noqa: BLE001 - bad input must never end the stream
            c.decode_errors += 1
            log.warning("ws_decode_error", channel=self.channel, shard=link.shard,
                        error=f"{type(exc).__name__}: {exc}"[:300], frame=frame[:200])
            return None
        if not events:
            c.ignored_frames += 1
            return None
        c.messages += 1
        ts = getattr(events[-1], "timestamp", None)
        if isinstance(ts, str) and ts.isdigit():
            c.last_lag_s = now - int(ts) / 1000.0
        self.rx_at, self.rx_wall = rx_at, rx_wall
        return events


class MarketStream(_Stream):
    """The public market channel, sharded at ``max_assets_per_connection`` assets per connection.

    ``sink`` receives every decoded market event (``bot.venue.models.ws`` Structs) and every
    :class:`ConnectionEvent`: an anyio memory object send stream, or a callable (sync or async).
    """

    channel: Channel = "market"
    path = "/ws/market"
    _decode = staticmethod(decode_market_frame)

    def __init__(self, sink: Sink, asset_ids: Iterable[str] = (), config: StreamConfig | None = None,
                 *, rnd: Callable[[], float] = random.random, tap: Tap | None = None) -> None:
        super().__init__(sink, config, rnd=rnd, tap=tap)
        for group in shard_assets(asset_ids, self.config.max_assets_per_connection):
            self._new_link(group)

    @property
    def asset_ids(self) -> list[str]:
        return [a for link in self._links.values() for a in link.subs]

    def shard_of(self, asset_id: str) -> int | None:
        for s, link in self._links.items():
            if asset_id in link.subs:
                return s
        return None

    def _first_frame(self, link: _Link) -> str:
        return _encoder.encode(MarketSubscribe(
            assets_ids=list(link.subs),
            custom_feature_enabled=self.config.custom_feature_enabled,
        )).decode()

    async def subscribe(self, asset_ids: Iterable[str]) -> None:
        """Add assets: fill shards with room first (in shard order), then open new shards."""
        cap = self.config.max_assets_per_connection
        known = {a for link in self._links.values() for a in link.subs}
        todo = [a for a in dict.fromkeys(asset_ids) if a not in known]
        for link in list(self._links.values()):
            if not todo:
                break
            room = cap - len(link.subs)
            if room <= 0:
                continue
            add, todo = todo[:room], todo[room:]
            link.subs.update(dict.fromkeys(add))
            await link.send_op(self._op("subscribe", add))
        for group in shard_assets(todo, cap):
            self._new_link(group)

    async def unsubscribe(self, asset_ids: Iterable[str]) -> None:
        """Remove assets; a shard left with no assets is closed."""
        drop = set(asset_ids)
        for link in list(self._links.values()):
            gone = [a for a in link.subs if a in drop]
            if not gone:
                continue
            for a in gone:
                del link.subs[a]
            if not link.subs:
                self._drop_link(link)
            else:
                await link.send_op(self._op("unsubscribe", gone))

    def _op(self, operation: str, assets: Sequence[str]) -> bytes:
        return _encoder.encode(SubscriptionUpdate(
            operation=operation, assets_ids=list(assets),
            custom_feature_enabled=True if self.config.custom_feature_enabled else None,
        ))


class UserStream(_Stream):
    """The authenticated user channel: one connection; ``markets=None`` subscribes to all markets.

    After a ``reconnected`` event the consumer must reconcile (``GET /data/orders`` and
    ``GET /data/trades``): the venue does not replay missed user events.
    """

    channel: Channel = "user"
    path = "/ws/user"
    _decode = staticmethod(decode_user_frame)

    def __init__(self, sink: Sink, credentials: Any, markets: Iterable[str] | None = None,
                 config: StreamConfig | None = None, *,
                 rnd: Callable[[], float] = random.random) -> None:
        super().__init__(sink, config, rnd=rnd)
        self._creds = _check_creds(credentials)
        self.all_markets = markets is None
        self._new_link(() if markets is None else markets)

    def __repr__(self) -> str:  # never show credentials
        return f"UserStream(endpoint={self.endpoint!r}, markets={len(self._link.subs)})"

    @property
    def _link(self) -> _Link:
        return next(iter(self._links.values()))

    @property
    def markets(self) -> list[str]:
        return list(self._link.subs)

    def _first_frame(self, link: _Link) -> str:
        auth = _as_creds(self._creds)
        frame = UserSubscribe(auth=auth) if self.all_markets and not link.subs \
            else UserSubscribe(auth=auth, markets=list(link.subs))
        return _encoder.encode(frame).decode()

    async def subscribe(self, markets: Iterable[str]) -> None:
        link = self._link
        add = [m for m in dict.fromkeys(markets) if m not in link.subs]
        if not add:
            return
        link.subs.update(dict.fromkeys(add))
        self.all_markets = False
        await link.send_op(_encoder.encode(SubscriptionUpdate(operation="subscribe", markets=add)))

    async def unsubscribe(self, markets: Iterable[str]) -> None:
        link = self._link
        gone = [m for m in dict.fromkeys(markets) if m in link.subs]
        if not gone:
            return
        for m in gone:
            del link.subs[m]
        await link.send_op(_encoder.encode(SubscriptionUpdate(operation="unsubscribe", markets=gone)))


def _reveal(value: Any) -> Any:
    reveal = getattr(value, "reveal", None)
    return reveal() if callable(reveal) else value


def _check_creds(credentials: Any) -> Any:
    """Accept ``bot.venue.auth.Credentials`` (secrets wrapped in ``Secret``), ``ApiCreds`` or any
    object with ``api_key``, ``secret`` and ``passphrase``; the plain values are only read when
    the first frame is built."""
    _as_creds(credentials)
    return credentials


def _as_creds(credentials: Any) -> ApiCreds:
    if isinstance(credentials, ApiCreds):
        return credentials
    key = getattr(credentials, "api_key", None)
    secret = _reveal(getattr(credentials, "secret", None))
    passphrase = _reveal(getattr(credentials, "passphrase", None))
    if not (isinstance(key, str) and isinstance(secret, str) and isinstance(passphrase, str)
            and key and secret and passphrase):
        raise ValueError("user stream needs credentials with api_key, secret and passphrase")
    return ApiCreds(api_key=key, secret=secret, passphrase=passphrase)

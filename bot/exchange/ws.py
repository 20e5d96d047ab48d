"""WebSocket channels ``/ws/market`` and ``/ws/user`` (venue.md 9).

Invariants: a market subscriber gets one ``book`` snapshot per asset on subscribe (one array
frame) and then every level change as ``price_change`` with ``size`` = the new total, in engine
order; a user subscriber gets ``order`` and ``trade`` events only for the wallets its address
controls (``bot.exchange.wallets``), filtered by market (case-insensitive), with every settlement
status of a trade under the same id. Frames are decoded by ``bodies.decode_json`` (bounded depth);
one that is not a JSON object is ignored. Text
``PING`` is answered ``PONG``. What a connection holds is bounded: it subscribes only to tokens
(and, on the user channel, markets) the catalog lists, other ids are ignored and never stored;
more than 500 assets on one connection closes it with 1008, and so does a connection beyond
``ws_connections_per_client`` open ones from its IP (once its handshake waited about
``OVER_CAP_HOLD_S``); a frame is at most ``MAX_FRAME_BYTES``. A
closed connection leaves nothing behind (its subscriptions, its slot in the per-IP count).
What a client IP sends over its WebSockets is read at ``ws_input_bytes_per_client_s`` at most
once ``INPUT_BURST_BYTES`` have come at once (``InputBudget``): a connection over it is not read
until its client is back within it, so a client that floods subscriptions is slowed by TCP itself
and costs the exchange no more work than that rate (a connection closed by its client meanwhile is
let go when the wait ends: at most ``connections_per_client`` of them per IP).
Frames are queued per connection; a subscriber too slow to drain 10 000 frames is dropped. Frames
already queued are written back to back (up to ``WRITE_BURST``), and a frame for several
subscribers that see the same tokens is encoded once.
"""

from __future__ import annotations

import random
import time

import anyio
import msgspec
from anyio.streams.memory import MemoryObjectSendStream
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from bot.exchange import render
from bot.exchange.bodies import decode_json
from bot.sim.events import BookLevelChanged, OrderEvent, TickSizeChanged, TradeEvent, TradePrint
from bot.venue.models.ws import (
    BestBidAskEvent, LastTradePriceEvent, LevelChange, MarketResolvedEvent, PriceChangeEvent,
    TickSizeChangeEvent,
)
from bot.venue.units import format_units

MAX_ASSETS = 500
MAX_FRAME_BYTES = 256 * 1024  # a first frame with 500 token ids is ~45 KB; a user frame naming 1000 markets ~70 KB
MAX_QUEUED_FRAMES_IN = 8  # frames received and not yet read by the handler, per connection
REORDER_HOLD_S = 0.2  # fault: how long a user event waits for a successor to swap with
PING_MAX_CHARS = 64  # a longer text frame is not taken for a PING (nor scanned for one)
OVER_CAP_HOLD_S = 2.0  # a connection over its client's cap waits about this long (+-50 %) for its handshake
INPUT_BURST_BYTES = 4 << 20  # read at once from one client's WebSockets before the rate applies (64 full first frames)
WRITE_BURST = 512  # queued frames a connection writes back to back before it lets other tasks run
_enc = msgspec.json.Encoder()
_jitter = random.Random()


class Conn:
    __slots__ = ("send", "assets", "custom", "address", "markets", "api_key", "closed")

    def __init__(self, send: MemoryObjectSendStream) -> None:
        self.send = send
        self.assets: set[str] = set()
        self.custom = False
        self.address = ""
        self.api_key = ""
        self.markets: set[str] | None = None
        self.closed = False

    def push(self, payload: bytes | str) -> None:
        if self.closed:
            return
        try:
            self.send.send_nowait(payload)
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.closed = True
            self.send.close()


def leaked(level: float, elapsed: float, rate: float) -> float:
    """A leaky bucket's ``level`` after ``elapsed`` seconds of leaking ``rate`` a second (never below 0)."""
    return max(0.0, level - elapsed * rate)


class InputBudget:
    """The bytes each client IP sends over its WebSockets, as a leaky bucket: ``rate`` leaks out a
    second; what stands above ``burst`` must leak before the client is read again. One entry per
    client with an open WebSocket (``forget`` when its last one closes)."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst = rate, burst
        self.level: dict[str, tuple[float, float]] = {}  # client IP -> (bytes in the bucket, when)

    def charge(self, client: str, n: int, now: float) -> float:
        """Put ``n`` bytes of ``client`` in; the seconds until it is within the burst again (0: now)."""
        level, at = self.level.get(client, (0.0, now))
        level = leaked(level, now - at, self.rate) + n
        self.level[client] = (level, now)
        return max(0.0, (level - self.burst) / self.rate)

    def forget(self, client: str) -> None:
        self.level.pop(client, None)


class Hub:
    """Fans engine events out to connected subscribers."""

    def __init__(self, state) -> None:
        self.state = state
        self.market_conns: set[Conn] = set()
        self.user_conns: set[Conn] = set()
        self.stamps = None  # a ``bot.exchange.wire.WireStamps`` records market frames as written
        self.per_client: dict[str, int] = {}  # client IP -> its open connections (none kept at zero)
        self.input = InputBudget(state.config.ws_input_bytes_per_client_s, INPUT_BURST_BYTES)
        state.hub = self

    # -- fan-out ---------------------------------------------------------------------------
    def dispatch(self, events: list) -> None:
        now = self.state.clock()
        changes: dict[str, list[BookLevelChanged]] = {}
        for ev in events:
            if isinstance(ev, BookLevelChanged):
                changes.setdefault(ev.market, []).append(ev)
                continue
            if changes:
                self._flush_changes(changes, now)
                changes = {}
            if isinstance(ev, TradePrint):
                self._market(ev.token, LastTradePriceEvent(
                    asset_id=ev.token, market=ev.market, price=format_units(ev.price), side=ev.side.value,
                    size=format_units(ev.size), fee_rate_bps=str(ev.fee_rate_bps), timestamp=render.ms(ev.time)))
            elif isinstance(ev, TickSizeChanged):
                self._market(ev.token, TickSizeChangeEvent(
                    asset_id=ev.token, market=ev.market, old_tick_size=format_units(ev.old),
                    new_tick_size=format_units(ev.new), timestamp=render.ms(ev.time)))
            elif isinstance(ev, OrderEvent):
                o = ev.order
                self._user(self._owner(o.account), o.market, render.order_event(o, ev.type, ev.time))
            elif isinstance(ev, TradeEvent):
                t = ev.trade
                taker = self._owner(t.account)
                self._user(taker, t.market, render.trade_event(t, "TAKER", t.owner, ev.time))
                seen = {taker}
                for m in t.maker_orders:
                    maker = self._owner(m.account)
                    if maker not in seen:
                        seen.add(maker)
                        self._user(maker, t.market, render.trade_event(t, "MAKER", m.owner, ev.time))
        if changes:
            self._flush_changes(changes, now)

    def _flush_changes(self, changes: dict[str, list[BookLevelChanged]], now: float) -> None:
        eng = self.state.engine
        for market, evs in changes.items():
            tokens = {e.token for e in evs}
            tops = {t: eng.best_bid_ask(t) for t in tokens}
            hashes = {t: render.book(eng.book(t), now).hash for t in tokens}
            items = [
                LevelChange(asset_id=e.token, price=format_units(e.price), size=format_units(e.size),
                            side=e.side.value, hash=hashes[e.token], best_bid=format_units(tops[e.token][0]),
                            best_ask=format_units(tops[e.token][1]))
                for e in evs
            ]
            stamp = render.ms(now)
            frames: dict[frozenset[str], bytes] = {}  # the tokens a subscriber sees -> its frame, encoded once
            for conn in list(self.market_conns):
                seen = tokens & conn.assets
                if not seen:
                    continue
                key = frozenset(seen)
                payload = frames.get(key)
                if payload is None:
                    mine = items if len(seen) == len(tokens) else [i for i in items if i.asset_id in seen]
                    payload = frames[key] = _enc.encode(
                        PriceChangeEvent(market=market, timestamp=stamp, price_changes=mine))
                    if self.stamps is not None and self.stamps.answering:
                        self.stamps.answer(payload)
                conn.push(payload)
                if conn.custom:
                    for t in sorted(seen):
                        bid, ask = tops[t]
                        conn.push(_enc.encode(BestBidAskEvent(
                            asset_id=t, market=market, best_bid=format_units(bid), best_ask=format_units(ask),
                            spread=format_units(max(0, ask - bid)) if bid and ask else "0",
                            timestamp=stamp)))

    def _market(self, token: str, event) -> None:
        payload = _enc.encode(event)
        for conn in list(self.market_conns):
            if token in conn.assets:
                conn.push(payload)

    def market_resolved(self, market, winner: int) -> None:
        ev = MarketResolvedEvent(
            id=market.id, market=market.condition_id, assets_ids=list(market.token_ids),
            winning_asset_id=market.token_ids[winner], winning_outcome=market.outcomes[winner],
            timestamp=render.ms(self.state.clock()))
        payload = _enc.encode(ev)
        for conn in list(self.market_conns):
            if conn.custom and set(market.token_ids) & conn.assets:
                conn.push(payload)

    def _owner(self, account: str) -> str:
        """The (lowercase) signer address whose user channel sees events of wallet ``account``."""
        return (self.state.wallets.owner_of(account) or account).lower()

    def _user(self, owner: str, market: str, event) -> None:
        faults = self.state.faults
        payload = _enc.encode(event)
        for conn in list(self.user_conns):
            if conn.address != owner:
                continue
            if conn.markets is not None and market.lower() not in conn.markets:
                continue
            conn.push(payload)
            if faults.duplicate_user_event():
                conn.push(payload)

    def drop_all(self) -> None:
        """Fault injection: close every connection (clients must reconnect)."""
        for conn in list(self.market_conns | self.user_conns):
            conn.closed = True
            conn.send.close()

    # -- connections ---------------------------------------------------------------------
    async def serve(self, ws: WebSocket, channel: str) -> None:
        client = ws.client.host if ws.client else "?"
        cap = self.state.config.ws_connections_per_client
        if self.per_client.get(client, 0) >= cap:
            # its handshake waits (a client reconnecting in a loop is slowed), each its own time (the
            # waits of a crowd that came at once end apart)
            await anyio.sleep(OVER_CAP_HOLD_S * (0.5 + _jitter.random()))
            await ws.accept()
            await ws.close(1008, f"too many connections (max {cap} per client)")
            return
        await ws.accept()
        self.per_client[client] = self.per_client.get(client, 0) + 1
        try:
            await self._serve(ws, channel, client)
        finally:
            left = self.per_client[client] - 1
            if left:
                self.per_client[client] = left
            else:
                del self.per_client[client]
                self.input.forget(client)

    async def _serve(self, ws: WebSocket, channel: str, client: str) -> None:
        send, receive = anyio.create_memory_object_stream(10_000)
        conn = Conn(send)
        delay = self.state.config.faults.user_event_delay_ms / 1000.0 if channel == "user" else 0.0
        reorder = self.state.faults.reorder_user_event if channel == "user" else None

        stamps = self.stamps if channel == "market" else None

        async def emit(payload) -> None:
            await ws.send_text(payload.decode() if isinstance(payload, bytes) else payload)
            if stamps is not None:
                stamps.frame(payload, time.perf_counter())

        async def writer() -> None:
            try:
                await pump()
            except Exception:  # the peer is gone: a send on a closed socket ends this connection
                conn.closed = True
                return
            with anyio.move_on_after(1.0):
                try:
                    await ws.close(1000)
                except Exception:
                    pass
            tg.cancel_scope.cancel()  # the reader too, were it waiting out its client's budget

        async def pump() -> None:
            async with receive:
                burst = 0
                while True:
                    # frames already queued go out back to back (a flow step queues one per market):
                    # the loop is given up only when the queue is empty or every WRITE_BURST frames
                    try:
                        if burst < WRITE_BURST:
                            payload = receive.receive_nowait()
                            burst += 1
                        else:
                            burst = 0
                            payload = await receive.receive()
                    except anyio.WouldBlock:
                        burst = 0
                        try:
                            payload = await receive.receive()
                        except (anyio.EndOfStream, anyio.ClosedResourceError):
                            break
                    except (anyio.EndOfStream, anyio.ClosedResourceError):
                        break
                    if delay:
                        await anyio.sleep(delay)
                    if reorder is not None and payload != "PONG" and reorder():
                        # swap with the next frame; a lone held event goes out after REORDER_HOLD_S
                        nxt = None
                        with anyio.move_on_after(REORDER_HOLD_S):
                            try:
                                nxt = await receive.receive()
                            except (anyio.EndOfStream, anyio.ClosedResourceError):
                                pass
                        if nxt is not None:
                            await emit(nxt)
                        await emit(payload)
                        continue
                    await emit(payload)

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(writer)
                try:
                    await self._reader(ws, conn, channel, client)
                finally:
                    conn.closed = True
                    self.market_conns.discard(conn)
                    self.user_conns.discard(conn)
                    send.close()
                    tg.cancel_scope.cancel()
        except* (WebSocketDisconnect, RuntimeError, OSError):
            pass
        finally:
            self.market_conns.discard(conn)
            self.user_conns.discard(conn)

    async def _reader(self, ws: WebSocket, conn: Conn, channel: str, client: str) -> None:
        first = True
        wait = 0.0
        while not conn.closed:
            if wait > 0:  # its client is over its budget: this connection is not read meanwhile (TCP slows it)
                text = msg = None  # what was read is let go while it waits
                await anyio.sleep(wait)
            try:
                text = await ws.receive_text()
            except (WebSocketDisconnect, KeyError, RuntimeError):
                return
            wait = self.input.charge(client, len(text), time.monotonic())
            if len(text) <= PING_MAX_CHARS and text.strip().upper() == "PING":
                conn.push("PONG")
                continue
            try:
                msg = decode_json(text)
            except ValueError:
                continue
            if not isinstance(msg, dict):
                continue
            if first:
                if str(msg.get("type", "")).lower() != channel:
                    await ws.close(1008, f"first frame must have type {channel}")
                    return
                first = False
                if channel == "market":
                    if not await self._subscribe_assets(ws, conn, msg):
                        return
                    self.market_conns.add(conn)
                else:
                    if not await self._auth_user(ws, conn, msg):
                        return
                    self.user_conns.add(conn)
                continue
            op = str(msg.get("operation", "")).lower()
            if channel == "market":
                if op == "subscribe":
                    if not await self._subscribe_assets(ws, conn, msg):
                        return
                elif op == "unsubscribe":
                    conn.assets -= set(_strings(msg.get("assets_ids")))
            else:
                markets = self._known_markets(msg)
                if op == "subscribe" and markets:
                    conn.markets = (conn.markets or set()) | markets
                elif op == "unsubscribe" and conn.markets is not None:
                    conn.markets -= markets

    def _known_markets(self, msg: dict) -> set[str]:
        """The frame's ``markets`` the catalog lists (lowercase); any other id is dropped."""
        listed = self.state.catalog.by_condition
        return {m.condition_id.lower() for m in (listed.get(x.lower()) for x in _strings(msg.get("markets")))
                if m is not None}

    async def _subscribe_assets(self, ws: WebSocket, conn: Conn, msg: dict) -> bool:
        by_token = self.state.catalog.by_token
        asked = [a for a in dict.fromkeys(_strings(msg.get("assets_ids"))) if a not in conn.assets]
        if "custom_feature_enabled" in msg:
            conn.custom = bool(msg.get("custom_feature_enabled"))
        if len(conn.assets) + len(asked) > MAX_ASSETS:  # the cap counts every id asked for, as the venue's does
            await ws.close(1008, f"too many assets (max {MAX_ASSETS})")
            return False
        eng = self.state.engine
        now = self.state.clock()
        fresh = [a for a in asked if a in by_token]  # ids the catalog does not list are dropped, never stored
        books = [render.book(eng.book(a), now, event=True) for a in fresh]
        conn.assets.update(fresh)
        if books:
            conn.push(_enc.encode(books))
        return True

    async def _auth_user(self, ws: WebSocket, conn: Conn, msg: dict) -> bool:
        auth = msg.get("auth")
        auth = auth if isinstance(auth, dict) else {}
        rec = self.state.keys.get(str(auth.get("apiKey", "")))
        secret = auth.get("secret")
        if (rec is None or not isinstance(secret, str) or auth.get("passphrase") != rec.creds.passphrase
                or secret.rstrip("=") != rec.creds.secret.rstrip("=")):
            await ws.close(1008, "unauthorized: invalid credentials")
            return False
        conn.address = rec.address
        conn.api_key = rec.creds.apiKey
        markets = _strings(msg.get("markets"))
        conn.markets = self._known_markets(msg) if markets else None
        return True


def _strings(value) -> list[str]:
    """A frame's list field as strings (scalars inside it kept as text); anything else is empty."""
    if not isinstance(value, list):
        return []
    return [v if isinstance(v, str) else str(v) for v in value if isinstance(v, (str, int))]


def routes(hub: Hub) -> list[WebSocketRoute]:
    async def market(ws: WebSocket) -> None:
        await hub.serve(ws, "market")

    async def user(ws: WebSocket) -> None:
        await hub.serve(ws, "user")

    return [WebSocketRoute("/ws/market", market), WebSocketRoute("/ws/user", user)]

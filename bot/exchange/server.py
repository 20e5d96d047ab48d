"""Running the exchange: ``LocalExchange`` (async, in-process) and ``start_in_thread`` (sync).

Invariant: the servers listen on sockets bound before ``__aenter__`` returns, so ``ex.urls`` are
live the moment they are handed out; the engine clock loop (expiry, settlement, heartbeats, fault
drops, synthetic flow) runs in the same event loop as the handlers, so the engine is only ever
touched from one thread. The synthetic traders act when due (at most ``FLOW_MIN_WAIT_S`` late
while the loop is free), so a trade's frame is not stamped a whole flow interval before it is sent.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

import anyio
import msgspec
import structlog
import uvicorn
from anyio.from_thread import BlockingPortal, start_blocking_portal

from bot.exchange import ws
from bot.exchange.app import MOUNTS, Exchange
from bot.exchange.config import ExchangeConfig
from bot.exchange.intake import HeadCheck, HeadLimits, Waiting, protocol_factory
from bot.exchange.listener import Listener
from bot.exchange.request_log import RequestLog
from bot.exchange.state import DemoAccount

TICK_S = 0.05
LISTEN_BACKLOG = 512  # connections the kernel holds before they are accepted
ACCEPT_BURST = 128  # connections accepted in one go: each burst is then bounded (``intake``) before the next
SHUTDOWN_GRACE_S = 3.0  # connections and requests still open this long after a stop are cut
FLOW_MIN_WAIT_S = 0.005  # the flow loop sleeps at least this long between steps (actions due meanwhile go together)
log = structlog.get_logger("bot.exchange")


class Urls(msgspec.Struct, frozen=True):
    catalog: str
    clob: str
    data: str
    ws: str  # WebSocket base: {ws}/ws/market, {ws}/ws/user

    def venue_settings(self) -> dict[str, str]:
        """The bot config's ``[venue]`` URL keys that point a bot at this exchange."""
        return {"clob_url": self.clob, "catalog_url": self.catalog, "data_url": self.data, "ws_url": self.ws}

    def venue_toml(self) -> str:
        """A bot config's ``[venue]`` section pointing at this exchange (TOML, ends with a newline)."""
        return "[venue]\n" + "".join(f'{k} = "{v}"\n' for k, v in self.venue_settings().items())


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on now (the kernel's pick; free until taken)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _bind(host: str, port: int, per_client: int) -> Listener:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = Listener(family, per_client)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(LISTEN_BACKLOG)
    sock.setblocking(False)
    return sock


class LocalExchange:
    """``async with LocalExchange(config) as ex:`` serves every surface until the block ends."""

    def __init__(self, config: ExchangeConfig | None = None) -> None:
        self.config = config or ExchangeConfig()
        self.exchange = Exchange(self.config)
        self.state = self.exchange.state
        self.urls: Urls | None = None
        self._servers: list[uvicorn.Server] = []
        self.waiting: dict[str, Waiting] = {}  # per surface: the connections waiting for a request head
        self.listeners: dict[str, Listener] = {}  # per surface: its listening socket (connections per client)
        self._tg = None
        self.flow_paused = False  # the synthetic traders hold still while set (books stop moving)

    @property
    def demo_account(self) -> DemoAccount:
        return self.state.demo

    def new_account(self, index: int, usdc: str = "10000", shares: str = "1000",
                    funded: tuple[int, ...] = (0,)) -> DemoAccount:
        return self.state.new_account(index, usdc, shares, funded)

    async def __aenter__(self) -> "LocalExchange":
        c = self.config
        apps = self.exchange.apps()
        host = c.host
        shown = f"[{host}]" if ":" in host else host
        if c.single_port:
            plan = [("all", c.port)]
        else:
            plan = [("catalog", c.catalog_port), ("clob", c.clob_port), ("data", c.data_port)]
        ports = {}
        socks: list[Listener] = []
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        try:
            for name, port in plan:
                sock = _bind(host, port, c.connections_per_client)
                socks.append(sock)
                self.listeners[name] = sock
                ports[name] = sock.getsockname()[1]
                cfg = _server_config(c, apps[name], catalog=name == "catalog")
                self.waiting[name] = cfg.http.keywords["waiting"]
                server = uvicorn.Server(cfg)
                server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
                self._servers.append(server)
                self._tg.start_soon(self._serve, server, sock)
            self._tg.start_soon(self._clock_loop)
            if self.config.faults.ws_drop_every_s > 0:
                self._tg.start_soon(self._drop_loop)
            if self.config.flow.enabled:
                self._tg.start_soon(self._flow_loop)
            with anyio.fail_after(10):
                while not all(s.started for s in self._servers):
                    await anyio.sleep(0.01)
            for sock in socks:  # uvicorn listened with the accept burst as the backlog: the kernel keeps more
                sock.listen(LISTEN_BACKLOG)
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        if c.single_port:
            base = f"http://{shown}:{ports['all']}"
            self.urls = Urls(base + MOUNTS["catalog"], base + MOUNTS["clob"], base + MOUNTS["data"],
                             f"ws://{shown}:{ports['all']}")
        else:
            self.urls = Urls(f"http://{shown}:{ports['catalog']}", f"http://{shown}:{ports['clob']}",
                             f"http://{shown}:{ports['data']}", f"ws://{shown}:{ports['clob']}")
        return self

    async def __aexit__(self, *exc) -> None:
        for s in self._servers:
            s.should_exit = True
        self.exchange.hub.drop_all()
        if self._tg is not None:
            tg, self._tg = self._tg, None
            with anyio.move_on_after(SHUTDOWN_GRACE_S, shield=True):
                while not all(getattr(s, "_exited", True) for s in self._servers):
                    await anyio.sleep(0.02)
            tg.cancel_scope.cancel()
            await tg.__aexit__(None, None, None)

    @staticmethod
    async def _serve(server: uvicorn.Server, sock: socket.socket) -> None:
        server._exited = False  # type: ignore[attr-defined]
        try:
            await server.serve(sockets=[sock])
        finally:
            server._exited = True  # type: ignore[attr-defined]
            sock.close()

    async def _clock_loop(self) -> None:
        while True:
            try:
                self.state.advance()
            except Exception:  # the clock must keep running; failures surface in requests
                pass
            if any(s.should_exit for s in self._servers):  # stopping (a signal): the WebSockets go at once,
                self.exchange.hub.drop_all()  # none left waiting out its client's input budget
            await anyio.sleep(TICK_S)

    async def _drop_loop(self) -> None:
        while True:
            await anyio.sleep(self.config.faults.ws_drop_every_s)
            self.exchange.hub.drop_all()

    async def _flow_loop(self) -> None:
        from bot.exchange.flow_driver import FlowDriver

        driver = FlowDriver.create(self.state, self.config.flow)
        hub = self.exchange.hub
        interval = self.config.flow.interval_s
        while True:
            wait = interval
            try:
                self.state.publish()  # anything pending goes out before the flow drains the engine
                events = [] if self.flow_paused else driver.step(self.state.clock())
                if events:
                    hub.dispatch(events)
                due = driver.next_due()
                if due is not None and not self.flow_paused:  # a trader acts when due, not a whole interval late
                    wait = min(interval, max(FLOW_MIN_WAIT_S, due - self.state.clock()))
            except Exception as exc:  # the flow must keep running; one bad step is logged
                log.warning("flow_step_failed", error=f"{type(exc).__name__}: {exc}")
            await anyio.sleep(wait)


def head_limits(c: ExchangeConfig) -> HeadLimits:
    return HeadLimits(c.header_timeout_s, c.max_header_bytes, c.max_headers, c.waiting_per_client, c.waiting_total)


def _server_config(c: ExchangeConfig, app, catalog: bool) -> uvicorn.Config:
    """uvicorn's settings for one surface: h11 with the request head bounded (``bot.exchange.intake``),
    WebSocket frames and queues bounded, the peer's own address as the client (no proxy headers:
    a local client cannot pose as another IP)."""
    limits = head_limits(c)
    app = HeadCheck(app, limits, catalog)
    return uvicorn.Config(
        RequestLog(app) if c.log_requests else app, log_level="warning", lifespan="off", access_log=False,
        http=protocol_factory(limits, catalog), h11_max_incomplete_event_size=limits.max_head_bytes,
        timeout_keep_alive=c.keep_alive_s, proxy_headers=False, backlog=ACCEPT_BURST,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        ws="websockets-sansio" if _has_sansio() else "websockets",
        ws_max_size=ws.MAX_FRAME_BYTES, ws_max_queue=ws.MAX_QUEUED_FRAMES_IN, ws_per_message_deflate=False)


def _has_sansio() -> bool:
    try:
        import uvicorn.protocols.websockets.websockets_sansio_impl  # noqa: F401

        return True
    except Exception:
        return False


class ThreadedExchange:
    """A running exchange owned by a background thread (for sync code and pytest fixtures)."""

    def __init__(self, portal_cm, portal: BlockingPortal, ex_cm, ex: LocalExchange) -> None:
        self._portal_cm = portal_cm
        self.portal = portal
        self._ex_cm = ex_cm
        self.exchange = ex

    @property
    def urls(self) -> Urls:
        return self.exchange.urls  # type: ignore[return-value]

    @property
    def demo_account(self) -> DemoAccount:
        return self.exchange.demo_account

    def call(self, fn: Callable, *args):
        """Run ``fn(*args)`` on the exchange's event loop thread (engine access is single-threaded)."""

        async def run():
            return fn(*args)

        return self.portal.call(run)

    def new_account(self, index: int, usdc: str = "10000", shares: str = "1000",
                    funded: tuple[int, ...] = (0,)) -> DemoAccount:
        return self.call(self.exchange.new_account, index, usdc, shares, funded)

    def hold(self, method: str, path: str, when: str = "after"):
        """Hold the next ``method path`` request (``bot.exchange.app.Hold``): ``held()`` tells
        whether it waits, ``release()`` lets it go on."""
        h = self.call(self.exchange.exchange.hold, method, path, when)
        return HeldRequest(self, h)

    def pause_flow(self, paused: bool = True) -> None:
        """Hold the synthetic traders still (or let them go on): the books stop moving."""
        self.call(setattr, self.exchange, "flow_paused", paused)

    def stop(self) -> None:
        try:
            self._ex_cm.__exit__(None, None, None)
        finally:
            self._portal_cm.__exit__(None, None, None)

    def __enter__(self) -> "ThreadedExchange":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class HeldRequest:
    """A ``Hold`` seen from another thread."""

    def __init__(self, owner: ThreadedExchange, hold) -> None:
        self._owner, self._hold = owner, hold

    def held(self) -> bool:
        return self._owner.call(self._hold.held.is_set)

    def release(self) -> None:
        self._owner.call(self._hold.released.set)

    def done(self) -> bool:
        return self._owner.call(self._hold.done.is_set)


def start_in_thread(config: ExchangeConfig | None = None) -> ThreadedExchange:
    """Start the exchange in a background thread; returns once every port is listening."""
    portal_cm = start_blocking_portal()
    portal = portal_cm.__enter__()
    try:
        ex = portal.call(_build_async, config)
        ex_cm = portal.wrap_async_context_manager(ex)
        ex_cm.__enter__()
    except BaseException:
        portal_cm.__exit__(None, None, None)
        raise
    return ThreadedExchange(portal_cm, portal, ex_cm, ex)


async def _build_async(config):
    return LocalExchange(config)


def _build(config):
    return _build_async(config)

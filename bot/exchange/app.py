"""Assembly of the exchange's ASGI apps: one per surface, or one app serving every surface.

Invariant: every HTTP request goes through ``guard``: allow fault latency (part of it on the way
in, the rest before the answer leaves), then the edge limits
(held up to ``limits_queue_s``, else 429 + Retry-After), then injected 5xx faults, then the
handler; a ``Reply`` becomes its JSON body and status, and any other exception becomes 500
``internal_error: <detail>``, so bad input never crashes the server. A path or method no route
serves is answered 404/405 in the surface's error shape, never as plain text. With ``single_port`` the
surfaces are mounted at ``/catalog``, ``/clob`` and ``/data-api`` (WebSockets at ``/ws/...``);
otherwise each surface has its own app at the root and the WebSockets live on the CLOB port.
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Callable

import anyio
import structlog
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.routing import Mount, Route

from bot.exchange import account_routes, catalog_routes, clob_routes, ws
from bot.exchange.auth_check import AllowList, Authenticator
from bot.exchange.config import ExchangeConfig
from bot.exchange.edge import EdgeLimits
from bot.exchange.markets_view import MarketsView
from bot.exchange.replies import Reply, catalog_error, error, internal, json_response
from bot.exchange.state import ExchangeState
from bot.exchange.wire import ReceiptStamp

log = structlog.get_logger("bot.exchange")
MOUNTS = {"catalog": "/catalog", "clob": "/clob", "data": "/data-api"}


class Hold:
    """One request held at the exchange, for tests that must act while a request is on the wire:
    ``before`` it is processed (received whole, not processed yet: it is, even if the client is
    gone by then) or
    ``after`` (processed, its answer not sent yet). ``held`` is set when it waits; it goes on at
    ``release``; ``done`` is set once it is processed and released."""

    def __init__(self, method: str, path: str, when: str) -> None:
        if when not in ("before", "after"):
            raise ValueError(f"a hold is 'before' or 'after', not {when!r}")
        self.method, self.path, self.when = method, path, when
        self.held = anyio.Event()
        self.released = anyio.Event()
        self.done = anyio.Event()

    async def wait(self) -> None:
        self.held.set()
        await self.released.wait()


class Exchange:
    """Everything the routes share: state, authentication, limits, allow-list, renderers."""

    def __init__(self, config: ExchangeConfig, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.state = ExchangeState(config, clock)
        self.hub = ws.Hub(self.state)
        self.auth = Authenticator(self.state.keys, config.chain_id, config.auth_window_s, clock)
        self.limits = EdgeLimits(config.limits_scale, config.limits_enabled, time.monotonic, config.limits_queue_s)
        self.allow = AllowList(config.allow_ips)
        self.markets_view = MarketsView(self.state.catalog, self.state.price_of)
        self.catalog_view = catalog_routes.CatalogView(self.state.catalog)
        self.clob = clob_routes.ClobRoutes(self)
        self.account = account_routes.AccountRoutes(self)
        self.answered: Counter[int] = Counter()  # HTTP answers by status code, for audits
        self.holds: list[Hold] = []

    def hold(self, method: str, path: str, when: str = "after") -> "Hold":
        """Hold the next ``method path`` request (see ``Hold``); call on the exchange's loop."""
        h = Hold(method.upper(), path, when)
        self.holds.append(h)
        return h

    def _take_hold(self, request: Request) -> "Hold | None":
        for i, h in enumerate(self.holds):
            if request.method == h.method and request.url.path.endswith(h.path):
                return self.holds.pop(i)
        return None

    def guard(self, surface: str, endpoint):
        faults = self.state.faults

        async def answer(request: Request, delay: float):
            try:
                if delay:
                    await anyio.sleep(delay)
                client = request.client.host if request.client else "?"
                burst = faults.in_rate_limit_burst()
                if burst:
                    from bot.exchange.replies import throttled

                    raise throttled(burst, "fault")
                path = request.scope.get("route_path") or _local_path(request)
                await self.limits.request(surface, request.method, path, client)
                if faults.inject_error(path):
                    raise internal("injected fault")
                return await endpoint(request)
            except Reply as r:
                return json_response(r.body, r.status, r.headers)
            except Exception as exc:  # never crash on input: answer internal_error
                log.error("request_failed", path=request.url.path, error=type(exc).__name__)
                return json_response({"error": f"internal_error: {type(exc).__name__}: {exc}"}, 500)

        @functools.wraps(endpoint)
        async def wrapped(request: Request):
            hold = self._take_hold(request) if self.holds else None
            if hold is not None and hold.when == "before":
                await request.body()  # received whole (as a venue's gateway would), then held
                await hold.wait()
            way_in, way_out = faults.latency_s()
            response = await answer(request, way_in)
            self.answered[response.status_code] += 1
            if hold is not None:
                if hold.when == "after":
                    await hold.wait()
                hold.done.set()
            if way_out:
                await anyio.sleep(way_out)
            return response

        return wrapped

    def surface_routes(self, surface: str) -> list[Route]:
        if surface == "catalog":
            raw = catalog_routes.routes(self.catalog_view)
        elif surface == "clob":
            raw = self.clob.routes()
        else:
            raw = self.account.routes()
        return [Route(r.path, self.guard(surface, r.endpoint), methods=list(r.methods or ["GET"])) for r in raw]

    def apps(self) -> dict[str, Starlette]:
        """``{"catalog": app, "clob": app, "data": app}`` or ``{"all": app}`` in single-port mode."""
        if self.config.single_port:
            routes = [Mount(MOUNTS[s], routes=self.surface_routes(s)) for s in ("catalog", "clob", "data")]
            return {"all": _app(ws.routes(self.hub) + routes, None, self.hub)}
        return {
            "catalog": _app(self.surface_routes("catalog"), "catalog"),
            "clob": _app(ws.routes(self.hub) + self.surface_routes("clob"), "clob", self.hub),
            "data": _app(self.surface_routes("data"), "data"),
        }


def _app(routes: list, surface: str | None, hub: ws.Hub | None = None) -> Starlette:
    """A Starlette app whose unrouted requests (404, 405) get the venue's error bodies; ``surface``
    None means single-port, where the mount prefix of the path tells the surface; with ``hub``,
    requests are stamped received as they enter (``bot.exchange.wire.ReceiptStamp``)."""

    async def unrouted(request: Request, exc: HTTPException):
        where = surface or ("catalog" if request.url.path.startswith(MOUNTS["catalog"] + "/") else "clob")
        text = "not found" if exc.status_code == 404 else f"method {request.method} not allowed"
        reply = (catalog_error(exc.status_code, "not found error" if exc.status_code == 404 else "bad request", text)
                 if where == "catalog" else error(exc.status_code, text))
        return json_response(reply.body, reply.status, dict(exc.headers or {}))

    middleware = [Middleware(ReceiptStamp, hub=hub)] if hub is not None else []
    return Starlette(routes=routes, exception_handlers={HTTPException: unrouted}, middleware=middleware)


def _local_path(request: Request) -> str:
    """The request path without the mount prefix (what the client signs and the table names)."""
    path = request.url.path
    root = request.scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root):] or "/"
    return path

"""The venue's rate-limit table (interface.md section 8, venue.md 10.3) as data, and the limiter.

Invariant: a request passes only when every scope it belongs to (its surface's global scope, its
route scopes, a combined listing scope, the trading-write scopes) has room, and it is charged to
all of them at the same instant; trading-write scopes charge one token per order or id in a batch
(``count_per_order``). The tables are the venue's operational defaults; ``LimitsConfig`` overrides
them and ``scale`` shrinks every capacity for tests.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Awaitable, Callable, Sequence

import anyio
import msgspec

from bot.venue.errors import ParameterError
from bot.venue.units import MAX_BATCH
from bot.venue.throttle import RateWindow, Throttle, WaitHook

__all__ = [
    "Scope",
    "SurfaceLimits",
    "LimitsConfig",
    "RouteLimiter",
    "CATALOG_LIMITS",
    "CLOB_LIMITS",
    "ACCOUNT_LIMITS",
    "SURFACES",
    "paced_writes",
    "scale_folded",
    "WRITE_HEADROOM",
]

SURFACES = ("catalog", "clob", "account")


class Scope(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One shared set of windows. ``routes`` are ``"METHOD /path"`` patterns (``{name}`` matches
    one path segment); no routes means every route of the surface. ``per_item`` charges batch
    requests one token per item."""

    name: str
    windows: tuple[RateWindow, ...]
    routes: tuple[str, ...] = ()
    per_item: bool = False


class SurfaceLimits(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    scopes: tuple[Scope, ...] = ()


def _w(capacity: int, seconds: float = 10.0) -> tuple[RateWindow, ...]:
    return (RateWindow(capacity, seconds),)


_WRITE_WINDOWS = (RateWindow(2400, 10.0), RateWindow(24000, 600.0))

CATALOG_LIMITS = SurfaceLimits(
    scopes=(
        Scope("catalog:all", _w(4000)),
        Scope("catalog:events", _w(500), ("GET /events",)),
        Scope("catalog:markets", _w(300), ("GET /markets",)),
        Scope("catalog:listings", _w(900), ("GET /events", "GET /markets")),
        Scope("catalog:tags", _w(200), ("GET /tags",)),
        Scope("catalog:search", _w(350), ("GET /public-search",)),
    )
)

CLOB_LIMITS = SurfaceLimits(
    scopes=(
        Scope("clob:all", _w(5000)),
        Scope("clob:health", _w(50), ("GET /",)),
        Scope("clob:book", _w(200), ("GET /book",)),
        Scope("clob:books", _w(80), ("POST /books",)),
        Scope("clob:price", _w(200), ("GET /price",)),
        Scope("clob:prices", _w(80), ("POST /prices",)),
        Scope("clob:midpoint", _w(200), ("GET /midpoint",)),
        Scope("clob:history", _w(100), ("GET /prices-history",)),
        Scope("clob:batch-history", _w(80), ("POST /batch-prices-history",)),
        Scope("clob:trades", _w(150), ("GET /data/trades", "GET /trades")),
        Scope("orders", _WRITE_WINDOWS, ("POST /order", "POST /orders"), per_item=True),
        Scope(
            "cancels",
            _WRITE_WINDOWS,
            ("DELETE /order", "DELETE /orders", "DELETE /cancel-all", "DELETE /cancel-market-orders"),
            per_item=True,
        ),
    )
)

# interface.md states no account-data limit; this conservative default matches the local
# exchange's edge and can be overridden.
ACCOUNT_LIMITS = SurfaceLimits(scopes=(Scope("account:all", _w(1000)),))


WRITE_HEADROOM = 0.9  # share of each trading-write window a live client spends (the rest absorbs jitter)


class LimitsConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Client-side limits. ``scale`` multiplies every capacity (tests use e.g. 0.01);
    ``count_per_order`` charges trading writes one token per order/id (venue default) rather
    than one per request; ``enabled`` False lets every request through at once. A live client
    spends ``write_headroom`` of each trading-write window and, with ``pace_writes``, no more in
    a burst window than the sustained rate refills (``paced_writes``)."""

    catalog: SurfaceLimits = CATALOG_LIMITS
    clob: SurfaceLimits = CLOB_LIMITS
    account: SurfaceLimits = ACCOUNT_LIMITS
    scale: float = 1.0
    count_per_order: bool = True
    enabled: bool = True
    write_headroom: float = WRITE_HEADROOM
    pace_writes: bool = True

    def __post_init__(self) -> None:
        if not (isinstance(self.scale, (int, float)) and math.isfinite(self.scale) and self.scale > 0):
            raise ParameterError("scale", f"must be a finite number > 0, got {self.scale!r}")
        h = self.write_headroom
        if isinstance(h, bool) or not (isinstance(h, (int, float)) and math.isfinite(h) and 0 < h <= 1):
            raise ParameterError("write_headroom", f"must be a number in (0, 1], got {h!r}")

    def surface(self, name: str) -> SurfaceLimits:
        if name not in SURFACES:
            raise ParameterError("surface", f"must be one of {', '.join(SURFACES)}, got {name!r}")
        return getattr(self, name)


def scale_folded(limits: LimitsConfig) -> LimitsConfig:
    """The same limits with ``scale`` applied to every window's capacity and set back to 1, so a
    caller that derives windows from others (``paced_writes``) derives them from what the limiter
    will really enforce, and the limiter does not scale them a second time."""
    if limits.scale == 1.0:
        return limits

    def fold(surface: SurfaceLimits) -> SurfaceLimits:
        return SurfaceLimits(scopes=tuple(
            msgspec.structs.replace(sc, windows=tuple(w.scaled(limits.scale) for w in sc.windows))
            for sc in surface.scopes))

    return msgspec.structs.replace(limits, catalog=fold(limits.catalog), clob=fold(limits.clob),
                                   account=fold(limits.account), scale=1.0)


def paced_writes(limits: LimitsConfig) -> LimitsConfig:
    """The CLOB trading-write scopes (those charged per order) as a live client spends them: each
    window at ``write_headroom`` of its (scaled) capacity, and with ``pace_writes`` one more that
    holds the slowest window's rate at the headroom exactly over time while still granting a whole
    POST batch (``MAX_BATCH`` orders, or the smallest window's capacity if less) at once: at the
    venue's 2400 / 10 s and 24000 / 10 min and 0.9, 15 orders per 15 / 36 s. Spent so, the venue
    never finds a window full when requests arrive late or bunched (no 429), a long run never
    spends the sustained window in its first minutes and then waits it out, and the router still
    sends what is ready in one POST. ``scale`` is folded in first (``scale_folded``), so the pace
    is that of the scaled sustained window. Other scopes are unchanged."""
    limits = scale_folded(limits)
    h = limits.write_headroom
    if h >= 1.0 and not limits.pace_writes:
        return limits

    def shrink(w: RateWindow) -> RateWindow:
        return RateWindow(max(1, math.floor(w.capacity * h + 1e-9)), w.seconds)

    scopes = []
    for sc in limits.clob.scopes:
        if sc.per_item and sc.windows:
            windows = [shrink(w) for w in sc.windows]
            if limits.pace_writes and len(sc.windows) > 1:
                rate = min(w.capacity / w.seconds for w in sc.windows) * h
                capacity = min(MAX_BATCH, min(w.capacity for w in windows))
                windows.append(RateWindow(capacity, capacity / rate))  # exactly ``rate`` over time
            sc = msgspec.structs.replace(sc, windows=tuple(windows))
        scopes.append(sc)
    return msgspec.structs.replace(limits, clob=msgspec.structs.replace(limits.clob, scopes=tuple(scopes)))


_ID_SEGMENT = re.compile(r"/(0x[0-9a-fA-F]+|[0-9]{6,}|[0-9a-fA-F-]{32,})(?=/|$)")


def route_label(route: str) -> str:
    """A bounded label for a route: identifiers in the path become ``{id}`` (metrics, and the
    limiter's memory of routes, stay bounded however many orders are looked up)."""
    return _ID_SEGMENT.sub("/{id}", route)


def _pattern(route: str) -> re.Pattern[str]:
    method, _, path = route.partition(" ")
    if not method or not path.startswith("/"):
        raise ParameterError("routes", f"expected 'METHOD /path', got {route!r}")
    parts = re.split(r"\{[^/{}]+\}", path)
    body = "[^/]+".join(re.escape(p) for p in parts)
    return re.compile(f"{re.escape(method.upper())} {body}")


class RouteLimiter:
    """Maps ``(method, path)`` of one surface to its scopes' throttles and spends them together.

    ``make_throttle(surface, scope, windows)`` builds each scope's throttle (default: an
    in-memory :class:`Throttle` on ``clock``; ``bot.venue.shared_throttle`` shares them)."""

    def __init__(
        self,
        config: LimitsConfig | None = None,
        surface: str = "clob",
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        on_wait: WaitHook | None = None,
        make_throttle: Callable[[str, str, Sequence[RateWindow]], Throttle] | None = None,
    ) -> None:
        self.config = scale_folded(config or LimitsConfig())  # every window at its scaled capacity
        self.surface = surface
        self.clock = clock
        self.on_wait = on_wait
        self._sleep = sleep
        self._scopes: list[tuple[Scope, tuple[re.Pattern[str], ...], Throttle]] = []
        for scope in self.config.surface(surface).scopes:
            windows = scope.windows
            th = (Throttle(windows, clock, name=scope.name) if make_throttle is None
                  else make_throttle(surface, scope.name, windows))
            self._scopes.append((scope, tuple(_pattern(r) for r in scope.routes), th))
        self._cache: dict[tuple[str, str], tuple[tuple[Throttle, bool], ...]] = {}
        #: Waits per route (``"METHOD /path"``) and seconds waited in total, for metrics.
        self.waits: dict[str, int] = {}
        self.waited_seconds: dict[str, float] = {}

    def throttles(self, method: str, path: str) -> tuple[tuple[Throttle, bool], ...]:
        """The throttles a request must pass, each with whether it charges per item (a scope's
        routes are matched with the path's identifiers as ``{id}``, which ``{param}`` matches)."""
        key = (method.upper(), route_label(path.split("?", 1)[0]))
        found = self._cache.get(key)
        if found is None:
            route = f"{key[0]} {key[1]}"
            found = tuple(
                (th, scope.per_item and self.config.count_per_order)
                for scope, pats, th in self._scopes
                if not pats or any(p.fullmatch(route) for p in pats)
            )
            self._cache[key] = found
        return found

    def throttle(self, name: str) -> Throttle:
        """The throttle of scope ``name`` (e.g. ``"orders"``), for a caller that spends directly."""
        for scope, _, th in self._scopes:
            if scope.name == name:
                return th
        raise ParameterError("name", f"no scope {name!r} on surface {self.surface}")

    def _charges(self, method: str, path: str, items: int) -> list[tuple[Throttle, int]]:
        if isinstance(items, bool) or not isinstance(items, int) or items < 1:
            raise ParameterError("items", f"must be an integer >= 1, got {items!r}")
        return [(th, items if per_item else 1) for th, per_item in self.throttles(method, path)]

    def delay(self, method: str, path: str, items: int = 1, now: float | None = None) -> float:
        """Seconds until the request fits every scope (0.0 if it fits now)."""
        t = self.clock() if now is None else now
        return max((th.delay(n, t) for th, n in self._charges(method, path, items)), default=0.0)

    def try_acquire(self, method: str, path: str, items: int = 1, now: float | None = None) -> bool:
        """Charge every scope if all have room now; otherwise charge nothing."""
        if not self.config.enabled:
            return True
        t = self.clock() if now is None else now
        charges = self._charges(method, path, items)
        if any(th.delay(n, t) > 0.0 for th, n in charges):
            return False
        # Single-threaded in-memory windows always grant here; shared ones may have been spent
        # by another process since: what was already taken stays spent (conservative).
        return all(th.try_take(n, t) for th, n in charges)

    async def acquire(self, method: str, path: str, items: int = 1) -> float:
        """Wait until the request fits every scope, charge them, return the seconds waited."""
        if not self.config.enabled:
            return 0.0
        sleep = self._sleep or anyio.sleep
        start = now = self.clock()
        while not self.try_acquire(method, path, items, now):
            await sleep(self.delay(method, path, items, now))
            now = self.clock()
        waited = max(0.0, now - start)
        if waited > 0.0:
            route = route_label(f"{method.upper()} {path.split('?', 1)[0]}")
            self.waits[route] = self.waits.get(route, 0) + 1
            self.waited_seconds[route] = self.waited_seconds.get(route, 0.0) + waited
            if self.on_wait is not None:
                self.on_wait(route, waited)
        return waited


def limiter_for(surfaces: Sequence[str] = SURFACES, config: LimitsConfig | None = None, **kw) -> dict[str, RouteLimiter]:
    """One :class:`RouteLimiter` per surface name, sharing ``config`` and clock."""
    return {s: RouteLimiter(config, s, **kw) for s in surfaces}

"""Edge rate limits of interface.md section 8, enforced per client IP and per API key.

Invariant: a request passes only when every scope it belongs to (the surface's global scope, its
route scope, a combined listing scope) has room, spent all-or-nothing through ``Throttle``, the
same sliding-log windows the client uses, so a client that respects the table never sees a 429.
Trading writes are charged per API key: POST /order 1 token, POST /orders n (a batch is
all-or-nothing), DELETE /order 1, DELETE /orders n, /cancel-all and /cancel-market-orders 1.
A refused request answers 429 with ``Retry-After`` (seconds, rounded up).
"""

from __future__ import annotations

from collections.abc import Callable

from bot.exchange.replies import throttled
from bot.venue.throttle import RateWindow, Throttle

S10 = 10.0
M10 = 600.0

# (surface, method, path) -> scope names; "*" matches any path of the surface
CATALOG_SCOPES: dict[tuple[str, str], tuple[str, ...]] = {
    ("GET", "/events"): ("catalog:events", "catalog:listings"),
    ("GET", "/markets"): ("catalog:markets", "catalog:listings"),
    ("GET", "/tags"): ("catalog:tags",),
    ("GET", "/public-search"): ("catalog:search",),
}
CLOB_SCOPES: dict[tuple[str, str], tuple[str, ...]] = {
    ("GET", "/"): ("clob:health",),
    ("GET", "/book"): ("clob:book",),
    ("POST", "/books"): ("clob:books",),
    ("GET", "/price"): ("clob:price",),
    ("POST", "/prices"): ("clob:prices",),
    ("GET", "/midpoint"): ("clob:midpoint",),
    ("GET", "/prices-history"): ("clob:history",),
    ("POST", "/batch-prices-history"): ("clob:batch-history",),
    ("GET", "/data/trades"): ("clob:trades",),
    ("GET", "/trades"): ("clob:trades",),
}
WINDOWS: dict[str, tuple[RateWindow, ...]] = {
    "catalog:all": (RateWindow(4000, S10),),
    "catalog:events": (RateWindow(500, S10),),
    "catalog:markets": (RateWindow(300, S10),),
    "catalog:listings": (RateWindow(900, S10),),
    "catalog:tags": (RateWindow(200, S10),),
    "catalog:search": (RateWindow(350, S10),),
    "clob:all": (RateWindow(5000, S10),),
    "clob:health": (RateWindow(50, S10),),
    "clob:book": (RateWindow(200, S10),),
    "clob:books": (RateWindow(80, S10),),
    "clob:price": (RateWindow(200, S10),),
    "clob:prices": (RateWindow(80, S10),),
    "clob:midpoint": (RateWindow(200, S10),),
    "clob:history": (RateWindow(100, S10),),
    "clob:batch-history": (RateWindow(80, S10),),
    "clob:trades": (RateWindow(150, S10),),
    "data:all": (RateWindow(1000, S10),),
    "orders": (RateWindow(2400, S10), RateWindow(24000, M10)),
    "cancels": (RateWindow(2400, S10), RateWindow(24000, M10)),
}


class EdgeLimits:
    def __init__(self, scale: float, enabled: bool, clock: Callable[[], float]) -> None:
        self.scale = scale
        self.enabled = enabled
        self.clock = clock
        self._throttles: dict[tuple[str, str], Throttle] = {}

    def _throttle(self, scope: str, who: str) -> Throttle:
        key = (scope, who)
        t = self._throttles.get(key)
        if t is None:
            windows = [w.scaled(self.scale) if self.scale != 1.0 else w for w in WINDOWS[scope]]
            t = self._throttles[key] = Throttle(windows, self.clock, name=scope)
        return t

    def _spend(self, scopes: tuple[str, ...], who: str, n: int = 1) -> None:
        if not self.enabled:
            return
        now = self.clock()
        throttles = [self._throttle(s, who) for s in scopes]
        waits = []
        for t in throttles:
            if n > t.capacity:
                raise throttled(t.windows[0].seconds, t.name)
            waits.append(t.delay(n, now))
        worst = max(waits)
        if worst > 0:
            raise throttled(worst, scopes[waits.index(worst)])
        for t in throttles:
            t.take(n, now)

    def request(self, surface: str, method: str, path: str, client: str) -> None:
        """Charge one request of ``surface`` (catalog, clob, data) from ``client`` (its IP)."""
        table = CATALOG_SCOPES if surface == "catalog" else CLOB_SCOPES if surface == "clob" else {}
        scopes = (f"{surface}:all",) + table.get((method, path), ())
        self._spend(scopes, client)

    def trading(self, kind: str, api_key: str, n: int) -> None:
        """Charge ``n`` tokens of ``kind`` ("orders" or "cancels") to ``api_key``."""
        self._spend((kind,), api_key, max(1, n))

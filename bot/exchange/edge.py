"""Rate limits of interface.md section 8 / venue.md 10.3, from the table the clients use.

Invariant: the windows come from ``bot.venue.limits`` (``CATALOG_LIMITS``, ``CLOB_LIMITS``,
``ACCOUNT_LIMITS`` through one ``LimitsConfig``, ``scale`` shrinking every capacity), spent
through the same ``RouteLimiter``/``Throttle`` sliding logs the client uses, so a client limited
by the same table never sees a 429. Two levels:

* Edge (per client IP, every scope except the trading writes): a request that does not fit is
  held for up to ``queue_s`` seconds (the venue queues rather than refuses); a longer wait is
  answered 429 with ``Retry-After`` (seconds, rounded up). The short queue absorbs the network
  jitter between the client's clock and the server's.
* Per API key (the ``orders`` and ``cancels`` scopes): all-or-nothing, refused at once with 429.

Memory stays bounded however many clients come: a client's limiter whose longest window has
passed since its last request holds nothing a fresh one would not, and is dropped when a new
client comes; a table at ``MAX_CLIENTS`` drops its least recently seen clients too (they start
afresh: a budget, never a refusal, is what they can gain).
  POST /order 1 token, POST /orders n, DELETE /order 1, DELETE /orders n, /cancel-all and
  /cancel-market-orders 1 up front plus, once known, the number canceled (``charge_after``,
  taken as far as the windows have room: a cancel already done is never refused).
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

from bot.exchange.replies import throttled
from bot.venue.limits import LimitsConfig, RouteLimiter, SurfaceLimits

TRADING_SCOPES = ("orders", "cancels")
MAX_CLIENTS = 16_384  # limiters kept per table (client IPs, API keys) before the idle ones go
SURFACE_NAMES = {"catalog": "catalog", "clob": "clob", "data": "account"}


def edge_config(scale: float = 1.0) -> LimitsConfig:
    """The venue table without the per-key trading scopes (charged per IP at the edge)."""
    base = LimitsConfig(scale=scale)
    clob = SurfaceLimits(scopes=tuple(s for s in base.clob.scopes if s.name not in TRADING_SCOPES))
    return LimitsConfig(catalog=base.catalog, clob=clob, account=base.account, scale=scale)


def trading_config(scale: float = 1.0) -> LimitsConfig:
    """Only the per-key trading-write scopes of the venue table."""
    base = LimitsConfig(scale=scale)
    clob = SurfaceLimits(scopes=tuple(s for s in base.clob.scopes if s.name in TRADING_SCOPES))
    return LimitsConfig(clob=clob, scale=scale)


class EdgeLimits:
    def __init__(self, scale: float, enabled: bool, clock: Callable[[], float], queue_s: float = 0.25) -> None:
        self.scale = scale
        self.enabled = enabled
        self.clock = clock
        self.queue_s = queue_s
        self._edge = edge_config(scale)
        self._trading = trading_config(scale)
        # client -> (its limiter, its last request), in order of last use: the oldest first
        self._per_ip: dict[tuple[str, str], tuple[RouteLimiter, float]] = {}
        self._per_key: dict[str, tuple[RouteLimiter, float]] = {}
        self._memory_s = max(w.seconds for c in (self._edge, self._trading)
                             for surface in (c.catalog, c.clob, c.account) for sc in surface.scopes for w in sc.windows)

    def _limiter(self, table: dict, key: object, make: Callable[[], RouteLimiter]) -> RouteLimiter:
        """``table[key]``, made when new, moved to the end (the most recently used). A new client
        of a full table first makes room at the front: the limiters idle past every window go,
        then, while it is still full, the least recently used (each dropped once: O(1) a request)."""
        now = self.clock()
        entry = table.pop(key, None)
        if entry is None:
            while table:
                oldest = next(iter(table))
                if len(table) < MAX_CLIENTS and now - table[oldest][1] <= self._memory_s:
                    break
                del table[oldest]
            lim = make()
        else:
            lim = entry[0]
        table[key] = (lim, now)
        return lim

    def _ip_limiter(self, surface: str, client: str) -> RouteLimiter:
        return self._limiter(self._per_ip, (surface, client),
                             lambda: RouteLimiter(self._edge, SURFACE_NAMES[surface], clock=self.clock))

    async def request(self, surface: str, method: str, path: str, client: str) -> None:
        """Charge one request of ``surface`` (catalog, clob, data) from ``client`` (its IP),
        holding it up to ``queue_s``; raise 429 when it would have to wait longer."""
        if not self.enabled:
            return
        lim = self._ip_limiter(surface, client)
        waited = 0.0
        while True:
            now = self.clock()
            if lim.try_acquire(method, path, 1, now):
                return
            wait = lim.delay(method, path, 1, now)
            if waited + wait > self.queue_s:
                raise throttled(wait, self._full_scope(lim, method, path, now))
            await anyio.sleep(wait)
            waited += wait

    @staticmethod
    def _full_scope(lim: RouteLimiter, method: str, path: str, now: float) -> str:
        worst = max(lim.throttles(method, path), key=lambda tp: tp[0].delay(1, now))
        return worst[0].name

    def _key_throttle(self, kind: str, api_key: str):
        lim = self._limiter(self._per_key, api_key, lambda: RouteLimiter(self._trading, "clob", clock=self.clock))
        return lim.throttle(kind)

    def trading(self, kind: str, api_key: str, n: int) -> None:
        """Charge ``n`` tokens of ``kind`` ("orders" or "cancels") to ``api_key``; 429 at once if full."""
        if not self.enabled:
            return
        th = self._key_throttle(kind, api_key)
        n = max(1, n)
        now = self.clock()
        if n > th.capacity:
            raise throttled(th.windows[0].seconds, th.name)
        wait = th.delay(n, now)
        if wait > 0:
            raise throttled(wait, th.name)
        th.take(n, now)

    def charge_after(self, kind: str, api_key: str, n: int) -> None:
        """Charge up to ``n`` more tokens for work already done, never refusing."""
        if not self.enabled or n <= 0:
            return
        th = self._key_throttle(kind, api_key)
        now = self.clock()
        take = min(n, th.available(now))
        if take > 0:
            th.take(take, now)

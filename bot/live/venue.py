"""The clients of one venue for a live or paper run: reads through the rate limiter, trading
writes around it (the router spends the limiter's write throttles itself, so nothing is charged
twice), the account's data, and the connections the writes keep warm.

Invariant: credentials reach only the auth headers and the user channel, never a log line.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import msgspec

from bot.venue.account import AccountClient
from bot.venue.auth import AuthConfig, Credentials
from bot.venue.clob import ClobClient
from bot.venue.limits import LimitsConfig, RouteLimiter, paced_writes
from bot.venue.shared_throttle import SharedLimitsConfig, SharedThrottles
from bot.venue.throttle import RateWindow
from bot.venue.transport import Transport, TransportConfig

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


"""Rate windows shared by every process trading on one API key, kept in Redis.

Semantics are those of :mod:`bot.venue.throttle` (sliding log, exact, burst and sustained windows
spent all-or-nothing): a take of ``n`` at ``t`` passes iff, in every window, the tokens stamped
``s`` with ``t - seconds < s <= t`` plus ``n`` do not exceed ``capacity``. Each check-and-take is
one Lua script, atomic on the Redis server and stamped with the server's clock (``TIME``), so
processes on several hosts share one time line. Stamps are integer microseconds (exact in Lua's
doubles and in Redis scores).

Invariants:

- the processes sharing a key together never put more than ``capacity`` tokens into any window:
  the shared budget is the capacity less the reserves, and a process spends its reserve only
  while Redis cannot be reached;
- Redis unreachable means no shared room: places and reads stop (``available`` 0, ``try_take``
  False), and the reason is logged once per outage; only a throttle given a ``reserve`` (the
  cancels, and the per-request scope they also pass) goes on, from that local share. It never
  falls back to unshared limits silently;
- a throttle that Redis found full stays full locally until the delay Redis gave has passed
  (other processes can only take more), so a saturated throttle costs no round trip.
"""

from __future__ import annotations

import hashlib
import math
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import anyio
import msgspec
import structlog

from bot.venue.errors import ParameterError
from bot.venue.throttle import RateWindow, Throttle

__all__ = ["SharedLimitsConfig", "RedisThrottle", "SharedThrottles", "api_key_id", "ENV_REDIS_PASSWORD"]

ENV_REDIS_PASSWORD = "BOT_REDIS_PASSWORD"
"""The Redis password, when the server wants one (never in the config file)."""

log = structlog.get_logger("bot.throttle")

# KEYS: one sorted set per window (score = stamp in µs, member = "seq:n"), then the hash holding
# each window's sum ("used") and the entry counter ("seq").
# ARGV: op ("peek" | "take" | "upto"), n, then capacity and length in µs of each window.
# Returns {granted, room (before a take), µs until n fit (0 when granted), µs until 1 fits (0 when
# room > 0)}.
_LUA = """
local op = ARGV[1]
local n = tonumber(ARGV[2])
local k = #KEYS - 1
local meta = KEYS[k + 1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local caps, lens, used = {}, {}, {}
local room = nil
local longest = 0
for i = 1, k do
  local cap = tonumber(ARGV[1 + 2 * i])
  local len = tonumber(ARGV[2 + 2 * i])
  caps[i], lens[i] = cap, len
  if len > longest then longest = len end
  local edge = string.format('%.0f', now - len)
  local gone = redis.call('ZRANGEBYSCORE', KEYS[i], '-inf', edge)
  local u = tonumber(redis.call('HGET', meta, 'used' .. i) or '0')
  if #gone > 0 then
    for _, m in ipairs(gone) do
      u = u - tonumber(string.match(m, ':(%d+)$'))
    end
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', edge)
    if u < 0 or redis.call('ZCARD', KEYS[i]) == 0 then u = 0 end
    redis.call('HSET', meta, 'used' .. i, u)
  end
  used[i] = u
  local r = cap - u
  if room == nil or r < room then room = r end
end
if room < 0 then room = 0 end
local grant = 0
if op == 'take' and room >= n then grant = n end
if op == 'upto' then grant = math.min(n, room) end
if grant > 0 then
  local seq = redis.call('HINCRBY', meta, 'seq', 1)
  local stamp = string.format('%.0f', now)
  for i = 1, k do
    redis.call('ZADD', KEYS[i], stamp, seq .. ':' .. grant)
    redis.call('HINCRBY', meta, 'used' .. i, grant)
    redis.call('PEXPIRE', KEYS[i], math.floor(longest / 1000) + 1000)
  end
  redis.call('PEXPIRE', meta, math.floor(longest / 1000) + 1000)
  return {grant, room, 0, 0}
end
local function delay(want)
  local ready = now
  for i = 1, k do
    local excess = used[i] + want - caps[i]
    if excess > 0 then
      local freed = 0
      local entries = redis.call('ZRANGE', KEYS[i], 0, -1, 'WITHSCORES')
      for j = 1, #entries, 2 do
        freed = freed + tonumber(string.match(entries[j], ':(%d+)$'))
        if freed >= excess then
          local at = tonumber(entries[j + 1]) + lens[i]
          if at > ready then ready = at end
          break
        end
      end
    end
  end
  return ready - now
end
local first = 0
if room == 0 then first = delay(1) end
if op == 'upto' or n == 1 then return {0, room, first, first} end
return {0, room, delay(n), first}
"""


class SharedLimitsConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """``[throttle]``: where the rate windows live. ``memory`` (one process alone on its API
    key) or ``redis`` (every process on the key shares them through ``redis_url``).

    ``cancel_reserve`` is the share of the cancel windows (and of the per-request CLOB window)
    kept out of the shared budget and split between ``processes``: each process may spend its
    part only while Redis cannot be reached, so cancels still go out then (a reserve too small to
    give every process a token in every window is not kept: cancels then wait for Redis too).
    A password comes from ``BOT_REDIS_PASSWORD``, never from the URL. ``timeout_s`` bounds
    every Redis call; ``retry_s`` is how long an unreachable Redis is left alone before the next
    try.
    """

    backend: Literal["memory", "redis"] = "memory"
    redis_url: str = "redis://127.0.0.1:6379/0"
    key_prefix: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_.:-]{1,64}$")] = "pmbot"
    processes: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 1
    cancel_reserve: Annotated[float, msgspec.Meta(ge=0, le=0.5)] = 0.1
    timeout_s: Annotated[float, msgspec.Meta(gt=0, le=10)] = 0.25
    retry_s: Annotated[float, msgspec.Meta(gt=0, le=60)] = 1.0

    def __post_init__(self) -> None:
        scheme = self.redis_url.partition("://")[0]
        if scheme not in ("redis", "rediss", "unix"):
            raise ValueError(f"throttle.redis_url must be a redis://, rediss:// or unix:// URL, got {self.redis_url!r}")
        try:
            password = urlsplit(self.redis_url).password
        except ValueError:
            password = None
        if password:
            raise ValueError(f"throttle.redis_url must not hold a password (secrets never come from the config "
                             f"file): set {ENV_REDIS_PASSWORD} instead")


def api_key_id(api_key: str) -> str:
    """A short, non-reversible name for an API key: the shared windows' keys carry this, never
    the key itself."""
    return hashlib.sha256(api_key.encode()).hexdigest()[:16]


def _us(seconds: float) -> int:
    return max(1, math.ceil(seconds * 1_000_000))


class RedisThrottle:
    """Linked rate windows spent all-or-nothing, shared through Redis (the router's ``Throttle``
    protocol, as :class:`bot.venue.throttle.Throttle`); ``now`` arguments only pace the local
    cache, the windows themselves run on the server's clock."""

    def __init__(
        self,
        windows: Sequence[RateWindow],
        client: Any,
        key: str,
        *,
        name: str = "",
        clock: Callable[[], float] = time.monotonic,
        reserve: Throttle | None = None,
        retry_s: float = 1.0,
        on_state: Callable[[str, str | None], None] | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        if not windows:
            raise ParameterError("windows", "at least one RateWindow is required")
        self.windows: tuple[RateWindow, ...] = tuple(windows)
        self.name = name
        self.key = key
        self.clock = clock
        self.capacity = min(w.capacity for w in self.windows)
        self.reserve = reserve
        self.retry_s = retry_s
        self.on_state = on_state
        self._sleep = sleep
        self._keys = [f"{key}:w{i}" for i in range(len(self.windows))] + [f"{key}:meta"]
        self._argv_tail: list[int] = []
        for w in self.windows:
            self._argv_tail += [w.capacity, _us(w.seconds)]
        self._script = client.register_script(_LUA)
        self._blocked_until = -math.inf  # local clock: not one token fits before this (Redis said so)
        self._down_until = -math.inf  # local clock: Redis is not asked again before this
        #: Why Redis cannot be used now (``None`` while it can).
        self.down: str | None = None
        self.taken = 0
        self.waits = 0
        self.waited_seconds = 0.0

    def __repr__(self) -> str:
        spec = ", ".join(f"{w.capacity}/{w.seconds:g}s" for w in self.windows)
        return f"RedisThrottle({self.name or '-'}: {spec})"

    # -- one round trip -------------------------------------------------------------------
    def _call(self, op: str, n: int, t: float) -> tuple[int, int, float] | None:
        """``(granted, room, delay_s)`` from Redis, or ``None`` when Redis cannot be used (the
        throttle is then down until ``retry_s`` has passed). A throttle found empty (no room for
        a single token) is not asked again before that token could fit."""
        if t < self._down_until:
            return None
        try:
            granted, room, delay_us, empty_us = self._script(keys=self._keys, args=[op, n, *self._argv_tail])
        except Exception as exc:  # noqa: BLE001 - any failure to reach or run: no shared room
            self._set_down(f"{type(exc).__name__}: {exc}"[:200], t)
            return None
        if self.down is not None:
            log.warning("shared_throttle_restored", throttle=self.name)
            self.down = None
            if self.on_state is not None:
                self.on_state(self.name, None)
        if not granted and room == 0:
            self._blocked_until = t + int(empty_us) / 1_000_000
        return int(granted), int(room), int(delay_us) / 1_000_000

    def _set_down(self, reason: str, t: float) -> None:
        self._down_until = t + self.retry_s
        if self.down is None:
            reserve = "cancels go on from this process's reserve" if self.reserve is not None else "nothing is sent"
            log.error("shared_throttle_unreachable", throttle=self.name, reason=reason,
                      effect=f"sending stopped: {reserve} until Redis answers again")
            if self.on_state is not None:
                self.on_state(self.name, reason)
        self.down = reason

    def _n(self, n: int) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ParameterError("n", f"must be an integer >= 1, got {n!r}")

    # -- the Throttle protocol ------------------------------------------------------------
    def try_take(self, n: int = 1, now: float | None = None) -> bool:
        """Take ``n`` tokens from every shared window if all have room; otherwise take nothing."""
        self._n(n)
        if n > self.capacity:
            raise ParameterError("n", f"{n} tokens can never pass {self!r}")
        t = self.clock() if now is None else now
        if t < self._blocked_until:
            return False
        got = self._call("take", n, t)
        if got is None:
            return self.reserve is not None and self.reserve.try_take(n, t)
        if got[0]:
            self.taken += got[0]
            return True
        return False

    def take_up_to(self, n: int, now: float | None = None) -> int:
        """Take ``min(n, room)`` tokens in one round trip and return how many (0: none)."""
        self._n(n)
        t = self.clock() if now is None else now
        if t < self._blocked_until:
            return 0
        got = self._call("upto", n, t)
        if got is None:
            return self.reserve.take_up_to(n, t) if self.reserve is not None else 0
        self.taken += got[0]
        return got[0]

    def take(self, n: int = 1, now: float | None = None) -> None:
        if not self.try_take(n, now):
            raise RuntimeError(f"{self!r} has no room for {n} tokens")

    def available(self, now: float | None = None) -> int:
        """Tokens every shared window could still take now (the reserve's while Redis is down)."""
        t = self.clock() if now is None else now
        if t < self._blocked_until:
            return 0
        got = self._call("peek", 1, t)
        if got is None:
            return self.reserve.available(t) if self.reserve is not None else 0
        return got[1]

    def delay(self, n: int = 1, now: float | None = None) -> float:
        """Seconds until ``n`` tokens fit (0.0 if now); ``retry_s`` while Redis is down and no
        reserve can serve."""
        self._n(n)
        t = self.clock() if now is None else now
        if t < self._blocked_until and n == 1:
            return self._blocked_until - t
        got = self._call("peek", n, t)
        if got is None:
            if self.reserve is not None:
                return self.reserve.delay(n, t)
            return max(self._down_until - t, 0.001)
        _granted, room, delay = got
        return 0.0 if room >= n else delay

    def ready_at(self, n: int = 1, now: float | None = None) -> float:
        t = self.clock() if now is None else now
        return t + self.delay(n, t)

    async def acquire(self, n: int = 1) -> float:
        """Wait until ``n`` tokens can be taken, take them, return the seconds waited."""
        sleep = self._sleep or anyio.sleep
        start = now = self.clock()
        while not self.try_take(n, now):
            await sleep(max(self.delay(n, now), 0.001))
            now = self.clock()
        waited = max(0.0, now - start)
        if waited > 0.0:
            self.waits += 1
            self.waited_seconds += waited
        return waited


class SharedThrottles:
    """Builds the shared throttle of each scope for one API key (``RouteLimiter``'s
    ``make_throttle``), the cancel scopes with this process's reserve; remembers which are down."""

    RESERVED = ("cancels", "clob:all")  # a cancel passes both

    def __init__(self, config: SharedLimitsConfig, api_key: str, *, client: Any = None,
                 clock: Callable[[], float] = time.time) -> None:
        if client is None:
            import redis

            client = redis.Redis.from_url(config.redis_url, socket_timeout=config.timeout_s,
                                          socket_connect_timeout=config.timeout_s,
                                          password=os.environ.get(ENV_REDIS_PASSWORD) or None)
        self.config = config
        self.client = client
        self.clock = clock
        self.prefix = f"{config.key_prefix}:{api_key_id(api_key)}"
        self.throttles: list[RedisThrottle] = []
        self.on_state: Callable[[str, str | None], None] | None = None

    def __call__(self, surface: str, scope: str, windows: Sequence[RateWindow]) -> RedisThrottle:
        cfg = self.config
        shared, reserve = list(windows), None
        if scope in self.RESERVED and cfg.cancel_reserve > 0:
            kept = [math.floor(w.capacity * cfg.cancel_reserve) for w in windows]
            mine = [k // cfg.processes for k in kept]
            if all(m >= 1 for m in mine):
                shared = [RateWindow(w.capacity - k, w.seconds) for w, k in zip(windows, kept)]
                reserve = Throttle([RateWindow(m, w.seconds) for w, m in zip(windows, mine)], self.clock,
                                   name=f"{scope}:reserve")
        th = RedisThrottle(shared, self.client, f"{self.prefix}:{surface}:{scope}", name=scope, clock=self.clock,
                           reserve=reserve, retry_s=cfg.retry_s, on_state=self._state)
        self.throttles.append(th)
        return th

    def _state(self, name: str, reason: str | None) -> None:
        if self.on_state is not None:
            self.on_state(name, reason)

    @property
    def up(self) -> bool:
        """True while every shared throttle can reach Redis."""
        return all(th.down is None for th in self.throttles)

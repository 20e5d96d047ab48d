"""Linked rate windows: a request passes only when every window has room for it.

Semantics (sliding log, exact): a window ``RateWindow(capacity, seconds)`` admits a take of ``n``
tokens at time ``t`` iff the tokens taken at times ``s`` with ``t - seconds < s <= t`` plus ``n``
do not exceed ``capacity``. A token taken at ``s`` is therefore given back at ``s + seconds``.

Invariant: a caller that only sends when :meth:`Throttle.try_take` succeeds never puts more than
``capacity`` tokens into ANY half-open interval ``[a, a + seconds)`` of any window. A plain token
bucket that starts full would allow up to twice the capacity over one window; this log does not,
so the local exchange enforcing the same windows with this same class answers a client that stays
inside them with zero 429s. The log holds at most ``capacity`` entries per window (one per take,
a batch of ``n`` is one entry).

The core is synchronous and pure with respect to an injected ``now``; only :meth:`Throttle.acquire`
sleeps. Clocks are expected to be monotonic; takes stamped earlier than the last one still count
until their own expiry, which keeps the bound conservative.
"""

from __future__ import annotations

import math
import struct
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence

import anyio
import msgspec

from bot.venue.errors import ParameterError

__all__ = ["RateWindow", "Throttle", "WaitHook"]

WaitHook = Callable[[str, float], None]
"""Called as ``hook(name, seconds)`` each time :meth:`Throttle.acquire` has to wait."""


class RateWindow(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """At most ``capacity`` tokens in any interval of ``seconds`` seconds."""

    capacity: int
    seconds: float

    def __post_init__(self) -> None:
        if isinstance(self.capacity, bool) or not isinstance(self.capacity, int) or self.capacity < 1:
            raise ParameterError("capacity", f"must be an integer >= 1, got {self.capacity!r}")
        if not (isinstance(self.seconds, (int, float)) and math.isfinite(self.seconds) and self.seconds > 0):
            raise ParameterError("seconds", f"must be a finite number > 0, got {self.seconds!r}")

    def scaled(self, factor: float) -> "RateWindow":
        """The same window with ``capacity * factor`` tokens (rounded down, at least 1)."""
        if not (math.isfinite(factor) and factor > 0):
            raise ParameterError("factor", f"must be a finite number > 0, got {factor!r}")
        return RateWindow(max(1, int(self.capacity * factor)), self.seconds)


_NEAR_STEPS = 4  # float steps looked at around ``stamp + seconds`` before ``_ready_at`` bisects


def _ready_at(stamp: float, seconds: float) -> float:
    """The smallest float ``t`` with ``t - seconds >= stamp`` (evaluated in floats), the
    first instant at which a take stamped ``stamp`` has left a window of ``seconds``, decided
    exactly as :meth:`_Log.prune` decides it.

    The test is monotonic in ``t``, so the answer is the first float above ``stamp`` that passes
    it after one that fails (or ``stamp`` itself when the sum rounds to it). For a clock's stamps
    and a window's span it lies within a float step or two of ``stamp + seconds``: the floats
    next to that sum are tried first, up to ``_NEAR_STEPS`` of
    them; past that (a stamp much smaller than the span, where many floats minus ``seconds``
    round alike) the search bisects (``_ready_at_searched``). Both give the same float (a zero
    answer is ``0.0``)."""
    hi = stamp + seconds
    if hi - seconds >= stamp:  # free at the sum: step down while the float before is free too
        for _ in range(_NEAR_STEPS):
            lo = math.nextafter(hi, -math.inf)
            if lo <= stamp or not lo - seconds >= stamp:  # the search looks above the stamp only
                return hi if hi != 0.0 else 0.0
            hi = lo
    else:  # not free at the sum: the first free float above it
        for _ in range(_NEAR_STEPS):
            hi = math.nextafter(hi, math.inf)
            if hi - seconds >= stamp:
                return hi if hi != 0.0 else 0.0
    return _ready_at_searched(stamp, seconds)


def _ready_at_searched(stamp: float, seconds: float) -> float:
    """``_ready_at`` by bisection over the ordered bit patterns of floats (at most 64 steps)."""

    def free(t: float) -> bool:
        return t - seconds >= stamp

    hi = stamp + seconds
    while not free(hi):
        hi += max(math.ulp(hi), math.ulp(seconds))
    lo_key, hi_key = _key(stamp), _key(hi)  # stamp - seconds < stamp: never free
    while hi_key - lo_key > 1:
        mid = (lo_key + hi_key) // 2
        if free(_unkey(mid)):
            hi_key = mid
        else:
            lo_key = mid
    return _unkey(hi_key)


def _delay_to(now: float, ready: float) -> float:
    """A float ``d >= 0`` with ``now + d >= ready``, within a float step of the least (0.0 if there)."""
    if ready <= now:
        return 0.0
    d = ready - now
    while now + d < ready:
        d += max(math.ulp(d), math.ulp(now))
    return d


_SIGN = 0x7FFFFFFFFFFFFFFF


def _key(x: float) -> int:
    """An integer that orders like the float ``x`` (adjacent floats have adjacent keys)."""
    b = struct.unpack("<q", struct.pack("<d", x))[0]
    return b if b >= 0 else -(b & _SIGN)


def _unkey(k: int) -> float:
    b = k if k >= 0 else (-k) | ~_SIGN
    return struct.unpack("<d", struct.pack("<q", b))[0]


class _Log:
    """One window's sliding log: ``(stamp, n)`` entries in take order, and their sum.

    A take stamped ``s`` counts at ``t`` iff ``t - seconds < s`` (evaluated in floats exactly
    so, by pruning and by the delay search alike).
    """

    __slots__ = ("entries", "used", "capacity", "seconds", "oldest", "_free_stamp", "_free_at")

    def __init__(self, window: RateWindow) -> None:
        self.entries: deque[tuple[float, int]] = deque()
        self.used = 0
        self.capacity = window.capacity  # the window's, read once (it is frozen)
        self.seconds = float(window.seconds)
        self.oldest = math.inf  # the stamp of the first entry (inf: none), read before pruning
        # the last stamp whose leaving time was searched, and that time: a caller waiting for
        # room asks for the same stamp until it leaves (NaN: none yet, equal to no stamp)
        self._free_stamp = math.nan
        self._free_at = math.nan

    def prune(self, now: float) -> None:
        edge = now - self.seconds
        if self.oldest > edge:
            return  # the first entry has not left: none has (entries leave in order)
        entries = self.entries
        while entries and entries[0][0] <= edge:
            self.used -= entries.popleft()[1]
        self.oldest = entries[0][0] if entries else math.inf

    def add(self, t: float, n: int) -> None:
        """A take of ``n`` tokens stamped ``t``."""
        if not self.entries:
            self.oldest = t
        self.entries.append((t, n))
        self.used += n

    def room(self, now: float) -> int:
        """Tokens that may still be taken at ``now``."""
        self.prune(now)
        return self.capacity - self.used

    def ready_at(self, n: int, now: float) -> float:
        self.prune(now)
        excess = self.used + n - self.capacity
        if excess <= 0:
            return now
        freed = 0
        latest = -math.inf
        # Stamps are out of order only when the clock went backwards; the running maximum
        # keeps the answer an upper bound that is exact for in-order stamps.
        for stamp, k in self.entries:
            latest = max(latest, stamp)
            freed += k
            if freed >= excess:
                if latest != self._free_stamp:
                    self._free_at = _ready_at(latest, self.seconds)
                    self._free_stamp = latest
                return max(now, self._free_at)
        raise AssertionError("unreachable: n <= capacity was checked")  # pragma: no cover


class Throttle:
    """A set of linked rate windows spent all-or-nothing (burst and sustained together)."""

    def __init__(
        self,
        windows: Sequence[RateWindow],
        clock: Callable[[], float] = time.monotonic,
        *,
        name: str = "",
        on_wait: WaitHook | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        if not windows:
            raise ParameterError("windows", "at least one RateWindow is required")
        self.windows: tuple[RateWindow, ...] = tuple(windows)
        self.name = name
        self.clock = clock
        self.on_wait = on_wait
        self._sleep = sleep
        self._logs = [_Log(w) for w in self.windows]
        self._lock: anyio.Lock | None = None
        self.capacity = min(w.capacity for w in self.windows)
        #: Number of :meth:`acquire` calls that had to wait, and the seconds waited in total.
        self.waits = 0
        self.waited_seconds = 0.0
        #: Total tokens taken since creation.
        self.taken = 0

    def __repr__(self) -> str:
        spec = ", ".join(f"{w.capacity}/{w.seconds:g}s" for w in self.windows)
        return f"Throttle({self.name or '-'}: {spec})"

    # -- pure core -------------------------------------------------------------------------

    def _check_n(self, n: int) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ParameterError("n", f"must be an integer >= 1, got {n!r}")
        if n > self.capacity:
            raise ParameterError("n", f"{n} tokens can never pass {self!r}")

    def ready_at(self, n: int = 1, now: float | None = None) -> float:
        """The first clock instant ``>= now`` at which ``n`` tokens are free in every window.

        Exact: :meth:`try_take` succeeds at that instant and fails at every earlier one
        (with no other takes in between).
        """
        self._check_n(n)
        t = self.clock() if now is None else now
        ready = t
        for log in self._logs:
            at = log.ready_at(n, t)
            if at > ready:
                ready = at
        return ready

    def delay(self, n: int = 1, now: float | None = None) -> float:
        """Seconds from ``now`` until ``n`` tokens are free in every window (0.0 if already).

        ``now + delay`` is never earlier than :meth:`ready_at`, so waiting ``delay`` seconds
        and then taking succeeds (to within one float step of the exact answer).
        """
        t = self.clock() if now is None else now
        return _delay_to(t, self.ready_at(n, t))

    def available(self, now: float | None = None) -> int:
        """The largest ``n`` that :meth:`try_take` would accept at ``now``."""
        t = self.clock() if now is None else now
        least = None
        for log in self._logs:
            room = log.room(t)
            if least is None or room < least:
                least = room
        return least if least > 0 else 0

    def try_take(self, n: int = 1, now: float | None = None) -> bool:
        """Take ``n`` tokens from every window if all have room; otherwise take nothing."""
        self._check_n(n)
        t = self.clock() if now is None else now
        logs = self._logs
        for log in logs:
            if log.room(t) < n:  # ``ready_at(n, t) > t``: not before a take leaves the window
                return False
        for log in logs:
            log.add(t, n)
        self.taken += n
        return True

    def take_up_to(self, n: int, now: float | None = None) -> int:
        """Take ``k = min(n, available(now))`` tokens from every window and return ``k`` (0:
        nothing taken). One pass over the windows; the same as ``available`` then
        ``try_take(k)``, so the sliding-window bound holds as for :meth:`try_take`."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ParameterError("n", f"must be an integer >= 1, got {n!r}")
        t = self.clock() if now is None else now
        k = n
        logs = self._logs
        for log in logs:
            room = log.room(t)
            if room < k:
                k = room
        if k <= 0:
            return 0
        for log in logs:
            log.add(t, k)
        self.taken += k
        return k

    def take(self, n: int = 1, now: float | None = None) -> None:
        """Like :meth:`try_take` but raises :class:`RuntimeError` when the windows are full."""
        if not self.try_take(n, now):
            raise RuntimeError(f"{self!r} has no room for {n} tokens")

    def scaled(self, factor: float) -> "Throttle":
        """A fresh throttle with every capacity multiplied by ``factor`` (same clock and hooks)."""
        return Throttle(
            [w.scaled(factor) for w in self.windows],
            self.clock,
            name=self.name,
            on_wait=self.on_wait,
            sleep=self._sleep,
        )

    # -- async shell -----------------------------------------------------------------------

    async def acquire(self, n: int = 1) -> float:
        """Wait until ``n`` tokens can be taken, take them, and return the seconds waited.

        Waiters are served one at a time in arrival order, so a large batch is not starved by
        a stream of single tokens.
        """
        self._check_n(n)
        if self._lock is None:
            self._lock = anyio.Lock()
        sleep = self._sleep or anyio.sleep
        async with self._lock:
            start = self.clock()
            now = start
            while not self.try_take(n, now):
                await sleep(self.delay(n, now))
                now = self.clock()
            waited = max(0.0, now - start)
        if waited > 0.0:
            self.waits += 1
            self.waited_seconds += waited
            if self.on_wait is not None:
                self.on_wait(self.name, waited)
        return waited

"""Fault injection: deliberate latency, errors, throttling, restarts and stream trouble.

Invariant: with the default ``FaultConfig`` every method is a no-op (no latency, no error, the
engine always up), and all randomness comes from one ``random.Random(config.seed)``, so a
faulty run is reproducible for a given request sequence. Time is read from the injected clock.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from bot.exchange.config import FaultConfig


class EnginePhase:
    UP = "up"
    RESTARTING = "restarting"  # 425 on order writes
    POST_ONLY = "post_only"  # 503 code post_only_mode for non-post-only orders


class Faults:
    def __init__(self, config: FaultConfig, clock: Callable[[], float]) -> None:
        self.config = config
        self.clock = clock
        self.rng = random.Random(config.seed)
        self.started = clock()
        self.forced_phase: str | None = None  # set by tests/operators to pin a phase

    def latency_s(self) -> tuple[float, float]:
        """One request's added latency, split into the way in (before it is processed) and the
        way out (before its answer leaves): the total is uniform in [min, max] ms and a random
        share of it is spent each way, so requests *and* answers overtake one another, as on a
        real network where each request travels on its own connection."""
        c = self.config
        if c.latency_ms_max <= 0:
            return 0.0, 0.0
        total = self.rng.uniform(c.latency_ms_min, c.latency_ms_max) / 1000.0
        way_in = total * self.rng.random()
        return way_in, total - way_in

    def inject_error(self, path: str) -> bool:
        c = self.config
        if c.error_rate <= 0 or (c.error_routes and path not in c.error_routes):
            return False
        return self.rng.random() < c.error_rate

    def in_rate_limit_burst(self) -> float:
        """Seconds left of a forced 429 burst (0 when none is running)."""
        c = self.config
        if c.rate_limit_burst_every_s <= 0 or c.rate_limit_burst_s <= 0:
            return 0.0
        phase = (self.clock() - self.started) % c.rate_limit_burst_every_s
        start = c.rate_limit_burst_every_s - c.rate_limit_burst_s
        return c.rate_limit_burst_every_s - phase if phase >= start else 0.0

    def engine_phase(self) -> str:
        if self.forced_phase is not None:
            return self.forced_phase
        c = self.config
        if c.restart_every_s <= 0 or (c.restart_s <= 0 and c.post_only_s <= 0):
            return EnginePhase.UP
        cycle = max(c.restart_every_s, c.restart_s + c.post_only_s)
        phase = (self.clock() - self.started) % cycle
        start = cycle - (c.restart_s + c.post_only_s)
        if phase < start:
            return EnginePhase.UP
        if phase < start + c.restart_s:
            return EnginePhase.RESTARTING
        return EnginePhase.POST_ONLY

    def version_mismatch(self) -> bool:
        r = self.config.version_mismatch_rate
        return r > 0 and self.rng.random() < r

    def duplicate_user_event(self) -> bool:
        r = self.config.user_event_duplicate_rate
        return r > 0 and self.rng.random() < r

    def reorder_user_event(self) -> bool:
        r = self.config.user_event_reorder_rate
        return r > 0 and self.rng.random() < r

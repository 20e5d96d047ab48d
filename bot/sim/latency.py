"""Order latency for the simulated venues: how long an order takes to reach the matching engine
(``entry``) and how long its answer takes to come back (``response``).

Invariants: delays are non-negative seconds; a seeded model draws from its own
``random.Random(seed)``, so the same seed and call sequence give the same delays.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_right
from typing import Protocol

import msgspec


class LatencyModel(Protocol):
    def entry(self, now: float) -> float: ...

    def response(self, now: float) -> float: ...


class ConstantLatency:
    __slots__ = ("_entry", "_response")

    def __init__(self, entry: float = 0.05, response: float = 0.05) -> None:
        if entry < 0 or response < 0:
            raise ValueError("latency must be >= 0")
        self._entry = entry
        self._response = response

    def entry(self, now: float) -> float:
        return self._entry

    def response(self, now: float) -> float:
        return self._response


class LognormalLatency:
    """``median * exp(sigma * N(0, 1))``, capped at ``cap`` seconds."""

    __slots__ = ("_entry", "_response", "_sigma", "_cap", "_rng")

    def __init__(self, entry: float = 0.05, response: float = 0.05, sigma: float = 0.5,
                 cap: float = 5.0, seed: int = 0) -> None:
        if entry < 0 or response < 0 or sigma < 0 or cap < 0:
            raise ValueError("latency parameters must be >= 0")
        self._entry = entry
        self._response = response
        self._sigma = sigma
        self._cap = cap
        self._rng = random.Random(seed)

    def _draw(self, median: float) -> float:
        return min(self._cap, median * math.exp(self._sigma * self._rng.gauss(0.0, 1.0)))

    def entry(self, now: float) -> float:
        return self._draw(self._entry)

    def response(self, now: float) -> float:
        return self._draw(self._response)


class InterpolatedLatency:
    """Delays read off recorded ``(time, entry, response)`` samples: linear between the two
    samples around ``now``, the first or last sample's delays outside them (hftbacktest's
    interpolated order latency, from request/ack timestamps a live run recorded)."""

    __slots__ = ("_times", "_entries", "_responses")

    def __init__(self, samples) -> None:
        rows = sorted((float(t), float(e), float(r)) for t, e, r in samples)
        if not rows:
            raise ValueError("interpolated latency needs at least one (time, entry, response) sample")
        if any(not (e >= 0 and r >= 0) for _, e, r in rows):
            raise ValueError("latency must be >= 0")
        self._times = [t for t, _, _ in rows]
        self._entries = [e for _, e, _ in rows]
        self._responses = [r for _, _, r in rows]

    def _at(self, values: list[float], now: float) -> float:
        times = self._times
        i = bisect_right(times, now)
        if i == 0:
            return values[0]
        if i == len(times):
            return values[-1]
        t0, t1 = times[i - 1], times[i]
        v0, v1 = values[i - 1], values[i]
        return v0 + (v1 - v0) * (now - t0) / (t1 - t0)

    def entry(self, now: float) -> float:
        return self._at(self._entries, now)

    def response(self, now: float) -> float:
        return self._at(self._responses, now)


class LatencyConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    kind: str = "constant"  # constant | lognormal | interpolated
    entry: float = 0.05  # seconds (the median for lognormal)
    response: float = 0.05
    sigma: float = 0.5
    cap: float = 5.0
    seed: int = 0
    samples: tuple[tuple[float, float, float], ...] = ()  # interpolated: (time, entry, response)


def is_random(config: LatencyConfig) -> bool:
    """Whether the model draws its delays (so a seed changes them)."""
    return config.kind == "lognormal"


def latency_model(config: LatencyConfig, run_seed: int = 0) -> LatencyModel:
    """The configured model; a random one draws from ``config.seed`` and the run's seed together,
    so the runs of a sweep with different seeds draw different delays (run seed 0: ``config.seed``
    alone)."""
    if config.kind == "constant":
        return ConstantLatency(config.entry, config.response)
    if config.kind == "lognormal":
        return LognormalLatency(config.entry, config.response, config.sigma, config.cap,
                                (run_seed << 64) + config.seed)
    if config.kind == "interpolated":
        return InterpolatedLatency(config.samples)
    raise ValueError(f"unknown latency model: {config.kind!r}")

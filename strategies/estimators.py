"""Online estimates of the market-making models' inputs, from the book and the tape.

- ``Volatility``: sigma, the standard deviation of the mid per square root of a second (price
  units), from the squared mid changes over the time they took;
- ``Intensity``: ``A`` and ``k`` of the takers' intensity ``A * exp(-k * delta)`` at distance
  ``delta`` from the mid (one side; takers per second), from the distances trade prints reached:
  ``lambda(delta_i)`` is counted at a ladder of distances and ``ln lambda = ln A - k * delta`` is
  fitted by least squares weighted by the counts.

Both decay: an observation's weight halves every ``half_life_s`` of time, so the estimates follow
a changing market. Both warm up: no estimate before ``warmup_s`` of observed time and a minimum
number of observations; the caller then uses its prior. Both are bounded: an estimate is clamped
into the configured range, so one odd stretch of tape cannot send quotes to the ends of the book.
Floats are used here only: these are statistics, turned into grid prices by the quoting rules.
"""

from __future__ import annotations

import math

import msgspec

from bot.core.vocabulary import UNIT


class EstimatorParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Decay, warm-up and bounds of the online estimates (prices in price units: 1.0 = one USDC)."""

    half_life_s: float = 600.0  # an observation's weight halves after this long
    warmup_s: float = 60.0  # no estimate before this much observed time
    min_moves: int = 5  # sigma: mid changes needed
    sample_s: float = 30.0  # sigma: mids at least this far apart (the grid's noise fades with it)
    min_prints: int = 10  # A, k: trade prints needed
    sigma_min: float = 1e-5
    sigma_max: float = 0.05
    a_min: float = 1e-4
    a_max: float = 100.0
    k_min: float = 1.0
    k_max: float = 10_000.0
    step: float = 0.005  # distance between the ladder's rungs where intensity is counted
    rungs: int = 12

    def __post_init__(self) -> None:
        for name in ("half_life_s", "step", "sigma_min", "a_min", "k_min"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number, got {value}")
        if not (0 <= self.sample_s <= 86_400):
            raise ValueError(f"sample_s must be within [0, 86400], got {self.sample_s}")
        if not (0 <= self.warmup_s < math.inf):
            raise ValueError(f"warmup_s must be >= 0, got {self.warmup_s}")
        if self.min_moves < 1 or self.min_prints < 2:
            raise ValueError("min_moves must be >= 1 and min_prints >= 2")
        if not 2 <= self.rungs <= 1000:
            raise ValueError(f"rungs must be within 2..1000, got {self.rungs}")
        for lo, hi in (("sigma_min", "sigma_max"), ("a_min", "a_max"), ("k_min", "k_max")):
            if not getattr(self, lo) <= getattr(self, hi) < math.inf:
                raise ValueError(f"need {lo} <= {hi} (both finite)")


def _clamp(x: float, lo: float, hi: float) -> float:
    return lo if x < lo else hi if x > hi else x


class Volatility:
    """Sigma of the mid from its changes: ``sqrt(sum w * dm^2 / sum w * dt)`` with decaying
    weights. Observations may come at any times (book changes, timers): a mid that did not move
    adds time and no variance. Only mids at least ``sample_s`` apart are compared: a mid read off a
    grid jitters by up to half a tick, which would otherwise count as variance at every change."""

    __slots__ = ("params", "sum_sq", "span", "observed", "moves", "_t", "_mid")

    def __init__(self, params: EstimatorParams) -> None:
        self.params = params
        self.sum_sq = 0.0
        self.span = 0.0
        self.observed = 0.0  # undecayed time seen, for the warm-up
        self.moves = 0
        self._t: float | None = None
        self._mid = 0

    def observe(self, t: float, mid: int) -> None:
        """The mid (micro-units) seen at ``t`` (seconds); a time before the last one is ignored."""
        if self._t is None:
            self._t, self._mid = t, mid
            return
        dt = t - self._t
        if not dt >= self.params.sample_s or dt < 0:
            return
        decay = 0.5 ** (dt / self.params.half_life_s)
        dm = (mid - self._mid) / UNIT
        self.sum_sq = self.sum_sq * decay + dm * dm
        self.span = self.span * decay + dt
        self.observed += dt
        if mid != self._mid:
            self.moves += 1
        self._t, self._mid = t, mid

    @property
    def ready(self) -> bool:
        p = self.params
        return self.observed >= p.warmup_s and self.moves >= p.min_moves and self.span > 0

    def value(self) -> float | None:
        """Sigma (price units per sqrt second) within the bounds, or ``None`` while warming up."""
        if not self.ready:
            return None
        p = self.params
        return _clamp(math.sqrt(self.sum_sq / self.span), p.sigma_min, p.sigma_max)


class Intensity:
    """``A`` and ``k`` of one side's taker intensity ``A * exp(-k * delta)``, from trade prints.

    A print that reached ``delta`` from the mid counts at every rung ``i * step <= delta``; both
    sides' prints count and the rate of one side is half the total. Counts and the observed time
    decay together, so each rung's rate is a decayed count over a decayed time."""

    __slots__ = ("params", "counts", "span", "observed", "prints", "_t")

    def __init__(self, params: EstimatorParams) -> None:
        self.params = params
        self.counts = [0.0] * params.rungs
        self.span = 0.0
        self.observed = 0.0
        self.prints = 0
        self._t: float | None = None

    def _advance(self, t: float) -> None:
        if self._t is None:
            self._t = t
            return
        dt = t - self._t
        if not dt > 0:
            return
        decay = 0.5 ** (dt / self.params.half_life_s)
        self.counts = [c * decay for c in self.counts]
        self.span = self.span * decay + dt
        self.observed += dt
        self._t = t

    def tick(self, t: float) -> None:
        """Time passes with no print (call on timers: quiet time lowers the rates)."""
        self._advance(t)

    def observe(self, t: float, distance: float) -> None:
        """A taker print at ``t`` that reached ``distance`` (price units, >= 0) from the mid."""
        self._advance(t)
        if not (math.isfinite(distance) and distance >= 0):
            return
        self.prints += 1
        top = min(self.params.rungs, int(distance / self.params.step + 1e-9) + 1)
        for i in range(top):
            self.counts[i] += 1.0

    @property
    def ready(self) -> bool:
        p = self.params
        return self.observed >= p.warmup_s and self.prints >= p.min_prints and self.span > 0

    def value(self) -> tuple[float, float] | None:
        """``(A, k)`` within the bounds, or ``None`` while warming up or when the counts do not fall
        with distance (fewer than two rungs with prints, or a slope that is not negative)."""
        if not self.ready:
            return None
        p = self.params
        points = [(i * p.step, math.log(c / (2.0 * self.span)), c) for i, c in enumerate(self.counts) if c >= 1.0]
        if len(points) < 2:
            return None
        w = sum(c for _, _, c in points)
        mx = sum(x * c for x, _, c in points) / w
        my = sum(y * c for _, y, c in points) / w
        sxx = sum(c * (x - mx) ** 2 for x, _, c in points)
        if sxx <= 0:
            return None
        slope = sum(c * (x - mx) * (y - my) for x, y, c in points) / sxx
        if not slope < 0:
            return None
        a = math.exp(my - slope * mx)
        return _clamp(a, p.a_min, p.a_max), _clamp(-slope, p.k_min, p.k_max)


def reached(mid: int, price: int, taker_side_buy: bool) -> float:
    """How far from the mid (price units) a print at ``price`` reached: up for a buying taker,
    down for a selling one; 0 when it traded on the near side of the mid."""
    d = (price - mid) if taker_side_buy else (mid - price)
    return max(0, d) / UNIT

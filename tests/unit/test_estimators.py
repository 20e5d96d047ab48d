"""Online estimates of sigma and of the takers' intensity A * exp(-k * delta): they find the
parameters that made the data, wait for their warm-up, stay in their bounds and forget with time."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.backtest.synthetic import taker_reach
from bot.venue.units import UNIT
from strategies.estimators import EstimatorParams, Intensity, Volatility, reached

P = EstimatorParams(half_life_s=1e9, warmup_s=10.0, min_moves=5, min_prints=10, sample_s=0.0)


def brownian(vol: Volatility, sigma: float, steps: int, dt: float, seed: int, start: float = 0.0) -> float:
    rng = random.Random(seed)
    mid = 0.5
    t = start
    for _ in range(steps):
        vol.observe(t, round(mid * UNIT))
        mid += sigma * math.sqrt(dt) * rng.gauss(0, 1)
        t += dt
    return t


def test_volatility_finds_the_sigma_that_moved_the_mid():
    vol = Volatility(P)
    brownian(vol, 0.002, 20_000, 1.0, seed=5)
    assert vol.value() == pytest.approx(0.002, rel=0.03)


def test_volatility_sampling_removes_the_grid_jitter():
    """A mid read off a 0.01 grid jitters by up to half a tick: every change inflates sigma, unless
    only mids some time apart are compared."""
    rng = random.Random(3)
    every, sampled = Volatility(P), Volatility(EstimatorParams(half_life_s=1e9, warmup_s=10.0, sample_s=60.0))
    mid = 0.5
    for i in range(100_000):
        grid = (round(mid * 100 - 0.5) + 0.5) * 10_000  # the mid of a one-tick book around it
        for v in (every, sampled):
            v.observe(float(i), int(grid))
        mid += 0.001 * rng.gauss(0, 1)
    assert every.value() > 1.4 * 0.001
    assert sampled.value() == pytest.approx(0.001, rel=0.15)


def test_volatility_waits_for_its_warm_up_and_stays_in_bounds():
    vol = Volatility(P)
    vol.observe(0.0, 500_000)
    vol.observe(1.0, 510_000)
    assert not vol.ready and vol.value() is None  # 1 s and one move: not warm
    tight = Volatility(EstimatorParams(warmup_s=0.0, min_moves=1, sample_s=0.0, sigma_max=0.001))
    tight.observe(0.0, 500_000)
    tight.observe(1.0, 600_000)  # 0.1 in a second
    assert tight.value() == 0.001


def test_volatility_forgets_with_its_half_life():
    vol = Volatility(EstimatorParams(half_life_s=60.0, warmup_s=0.0, min_moves=1, sample_s=0.0))
    t = brownian(vol, 0.01, 2_000, 1.0, seed=1)
    brownian(vol, 0.001, 2_000, 1.0, seed=2, start=t)
    assert vol.value() == pytest.approx(0.001, rel=0.25)  # the loud past is forgotten


def feed(est: Intensity, a: float, k: float, seconds: int, seed: int, dt: float = 0.5) -> None:
    rng = random.Random(seed)
    for i in range(int(seconds / dt)):
        t = i * dt
        est.tick(t)
        for _ in range(2):  # a buyer and a seller may come each step
            r = taker_reach(rng, a, k, dt)
            if r is not None:
                est.observe(t, r)


def test_intensity_finds_a_and_k_of_the_takers():
    est = Intensity(EstimatorParams(half_life_s=1e9, warmup_s=10.0, step=0.002, rungs=15))
    feed(est, 1.5, 200.0, 20_000, seed=11)
    a, k = est.value()
    assert a == pytest.approx(1.5, rel=0.05) and k == pytest.approx(200.0, rel=0.05)


def test_intensity_waits_warms_up_and_refuses_a_flat_tape():
    est = Intensity(P)
    for i in range(5):
        est.observe(float(i), 0.01)
    assert est.value() is None  # 5 prints: not warm
    flat = Intensity(EstimatorParams(warmup_s=0.0, min_prints=2, step=0.01))
    for i in range(50):
        flat.observe(float(i), 0.001)  # every print at the touch: one rung, no slope
    assert flat.value() is None


def test_intensity_bounds_clamp_what_the_fit_says():
    est = Intensity(EstimatorParams(half_life_s=1e9, warmup_s=0.0, step=0.002, k_max=100.0, a_max=1.0))
    feed(est, 5.0 / 2.0, 300.0, 5_000, seed=4)
    a, k = est.value()
    assert a == 1.0 and k == 100.0


def test_reached_is_measured_from_the_mid_in_the_takers_direction():
    assert reached(500_000, 530_000, True) == pytest.approx(0.03)
    assert reached(500_000, 470_000, False) == pytest.approx(0.03)
    assert reached(500_000, 490_000, True) == 0.0  # a buyer under the mid reached nothing beyond it


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 10, allow_nan=False), st.integers(1, UNIT - 1)), min_size=1, max_size=60),
       st.lists(st.tuples(st.floats(0, 10, allow_nan=False), st.floats(-1, 2) | st.just(float("nan"))), max_size=60))
def test_estimates_are_in_bounds_or_none_whatever_the_tape(mids: list, prints: list) -> None:
    p = EstimatorParams(warmup_s=0.0, min_moves=1, min_prints=2, sample_s=0.0)
    vol, est = Volatility(p), Intensity(p)
    t = 0.0
    for dt, mid in mids:
        t += dt
        vol.observe(t, mid)
    for dt, d in prints:
        t += dt
        est.observe(t, d)
    s = vol.value()
    assert s is None or p.sigma_min <= s <= p.sigma_max
    ak = est.value()
    assert ak is None or (p.a_min <= ak[0] <= p.a_max and p.k_min <= ak[1] <= p.k_max)


def test_bad_estimator_settings_are_refused():
    for bad in ({"half_life_s": 0.0}, {"step": -1.0}, {"rungs": 1}, {"sigma_min": 1.0, "sigma_max": 0.5},
                {"k_max": float("inf")}, {"min_prints": 1}):
        with pytest.raises(ValueError):
            EstimatorParams(**bad)

"""Latency and queue-position models."""

from __future__ import annotations

import pytest

from bot.sim.latency import ConstantLatency, LatencyConfig, LognormalLatency, latency_model
from bot.sim.queue import ProbQueue, QueueConfig, RiskAverseQueue, queue_model


def test_constant_latency():
    m = latency_model(LatencyConfig(entry=0.1, response=0.2))
    assert isinstance(m, ConstantLatency)
    assert (m.entry(0), m.response(5)) == (0.1, 0.2)


def test_lognormal_latency_is_seeded_positive_and_capped():
    a = LognormalLatency(entry=0.05, sigma=1.0, cap=0.5, seed=3)
    b = latency_model(LatencyConfig(kind="lognormal", entry=0.05, sigma=1.0, cap=0.5, seed=3))
    xs = [a.entry(t) for t in range(500)]
    assert xs == [b.entry(t) for t in range(500)]
    assert all(0 < x <= 0.5 for x in xs)
    assert 0.03 < sorted(xs)[250] < 0.08  # median near the configured one
    with pytest.raises(ValueError):
        latency_model(LatencyConfig(kind="other"))


def test_risk_averse_queue_only_moves_when_level_shrinks_below_us():
    q = RiskAverseQueue()
    assert q.on_depth(30, 50, 40) == 30
    assert q.on_depth(30, 50, 20) == 20
    assert q.on_depth(30, 50, 80) == 30


def test_prob_queue_splits_cancels_by_position():
    q = ProbQueue(power=1.0)
    # 20 ahead, 20 behind: half of a 10-unit cancel comes from the front
    assert q.on_depth(20, 40, 30) == 15
    # near the back, most cancels are in front of us: 10 * 90/100 = 9 leave the front
    assert q.on_depth(90, 100, 90) == 81
    # 10 ahead, 2 behind, 10 cancelled: the front's proportional share is 10 * 10/12 = 8.33, so 8
    # leave the front and 2 stay ahead (the back loses the other 2, all it has)
    assert q.on_depth(10, 12, 2) == 2
    # power 0.5 puts cancels nearer us: the front's share is 10 * sqrt(10) / (sqrt(10) + sqrt(2))
    # = 6.91 of the 10, but the back holds only 2, so the front loses 8 and 2 stay ahead (not 4)
    assert ProbQueue(power=0.5).on_depth(10, 12, 2) == 2
    # a larger power puts cancels further from us: 10 * 20/100 = 2 from the front at power 1,
    # 10 * 20**3 / (20**3 + 80**3) = 0.15, so none, at power 3
    assert (q.on_depth(20, 100, 90), ProbQueue(power=3.0).on_depth(20, 100, 90)) == (18, 20)
    with pytest.raises(ValueError):
        ProbQueue(power=0)


def test_interpolated_latency_follows_recorded_delays():
    cfg = LatencyConfig(kind="interpolated", samples=((10.0, 0.3, 0.4), (0.0, 0.1, 0.2)))
    m = latency_model(cfg)
    assert m.entry(5.0) == pytest.approx(0.2) and m.response(5.0) == pytest.approx(0.3)
    assert (m.entry(-1.0), m.response(-1.0)) == (0.1, 0.2)  # before the first sample
    assert (m.entry(99.0), m.response(99.0)) == (0.3, 0.4)  # after the last
    assert m.entry(10.0) == 0.3
    with pytest.raises(ValueError):
        latency_model(LatencyConfig(kind="interpolated"))
    with pytest.raises(ValueError):
        latency_model(LatencyConfig(kind="interpolated", samples=((0.0, -0.1, 0.1),)))


def test_queue_model_is_chosen_by_config():
    assert isinstance(queue_model(QueueConfig()), RiskAverseQueue)
    prob = queue_model(QueueConfig(kind="prob", power=1.5))
    assert isinstance(prob, ProbQueue) and prob.power == 1.5
    with pytest.raises(ValueError):
        QueueConfig(kind="optimistic")
    with pytest.raises(ValueError):
        QueueConfig(kind="prob", power=0.0)

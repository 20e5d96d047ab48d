"""A short soak (``bench/soak.py``): ``bot run`` against the local exchange for under a minute,
sampled every second; resident memory, file descriptors, event-loop tasks and the journal's bytes
per order do not trend upwards once warmed up (closed orders leave memory after 3 s here, so the
run reaches its steady state early)."""

from __future__ import annotations

import anyio
import pytest

from bench.soak import describe, judge, soak

pytestmark = pytest.mark.integration


@pytest.mark.timeout(180)
def test_nothing_grows_without_bound_in_a_short_soak(tmp_path):
    samples = anyio.run(lambda: soak(45.0, 1.0, tmp_path, forget_closed_s=3.0))
    verdicts = judge(samples)
    shown = describe(samples, verdicts)
    assert len(samples) >= 30, shown
    assert all(s.tasks > 0 for s in samples[len(samples) // 3:]), shown  # the metric was read
    assert samples[-1].orders >= 100, shown  # it traded all along
    assert all(v.ok for v in verdicts), shown
    assert (tmp_path / "soak.csv").read_text().count("\n") == len(samples) + 1
    assert "plotly" in (tmp_path / "soak.html").read_text()[:100_000]

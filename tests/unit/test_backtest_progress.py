"""The backtest's progress line: events, rate, market time, and an ETA from the share of the
recordings read so far (``ReadMeter``), which follows a replay of known size from 0 to 1."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import bot.backtest.recording as recording
from bot.backtest import runner
from bot.backtest.replay import replay
from bot.ops.config import load_bot_config

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def sample(tmp_path: Path) -> list[Path]:
    """The sample recording (two files), copied: a replay writes its cache beside it."""
    return [Path(shutil.copy2(p, tmp_path / p.name)) for p in sorted((REPO / "data" / "sample").glob("*.jsonl.zst"))]


def test_the_line_shows_the_share_read_and_the_time_left_at_the_rate_so_far() -> None:
    line = runner.progress_line(50_000, 10.0, 7200.0, 0.25)
    assert line == "backtest: 50,000 events, 5,000 events/s, 2.00 h of market, 25% read, ETA 0:30"
    assert runner.progress_line(10, 100.0, 0.0, 0.01).endswith("1% read, ETA 2:45:00")
    assert runner.progress_line(10, 5.0, 0.0, 1.0).endswith("100% read, ETA 0:00")
    for unknown in (None, 0.0):  # nothing read yet, or a source that cannot tell: no ETA
        assert "ETA" not in runner.progress_line(10, 5.0, 0.0, unknown)
    assert "ETA" not in runner.progress_line(0, 0.0, 0.0, 0.5)


@pytest.mark.parametrize("cached", [False, True])
def test_the_meter_follows_a_replay_of_known_size_from_start_to_end(sample: list[Path], monkeypatch, cached: bool) -> None:
    monkeypatch.setattr(recording, "READ_CHUNK", 4096)  # the sample's files are smaller than a read
    if cached:
        with replay(sample, cache=True) as events:  # builds the caches; the replay below reads them
            n = sum(1 for _ in events)
    events = replay(sample, cache=cached)
    meter = events.meter
    assert meter is not None and meter.fraction() == 0.0
    seen = [meter.fraction() for _ in events]
    if cached:
        assert len(seen) == n
    assert seen == sorted(seen), "the share read never goes back"
    assert 0.0 < seen[0] < 0.5
    assert meter.fraction() == 1.0  # every file read to its end and closed
    for k in (len(seen) // 4, len(seen) // 2, 3 * len(seen) // 4):  # sane: close to the share of events
        assert abs(seen[k] - k / len(seen)) < 0.25, (k, seen[k])


def test_a_backtest_reports_an_eta_while_it_runs(sample: list[Path], monkeypatch) -> None:
    calls: list[tuple] = []
    monkeypatch.setattr(runner, "_progress", lambda paths: lambda *args: calls.append(args))
    config = load_bot_config(REPO / "config" / "bot.example.toml")
    runner.run_backtest(config, sample, progress=True)
    assert calls[-1] == (None, 0.0, None)  # the line is closed at the end
    n, market_s, fraction = calls[0]  # the first event read
    assert n == 1 and market_s == 0.0
    assert 0.0 < fraction <= 1.0
    assert "ETA" in runner.progress_line(n, 1.0, market_s, fraction)

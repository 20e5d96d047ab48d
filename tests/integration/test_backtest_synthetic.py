"""``bot backtest --synthetic [FILE]``: the seeded synthetic research market as a backtest's data,
from the command line; its settings file is checked like any config."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def backtest(*args: str, config: str = "config/avellaneda_stoikov.toml") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot.cli", "backtest", "--config", config, "--no-progress", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=120)


def test_a_synthetic_backtest_runs_and_repeats_for_its_seed(tmp_path: Path):
    settings = tmp_path / "synthetic.toml"
    settings.write_text("seed = 5\nduration_s = 300.0\nsigma = 0.002\n")
    runs = []
    for name in ("a", "b"):
        proc = backtest("--synthetic", str(settings), "--out", str(tmp_path / name), "--json")
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout))
    a, b = runs
    assert a["events"] > 1000 and a["orders_sent"] > 0 and a["fills"] > 0
    assert a["seconds"] == pytest.approx(300.0)
    assert {k: v for k, v in a.items() if "wall" not in k and k != "events_per_s"} == \
        {k: v for k, v in b.items() if "wall" not in k and k != "events_per_s"}
    assert set(next(iter(a["estimates"].values()))) >= {"sigma", "a", "k"}
    other = backtest("--synthetic", str(settings), "--seed", "6", "--out", str(tmp_path / "c"), "--json")
    c = json.loads(other.stdout)
    assert c["seed"] == 6 and c["pnl"] != a["pnl"] and list(c["final_position"]) != list(a["final_position"])


def test_bad_synthetic_settings_are_one_line_and_exit_2(tmp_path: Path):
    settings = tmp_path / "synthetic.toml"
    settings.write_text("sigmaa = 0.002\n")
    proc = backtest("--synthetic", str(settings))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "sigmaa" in proc.stderr
    settings.write_text("a = 5.0\ndt = 0.5\n")
    proc = backtest("--synthetic", str(settings))
    assert proc.returncode == 2 and "a * dt" in proc.stderr and "Traceback" not in proc.stderr
    proc = backtest("--synthetic", "--data", "data/sample")
    assert proc.returncode == 2 and "not allowed with" in proc.stderr

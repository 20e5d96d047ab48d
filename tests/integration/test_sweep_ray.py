"""``bot sweep --ray local``: a small sweep on a Ray instance started for it (two CPUs, no
dashboard) and stopped after it, and the same sweep on the process pool giving the same results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="Ray is not installed here: pip install 'pmbot[ray]' (make test installs it)")

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample"
CONFIG = REPO / "config" / "bot.example.toml"
GRID = '"strategy.params.half_spread_ticks" = [3, 2]\n[sweep]\nseeds = [6]\n'
UNMEASURED = ("wall_seconds", "events_per_s")


def sweep(out: Path, grid: Path, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "bot.cli", "sweep", "--config", str(CONFIG), "--grid", str(grid),
                           "--data", str(SAMPLE), "--out", str(out), "--workers", "2", "--no-progress", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "ranked by pnl" in proc.stdout
    return json.loads((out / "results.json").read_text())


@pytest.fixture(scope="module")
def on_ray(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("ray")
    grid = folder / "grid.toml"
    grid.write_text(GRID)
    return sweep(folder / "out", grid, "--ray", "local")


def test_a_small_sweep_runs_on_a_local_ray_instance(on_ray: dict):
    assert on_ray["executor"] == "Ray" and on_ray["workers"] == 2
    runs = on_ray["runs"]
    assert [r["params"]["strategy.params.half_spread_ticks"] for r in runs] == [3, 2]
    assert all(r["error"] is None and r["summary"]["fills"] > 0 and r["seed"] == 6 for r in runs)
    assert [x["set"] for x in on_ray["ranking"]] == sorted((0, 1), key=lambda i: -runs[i]["summary"]["pnl"])


def test_the_same_seeds_give_the_same_results_on_ray_and_on_the_process_pool(on_ray: dict, tmp_path: Path):
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID)
    pool = sweep(tmp_path / "out", grid)
    assert pool["executor"] == "process pool"

    def results(doc: dict) -> list:
        return [(r["params"], r["seed"], {k: v for k, v in r["summary"].items() if k not in UNMEASURED})
                for r in doc["runs"]]

    assert results(pool) == results(on_ray)
    assert pool["ranking"] == on_ray["ranking"]

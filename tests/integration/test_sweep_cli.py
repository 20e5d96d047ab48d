"""``bot sweep`` on the shipped sample recording: a ranked grid on the process pool whose runs are
the backtests ``run_backtest`` gives for the same config and seed, the best set written back as a
config file, one-line errors before anything runs, a worker's memory flat over many runs, and an
Optuna study that repeats for its seed whatever the number of workers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from bot.backtest.executors import ExecutorError, ProcessPool
from bot.backtest.runner import run_backtest
from bot.backtest.sweep import apply_params, parse_grid, run_sweep
from bot.ops.config import decode_bot_config, load_bot_config
from bot.strategy import Strategy

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample"
CONFIG = REPO / "config" / "bot.example.toml"
UNMEASURED = ("wall_seconds", "events_per_s")
GRID = '"strategy.params.half_spread_ticks" = [3, 1]\n"sim.latency.entry" = [0.05]\n[sweep]\nseeds = [4]\n'


def sweep(*args: str, config: Path = CONFIG) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot.cli", "sweep", "--config", str(config), "--no-progress", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=300)


def measured(summary: dict) -> dict:
    """A summary without the figures of the machine (they differ between any two runs)."""
    return {k: v for k, v in summary.items() if k not in UNMEASURED}


def test_a_grid_runs_ranked_on_the_process_pool_and_writes_results_and_the_best_config(tmp_path: Path):
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID)
    out, best = tmp_path / "out", tmp_path / "best.toml"
    proc = sweep("--grid", str(grid), "--data", str(SAMPLE), "--out", str(out), "--workers", "2",
                 "--best", str(best))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "ranked by pnl" in proc.stdout and f"best config: {best}" in proc.stdout
    doc = json.loads((out / "results.json").read_text())
    assert doc["executor"] == "process pool" and doc["workers"] == 2 and doc["sets"] == 2
    runs = doc["runs"]
    assert [r["params"]["strategy.params.half_spread_ticks"] for r in runs] == [3, 1]
    base = load_bot_config(CONFIG)
    for r in runs:  # each run is the backtest of its config and seed, fills counted
        alone = run_backtest(apply_params(base, r["params"]), [SAMPLE], seed=4, out=tmp_path / f"alone-{r['run']}")
        assert measured(r["summary"]) == measured(json.loads(msgspec.json.encode(alone)))
        assert r["summary"]["fills"] > 0 and r["error"] is None and r["peak_rss"] > 0
    pnl = {r["run"]: r["summary"]["pnl"] for r in runs}
    ranking = doc["ranking"]
    assert [x["set"] for x in ranking] == sorted(pnl, key=lambda i: -pnl[i])
    assert ranking[0]["score"] == str(max(pnl.values()))
    assert (out / "results.csv").read_text().count("\n") == 3
    text = best.read_text()
    assert text == (out / "best.toml").read_text()
    assert decode_bot_config(text) == apply_params(base, ranking[0]["params"])


def test_what_cannot_run_is_one_line_exit_2_and_runs_nothing(tmp_path: Path):
    out = tmp_path / "out"
    junk = tmp_path / "junk.jsonl.zst"
    junk.write_bytes(b"not a recording")
    grid = tmp_path / "grid.toml"
    cases = [
        ('"strategy.params.half_spread_tiks" = [1]', [str(SAMPLE)], "half_spread_tiks"),
        ('"sim.latency.entry" = ["fast"]', [str(SAMPLE)], "sim.latency.entry"),
        ("[sweep]\nmetric = \"speed\"", [str(SAMPLE)], "speed"),
        ("not toml [", [str(SAMPLE)], "not valid TOML"),
        ('"risk.max_position" = [1000]', [str(tmp_path / "missing")], "no such file"),
        ('"risk.max_position" = [1000]', [str(junk)], "not a recording"),
    ]
    for text, data, word in cases:
        grid.write_text(text)
        proc = sweep("--grid", str(grid), "--data", *data, "--out", str(out))
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert word in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert not out.exists()
    proc = sweep("--grid", str(tmp_path / "nope.toml"), "--data", str(SAMPLE), "--out", str(out))
    assert proc.returncode == 2 and "cannot read" in proc.stderr and not out.exists()
    proc = sweep("--grid", str(grid), "--data", str(SAMPLE), "--workers", "0")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


def test_runs_that_fail_are_reported_with_the_others_and_exit_2(tmp_path: Path):
    cfg = tmp_path / "bot.toml"
    cfg.write_text(CONFIG.read_text().replace("markets = []", 'markets = ["0x' + "ab" * 32 + '"]'))
    grid = tmp_path / "grid.toml"
    grid.write_text('"strategy.params.half_spread_ticks" = [1, 2]\n')
    proc = sweep("--grid", str(grid), "--data", str(SAMPLE), "--out", str(tmp_path / "out"), config=cfg)
    assert proc.returncode == 2 and "2 of 2 run(s) failed" in proc.stderr and "none of those configured" in proc.stderr
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert len(doc["runs"]) == 2
    assert all(r["summary"] is None and "none of those configured" in r["error"] for r in doc["runs"])
    assert not (tmp_path / "out" / "best.toml").exists()


MEMORY_RUNS = 24
MEMORY_GROWTH = 12 * 2**20
"""A worker's peak resident memory may rise this much from its 6th run to its 24th: what the
allocator settles into (measured: about 5 MiB, flat after about 30 runs); keeping each run's state
would add its several MiB per run."""


def test_a_workers_peak_memory_stays_flat_however_many_runs():
    base = load_bot_config(CONFIG)
    grid = parse_grid(f"[sweep]\nseeds = {list(range(MEMORY_RUNS))}\n", base)
    with ProcessPool(1) as pool:
        result = run_sweep(base, grid, [SAMPLE], pool)
    peaks = [o.peak_rss for o in result.outcomes]
    assert all(o.summary is not None for o in result.outcomes) and min(peaks) > 0
    assert peaks == sorted(peaks)  # one worker: its peak only rises
    assert peaks[-1] - peaks[5] < MEMORY_GROWTH, [p // 2**20 for p in peaks]


def test_a_study_asks_and_tells_in_fixed_batches_so_it_repeats_for_its_seed_on_any_pool():
    pytest.importorskip("optuna", reason="Optuna is not installed: pip install 'pmbot[optuna]' (make test does)")
    base = load_bot_config(CONFIG)
    grid = parse_grid('"strategy.params.fair" = ["mid", "micro"]\n[sweep]\nseeds = [2]\n'
                      "[sweep.optuna]\ntrials = 4\nbatch = 2\nseed = 5\n[sweep.optuna.ranges]\n"
                      '"strategy.params.half_spread_ticks" = { low = 1, high = 4 }\n', base)
    results = []
    for workers in (1, 2):
        with ProcessPool(workers) as pool:
            results.append(run_sweep(base, grid, [SAMPLE], pool))
    one, two = results
    assert len(one.sets) == 4 and one.sets == two.sets
    assert all(set(s) == {"strategy.params.fair", "strategy.params.half_spread_ticks"} for s in one.sets)
    assert [o.summary is not None for o in one.outcomes] == [True] * 4
    assert [measured(msgspec.to_builtins(o.summary)) for o in one.outcomes] == \
        [measured(msgspec.to_builtins(o.summary)) for o in two.outcomes]
    assert [r.set for r in one.ranking] == [r.set for r in two.ranking]


class Dies(Strategy):
    """A strategy whose process ends as it starts: a worker lost mid-sweep."""

    def on_start(self, ctx):
        os._exit(3)


def test_a_worker_that_dies_ends_the_sweep_with_one_line_not_a_hang():
    base = apply_params(load_bot_config(CONFIG), {"strategy.path": f"{__name__}:Dies", "strategy.params": {}})
    grid = parse_grid("[sweep]\nseeds = [1, 2, 3]\n", base)
    with pytest.raises(ExecutorError, match="a worker process of the pool died"):
        with ProcessPool(1) as pool:
            run_sweep(base, grid, [SAMPLE], pool)


def test_an_interrupted_sweep_keeps_every_finished_run_and_marks_its_results_partial(tmp_path: Path):
    """SIGINT into a sweep once some of its runs are done (seen by their results folders): exit 130,
    one line on stderr, and results.json holds those runs, marked partial, with the ranking of the
    sets they complete."""
    import signal

    grid = tmp_path / "grid.toml"
    # 128 runs in one worker: seconds of work, so the interrupt lands mid-sweep even when this
    # test's own polling is slowed by a busy machine (32 quick runs could all end before it)
    grid.write_text('"strategy.params.half_spread_ticks" = [1, 2, 3, 4, 5, 6, 7, 8]\n'
                    '"strategy.params.order_size" = [5, 10, 15, 20]\n'
                    '"sim.latency.entry" = [0.05, 0.1, 0.2, 0.5]\n[sweep]\nseeds = [4]\n')
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "sweep", "--config", str(CONFIG), "--no-progress",
                             "--grid", str(grid), "--data", str(SAMPLE), "--out", str(out), "--workers", "1",
                             "--keep-runs"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # Ctrl-C at its default, as from a terminal: an ignored SIGINT left in
                            # this test process would be inherited, and the sweep never interrupted
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        runs = out / "runs"
        import time

        deadline = time.monotonic() + 240
        # two runs done in the one worker: the first one's outcome is back in the sweep by then
        while not (runs.is_dir() and sum((d / "summary.json").exists() for d in runs.iterdir()) >= 2):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no run finished"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    [line] = stderr.strip().splitlines()
    assert line.startswith("bot sweep: interrupted after ") and " of 128 run(s)" in line and "(partial)" in line
    doc = json.loads((out / "results.json").read_text())
    assert doc["partial"] is True and doc["planned_runs"] == 128
    finished = doc["runs"]
    assert 1 <= len(finished) < 128 and all(r["summary"] is not None for r in finished)
    assert len(doc["ranking"]) == len(finished) and "PARTIAL" in stdout

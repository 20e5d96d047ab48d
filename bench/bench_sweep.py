"""Sweep throughput: backtests per minute of a sweep on the process pool with 1 and with 2 workers.

The sweep: the example config (``config/bot.example.toml``, the market maker) on the sample
recording (``data/sample``: 150 s of three markets, about 2,200 events), four half-spreads times
six seeds, 24 backtests, each writing and removing its scratch results folder as a sweep does.
Two figures per pool size: through a pool already started (each worker has run one backtest:
the throughput of a long sweep), and from opening the pool (spawning its workers, which import
the bot) to the last summary (what a short sweep sees). The 1-worker figures are the baseline
measured in the same run. One untimed warm-up (the recording's replay cache, the file cache),
then runs alternating 1 and 2 workers; figures are medians and the ratios are the medians of the
per-round ratios. The workers' peak resident memory is printed beside. On a shared machine the
2-worker figure is only as good as the second core is free.

Run: ``.venv/bin/python bench/bench_sweep.py [runs]`` (default 3).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bot.backtest.executors import ProcessPool  # noqa: E402
from bot.backtest.sweep import parse_grid, run_sweep  # noqa: E402
from bot.compiled import summary  # noqa: E402
from bot.ops.config import load_bot_config  # noqa: E402

SAMPLE = REPO / "data" / "sample"
GRID = '"strategy.params.half_spread_ticks" = [1, 2, 3, 4]\n[sweep]\nseeds = [1, 2, 3, 4, 5, 6]\n'
TARGET = 1.5  # 2 workers over 1 through a started pool, on 2 cores


def one_sweep(config, grid, workers: int) -> tuple[float, float, int, int]:
    """Wall seconds of one sweep from opening the pool and through the started pool, the
    backtests it ran, and its workers' largest peak RSS."""
    start = time.perf_counter()
    with ProcessPool(workers) as pool:
        run_sweep(config, parse_grid(f"[sweep]\nseeds = {list(range(workers))}\n", config), [SAMPLE], pool)
        started = time.perf_counter()
        result = run_sweep(config, grid, [SAMPLE], pool)
        end = time.perf_counter()
    failed = [o.error for o in result.outcomes if o.summary is None]
    if failed:
        raise RuntimeError(f"{len(failed)} backtest(s) failed: {failed[0]}")
    return end - start, end - started, len(result.outcomes), max(o.peak_rss for o in result.outcomes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Backtests per minute of a sweep on 1 and 2 workers.")
    parser.add_argument("runs", nargs="?", type=int, default=3, help="runs per worker count (median taken)")
    runs = parser.parse_args(argv).runs
    config = load_bot_config(REPO / "config" / "bot.example.toml")
    grid = parse_grid(GRID, config)
    print(f"python {sys.version.split()[0]}, {summary()}")
    one_sweep(config, grid, 1)  # warm-up: the replay cache and the file cache
    cold: dict[int, list[float]] = {1: [], 2: []}
    warm: dict[int, list[float]] = {1: [], 2: []}
    peaks: dict[int, int] = {1: 0, 2: 0}
    count = 0
    for _ in range(runs):
        for workers in (1, 2):
            whole, started, count, peak = one_sweep(config, grid, workers)
            cold[workers].append(whole)
            warm[workers].append(started)
            peaks[workers] = max(peaks[workers], peak)
    print(f"sweep of {count} backtests on the sample recording, median of {runs} runs:")
    for workers in (1, 2):
        print(f"  {workers} worker(s): {count * 60 / statistics.median(warm[workers]):6.0f} backtests/min "
              f"through a started pool, {count * 60 / statistics.median(cold[workers]):6.0f} from its start; "
              f"workers' peak RSS {peaks[workers] / 2**20:.0f} MiB")
    for label, times in (("through a started pool", warm), ("from the pool's start", cold)):
        ratio = statistics.median(a / b for a, b in zip(times[1], times[2]))
        print(f"  2 workers, {label}: x{ratio:.2f} the 1-worker baseline")
    ratio = statistics.median(a / b for a, b in zip(warm[1], warm[2]))
    verdict = "meets" if ratio >= TARGET else "misses"
    print(f"  through a started pool, 2 workers {verdict} the target of x{TARGET}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Backtest memory and results: peak RSS of a whole backtest (``bot backtest`` with the example
config's market maker) on the generated venue stream, and what writing its results folder costs.

The stream is ``../shared/bench``'s (``gen_book.py``, ``to_venue_ws.py``), one binary market, made
a recording by ``bench/venue_stream.py`` (the NO token's mirror added), generated once under
``--dir`` (about 400 MB of frames per million while it is converted, 20 MB of recording after).
Each figure comes from a fresh process: peak RSS is its ``VmHWM`` (interpreter and libraries
included), CPU its user + system time. The recording's derived cache is built before any run.

For each length (``--frames``, one or more, default 1,000,000; ``--ten`` adds ten times the first), three runs:
no results folder (the sink only counts), the results as Parquet (the default), as JSON lines
(``--jsonl``); the write cost is the CPU a run with a folder takes beyond the run without one.
Target: every peak under 150 MB, and the peaks of the lengths within 10% of each other (printed:
each length's highest peak, and the ratio of the highest to the lowest).

Run: ``.venv/bin/python bench/bench_backtest_memory.py [--frames N [N ...]] [--ten] [--dir DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

MEMORY_MB = 150
FLAT = 0.10
CONFIG = REPO / "config" / "bot.example.toml"


def child(recording: str, out: str | None, fmt: str) -> None:
    from bot.backtest.executors import peak_rss
    from bot.backtest.runner import run_backtest
    from bot.ops.config import BotConfig, load_config
    from bot.ops.logging import configure

    configure(level="error", json=True)
    config = load_config(str(CONFIG), BotConfig)
    wall = time.perf_counter()
    summary = run_backtest(config, [recording], out=out, results_format=fmt)
    wall = time.perf_counter() - wall
    use = resource.getrusage(resource.RUSAGE_SELF)
    size = sum(p.stat().st_size for p in Path(out).iterdir()) if out else 0
    print(json.dumps({"peak_mb": peak_rss() / 2**20, "cpu_s": use.ru_utime + use.ru_stime, "wall_s": wall,
                      "events": summary.events, "orders": summary.orders_sent, "fills": summary.fills,
                      "bytes": size}))


def run(recording: Path, out: Path | None, fmt: str) -> dict:
    args = [sys.executable, __file__, "--child", str(recording), "--format", fmt]
    if out is not None:
        args += ["--out", str(out)]
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def build_cache(recording: Path) -> None:
    from bot.backtest.replay import replay

    for _ in replay([recording], cache=True):
        pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, nargs="+", default=[1_000_000], help="generated events of the streams")
    ap.add_argument("--ten", action="store_true", help="also a stream ten times as long")
    ap.add_argument("--dir", default=os.environ.get("BENCH_STREAMS", str(Path(tempfile.gettempdir()) / "bench-streams")),
                    help="where the generated streams are kept (outside the repository)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--format", default="parquet", help=argparse.SUPPRESS)
    args = ap.parse_args([] if argv is None else argv)
    if args.child:
        child(args.child, args.out, args.format)
        return 0
    from bench.venue_stream import stream_recording
    from bot.compiled import summary

    print(f"python {sys.version.split()[0]}, {summary()}, load {os.getloadavg()[0]:.1f}")
    lengths = list(args.frames) + ([10 * args.frames[0]] if args.ten else [])
    peaks: dict[int, float] = {}
    for n in lengths:
        recording = stream_recording(n, Path(args.dir))
        build_cache(recording)
        print(f"\n{n:,} generated events: {recording} ({recording.stat().st_size / 1e6:.0f} MB)")
        with tempfile.TemporaryDirectory(prefix="bench-results-") as tmp:
            bare = run(recording, None, "parquet")
            rows = [("no results folder", bare)]
            for fmt in ("parquet", "jsonl"):
                rows.append((f"results as {fmt}", run(recording, Path(tmp) / fmt, fmt)))
                shutil.rmtree(Path(tmp) / fmt)
        print(f"  {bare['events']:,} events, {bare['orders']:,} orders sent, {bare['fills']:,} fills")
        for label, r in rows:
            extra = r["cpu_s"] - bare["cpu_s"]
            folder = f"   folder {r['bytes'] / 1e6:7.1f} MB, writing it {extra:6.1f} s CPU" \
                     f" ({extra / r['cpu_s']:4.0%} of the run)" if r["bytes"] else ""
            print(f"  {label:20s} peak {r['peak_mb']:6.1f} MB   {r['cpu_s']:7.1f} s CPU{folder}")
        peaks[n] = max(r["peak_mb"] for _, r in rows)
    print(f"\nlimit {MEMORY_MB} MB: every peak is {'under' if max(peaks.values()) < MEMORY_MB else 'over'} it")
    if len(peaks) > 1:
        for n, peak in peaks.items():
            print(f"  {n:>12,} events: peak {peak:6.1f} MB")
        lo, hi = min(peaks.values()), max(peaks.values())
        print(f"flat within {FLAT:.0%}: {'yes' if hi <= lo * (1 + FLAT) else 'no'} ({lo:.1f} .. {hi:.1f} MB,"
              f" highest / lowest {hi / lo:.3f})")
    print(f"load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

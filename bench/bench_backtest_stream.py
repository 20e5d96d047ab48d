"""``bot backtest`` end to end on the generated venue stream, against the plain loop of
``../shared/bench/naive_mm.py`` over the same recording, in the same run.

The stream: ``../shared/bench``'s ``gen_book.py`` then ``to_venue_ws.py``, made a recording with the
NO token's mirrored book by ``bench/venue_stream.py`` (one market, a book snapshot then
``price_change`` frames of both tokens and trade prints), generated once under ``--dir``.

Ours: ``bot backtest --config config/bot.example.toml --data RECORDING --out DIR --no-progress``
in a fresh process: the shipped market maker's config unchanged (both tokens quoted, risk, router,
throttles, the simulated venue with its latency and queue models), the results folder written
(Parquet). Two cases: the **first replay** (no derived cache: the recording's JSON is decoded and
the cache written on the way) and a **later replay** (the cache read).

The plain loop (``plain_loop`` here, run as a fresh process too): naive_mm.py's market maker
reading the same recording file as ours does: it decompresses the file, decodes each line into
typed msgspec Structs, keeps both tokens' books in dicts keyed by integer ticks, quotes one bid and
one ask on YES 2 ticks from the mid, cancels and replaces when a target moves, fills with
naive_mm's zero-latency rule and keeps the position and cash. What it leaves out, which ours does:
queue position and latency, risk, throttles, order records and their states, the NO token's
quotes, exact micro-unit money (it uses floats), fees, the results folder, config loading.

Timing: the CPU time (user + system) of each child process, interpreter start and imports
included for both; the runs alternate ours and the plain loop; figures are medians over
``--runs`` with their range, and each ratio is the median of per-run ratios (our events per CPU
second / the plain loop's). ``--counts N`` also prints how often the engine's per-event calls
run over the first N events of the same backtest (engine polls, ``next_wakeup``, ``Router.settled``
and ``idle``, book applications), per event: a profile of the sources run interpreted in a copy
of the tree as git sees it (no compiled module), so not timed.

Run: ``.venv/bin/python bench/bench_backtest_stream.py [--frames 300000] [--runs 3] [--dir DIR] [--counts 100000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Union

import msgspec

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.naive_frames import LTP, Frame, PriceChange  # noqa: E402

CONFIG = REPO / "config" / "bot.example.toml"
TARGET = 0.5


# a recording's line: its header (the tokens) or a frame
class Line(msgspec.Struct):
    t: int
    k: str
    f: Union[Frame, None] = None
    tokens: list[str] = []


def plain_loop(recording: str) -> dict:
    """naive_mm.py's loop over a recording file: both tokens' books, YES quoted (see the module doc)."""
    import io

    import zstandard

    decode = msgspec.json.Decoder(Line).decode
    qty, away = 10.0, 2
    books: dict[str, tuple[dict[int, float], dict[int, float]]] = {}
    yes = ""
    n = placed = cancelled = fills = 0
    my_bid = my_ask = None
    position = cash = 0.0
    with open(recording, "rb") as raw:
        stream = zstandard.ZstdDecompressor().stream_reader(raw)
        for line in io.BufferedReader(stream, 1 << 20):
            rec = decode(line)
            ev = rec.f
            if ev is None:
                if rec.k == "header":
                    yes = rec.tokens[0]
                    books = {t: ({}, {}) for t in rec.tokens}
                continue
            n += 1
            t = type(ev)
            if t is LTP:
                if ev.asset_id != yes:
                    continue
                px = round(float(ev.price) * 100)
                if ev.side == "SELL" and my_bid is not None and px <= my_bid:
                    fills += 1; position += qty; cash -= qty * my_bid / 100; my_bid = None  # noqa: E702
                elif ev.side == "BUY" and my_ask is not None and px >= my_ask:
                    fills += 1; position -= qty; cash += qty * my_ask / 100; my_ask = None  # noqa: E702
                continue
            if t is PriceChange:
                for c in ev.price_changes:
                    bids, asks = books[c.asset_id]
                    d = bids if c.side == "BUY" else asks
                    p = round(float(c.price) * 100)
                    s = float(c.size)
                    if s == 0.0:
                        d.pop(p, None)
                    else:
                        d[p] = s
            else:
                books[ev.asset_id] = ({round(float(lv.price) * 100): float(lv.size) for lv in ev.bids},
                                      {round(float(lv.price) * 100): float(lv.size) for lv in ev.asks})
            bids, asks = books[yes]
            if not bids or not asks:
                continue
            bb = max(bids)
            ba = min(asks)
            if my_bid is not None and ba <= my_bid:
                fills += 1; position += qty; cash -= qty * my_bid / 100; my_bid = None  # noqa: E702
            if my_ask is not None and bb >= my_ask:
                fills += 1; position -= qty; cash += qty * my_ask / 100; my_ask = None  # noqa: E702
            m2 = bb + ba
            tb = max(1, (m2 - 2 * away) // 2)
            ta = min(99, (m2 + 2 * away + 1) // 2)
            if my_bid != tb:
                if my_bid is not None:
                    cancelled += 1
                my_bid = tb
                placed += 1
            if my_ask != ta:
                if my_ask is not None:
                    cancelled += 1
                my_ask = ta
                placed += 1
    return {"events": n, "orders": placed, "cancels": cancelled, "fills": fills, "position": position,
            "cash": round(cash, 2)}


def _child_cpu(args: list[str]) -> tuple[float, str]:
    """Run ``args``; its CPU seconds (user + system) and stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(args, capture_output=True, text=True, cwd=REPO)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:3])} ... failed (exit {done.returncode}): {done.stderr.strip()[-400:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


def run_ours(recording: Path, out: Path, first: bool) -> tuple[float, dict]:
    cache = Path(str(recording) + ".cache")
    if first:
        cache.unlink(missing_ok=True)
    shutil.rmtree(out, ignore_errors=True)
    cpu, stdout = _child_cpu([str(REPO / ".venv" / "bin" / "bot"), "backtest", "--config", str(CONFIG),
                              "--data", str(recording), "--out", str(out), "--no-progress", "--json"])
    if not cache.exists():
        raise SystemExit("the backtest wrote no derived cache")
    return cpu, json.loads(stdout)


# the calls counted per event: (label, source file, function)
COUNTED = (("engine polls", "bot/engine/engine.py", "_poll"),
           ("next_wakeup", "bot/engine/engine.py", "next_wakeup"),
           ("Router.settled", "bot/execution/router.py", "settled"),
           ("Router.idle", "bot/execution/router.py", "idle"),
           ("book applications", "bot/core/book.py", "apply_levels"))

# run in the interpreted copy: the example config's backtest of the first N events, profiled
_COUNTING = """
import cProfile, itertools, json, pstats, sys
from bot.backtest.replay import markets, replay
from bot.backtest.runner import run_backtest
from bot.ops.config import BotConfig, load_config
from bot.ops.logging import configure
configure(level="error", json=True)
recording, n = sys.argv[1], int(sys.argv[2])
metas, stream = markets([recording]), replay([recording], cache=True)
prof = cProfile.Profile()
prof.enable()
summary = run_backtest(load_config(sys.argv[3], BotConfig), [recording], events=(metas, itertools.islice(stream, n)))
prof.disable()
stats = pstats.Stats(prof).stats  # (file, line, function) -> (primitive calls, calls, ...)
calls = {label: sum(s[1] for (f, _, fn), s in stats.items() if fn == name and f.endswith(path))
         for label, path, name in json.loads(sys.argv[4])}
print(json.dumps({"events": summary.events, "calls": calls}))
"""


def counts(recording: Path, n: int) -> dict:
    """``COUNTED``'s calls per event over the first ``n`` events, the sources interpreted."""
    from bench.mutation import scratch_copy

    with tempfile.TemporaryDirectory(prefix="bench-counts-") as tmp:
        scratch_copy(Path(tmp))
        done = subprocess.run([sys.executable, "-c", _COUNTING, str(recording), str(n), str(CONFIG),
                               json.dumps(COUNTED)], capture_output=True, text=True, cwd=tmp)
    if done.returncode != 0:
        raise SystemExit(f"the counting run failed (exit {done.returncode}): {done.stderr.strip()[-400:]}")
    got = json.loads(done.stdout.strip().splitlines()[-1])
    return {"events": got["events"], "per_event": {label: n / got["events"] for label, n in got["calls"].items()}}


def run_plain(recording: Path) -> tuple[float, dict]:
    cpu, stdout = _child_cpu([sys.executable, __file__, "--plain", str(recording)])
    return cpu, json.loads(stdout.strip().splitlines()[-1])


def _span(values: list[float]) -> str:
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}..{max(values):,.0f})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=300_000, help="generated events of the stream")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default=os.environ.get("BENCH_STREAMS", str(Path(tempfile.gettempdir()) / "bench-streams")))
    ap.add_argument("--counts", type=int, default=0, metavar="N",
                    help="also print the engine's calls per event over the first N events (interpreted, untimed)")
    ap.add_argument("--plain", help=argparse.SUPPRESS)
    if argv is None:  # command-line arguments only when run as a script, not via ``-m bench``
        argv = sys.argv[1:] if __name__ == "__main__" else []
    args = ap.parse_args(argv)
    if args.plain:
        print(json.dumps(plain_loop(args.plain)))
        return 0
    if args.frames < 1000 or args.runs < 1:
        print("--frames must be at least 1000 and --runs at least 1", file=sys.stderr)
        return 2
    from bench.venue_stream import stream_recording
    from bot.compiled import summary

    recording = stream_recording(args.frames, Path(args.dir))
    print(f"python {sys.version.split()[0]}, {summary()}, load {os.getloadavg()[0]:.1f}")
    print(f"{args.frames:,} generated events: {recording} ({recording.stat().st_size / 1e6:.0f} MB)")
    rates: dict[str, list[float]] = {"first": [], "later": [], "plain": []}
    ratios: dict[str, list[float]] = {"first": [], "later": []}
    seen: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-stream-") as tmp:
        out = Path(tmp) / "results"
        for _ in range(args.runs):
            plain_cpu, plain = run_plain(recording)
            plain_rate = plain["events"] / plain_cpu
            rates["plain"].append(plain_rate)
            for case in ("first", "later"):
                cpu, summary_ = run_ours(recording, out, case == "first")
                rate = summary_["events"] / cpu
                rates[case].append(rate)
                ratios[case].append(rate / plain_rate)
                seen = summary_
    print(f"plain loop: {_span(rates['plain'])} events per CPU second "
          f"({plain['events']:,} events, {plain['orders']:,} orders, {plain['fills']:,} fills)")
    print(f"bot backtest, first replay: {_span(rates['first'])} events per CPU second")
    print(f"bot backtest, later replay: {_span(rates['later'])} events per CPU second "
          f"({seen['events']:,} events, {seen['orders_sent']:,} orders, {seen['fills']:,} fills, results written)")
    for case in ("first", "later"):
        r = ratios[case]
        print(f"ratio, {case} replay: {statistics.median(r):.3f}x the plain loop "
              f"({min(r):.3f}..{max(r):.3f}; target >= {TARGET}x), load {os.getloadavg()[0]:.1f}")
    if args.counts:
        c = counts(recording, args.counts)
        print(f"per event over the first {c['events']:,} events: "
              + ", ".join(f"{label} {v:.2f}" for label, v in c["per_event"].items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

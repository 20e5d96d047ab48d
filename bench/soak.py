"""Soak: the market maker as a real ``bot run`` process against the local exchange for an hour or
more, its resident memory, open file descriptors, event-loop tasks (the ``bot_async_tasks``
metric) and journal size sampled every ``--interval`` seconds into ``soak.csv``, plotted in
``soak.html``, then judged: nothing may grow without bound.

The judgement (``judge``) drops the first third of the samples (warm-up: imports, caches, the
first books) and splits the rest in three: a series grows when the least value of the last part
exceeds the least value of the first by more than its slack (requests in flight come and go, so
peaks say little; a leak raises the floor): memory 8 MB or 5 % of its median, whichever is more;
8 file descriptors or 25 % (connection pools fill as the load varies); 4 tasks or 15 %; and the journal's bytes per journaled order (the journal
records every order, so it grows with them, never faster) 25 %. The Theil-Sen slope of each
series (the median of the slopes of all sample pairs) is shown beside it.

    .venv/bin/python -m bench.soak --duration 3600 --interval 60 --out soak/
"""

from __future__ import annotations

import argparse
import csv
import os
import sqlite3
import sys
import time
from pathlib import Path

import anyio
import httpx
import msgspec

from bench.chaos import bot_env, chaos_faults, exchange_config
from bot.exchange.config import FaultConfig
from bot.exchange.server import LocalExchange
from bot.exchange.server import free_port

REPO = Path(__file__).resolve().parent.parent
FIELDS = ("elapsed_s", "rss_mb", "fds", "tasks", "journal_kb", "orders", "journal_bytes_per_order")

BOT_CONFIG = """
{venue}
[strategy]
path = "strategies.market_maker:MarketMaker"

[strategy.params]
half_spread_ticks = 1
order_size = 10
max_inventory = 60

[risk]
max_errors = 1000  # the soak is about leaks: the synthetic traders' pace makes post-only
max_reject_streak = 1000  # crosses routine, and a halted bot would sit still for the rest

[engine]
forget_closed_after_s = {forget}

[metrics]
enabled = true
port = {port}

[journal]
path = "{journal}"
synchronous = "NORMAL"

[log]
level = "warning"
"""


class Sample(msgspec.Struct, frozen=True):
    elapsed_s: float
    rss_mb: float
    fds: int
    tasks: int
    journal_kb: float
    orders: int
    journal_bytes_per_order: float


class Verdict(msgspec.Struct, frozen=True):
    series: str
    slope_per_hour: float  # Theil-Sen, after the warm-up (shown, not judged)
    growth: float  # the floor of the last third of the judged window minus that of the first
    slack: float
    ok: bool


def theil_sen(xs: list[float], ys: list[float]) -> float:
    """The median of the slopes of every pair of points (0 with fewer than two distinct xs)."""
    slopes = sorted((ys[j] - ys[i]) / (xs[j] - xs[i]) for i in range(len(xs)) for j in range(i + 1, len(xs))
                    if xs[j] != xs[i])
    if not slopes:
        return 0.0
    mid = len(slopes) // 2
    return slopes[mid] if len(slopes) % 2 else (slopes[mid - 1] + slopes[mid]) / 2


def judge(samples: list[Sample]) -> list[Verdict]:
    """Each series' floor after the warm-up (the first third), against its slack (module doc)."""
    rest = samples[len(samples) // 3:]
    if len(rest) < 6:
        raise ValueError(f"too few samples to judge a trend: {len(samples)} (need at least 9)")
    xs = [s.elapsed_s for s in rest]
    k = len(rest) // 3
    out = []
    for name in ("rss_mb", "fds", "tasks", "journal_bytes_per_order"):
        ys = [float(getattr(s, name)) for s in rest]
        median = sorted(ys)[len(ys) // 2]
        slack = {"rss_mb": max(8.0, 0.05 * median), "fds": max(8.0, 0.25 * median), "tasks": max(4.0, 0.15 * median),
                 "journal_bytes_per_order": 0.25 * median}[name]
        growth = min(ys[-k:]) - min(ys[:k])
        out.append(Verdict(name, theil_sen(xs, ys) * 3600, growth, slack, growth <= slack))
    return out


def sample_process(pid: int) -> tuple[float, int]:
    """Resident memory (MB) and open file descriptors of a running process (Linux ``/proc``)."""
    rss_kb = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss_kb = int(line.split()[1])
    return rss_kb / 1024, len(os.listdir(f"/proc/{pid}/fd"))


def journal_size(path: Path) -> tuple[float, int]:
    """The journal's bytes on disk (with its WAL) and the orders it holds."""
    size = sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            orders = db.execute("SELECT COUNT(*) FROM orders").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error:
        orders = 0
    return size / 1024, orders


def scrape_tasks(client: httpx.Client, url: str) -> int:
    """``bot_async_tasks`` from the bot's metrics endpoint (-1 when it cannot be read)."""
    try:
        text = client.get(url, timeout=5).text
    except httpx.HTTPError:
        return -1
    for line in text.splitlines():
        if line.startswith("bot_async_tasks "):
            return int(float(line.split()[1]))
    return -1



async def soak(duration: float, interval: float, out: Path, *, seed: int = 1, faults: FaultConfig | None = None,
               forget_closed_s: float = 120.0, verbose: bool = False) -> list[Sample]:
    """Run the bot for ``duration`` seconds, sampling every ``interval``; ``out`` gets the CSV, the
    plot, the journal and the bot's log. Closed orders leave the bot's memory after
    ``forget_closed_s`` (its ``[engine]`` setting): a soak shorter than a few of those sees them
    pile up before they level off."""
    out.mkdir(parents=True, exist_ok=True)
    journal, cfg, port = out / "journal.sqlite", out / "bot.toml", free_port()
    samples: list[Sample] = []
    async with LocalExchange(exchange_config(seed, faults or FaultConfig())) as ex:
        cfg.write_text(BOT_CONFIG.format(venue=ex.urls.venue_toml(), port=port, journal=journal, forget=forget_closed_s))
        cmd = [sys.executable, "-m", "bot.cli", "run", "--config", str(cfg), "--duration", str(duration)]
        metrics = f"http://127.0.0.1:{port}/metrics"
        with (out / "bot.log").open("w") as err, (out / "bot.out").open("w") as stdout, httpx.Client() as client:
            async with await anyio.open_process(cmd, env=bot_env(ex.demo_account), cwd=REPO, stdout=stdout,
                                                stderr=err) as bot:
                began = time.monotonic()
                next_at = began + interval
                while bot.returncode is None:
                    with anyio.move_on_after(max(0.0, next_at - time.monotonic())):
                        await bot.wait()
                    if bot.returncode is not None:
                        break
                    if time.monotonic() - began >= duration:  # stopping: not a sample of a running bot
                        await bot.wait()
                        break
                    next_at += interval
                    try:
                        rss, fds = sample_process(bot.pid)
                    except (FileNotFoundError, ProcessLookupError):
                        break
                    tasks = await anyio.to_thread.run_sync(scrape_tasks, client, metrics)
                    kb, orders = journal_size(journal)
                    s = Sample(round(time.monotonic() - began, 2), round(rss, 2), fds, tasks, round(kb, 1), orders,
                               round(kb * 1024 / orders, 1) if orders else 0.0)
                    samples.append(s)
                    if verbose:
                        print("  ".join(f"{k} {getattr(s, k)}" for k in FIELDS), flush=True)
    write_csv(out / "soak.csv", samples)
    write_plot(out / "soak.html", samples)
    return samples


def write_csv(path: Path, samples: list[Sample]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(FIELDS)
        for s in samples:
            w.writerow([getattr(s, k) for k in FIELDS])


def write_plot(path: Path, samples: list[Sample]) -> None:
    """One self-contained HTML file: a panel per series against minutes."""
    from plotly.subplots import make_subplots

    titles = ("resident memory (MB)", "open file descriptors", "event-loop tasks", "journal (KB)")
    fig = make_subplots(rows=4, cols=1, shared_xaxes=True, subplot_titles=titles, vertical_spacing=0.06)
    minutes = [s.elapsed_s / 60 for s in samples]
    for row, name in enumerate(("rss_mb", "fds", "tasks", "journal_kb"), start=1):
        fig.add_scatter(x=minutes, y=[getattr(s, name) for s in samples], mode="lines+markers", name=name,
                        row=row, col=1)
    fig.update_xaxes(title_text="minutes", row=4, col=1)
    fig.update_layout(height=900, showlegend=False, title="bot run soak")
    fig.write_html(path, include_plotlyjs=True)


def describe(samples: list[Sample], verdicts: list[Verdict]) -> str:
    first, last = samples[0], samples[-1]
    lines = [f"soak: {last.elapsed_s / 60:.1f} min, {len(samples)} samples, {last.orders} orders journaled"]
    for name in ("rss_mb", "fds", "tasks", "journal_kb"):
        ys = [getattr(s, name) for s in samples]
        lines.append(f"  {name:24s} first {getattr(first, name):>9} last {getattr(last, name):>9} "
                     f"min {min(ys):>9} max {max(ys):>9}")
    for v in verdicts:
        lines.append(f"  trend {v.series:24s} {v.slope_per_hour:+10.2f}/h  growth {v.growth:+9.2f} "
                     f"(slack {v.slack:.2f})  {'ok' if v.ok else 'GROWS'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=3600.0, help="seconds the bot runs (default 3600)")
    ap.add_argument("--interval", type=float, default=60.0, help="seconds between samples (default 60)")
    ap.add_argument("--out", default="soak", help="folder for soak.csv, soak.html, the journal and log")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--chaos", action="store_true", help="with every fault of bench/chaos.py on")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.duration <= 0 or args.interval <= 0 or args.duration < 5 * args.interval:
        print("soak: --duration must be at least 5 intervals, both positive", file=sys.stderr)
        return 2
    faults = chaos_faults(args.seed) if args.chaos else None
    samples = anyio.run(lambda: soak(args.duration, args.interval, Path(args.out), seed=args.seed, faults=faults,
                                     verbose=args.verbose))
    verdicts = judge(samples)
    print(describe(samples, verdicts))
    print(f"  written: {Path(args.out) / 'soak.csv'}, {Path(args.out) / 'soak.html'}")
    return 0 if all(v.ok for v in verdicts) else 1


if __name__ == "__main__":
    raise SystemExit(main())

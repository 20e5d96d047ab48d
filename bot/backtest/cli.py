"""``bot backtest --config FILE --data PATH...`` (or ``--synthetic [FILE]``): run a backtest, print its
summary, keep its results.

Invariants: bad input (a path that is not a recording, a config naming a market the recordings do
not hold) is one line on stderr and exit code 2, never a traceback; the results folder holds the
whole run (``bot.backtest.results``) and its summary, also printed as a table or JSON.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import msgspec


def run(config: Any, args: Any) -> int:
    """Entry point of ``bot backtest``: returns the exit code."""
    from bot.backtest.recording import RecordingError
    from bot.backtest.runner import BacktestError, run_backtest
    from bot.ops.config import ConfigError
    from bot.ops.logging import configure

    configure(level="error", json=True)  # a backtest logs halts, not each rejected quote
    out = Path(args.out) if args.out else Path("results") / time.strftime("backtest-%Y%m%d-%H%M%S")
    try:
        source = synthetic_source(getattr(args, "synthetic", None), args.seed)
        summary = run_backtest(config, list(args.data or ()), out=out, progress=not args.no_progress, seed=args.seed,
                               source=source)
    except (BacktestError, RecordingError, ConfigError) as exc:
        print(f"bot backtest: {exc}", file=sys.stderr)
        return 2
    if args.json:
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(summary), indent=2).decode() + "\n")
    else:
        from rich.console import Console

        Console(file=sys.stdout).print(summary_table(summary))
        print(f"results: {out}")
    if getattr(args, "report", False):
        from bot.backtest.read import read_results
        from bot.backtest.report import report_path, write_report

        path = write_report(read_results(out), report_path(out))
        print(f"report: {path}", file=sys.stderr if args.json else sys.stdout)
    return 0


def synthetic_source(path: str | None, seed: int | None = None) -> Any:
    """``--synthetic [FILE]``: the synthetic market of ``FILE`` (a TOML table of
    ``bot.backtest.synthetic.SyntheticConfig``), or of the defaults when no file is named, its seed
    replaced by ``--seed`` when given; ``None`` without the option. A bad file is a
    ``ConfigError`` naming it."""
    if path is None:
        return None
    from bot.backtest.synthetic import SyntheticConfig, SyntheticMarket
    from bot.ops.config import decode_config, load_config

    config = load_config(path, SyntheticConfig) if path else decode_config({}, SyntheticConfig, "synthetic")
    if seed is not None:
        config = msgspec.structs.replace(config, seed=seed)
    return SyntheticMarket(config)


def summary_table(summary: Any) -> Any:
    """The summary as a two-column rich table (USDC and shares in decimals)."""
    from rich.table import Table

    from bot.backtest.report import market_time, summary_rows

    t = Table(title=f"{summary.mode}: {summary.events:,} events, {market_time(summary.seconds)} of market")
    t.add_column("figure")
    t.add_column("value", justify="right")
    for name, value in summary_rows(summary):
        t.add_row(name, value)
    return t

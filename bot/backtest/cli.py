"""``bot backtest --config FILE --data PATH...`` (or ``--synthetic [FILE]``): run a backtest, print its
summary, keep its results.

Invariants: bad input (a path that is not a recording, a config naming a market the recordings do
not hold) is one line on stderr and exit code 2, never a traceback; the results folder holds the
whole run (``bot.results.folder``) and its summary, also printed as a table or JSON. One run at a
time writes a results folder: a second one on a folder in use (an OS lock on its ``.lock``,
``bot.execution.exclusive``) is one line naming the holder's pid and exit code 2.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import msgspec

from bot.ops.arguments import EXIT_INTERRUPTED


def run(config: Any, args: Any) -> int:
    """Entry point of ``bot backtest``: returns the exit code."""
    from bot.backtest.recording import RecordingError
    from bot.backtest.runner import BacktestError, run_backtest
    from bot.execution.exclusive import Exclusive, InUse
    from bot.ops.config import ConfigError
    from bot.ops.logging import configure
    from bot.results.folder import claim

    configure(level="error", json=True)  # a backtest logs halts, not each rejected quote
    out = Path(args.out) if args.out else Path("results") / time.strftime("backtest-%Y%m%d-%H%M%S")
    config = dataset_choice(config, args)
    force = getattr(args, "force", False)
    refused = claim(out, "bot backtest", force=False) if not force or not out.is_dir() else None
    if refused is not None:  # said before a lock file is made in it (claim alone writes nothing)
        print(refused, file=sys.stderr)
        return 2
    made = next((p for p in reversed((out, *out.parents)) if not p.exists()), None)  # the first folder made here
    try:
        held = Exclusive(out, "results folder", inside=True)  # released when the process ends
    except InUse as exc:
        print(f"bot backtest: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"bot backtest: --out {out}: cannot make the results folder ({exc.strerror})", file=sys.stderr)
        return 2
    refused = claim(out, "bot backtest", force=force)
    if refused is not None:  # another run wrote there since
        print(refused, file=sys.stderr)
        held.release()
        return 2
    try:
        source = synthetic_source(getattr(args, "synthetic", None), args.seed)
        summary = run_backtest(config, list(args.data or ()), out=out, progress=not args.no_progress, seed=args.seed,
                               source=source, results_format="jsonl" if getattr(args, "jsonl", False) else None)
    except (BacktestError, RecordingError, ConfigError) as exc:
        print(f"bot backtest: {exc}", file=sys.stderr)
        held.release()
        if made is not None:  # a run that could not start leaves nothing behind
            _remove_if_unwritten(made, held.path)
        return 2
    if args.json:
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(summary), indent=2).decode() + "\n")
    else:
        from rich.console import Console

        Console(file=sys.stdout).print(summary_table(summary))
        for note in summary.data_notes:
            print(f"data: {note}")
        print(f"results: {out}")
    if summary.partial:
        print(f"bot backtest: interrupted after {summary.events:,} events ({summary.seconds / 60:.1f} min of market): "
              f"the results in {out} are partial", file=sys.stderr)
    if getattr(args, "report", False):
        from bot.results.read import read_results
        from bot.results.report import report_path, write_report

        path = write_report(read_results(out), report_path(out))
        print(f"report: {path}", file=sys.stderr if args.json else sys.stdout)
    held.release()
    return EXIT_INTERRUPTED if summary.partial else 0


def _remove_if_unwritten(folder: Path, lock: Path) -> None:
    """Remove ``folder`` (made by this run) when it holds nothing but folders and ``lock``."""
    import shutil

    if all(p == lock or p.is_dir() for p in folder.rglob("*")):
        shutil.rmtree(folder, ignore_errors=True)


DATASET_FLAGS = {"dataset_slugs": "--market-slug", "dataset_category": "--category", "dataset_markets": "--markets",
                 "dataset_rank": "--rank"}


def dataset_choice(config: Any, args: Any) -> Any:
    """``config`` with the markets of top-of-book files chosen on the command line
    (``--market-slug``, ``--category``, ``--markets``, ``--rank``) in place of its ``[backtest]
    dataset_*`` settings; ``config`` itself when none is given. They choose among top-of-book
    files only: given for data that holds none (recordings, the synthetic market), they are a
    ``ConfigError`` rather than ignored."""
    given = {"dataset_slugs": tuple(getattr(args, "market_slug", None) or ()) or None,
             "dataset_category": getattr(args, "category", None),
             "dataset_markets": getattr(args, "markets", None),
             "dataset_rank": getattr(args, "rank", None)}
    changes = {k: v for k, v in given.items() if v is not None}
    if not changes:
        return config
    from bot.backtest.sources import split_sources
    from bot.ops.config import ConfigError

    data = list(getattr(args, "data", None) or ())
    if not data or not split_sources(data)[1]:
        flag = DATASET_FLAGS[next(iter(changes))]
        what = f"{' '.join(data)} holds recordings" if data else "the synthetic market is not one"
        raise ConfigError(f"{flag} chooses markets of top-of-book files (*.parquet, *.csv; docs/real-data.md), and "
                          f"{what}: the config's [strategy] markets choose a recording's markets")
    return msgspec.structs.replace(config, backtest=msgspec.structs.replace(config.backtest, **changes))


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

    from bot.results.report import market_time, summary_rows

    t = Table(title=f"{summary.mode}: {summary.events:,} events, {market_time(summary.seconds)} of market")
    t.add_column("figure")
    t.add_column("value", justify="right")
    for name, value in summary_rows(summary):
        t.add_row(name, value)
    return t


def compare(config: Any, args: Any) -> int:
    """``bot compare``: backtest the session's recording with its config (our live orders taken
    out of the recorded books), align the two runs, print the table and write the report (the
    backtest's, with the comparison section)."""
    from rich.console import Console
    from rich.table import Table

    from bot.backtest.compare import (backtest_session, compare_runs, comparison_section, missing_span, recording_span,
                                      rows, session_span, suggest)
    from bot.backtest.replay import recorded
    from bot.results.read import read_journal
    from bot.backtest.recording import RecordingError
    from bot.results.report import build_report, render_html
    from bot.backtest.runner import BacktestError
    from bot.ops.logging import configure
    from bot.results.folder import claim

    configure(level="error", json=True)
    out = Path(args.out) if args.out else Path("results") / time.strftime("compare-%Y%m%d-%H%M%S")
    refused = claim(out, "bot compare", force=getattr(args, "force", False))
    if refused is not None:
        print(refused, file=sys.stderr)
        return 2
    try:
        live = read_journal(args.journal, recording=recorded(args.recording))
        missing = missing_span(session_span(live), recording_span(args.recording))
        if missing is not None:
            print(f"bot compare: {missing}", file=sys.stderr)
            return 2
        backtest = backtest_session(config, args.recording, live, out, seed=args.seed)
        settings = suggest(config, args.recording, live, seed=args.seed) if args.suggest else []
    except (BacktestError, RecordingError) as exc:
        print(f"bot compare: {exc}", file=sys.stderr)
        return 2
    comparison = compare_runs(live, backtest)
    table = Table(title="backtest against live")
    for name in ("figure", "live", "backtest"):
        table.add_column(name, justify="left" if name == "figure" else "right")
    for row in rows(comparison):
        table.add_row(*row)
    console = Console(file=sys.stdout)
    console.print(table)
    for s in settings[:5]:
        console.print(f"  latency {s.latency_s * 1000:g} ms, {s.queue} queue: {s.agreement:.1%} of fills in common")
    report = build_report(backtest)
    report = msgspec.structs.replace(report, sections=report.sections + (comparison_section(comparison, settings),))
    page = out / "report.html"
    page.write_text(render_html(report), encoding="utf-8")
    print(f"report: {page}")
    return 0

"""``bot record`` and ``bot report``: the market stream of chosen markets recorded to files, and the
HTML report of a run (a backtest's results folder, or a live or paper journal).

Invariant: ``bot record`` refuses an output it cannot write before it connects; ``bot report``
reads recordings only when ``--recording`` names some.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from bot.commands.run import configure_run_logging
from bot.commands.session import EXIT_OK, CommandError, Session
from bot.commands.venue import on_venue


def cmd_report(s: Session) -> int:
    from bot.results.read import read_run
    from bot.results.report import report_path, write_report

    a = s.args
    recording = None
    if a.recording:
        from bot.backtest.replay import recorded

        recording = recorded(a.recording)
    results = read_run(a.results, recording=recording, every_s=a.every)
    out = write_report(results, a.out or report_path(a.results))
    sys.stdout.write(f"report: {out}\n")
    return EXIT_OK


def cmd_record(s: Session) -> int:
    import msgspec

    from bot.backtest.recorder import Recorder, RecorderConfig, resolve_markets
    from bot.backtest.recording import WriterConfig
    from bot.venue.stream import StreamConfig

    a = s.args
    if not (a.token or a.market or a.event or a.tag or a.limit):
        raise CommandError("bot record: choose what to record with --token, --market, --event, --tag or --limit")
    out = Path(a.out)
    if out.exists() and not out.is_dir():
        raise CommandError(f"bot record: --out {a.out} is a file; give a directory (new or existing) for the recordings")
    if out.is_dir() and not os.access(out, os.W_OK | os.X_OK):
        raise CommandError(f"bot record: --out {a.out} is not writable")
    writer = msgspec.convert(dict(directory=a.out, prefix=a.prefix, rotate_bytes=a.rotate_mb * 2**20,
                                  rotate_s=a.rotate_s, flush_s=a.flush_s), WriterConfig)
    ws_url = s.config.venue.ws_url
    configure_run_logging(s)

    async def record(venue):
        async with venue.clob() as clob:
            if a.event or a.tag or a.limit:
                async with venue.catalog() as catalog:
                    markets = await resolve_markets(clob, catalog, tokens=a.token, markets=a.market,
                                                    events=a.event, tag=a.tag, limit=a.limit)
            else:
                markets = await resolve_markets(clob, tokens=a.token, markets=a.market)
            if not markets:
                chosen = [f"--{flag} {value}" for flag, values in (("token", a.token), ("market", a.market),
                                                                   ("event", a.event), ("tag", [a.tag] if a.tag else []))
                          for value in values] or [f"--limit {a.limit}"]
                raise CommandError(f"bot record: the venue lists none of the chosen markets ({', '.join(chosen[:3])})")
            s.last_url = ws_url
            config = RecorderConfig(writer=writer, stream=StreamConfig(url=ws_url))
            return await Recorder(clob, markets, config).run(duration=a.duration)

    done = on_venue(s, record)
    sys.stdout.write(f"recorded {done.frames} frame(s) of {len(done.files)} file(s) in {a.out} "
                     f"({done.bytes} bytes, {done.gaps} gap(s), {done.snapshots} REST snapshot(s)); "
                     f"stopped by {done.stop_reason}\n")
    for path in done.files:
        sys.stdout.write(f"  {path}\n")
    return EXIT_OK

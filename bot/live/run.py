"""``bot run --config FILE``: the configured strategy, live, built entirely from ``BotConfig``.

Invariants: secrets come only from ``bot.ops.secrets`` (environment or owner-only file) and are
never printed; the journal is restored before anything is sent, merged with what the venue
shows (open orders, trades), so a restart (even after ``kill -9``) neither repeats a fill nor
forgets a position, and a restart the same UTC day keeps counting the day's PnL from the journaled
day start (the daily loss limit is not reset); on SIGINT/SIGTERM every own order is cancelled
before exit.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import anyio
import structlog

log = structlog.get_logger("bot.run")


async def _run(config: Any, args: Any) -> int:
    from rich.console import Console

    from bot.execution.journal import Journal
    from bot.live.shell import LiveShell, load_markets, seed_positions
    from bot.live.view import ending, plain_line
    from bot.ops.metrics import Metrics
    from bot.ops.secrets import load_secrets
    from bot.strategy import load_strategy

    secrets = load_secrets(config.secrets)
    wallet = secrets.wallet()
    creds = secrets.credentials()
    venue = venue_of(config, creds, wallet.address)
    journal = None
    try:
        markets = await load_markets(venue.clob, tuple(config.strategy.markets), limit=1)
        if not markets:
            print("bot run: none of the configured markets is listed by the venue", file=sys.stderr)
            return 2
        strategy = load_strategy(config.strategy.path, config.strategy.params)
        metrics = Metrics()
        if config.metrics.enabled:
            metrics.serve(config.metrics.host, config.metrics.port)
        journal = Journal.from_config(config.journal)
        state = journal.restore()
        engine = engine_of(config, strategy, markets, venue, wallet, journal=journal, day_start=state.day_start,
                           metrics=metrics)
        resumed = engine.daily.start
        if resumed is not None:
            log.info("daily_pnl_resumed", day=resumed.day, start_total=resumed.total)
        if state.orders or state.fills:
            open_orders = [o async for o in venue.clob.get_orders()]
            trades = [t async for t in venue.clob.get_trades()]
            engine.restore(state, open_orders, trades)
            log.info("journal_restored", records=len(state.orders) + len(state.fills), open_orders=len(open_orders),
                     trades=len(trades))
        await seed_positions(engine, venue)
        started = time.monotonic()
        last = [0.0]

        def on_timer() -> None:
            elapsed = time.monotonic() - started
            if elapsed - last[0] >= 10.0:
                last[0] = elapsed
                log.info("status", line=plain_line(engine, elapsed=elapsed))

        shell = LiveShell(engine, venue, config=config.shell, on_timer=on_timer, journal=journal)
        duration = getattr(args, "duration", None)
        await shell.run(duration=duration)
        Console(file=sys.stdout).print(await ending(engine, shell.stop_reason, venue), highlight=False)
        return 0
    finally:
        if journal is not None:
            journal.close()
        await venue.aclose()


def venue_of(config: Any, creds: Any, address: str) -> Any:
    """The venue clients ``[venue]`` describes (URLs, chain, limits, timeouts, funder)."""
    from bot.live.shell import Venue

    v = config.venue
    return Venue(clob_url=v.clob_url, data_url=v.data_url, ws_url=v.ws_url, creds=creds, address=address,
                 chain_id=v.chain_id, limits=v.limits, timeouts=v.timeouts, holder=v.funder,
                 timestamp_unit=v.timestamp_unit)


def engine_of(config: Any, strategy: Any, markets: list[Any], venue: Any, wallet: Any, *, journal: Any = None,
              day_start: Any = None, metrics: Any = None) -> Any:
    """The live engine every section of ``config`` configures (risk, router, reconciler, engine,
    and the signing settings of ``[venue]``)."""
    from bot.live.shell import make_engine

    v = config.venue
    return make_engine(strategy, markets, venue, private_key=wallet, chain_id=v.chain_id, risk_limits=config.risk,
                       router_config=config.router, reconciler_config=config.reconciler,
                       engine_config=config.engine, metrics=metrics, journal=journal, day_start=day_start,
                       signature_type=v.signature_type, funder=v.funder, builder_code=v.builder_code)


def run(config: Any, args: Any = None) -> int:
    """Entry point of ``bot run``: returns the exit code."""
    try:
        return anyio.run(_run, config, args)
    except KeyboardInterrupt:
        return 130

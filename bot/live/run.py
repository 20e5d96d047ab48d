"""``bot run --config FILE``: the configured strategy, live, built entirely from ``BotConfig``.

Invariants: secrets come only from ``bot.ops.secrets`` (environment or owner-only file) and are
never printed; the journal is restored before anything is sent, merged with what the venue
shows (open orders, trades), so a restart (even after ``kill -9``) neither repeats a fill nor
forgets a position, and a restart the same UTC day keeps counting the day's PnL from the journaled
day start (the daily loss limit is not reset); on SIGINT/SIGTERM every own order is cancelled
before exit.

One process per journal: the journal is opened (and locked) before any request, so a second run
on it exits 2 naming the holder's pid having sent nothing. At restart every journaled fill of a
trade the venue lists is held to the venue's record of it (``bot.execution.restart.check_fills``):
a mismatch is replaced by the venue's fill, counted, logged and shown in the summary; orders the
journal lost are rebuilt from the trades naming them. A run whose journal could not be written
while trading halts and stops (exit 1, one line); so does one whose stop could not cancel.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec
import structlog

from bot.ops.arguments import EXIT_INTERRUPTED

log = structlog.get_logger("bot.run")


async def _run(config: Any, args: Any) -> int:
    from rich.console import Console

    from bot.execution.journal import Journal
    from bot.live.markets import load_markets
    from bot.live.positions import seed_positions
    from bot.live.event_loop import say_loop
    from bot.live.shell import LiveShell
    from bot.live.view import ending
    from bot.ops.metrics import Metrics
    from bot.ops.secrets import load_secrets
    from bot.strategy_set import configured_strategy
    from bot.ops.config import traded_markets

    secrets = load_secrets(config.secrets)
    wallet = secrets.wallet()
    creds = secrets.credentials()
    journal = Journal.from_config(config.journal)  # locked before anything is sent (a second run stops here)
    venue = venue_of(config, creds, wallet.address)
    try:
        markets = await load_markets(venue.clob, traded_markets(config))
        refused = unlisted("bot run", traded_markets(config), markets)
        if refused is not None:
            print(refused, file=sys.stderr)
            return 2
        strategy = configured_strategy(config)
        metrics = Metrics()
        if config.metrics.enabled:
            metrics.serve(config.metrics.host, config.metrics.port)
        state = journal.restore()
        engine = engine_of(config, strategy, markets, venue, wallet, journal=journal, day_start=state.day_start,
                           metrics=metrics)
        resumed = engine.daily.start
        if resumed is not None:
            log.info("daily_pnl_resumed", day=resumed.day, start_total=resumed.total)
        # before anything is sent, what the venue holds is merged in: with a journal, its orders
        # and fills; without one (a first run, or a journal moved aside), the venue's open orders
        # are orphans (``orphan_policy``) and the positions come from its holdings (below)
        open_orders = [o async for o in venue.clob.get_orders()]
        check = None
        if state.orders or state.fills:
            trades = [t async for t in venue.clob.get_trades()]
            check = held_to_venue(journal, state, trades, open_orders, engine.reconciler, metrics)
            state = check.state
            engine.restore(state, open_orders, trades)
            log.info("journal_restored", records=len(state.orders) + len(state.fills), open_orders=len(open_orders),
                     trades=len(trades))
        elif open_orders:
            engine.restore(state, open_orders, ())
            log.warning("journal_empty_venue_orders", open_orders=len(open_orders),
                        policy=engine.reconciler.config.orphan_policy)
        await seed_positions(engine, venue)
        duration = getattr(args, "duration", None)
        console = Console(file=sys.stdout)
        on_timer, shown = watch(engine, console, duration, args)
        say_loop(config.shell.event_loop)
        shell = LiveShell(engine, venue, config=config.shell, on_timer=on_timer, journal=journal)
        with shown:
            await shell.run(duration=duration)
        console.print(await ending(engine, shell.stop_reason, venue), highlight=False)
        if check is not None and (check.repairs or check.rebuilt):
            console.print(repairs_line(check), highlight=False)
        if journal.failed:
            print(f"bot run: journal {journal.path} could not be written ({journal.failed}); quoting was halted "
                  f"and every order cancelled", file=sys.stderr)
            return 1
        if not shell.cancelled_all:
            print("bot run: the stop could not cancel every order (the venue did not answer); orders may rest "
                  "until its heartbeat expires", file=sys.stderr)
            return 1
        return 0
    finally:
        journal.close()
        await venue.aclose()


def unlisted(command: str, wanted: tuple[str, ...], markets: list[Any]) -> str | None:
    """The line refusing a run when the venue does not list, as a binary market, every market the
    config names (or, naming none, lists no open market); ``None`` when it does: a misspelt id
    among several is refused, not left out of the run."""
    missing = sorted(set(wanted) - {m.condition_id for m in markets})
    if markets and not missing:
        return None
    if not wanted:
        return f"{command}: the venue lists no open binary market to trade"
    shown = ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
    return f"{command}: configured market(s) not listed by the venue as binary markets: {shown}"


def held_to_venue(journal: Any, state: Any, trades: list[Any], open_orders: list[Any], reconciler: Any,
                  metrics: Any = None) -> Any:
    """``check_fills`` of the restored ``state`` against the venue's trades: each repair written
    to the journal, counted (``bot_journal_repairs``) and logged; returns the check (its ``state``
    is what to restore)."""
    from bot.execution.restart import check_fills

    check = check_fills(state, trades, open_orders, reconciler.config, reconciler.fees)
    for r in check.repairs:
        log.warning("journal_fill_repaired", trade_id=r.trade_id, order_id=r.venue.order_id[:12], fields=list(r.fields))
        if metrics is not None:
            for f in r.fields:
                metrics.journal_repairs.labels(f).inc()
    for tid, (fills, reversed_ids) in check.replaced().items():
        journal.replace_fills(tid, fills, reversed_ids)
    if check.rebuilt:
        log.warning("journal_orders_rebuilt", orders=len(check.rebuilt))
        if metrics is not None:
            metrics.journal_repairs.labels("order").inc(len(check.rebuilt))
    log.info("journal_checked", fills=check.checked, repaired=len(check.repairs), rebuilt=len(check.rebuilt))
    return check


def repairs_line(check: Any) -> str:
    """The summary's line on what the restart set right in the journal."""
    fields: dict[str, int] = {}
    for r in check.repairs:
        for f in r.fields:
            fields[f] = fields.get(f, 0) + 1
    detail = ", ".join(f"{k} {v}" for k, v in sorted(fields.items()))
    return (f"journal repaired from the venue's trades: {len(check.repairs)} fills"
            + (f" ({detail})" if detail else "") + f", {len(check.rebuilt)} lost orders rebuilt")


def venue_of(config: Any, creds: Any, address: str) -> Any:
    """The venue clients ``[venue]`` describes (URLs, chain, limits, timeouts, funder), their rate
    windows kept where ``[throttle]`` says."""
    from bot.live.venue import Venue

    v = config.venue
    return Venue(clob_url=v.clob_url, data_url=v.data_url, ws_url=v.ws_url, creds=creds, address=address,
                 chain_id=v.chain_id, limits=v.limits, timeouts=v.timeouts, holder=v.funder,
                 timestamp_unit=v.timestamp_unit, shared=config.throttle)


def engine_of(config: Any, strategy: Any, markets: list[Any], venue: Any, wallet: Any, *, journal: Any = None,
              day_start: Any = None, metrics: Any = None) -> Any:
    """The live engine every section of ``config`` configures (risk, router, reconciler, engine,
    and the signing settings of ``[venue]``)."""
    from bot.live.assembly import make_engine

    v = config.venue
    return make_engine(strategy, markets, venue, private_key=wallet, chain_id=v.chain_id, risk_limits=config.risk,
                       router_config=config.router, reconciler_config=config.reconciler,
                       engine_config=config.engine, feed_config=config.feed, metrics=metrics, journal=journal,
                       day_start=day_start,
                       signature_type=v.signature_type, funder=v.funder, builder_code=v.builder_code)


async def _paper(config: Any, args: Any) -> int:
    """``bot run --paper``: the venue's live books, orders executed by the simulated venue
    (``[sim]``), everything else as live (risk, router, throttles, metrics labelled ``paper``, a
    journal of its own). No key and no API credentials are read; nothing is ever sent."""
    from rich.console import Console

    from bot.core.clock import LiveClock
    from bot.core.markets import with_default_fee
    from bot.engine.assembly import Signing, build_engine, simulated_throttles
    from bot.strategy_set import configured_strategy
    from bot.execution.journal import Journal, JournalConfig
    from bot.live.event_loop import say_loop
    from bot.live.markets import load_markets
    from bot.live.shell import LiveShell
    from bot.live.venue import Venue
    from bot.live.view import ending
    from bot.ops.metrics import Metrics
    from bot.sim.venue import SimVenueConfig, SimVenue
    from bot.ops.config import traded_markets

    v = config.venue
    venue = Venue(clob_url=v.clob_url, data_url=v.data_url, ws_url=v.ws_url, creds=None, address="",
                  chain_id=v.chain_id, limits=v.limits, timeouts=v.timeouts)
    journal = None
    try:
        markets = await load_markets(venue.clob, traded_markets(config))
        refused = unlisted("bot run --paper", traded_markets(config), markets)
        if refused is not None:
            print(refused, file=sys.stderr)
            return 2
        markets = with_default_fee(markets, config.sim.fee)
        strategy = configured_strategy(config)
        metrics = Metrics(mode="paper")
        if config.metrics.enabled:
            metrics.serve(config.metrics.host, config.metrics.port)
        journal = Journal.from_config(JournalConfig(paper_path(config.journal.path), config.journal.synchronous))
        clock = LiveClock()
        seed = time.time_ns()  # order ids unique across paper runs sharing a journal
        engine = build_engine(
            strategy, markets, clock=clock, signing=Signing(None, seed), throttles=simulated_throttles(v.limits, clock),
            risk=config.risk, router=config.router, reconciler=config.reconciler, engine=config.engine,
            feed=config.feed, owner="paper", journal=journal, day_start=journal.restore().day_start, metrics=metrics,
            own_orders_shown=False,  # the live books never show a paper order
        )
        sim_config: SimVenueConfig = config.sim
        sim = SimVenue(markets, msgspec.structs.replace(sim_config, mode="paper", owner="paper", seed=seed % 2**32))
        await seed_paper(engine, venue, sim_config.holdings)
        duration = getattr(args, "duration", None)
        console = Console(file=sys.stdout)
        on_timer, shown = watch(engine, console, duration, args)
        say_loop(config.shell.event_loop)
        shell = LiveShell(engine, venue, config=config.shell, journal=journal, executor=sim, market_tap=sim.on_market,
                          on_timer=on_timer)
        with shown:
            await shell.run(duration=duration)
        console.print(await ending(engine, shell.stop_reason, None), highlight=False)
        return 0
    finally:
        if journal is not None:
            journal.close()
        await venue.aclose()


def paper_path(path: str) -> str:
    """The paper journal beside the live one: ``state/journal.sqlite`` -> ``state/journal.paper.sqlite``."""
    p = Path(path)
    return str(p.with_name(f"{p.stem}.paper{p.suffix}"))


async def seed_paper(engine: Any, venue: Any, holdings: int) -> None:
    """The paper account's starting shares in the portfolio, valued at the venue's mids (as a
    live run values what it holds), and those mids as the day's opening marks."""
    from bot.live.positions import opening_mids
    from bot.venue.errors import VenueError

    mids: dict[str, int] = {}
    try:
        mids = await opening_mids(engine, venue)
    except VenueError as exc:
        log.warning("paper_marks_failed", error=str(exc)[:200])
    if holdings:
        for t in (t for m in engine.markets for t in m.tokens):
            engine.portfolio.seed(t, holdings, mids.get(t, 0))
    engine.opening_marks = mids


def watch(engine: Any, console: Any, duration: float | None, args: Any) -> tuple[Any, Any]:
    """What a run shows while it trades: on a terminal, the live view the demo shows (books,
    quotes, fills, PnL, status), redrawn on every timer; otherwise, or with ``--log-format json``,
    a status line in the JSON log every 10 s. Returns the shell's ``on_timer`` and the context to
    run the shell in (the view on screen, or nothing)."""
    import contextlib

    from bot.live.view import plain_line, render

    started = time.monotonic()
    if getattr(args, "log_format", None) != "json" and console.is_terminal:
        from rich.live import Live

        live = Live(render(engine, elapsed=0.0, duration=duration), console=console, refresh_per_second=4)

        def redraw() -> None:
            live.update(render(engine, elapsed=time.monotonic() - started, duration=duration))

        return redraw, live
    last = [0.0]

    def status() -> None:
        elapsed = time.monotonic() - started
        if elapsed - last[0] >= 10.0:
            last[0] = elapsed
            log.info("status", line=plain_line(engine, elapsed=elapsed))

    return status, contextlib.nullcontext()


def run(config: Any, args: Any = None) -> int:
    """Entry point of ``bot run``: returns the exit code."""
    from bot.live.event_loop import backend_options

    options = backend_options(config.shell.event_loop)  # a loop named but not installed: refused here
    try:
        return anyio.run(_paper if getattr(args, "paper", False) else _run, config, args, backend="asyncio",
                         backend_options=options)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED

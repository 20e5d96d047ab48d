"""``bot demo``: a shipped strategy against an in-process local exchange, end to end.

Starts the local exchange (synthetic flow on), loads two binary markets from it (every market it
lists for a strategy that needs whole neg-risk events), runs the strategy ``--strategy`` names
(``strategies.shipped``; the ``MarketMaker`` by default) over real HTTP and WebSocket for
``--duration`` seconds with a live view (or plain lines when stdout is not a terminal, or with
``--no-view``), serves Prometheus metrics, then cancels everything and prints a summary table.

Invariant: the demo always ends with every own order cancelled and exit code 0 unless something
failed; a failure prints one line, never a traceback.
"""

from __future__ import annotations

import argparse
import logging
import socket
import sys
import time
from typing import Any

import anyio

from bot.ops.arguments import EXIT_INTERRUPTED

DEFAULT_DURATION = 60.0
DEFAULT_METRICS_PORT = 9464
DEFAULT_STRATEGY = "market-maker"


class DemoOptions:
    """The demo's options, read from an argparse namespace (missing ones take defaults)."""

    __slots__ = ("duration", "seed", "metrics_port", "no_view", "markets", "journal", "paper", "strategy",
                 "demo_credentials")

    def __init__(self, args: Any = None) -> None:
        def opt(name: str, default: Any) -> Any:
            v = getattr(args, name, None)
            return default if v is None else v

        self.duration = float(opt("duration", DEFAULT_DURATION))
        self.seed = int(opt("seed", 1))
        self.metrics_port = int(opt("metrics_port", DEFAULT_METRICS_PORT))
        self.no_view = bool(opt("no_view", False))
        self.markets = int(opt("markets", 2))
        self.journal = str(opt("journal", ""))
        self.paper = bool(opt("paper", False))
        self.strategy = str(opt("strategy", DEFAULT_STRATEGY))
        self.demo_credentials = str(opt("demo_credentials", "random"))


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def _serve_metrics(metrics: Any, port: int) -> int | None:
    """Serve on ``port`` (a free one if taken); ``0`` means off. Returns the port served."""
    if port <= 0:
        return None
    if not _port_free(port):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    metrics.serve("127.0.0.1", port)
    return port


async def _demo(opts: DemoOptions, out: Any) -> int:
    from rich.console import Console
    from rich.live import Live

    from bot.exchange.config import ExchangeConfig, ServerFlowConfig
    from bot.exchange.server import LocalExchange
    from bot.ops.config import ShellConfig
    from bot.live.assembly import make_engine
    from bot.live.markets import load_markets
    from bot.live.positions import seed_positions
    from bot.live.shell import LiveShell
    from bot.live.venue import Venue
    from bot.live.view import ending, header_lines, plain_line, render
    from bot.ops.metrics import Metrics
    from bot.risk import RiskLimits
    from bot.strategy import load_strategy
    from strategies.shipped import SHIPPED

    console = Console(file=out)
    live_view = not opts.no_view and out.isatty()
    shipped = SHIPPED[opts.strategy]
    config = ExchangeConfig(seed=opts.seed, markets=max(4, opts.markets),
                            flow=ServerFlowConfig(enabled=True, speed=shipped.demo_flow_speed),
                            demo_credentials=opts.demo_credentials)
    async with LocalExchange(config) as ex:
        quiet_server_logs()
        acct = ex.demo_account
        venue = Venue(clob_url=ex.urls.clob, data_url=ex.urls.data, ws_url=ex.urls.ws,
                      creds=acct.creds, address=acct.address, chain_id=config.chain_id)
        try:
            markets = await load_markets(venue.clob, limit=None if shipped.all_markets else opts.markets)
            if not markets:
                console.print("demo: the exchange lists no binary market")
                return 1
            strategy = load_strategy(shipped.path, shipped.demo_params)
            journal = None
            if opts.journal:  # refused (a folder, in use) before anything is served
                from bot.execution.journal import Journal

                journal = Journal(opts.journal, synchronous="NORMAL")
            metrics = Metrics(mode="paper" if opts.paper else "live")
            port = _serve_metrics(metrics, opts.metrics_port)
            risk = RiskLimits(max_orders_per_window=200)
            sim = None
            if opts.paper:  # the exchange's live books; orders filled by the simulated venue
                from bot.core.clock import LiveClock
                from bot.engine.assembly import Signing, build_engine, simulated_throttles
                from bot.live.run import seed_paper
                from bot.sim.venue import SimVenue, SimVenueConfig

                clock = LiveClock()
                engine = build_engine(strategy, markets, clock=clock, signing=Signing(None, opts.seed),
                                      throttles=simulated_throttles(venue.limiter.config, clock), risk=risk,
                                      owner="paper", journal=journal, metrics=metrics, own_orders_shown=False)
                holdings = 1_000_000_000  # as the exchange's demo account: 1000 shares of every token
                sim = SimVenue(markets, SimVenueConfig(mode="paper", owner="paper", seed=opts.seed,
                                                       collateral=100_000_000_000, holdings=holdings))
                await seed_paper(engine, venue, holdings)
            else:
                engine = make_engine(strategy, markets, venue, private_key=acct.private_key,
                                     chain_id=config.chain_id, metrics=metrics, journal=journal, risk_limits=risk)
                await seed_positions(engine, venue)
            urls = [("exchange", ex.urls.clob)] + ([("metrics", f"http://127.0.0.1:{port}/metrics")] if port else [])
            against = "on the local exchange's books, paper trading" if opts.paper else "against the local exchange"
            if shipped.demo_flow_speed != 1.0:
                against += f" (its synthetic traders {shipped.demo_flow_speed:g}x faster)"
            for line in header_lines(f"demo: {opts.strategy} on {len(markets)} market(s) for {opts.duration:.0f}s "
                                     f"{against}", urls):
                console.print(line, soft_wrap=True)
            whose = "the simulated venue's account, holding as" if opts.paper else "the exchange's demo account,"
            console.print(f"  account   {whose} funded at the start with {config.demo_usdc} USDC and {config.demo_shares} "
                          "shares of every token (so it can sell from the first second)", soft_wrap=True)
            started = time.monotonic()
            last_line = [0.0]

            def on_timer() -> None:
                elapsed = time.monotonic() - started
                if live_view:
                    live.update(render(engine, elapsed=elapsed, duration=opts.duration))
                elif elapsed - last_line[0] >= 2.0:
                    last_line[0] = elapsed
                    console.print(plain_line(engine, elapsed=elapsed), highlight=False, soft_wrap=True)

            shell = LiveShell(engine, venue, config=ShellConfig(), on_timer=on_timer, executor=sim,
                              market_tap=sim.on_market if sim is not None else None)
            if live_view:
                with Live(render(engine, elapsed=0.0, duration=opts.duration), console=console,
                          refresh_per_second=4, transient=False) as live:
                    await shell.run(duration=opts.duration)
            else:
                live = None
                await shell.run(duration=opts.duration)
            console.print(await ending(engine, shell.stop_reason, None if opts.paper else venue), highlight=False)
            if journal is not None:
                journal.close()
            return 0
        finally:
            await venue.aclose()


def quiet_server_logs() -> None:
    """The in-process exchange's server logs our clients' disconnects at shutdown as errors with
    a traceback; the demo owns both ends, so those lines are noise here (set after the server
    configured its loggers)."""
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def run(args: Any = None) -> int:
    """Entry point of ``bot demo``: returns the exit code, prints no traceback."""
    from bot.ops.logging import configure

    opts = DemoOptions(args)
    out = sys.stdout
    try:
        configure(level="error" if (not opts.no_view and out.isatty()) else "warning", json=True)
        return anyio.run(_demo, opts, out)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback
        from bot.execution.exclusive import InUse
        from bot.execution.journal import JournalError

        print(f"demo failed: {type(exc).__name__}: {exc}"[:500], file=sys.stderr)
        return 2 if isinstance(exc, (JournalError, InUse)) else 1  # a --journal refused at open: bad input


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The demo's options, each with its declared range; unset ones take ``DemoOptions``' defaults."""
    from bot.exchange.config import ExchangeConfig
    from bot.ops.arguments import field_range, integer, run_seconds, with_range
    from bot.ops.config import MetricsConfig

    duration, seed = run_seconds(), field_range(ExchangeConfig, "seed")
    port, markets = field_range(MetricsConfig, "port"), integer(1, 100)
    p.add_argument("--duration", type=duration,
                   help=with_range(f"stop after this many seconds (default {DEFAULT_DURATION:.0f})", duration))
    p.add_argument("--seed", type=seed, help=with_range("exchange seed (default 1)", seed))
    p.add_argument("--demo-credentials", choices=["random", "deterministic"],
                   help="the exchange's demo key and API credentials: random (default) or computed from --seed")
    p.add_argument("--metrics-port", type=port, help=with_range(
        f"Prometheus port (0 = off; default {DEFAULT_METRICS_PORT}, a free one if taken)", port))
    p.add_argument("--no-view", action="store_true", default=None, help="plain status lines instead of the live view")
    p.add_argument("--markets", type=markets, help=with_range("how many markets to quote (default 2)", markets))
    p.add_argument("--journal", help="SQLite journal path (default: none)")
    p.add_argument("--paper", action="store_true", default=None,
                   help="paper trading: the exchange's live books, orders filled by the simulated venue")
    from strategies.shipped import NAMES

    p.add_argument("--strategy", choices=NAMES, metavar="NAME",
                   help=f"the shipped strategy to run: {', '.join(NAMES)} (default {DEFAULT_STRATEGY})")


def parser() -> argparse.ArgumentParser:
    from bot.ops.arguments import OneLineParser

    p = OneLineParser(prog="bot demo", description="A shipped strategy against the local exchange")
    add_arguments(p)
    return p


if __name__ == "__main__":
    sys.exit(run(parser().parse_args()))

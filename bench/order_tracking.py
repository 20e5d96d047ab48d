"""Order tracking under load: the market maker as a real ``bot run`` process against the local
exchange with latency injection, its journal compared with the exchange's open orders all along.

Not a speed figure: it prints, for the whole run, the largest number of orders live at the
exchange that the bot did not count as working (``bench.audit.untracked``; must be 0), the
samples taken, the orders the bot sent, the most orders open at the exchange at once, orphans
the bot itself reported, and the orders left open after the bot stopped (must be 0).

    .venv/bin/python bench/order_tracking.py --duration 600 --latency 5 300 --flow-speed 20
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import anyio

from bench.audit import journal_view, untracked
from bot.exchange.config import ExchangeConfig, FaultConfig, ServerFlowConfig
from bot.exchange.server import LocalExchange
from bench.audit import journal_view, untracked
from bot.live.venue import as_credentials
from bot.venue.clob import ClobClient
from bot.venue.transport import Transport

REPO = Path(__file__).resolve().parent.parent

BOT_CONFIG = """
{venue}
[strategy]
path = "strategies.market_maker:MarketMaker"

[strategy.params]
half_spread_ticks = 1
order_size = 10
max_inventory = 100

[reconciler]
orphan_policy = "cancel"

[metrics]
enabled = false

[journal]
path = "{journal}"
synchronous = "NORMAL"

[log]
level = "warning"
"""


async def audit(args: argparse.Namespace) -> int:
    config = ExchangeConfig(
        seed=args.seed, markets=4, flow=ServerFlowConfig(enabled=True, speed=args.flow_speed),
        faults=FaultConfig(latency_ms_min=args.latency[0], latency_ms_max=args.latency[1], seed=args.seed),
    )
    async with LocalExchange(config) as ex:
        urls, acct = ex.urls, ex.demo_account
        with tempfile.TemporaryDirectory() as tmp:
            journal = Path(tmp) / "journal.sqlite"
            cfg = Path(tmp) / "bot.toml"
            cfg.write_text(BOT_CONFIG.format(venue=urls.venue_toml(),
                                             journal=journal))
            env = dict(os.environ, BOT_PRIVATE_KEY=acct.private_key, BOT_API_KEY=acct.creds.apiKey,
                       BOT_API_SECRET=acct.creds.secret, BOT_API_PASSPHRASE=acct.creds.passphrase)
            transport = Transport(urls.clob)
            clob = ClobClient(transport, creds=as_credentials(acct.creds), address=acct.address)
            cmd = [sys.executable, "-m", "bot.cli", "run", "--config", str(cfg), "--duration", str(args.duration)]
            samples, worst, most_open, ever = 0, 0, 0, set()
            started = time.monotonic()
            async with await anyio.open_process(cmd, env=env, cwd=REPO, stdout=None, stderr=None) as bot:
                while bot.returncode is None:
                    await anyio.sleep(args.interval)
                    if not journal.exists():
                        continue
                    asked_at = time.time()
                    listed = [o.id async for o in clob.get_orders()]
                    lost = untracked(listed, journal_view(journal), asked_at)
                    samples += 1
                    worst = max(worst, len(lost))
                    most_open = max(most_open, len(listed))
                    ever.update(lost)
                    if args.verbose and lost:
                        print(f"{time.monotonic() - started:7.1f}s untracked {len(lost)}", flush=True)
                await bot.wait()
            left = [o.id async for o in clob.get_orders()]
            view = journal_view(journal)
            sent = len(view)
            await transport.aclose()
    print(f"order tracking: {args.duration:.0f} s, latency {args.latency[0]:g}-{args.latency[1]:g} ms, "
          f"flow speed {args.flow_speed:g}x, exit code {bot.returncode}")
    print(f"  samples                             {samples}")
    print(f"  orders sent by the bot              {sent}")
    print(f"  most orders open at the exchange    {most_open}")
    print(f"  most untracked at once (must be 0)  {worst}   (distinct over the run: {len(ever)})")
    print(f"  left open after stop (must be 0)    {len(left)}")
    return 0 if worst == 0 and not left and bot.returncode == 0 else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=60.0, help="seconds the bot runs (default 60)")
    ap.add_argument("--latency", type=float, nargs=2, default=(5.0, 300.0), metavar=("MIN", "MAX"),
                    help="exchange latency per request, ms (default 5 300)")
    ap.add_argument("--flow-speed", type=float, default=20.0, help="synthetic traders' speed-up (default 20)")
    ap.add_argument("--interval", type=float, default=0.5, help="seconds between samples (default 0.5)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    return anyio.run(audit, args)


if __name__ == "__main__":
    raise SystemExit(main())

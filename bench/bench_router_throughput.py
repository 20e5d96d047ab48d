"""Router throughput against the local exchange with scaled-down limits: a flood of intents
(every token wants dozens of resting quotes at once) goes through the live shell; how much of
the allowed order rate is used, and how many 429s come back.

Run: ``.venv/bin/python bench/bench_router_throughput.py``. The exchange and the bot share the
venue's limit table scaled by ``SCALE`` (POST /orders: 2400 orders per 10 s becomes 120). Over a
run of ``SECONDS`` the most a client can place is ``capacity * (floor(SECONDS / 10) + 1)`` (a full
burst at the start and one after each window); the figure is sent / that, the in-run baseline.
Target: >= 95 % with zero 429s. Prints the median of the runs.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio

from bot.core.intents import Quote, QuoteTarget
from bot.exchange.config import ExchangeConfig, ServerFlowConfig
from bot.exchange.server import LocalExchange
from bot.live.demo import quiet_server_logs
from bot.ops.config import ShellConfig
from bot.live.assembly import make_engine
from bot.live.markets import load_markets
from bot.live.shell import LiveShell
from bot.live.venue import Venue
from bot.risk import RiskLimits
from bot.strategy import Strategy
from bot.venue.enums import Side
from bot.venue.limits import LimitsConfig

SCALE = 0.05
WINDOW_S = 10.0
SECONDS = 12.0
RUNS = 2
QUOTES_PER_TOKEN = 40


class Flood(Strategy):
    """Wants ``QUOTES_PER_TOKEN`` resting bids on every token, far below the market."""

    def _targets(self, ctx):
        out = []
        for m in ctx.markets:
            for t in m.tokens:
                qs = tuple(Quote(t, Side.BUY, (i + 1) * 10_000, 5_000_000) for i in range(QUOTES_PER_TOKEN))
                out.append(QuoteTarget(t, qs))
        return out

    def on_start(self, ctx):
        return self._targets(ctx)

    def on_timer(self, ctx):
        return self._targets(ctx)


async def one_run(seed: int) -> dict[str, float]:
    config = ExchangeConfig(seed=seed, markets=4, limits_scale=SCALE, flow=ServerFlowConfig(enabled=False),
                            heartbeat_timeout_s=60.0)
    async with LocalExchange(config) as ex:
        quiet_server_logs()
        acct = ex.demo_account
        venue = Venue(clob_url=ex.urls.clob, data_url=ex.urls.data, ws_url=ex.urls.ws, creds=acct.creds,
                      address=acct.address, limits=LimitsConfig(scale=SCALE))
        try:
            markets = await load_markets(venue.clob, limit=4)
            limits = RiskLimits(max_orders_per_window=None, max_open_orders=None, max_market_notional=None,
                                max_event_notional=None, max_event_loss=None, max_reject_streak=None)
            engine = make_engine(Flood(), markets, venue, private_key=acct.private_key, risk_limits=limits)
            shell = LiveShell(engine, venue, config=ShellConfig(trades_poll_s=5.0, positions_poll_s=0,
                                                               book_poll_s=0))
            capacity = venue.limiter.throttle("orders").capacity
            t0 = time.monotonic()
            await shell.run(duration=SECONDS)
            elapsed = time.monotonic() - t0
            left = len([o async for o in venue.clob.get_orders()])
        finally:
            await venue.aclose()
    s = engine.stats
    allowed = capacity * (math.floor(SECONDS / WINDOW_S) + 1)
    return {"sent": s.orders_sent, "accepted": s.orders_accepted, "rejected": s.orders_rejected,
            "rate_limited": s.rate_limited, "allowed": allowed, "share": s.orders_sent / allowed,
            "wanted": QUOTES_PER_TOKEN * 2 * len(markets), "elapsed": elapsed, "left": left}


def main() -> None:
    from bot.ops.logging import configure

    configure(level="error")
    results = [anyio.run(one_run, seed) for seed in range(1, RUNS + 1)]
    for r in results:
        print(f"run: sent {r['sent']} accepted {r['accepted']} rejected {r['rejected']} 429s {r['rate_limited']} "
              f"allowed {r['allowed']} share {r['share'] * 100:.1f}% (wanted {r['wanted']}, {r['elapsed']:.1f}s incl. stop; resting after stop: {r['left']})")
    share = statistics.median(r["share"] for r in results)
    limited = max(r["rate_limited"] for r in results)
    print(f"router throughput: median {share * 100:.1f}% of the allowed order rate "
          f"(baseline: {results[0]['allowed']} orders in {SECONDS:.0f}s at scale {SCALE}), "
          f"max 429s in a run: {limited}  (target >= 95%, zero 429s)")


if __name__ == "__main__":
    main()

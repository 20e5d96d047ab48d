"""Three ``bot run`` processes on one API key share the venue's limits through a real Redis: the
local exchange (as strict as the venue, limits scaled down) answers none of them 429, and
together they use at least 90% of the rate the binding limit allows."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.exchange.config import ServerFlowConfig
from bot.exchange.replies import Reply
from tests.integration.exchange_fixture import start_exchange, wait_for
from tests.services import redis_server  # noqa: F401  (pytest fixture)

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SCALE = 0.01  # orders and cancels: 24 tokens per 10 s window (per API key, at the exchange)
WINDOW_S = 10.0
MEASURED_WINDOWS = 1


def config_text(ex, redis_url: str, prefix: str, journal: Path) -> str:
    u = ex.urls
    return f"""
{u.venue_toml()}
[venue.limits]
scale = {SCALE}
write_headroom = 1.0  # the burst window binds: the whole of it is shared (no pacing to the sustained rate)
pace_writes = false

[throttle]
backend = "redis"
redis_url = "{redis_url}"
key_prefix = "{prefix}"
processes = 3

[strategy]
path = "strategies.market_maker:MarketMaker"
params = {{ half_spread_ticks = 1, order_size = 5 }}

[risk]
stale_halt_s = "off"

[reconciler]
orphan_policy = "ignore"  # the other processes' orders are not orphans

[metrics]
enabled = false

[shell]
stop_timeout_s = 12.0  # the stop's cancels wait their turn in the 10 s shared windows like any other

[journal]
path = "{journal}"
"""


def journal_orders(path: Path) -> int:
    """Orders a running bot's journal holds (0 while it has none, or no journal yet)."""
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1) as db:
            return db.execute("SELECT COUNT(*) FROM orders").fetchone()[0]
    except sqlite3.Error:
        return 0


class Charges:
    """What the exchange's limits let through (per-key trading tokens, stamped) and every 429."""

    def __init__(self, edge) -> None:
        self.granted: dict[str, list[tuple[float, int]]] = {"orders": [], "cancels": []}
        self.throttled: list[str] = []
        trading, request = edge.trading, edge.request

        def counted_trading(kind: str, api_key: str, n: int) -> None:
            try:
                trading(kind, api_key, n)
            except Reply as r:
                if r.status == 429:
                    self.throttled.append(f"{kind} x{n}")
                raise
            self.granted[kind].append((time.monotonic(), max(1, n)))

        async def counted_request(surface: str, method: str, path: str, client: str) -> None:
            try:
                await request(surface, method, path, client)
            except Reply as r:
                if r.status == 429:
                    self.throttled.append(f"{method} {path}")
                raise

        edge.trading = counted_trading
        edge.request = counted_request

    def used(self, kind: str, start: float, seconds: float) -> int:
        return sum(n for t, n in self.granted[kind] if start <= t < start + seconds)


def test_three_processes_on_one_key_get_no_429_and_use_the_allowed_rate(redis_server, tmp_path):
    ex = start_exchange(limits_scale=SCALE, flow=ServerFlowConfig(enabled=True, interval_s=0.05, speed=20.0))
    procs: list[subprocess.Popen] = []
    try:
        charges = Charges(ex.exchange.exchange.limits)
        acct = ex.demo_account
        env = dict(os.environ, BOT_PRIVATE_KEY=acct.private_key, BOT_API_KEY=acct.creds.apiKey,
                   BOT_API_SECRET=acct.creds.secret, BOT_API_PASSPHRASE=acct.creds.passphrase)
        logs, prefix = [], f"test-{time.time_ns()}"
        for i in range(3):
            cfg = tmp_path / f"bot{i}.toml"
            cfg.write_text(config_text(ex, redis_server.url, prefix, tmp_path / f"journal{i}.sqlite"))
            logs.append(tmp_path / f"bot{i}.log")
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "bot.cli", "run", "--config", str(cfg)], cwd=REPO, env=env,
                stdout=subprocess.PIPE, stderr=logs[-1].open("w"), text=True))
        capacity = int(2400 * SCALE)
        first = wait_for(lambda: charges.granted["orders"][:1], 60, "the first order")[0][0]
        measured = MEASURED_WINDOWS * WINDOW_S
        wait_for(lambda: time.monotonic() > first + measured + 0.5, measured + 5, "the measured windows", 0.2)
        trading_429s = list(charges.throttled)  # the stop's cancel-all goes out whatever the windows hold
        # every process is trading (so it stops on SIGTERM as a running bot does) before it is told to
        wait_for(lambda: all(journal_orders(tmp_path / f"journal{i}.sqlite") for i in range(3)), 60,
                 "an order journaled by each process", 0.2)
        for p in procs:
            p.send_signal(signal.SIGTERM)
        outs = [p.communicate(timeout=60)[0] for p in procs]
        for p, out, log in zip(procs, outs, logs):
            err = log.read_text()
            assert p.returncode == 0 and "Traceback" not in out + err, out + err[-3000:]
        assert trading_429s == []
        allowed = MEASURED_WINDOWS * capacity
        used = {kind: charges.used(kind, first, measured) for kind in ("orders", "cancels")}
        print(f"tokens used in {measured:g} s: {used}, allowed per scope: {allowed}")
        assert max(used.values()) >= 0.9 * allowed, used
        assert max(used.values()) <= allowed
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        ex.stop()

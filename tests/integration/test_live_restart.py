"""``bot run`` killed with SIGKILL mid-run and restarted on the same journal: nothing is lost,
nothing is delivered twice, nothing is left resting that the bot does not know, and the day's PnL
keeps counting from the journaled day start (the daily loss limit is not reset by a restart)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from bot.core.clock import SECONDS_PER_DAY, utc_day
from bot.execution.journal import Journal
from bot.portfolio.pnl import DayStart
from bot.venue.enums import OrderType, Side
from tests.integration.exchange_fixture import start_exchange
from tests.integration.test_live_trading import TICK, counterparty_order, open_orders, ours_on, wait_for

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
DAILY_LOSS = 1000  # USDC (a config writes USDC): far above what the test's one fill can lose


def config_text(ex, cond: str, journal: Path) -> str:
    u = ex.urls
    return f"""
{u.venue_toml()}
[strategy]
path = "strategies.market_maker:MarketMaker"
markets = ["{cond}"]
params = {{ half_spread_ticks = 1 }}

[risk]
max_daily_loss = {DAILY_LOSS}

[metrics]
enabled = false

[log]
level = "info"

[journal]
path = "{journal}"
synchronous = "FULL"
"""


def start_bot(cfg: Path, env: dict, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bot.cli", "run", "--config", str(cfg)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=log.open("w"), text=True)


def journal_rows(path: Path, sql: str) -> list[tuple]:
    with closing(sqlite3.connect(path)) as db:  # closed: no handle outlives the read
        return db.execute(sql).fetchall()


def day_start(path: Path) -> DayStart | None:
    return Journal(path).restore().day_start


def clear_of_utc_midnight(margin_s: float = 120.0) -> None:
    """Start the test at least ``margin_s`` before UTC midnight (past it if need be), so every run
    below sees the same UTC day: the day's start is only resumed on the day it was written."""
    left = SECONDS_PER_DAY - time.time() % SECONDS_PER_DAY
    if left < margin_s:
        time.sleep(left + 1.0)


def stop_cleanly(p: subprocess.Popen, log: Path) -> str:
    """SIGTERM a running ``bot run``: it exits 0 with no traceback, its summary saying (as the demo's
    does) that the exchange lists none of its orders any more; returns its log."""
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=20)
    err = log.read_text()
    assert p.returncode == 0, out + err
    assert "Traceback" not in out + err
    assert "Run summary" in out and "open orders at the exchange: 0" in out, out
    return err


def test_kill_9_and_restart_keeps_state(tmp_path):
    clear_of_utc_midnight()
    today = utc_day(time.time())
    ex = start_exchange()
    procs: list[subprocess.Popen] = []
    try:
        acct = ex.demo_account
        other = ex.new_account(31)
        import httpx

        m = httpx.get(ex.urls.clob + "/markets").json()["data"][0]
        cond, yes = m["condition_id"], m["tokens"][0]["token_id"]
        journal = tmp_path / "journal.sqlite"
        cfg = tmp_path / "bot.toml"
        cfg.write_text(config_text(ex, cond, journal))
        env = dict(os.environ, BOT_PRIVATE_KEY=acct.private_key, BOT_API_KEY=acct.creds.apiKey,
                   BOT_API_SECRET=acct.creds.secret, BOT_API_PASSPHRASE=acct.creds.passphrase)
        p1 = start_bot(cfg, env, tmp_path / "run1.log")
        procs.append(p1)
        bids = wait_for(lambda: [o for o in ours_on(ex, yes) if o["side"] == "BUY"], 15, "the first run's bid")
        price = int(round(float(bids[0]["price"]) * 100)) * TICK
        assert counterparty_order(ex, other, yes, cond, Side.SELL, price, 500_000_000, OrderType.FAK)["success"]
        wait_for(lambda: journal_rows(journal, "SELECT COUNT(*) FROM fills")[0][0] >= 1, 10, "the fill journaled")
        wait_for(lambda: len(ours_on(ex, yes)) >= 2, 10, "requoted after the fill")
        p1.send_signal(signal.SIGKILL)
        p1.wait(timeout=10)
        started = day_start(journal)
        assert started is not None and started.day == today  # journaled by the first run
        fills_before = journal_rows(journal, "SELECT trade_id, order_id, size, reversed FROM fills ORDER BY seq")
        left = {o["id"] for o in open_orders(ex, acct)}
        assert left  # the killed run could not cancel anything

        log2 = tmp_path / "run2.log"
        p2 = start_bot(cfg, env, log2)
        procs.append(p2)
        wait_for(lambda: "journal_restored" in log2.read_text() and '"channel": "user"' in log2.read_text(), 15,
                 "the second run restored and streaming")
        # the second run knows the first run's orders from the journal: it keeps those that still
        # match its quotes (queue place) and replaces the others, without duplicates
        def settled():
            if p2.poll() is not None:
                raise AssertionError(log2.read_text()[-2000:])
            mine = open_orders(ex, acct)
            known = {r[0] for r in journal_rows(journal, "SELECT order_id FROM orders")}
            keys = [(o.get("asset_id") or o.get("assetId"), o["side"], o["price"]) for o in mine]
            return (len(mine) >= 2 and {o["id"] for o in mine} <= known and len(keys) == len(set(keys))
                    and journal_rows(journal, "SELECT COUNT(*) FROM orders WHERE state IN "
                                     "('UNKNOWN', 'PENDING_SUBMIT', 'PENDING_CANCEL')")[0][0] == 0)

        wait_for(settled, 15, "the second run quoting with the first run's orders reconciled")
        assert '"daily_pnl_resumed"' in log2.read_text()
        assert day_start(journal) == started  # the day goes on from where the first run began it
        assert journal_rows(journal, "SELECT trade_id, order_id, size, reversed FROM fills ORDER BY seq") \
            == fills_before  # nothing delivered twice, nothing lost
        err = stop_cleanly(p2, log2)
        assert open_orders(ex, acct) == []
        states = dict(journal_rows(journal, "SELECT order_id, state FROM orders"))
        assert all(states[i] in ("CANCELED", "FILLED") for i in left)  # closed in the journal too
        assert "daily_loss" not in err  # the second run stayed well within the day's limit

        # Earlier today the bot was 1,000,000 USDC up, and it has given nearly all of it back: as
        # journaled, the day is already far beyond max_daily_loss. A third run that restarted the
        # day at 0 would quote on; resuming the journaled day start, it halts and cancels.
        Journal(journal).day_start(DayStart(today, 1_000_000_000_000))
        orders_before = journal_rows(journal, "SELECT COUNT(*) FROM orders")[0][0]
        log3 = tmp_path / "run3.log"
        p3 = start_bot(cfg, env, log3)
        procs.append(p3)
        wait_for(lambda: '"risk_halt"' in log3.read_text() and '"daily_loss"' in log3.read_text(), 15,
                 "the third run halted on the daily loss")
        wait_for(lambda: open_orders(ex, acct) == [], 10, "the halt's cancel-all")
        stop_cleanly(p3, log3)
        assert open_orders(ex, acct) == []
        assert day_start(journal) == DayStart(today, 1_000_000_000_000)  # still today's start
        # judged at the venue's mids before its first quote, the third run never sent an order
        assert journal_rows(journal, "SELECT COUNT(*) FROM orders")[0][0] == orders_before
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        ex.stop()

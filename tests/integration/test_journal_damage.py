"""A damaged journal is never traded on: ``bot run`` on a file that is not SQLite, on a truncated
journal, or on one whose rows do not read back, exits 2 with one line saying so, before any order
is sent. A missing journal (a first run, or one moved aside) is rebuilt from the exchange before
quoting: the orders the exchange holds for the account are orphans, cancelled at start."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from bench.chaos import bot_env
from bot.execution.journal import Journal
from bot.execution.orders import OwnOrder
from bot.venue.enums import Side
from tests.integration.exchange_fixture import start_exchange, wait_for
from tests.integration.test_live_restart import config_text, stop_cleanly
from tests.integration.test_live_trading import TICK, counterparty_order, open_orders

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ex():
    e = start_exchange()
    try:
        yield e
    finally:
        e.stop()


def market(ex) -> tuple[str, str]:
    m = httpx.get(ex.urls.clob + "/markets").json()["data"][0]
    return m["condition_id"], m["tokens"][0]["token_id"]


def run_once(ex, tmp_path: Path, journal: Path) -> subprocess.CompletedProcess:
    cfg = tmp_path / "bot.toml"
    cfg.write_text(config_text(ex, market(ex)[0], journal))
    return subprocess.run([sys.executable, "-m", "bot.cli", "run", "--config", str(cfg), "--duration", "5"],
                          cwd=REPO, env=bot_env(ex.demo_account), capture_output=True, text=True, timeout=60)


def refused(ex, tmp_path: Path, journal: Path) -> str:
    before = len(ex.call(lambda: list(ex.exchange.state.engine.orders)))
    p = run_once(ex, tmp_path, journal)
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert f"journal {journal} is damaged" in lines[0] and "rebuilds its state from the exchange" in lines[0]
    assert len(ex.call(lambda: list(ex.exchange.state.engine.orders))) == before  # nothing was sent
    return lines[0]


def a_journal(path: Path, orders: int = 400) -> None:
    """A journal of many orders (several pages), checkpointed into its main file."""
    j = Journal(path)
    for i in range(orders):
        j.order(OwnOrder(f"0x{i:064x}", "123", Side.BUY, 500_000, 10_000_000, signed=None, sent_at=i, updated_at=i))
    j.commit()
    j.close()
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def test_a_file_that_is_not_sqlite_is_refused(ex, tmp_path):
    journal = tmp_path / "journal.sqlite"
    journal.write_bytes(os.urandom(8192))
    assert "file is not a database" in refused(ex, tmp_path, journal)


def test_a_truncated_journal_is_refused(ex, tmp_path):
    journal = tmp_path / "journal.sqlite"
    a_journal(journal)
    size = journal.stat().st_size
    assert size > 16_384
    with journal.open("r+b") as f:
        f.truncate(size // 2)
    refused(ex, tmp_path, journal)


def test_a_journal_whose_rows_do_not_read_back_is_refused(ex, tmp_path):
    journal = tmp_path / "journal.sqlite"
    a_journal(journal, orders=3)
    with sqlite3.connect(journal) as db:
        db.execute("UPDATE orders SET state = 'HALF_BAKED' WHERE rowid = 2")
    assert "HALF_BAKED" in refused(ex, tmp_path, journal)


def test_without_a_journal_the_exchange_s_open_orders_are_cancelled_before_quoting(ex, tmp_path):
    acct = ex.demo_account
    cond, yes = market(ex)
    # orders the account holds at the exchange from a run whose journal is gone
    left = [counterparty_order(ex, acct, yes, cond, Side.BUY, k * TICK, 5_000_000)["orderID"] for k in (2, 3)]
    assert {o["id"] for o in open_orders(ex, acct)} >= set(left)
    journal = tmp_path / "fresh.sqlite"
    cfg = tmp_path / "bot.toml"
    cfg.write_text(config_text(ex, cond, journal) + "\n[shell]\norders_sync_s = 0\n")  # no periodic listing
    log = tmp_path / "run.log"
    p = subprocess.Popen([sys.executable, "-m", "bot.cli", "run", "--config", str(cfg)], cwd=REPO,
                         env=bot_env(acct), stdout=subprocess.PIPE, stderr=log.open("w"), text=True)
    try:
        wait_for(lambda: not set(left) & {o["id"] for o in open_orders(ex, acct)}, 20,
                 "the exchange's leftovers cancelled")
        assert '"journal_empty_venue_orders"' in log.read_text()
        assert '"open_orders": 2' in log.read_text()
        stop_cleanly(p, log)
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait()

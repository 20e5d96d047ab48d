"""The journal answers to the venue, and to one process at a time.

- silent damage (a journaled fill whose size, price, side or order id is wrong, which SQLite's
  integrity check cannot see) is repaired at restart from the venue's record of the trade;
- a journal that lost its WAL (its tail) reads the lost fills again from ``/data/trades``;
- a journal that cannot be written while trading (a full disk) halts quoting and stops with every
  order cancelled, exit 1 and one line; an immutable journal is one line and exit 2;
- a second ``bot run`` on a journal in use, or a ``bot backtest`` on a results folder in use, is
  one line naming the holder's pid and exit 2, before any request.
"""

from __future__ import annotations

import os
import shutil
from contextlib import closing
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bench.chaos import bot_env
from bot.execution.exclusive import Exclusive
from bot.execution.journal import Journal
from bot.venue.enums import OrderType, Side
from tests.integration.exchange_fixture import start_exchange, wait_for
from tests.integration.test_journal_damage import market
from tests.integration.test_live_restart import config_text, journal_rows, start_bot, stop_cleanly
from tests.integration.test_live_trading import TICK, counterparty_order, open_orders, ours_on

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
FILL_COLUMNS = "trade_id, order_id, token_id, side, price, size, fee, is_maker"


@pytest.fixture
def ex():  # one exchange per test: trading into the bot's bids thins a market's book for the next
    e = start_exchange()
    try:
        yield e
    finally:
        e.stop()


def fills_of(journal: Path) -> list[tuple]:
    return journal_rows(journal, f"SELECT {FILL_COLUMNS} FROM fills ORDER BY seq")


def fill_our_bid(ex, other, journal: Path, count: int = 1) -> None:
    """``count`` times: the counterparty sells into our resting bid; each fill journaled."""
    cond, yes = market(ex)
    for _ in range(count):
        bids = wait_for(lambda: [o for o in ours_on(ex, yes) if o["side"] == "BUY"], 15, "our bid")
        before = len(fills_of(journal))  # the journal exists once the bot quotes
        price = int(round(float(bids[0]["price"]) * 100)) * TICK
        assert counterparty_order(ex, other, yes, cond, Side.SELL, price, 500_000_000, OrderType.FAK)["success"]
        wait_for(lambda: len(fills_of(journal)) > before, 10, "the fill journaled")


def changed(cond, seconds: float) -> bool:
    """``cond()`` polled until true or ``seconds`` pass (a pace for a loop, not an assertion)."""
    try:
        wait_for(cond, seconds, "a change")
        return True
    except AssertionError:
        return False


def run_for(ex, cfg: Path, seconds: float = 6.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot.cli", "run", "--config", str(cfg), "--duration", str(seconds)],
                          cwd=REPO, env=bot_env(ex.demo_account), capture_output=True, text=True, timeout=90)


def setup_run(ex, tmp_path: Path, extra: str = "") -> tuple[Path, Path]:
    journal = tmp_path / "journal.sqlite"
    cfg = tmp_path / "bot.toml"
    cfg.write_text(config_text(ex, market(ex)[0], journal) + extra)
    return journal, cfg


def test_silent_damage_of_each_kind_is_repaired_from_the_venue_on_restart(ex, tmp_path):
    journal, cfg = setup_run(ex, tmp_path)
    log = tmp_path / "run1.log"
    p = start_bot(cfg, bot_env(ex.demo_account), log)
    try:
        fill_our_bid(ex, ex.new_account(41), journal, count=4)
        stop_cleanly(p, log)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    true = fills_of(journal)
    assert len(true) >= 4
    # flipped bits, each in a different fill; SQLite's own check still says ok
    with closing(sqlite3.connect(journal)) as db, db:
        rows = db.execute("SELECT rowid, order_id, side, price, size FROM fills ORDER BY seq LIMIT 4").fetchall()
        (r0, _, _, _, size), (r1, _, _, price, _), (r2, _, side, _, _), (r3, oid, _, _, _) = rows
        db.execute("UPDATE fills SET size = ? WHERE rowid = ?", (size ^ (1 << 20), r0))
        db.execute("UPDATE fills SET price = ? WHERE rowid = ?", (price ^ (1 << 13), r1))
        db.execute("UPDATE fills SET side = ? WHERE rowid = ?", ("SELL" if side == "BUY" else "BUY", r2))
        flipped = oid[:-1] + ("0" if oid[-1] != "0" else "1")
        db.execute("UPDATE fills SET order_id = ? WHERE rowid = ?", (flipped, r3))
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert fills_of(journal) != true

    done = run_for(ex, cfg)
    assert done.returncode == 0, done.stdout + done.stderr
    repaired = [line for line in done.stderr.splitlines() if '"journal_fill_repaired"' in line]
    kinds = sorted(k for k in ("size", "price", "side", "order_id") if any(f'"{k}"' in line for line in repaired))
    assert len(repaired) == 4 and kinds == ["order_id", "price", "side", "size"], repaired
    assert "journal repaired from the venue's trades: 4 fills" in done.stdout, done.stdout
    assert fills_of(journal)[:len(true)] == true  # every field as the venue recorded it
    assert open_orders(ex, ex.demo_account) == []


def test_a_journal_that_lost_its_wal_reads_the_lost_fills_again(ex, tmp_path):
    journal, cfg = setup_run(ex, tmp_path)
    other = ex.new_account(42)
    log1 = tmp_path / "run1.log"
    p1 = start_bot(cfg, bot_env(ex.demo_account), log1)
    p2 = None
    try:
        fill_our_bid(ex, other, journal)
        stop_cleanly(p1, log1)  # closed: everything so far is in the main file
        durable = tmp_path / "durable.sqlite"
        p2 = start_bot(cfg, bot_env(ex.demo_account), tmp_path / "run2.log")
        fill_our_bid(ex, other, journal, count=3)
        p2.send_signal(signal.SIGKILL)
        p2.wait(timeout=10)
        shutil.copyfile(journal, durable)  # the main file alone: what survives losing the WAL
        seen = {r[:2] for r in fills_of(journal)}  # read through the WAL
    finally:
        for p in (p1, p2):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    for suffix in ("-wal", "-shm"):
        Path(f"{journal}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(durable, journal)
    kept = {r[:2] for r in fills_of(journal)}
    assert kept < seen and len(seen - kept) >= 3  # the WAL held fills the main file does not

    done = run_for(ex, cfg)
    assert done.returncode == 0, done.stdout + done.stderr
    assert {r[:2] for r in fills_of(journal)} >= seen  # every fill read again from the venue
    assert '"journal_orders_rebuilt"' in done.stderr
    assert open_orders(ex, ex.demo_account) == []


def test_a_full_disk_while_trading_halts_cancels_everything_and_stops(ex, tmp_path):
    journal, _ = setup_run(ex, tmp_path)
    Journal(journal).close()  # the schema, so the bound below leaves room for a few turns only
    room = journal.stat().st_size + 6 * 4096
    journal, cfg = setup_run(ex, tmp_path, f"max_bytes = {room}\n")
    log = tmp_path / "run.log"
    p = start_bot(cfg, bot_env(ex.demo_account), log)
    other = ex.new_account(43)
    cond, yes = market(ex)
    try:
        rested = len(wait_for(lambda: ours_on(ex, yes), 15, "the bot quoting"))
        for _ in range(60):  # trade with it (each fill and requote is journaled) until its journal is full
            if p.poll() is not None:
                break
            bids = [o for o in ours_on(ex, yes) if o["side"] == "BUY"]
            if bids:
                price = int(round(float(bids[0]["price"]) * 100)) * TICK
                counterparty_order(ex, other, yes, cond, Side.SELL, price, 500_000_000, OrderType.FAK)
            n = len(fills_of(journal))
            changed(lambda: p.poll() is not None or len(fills_of(journal)) > n or ours_on(ex, yes) != bids, 5)
        out, _ = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    err = log.read_text()
    assert rested > 0  # it was quoting when the disk filled
    assert p.returncode == 1, out + err
    assert "Traceback" not in out + err
    assert '"journal_write_failed"' in err and "could not be written" in err
    assert open_orders(ex, ex.demo_account) == []  # the stop cancelled: nothing waits for the heartbeat


def test_an_immutable_journal_is_one_line_and_exit_2(ex, tmp_path):
    journal, cfg = setup_run(ex, tmp_path)
    Journal(journal).close()
    if subprocess.run(["chattr", "+i", str(journal)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        done = run_for(ex, cfg, 3)
    finally:
        subprocess.run(["chattr", "-i", str(journal)], capture_output=True)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot be written" in lines[0] and "internal error" not in lines[0], lines


def test_a_second_run_on_a_journal_in_use_is_refused_naming_the_holder(ex, tmp_path):
    journal, cfg = setup_run(ex, tmp_path)
    log = tmp_path / "run1.log"
    p = start_bot(cfg, bot_env(ex.demo_account), log)
    try:
        cond, yes = market(ex)
        wait_for(lambda: ours_on(ex, yes), 15, "the first run quoting")
        second = run_for(ex, cfg, 3)
        assert second.returncode == 2, second.stdout + second.stderr
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and f"in use by process {p.pid}" in lines[0], lines
        assert ours_on(ex, yes)  # the first run's orders are untouched (no orphan cancel from the second)
        stop_cleanly(p, log)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    # once the holder is gone the journal is free again (the lock dies with its process)
    again = run_for(ex, cfg, 2)
    assert again.returncode == 0, again.stdout + again.stderr


def test_a_backtest_on_a_results_folder_in_use_is_refused(tmp_path):
    out = tmp_path / "results"
    held = Exclusive(out, "results folder", inside=True)
    try:
        done = subprocess.run([sys.executable, "-m", "bot.cli", "backtest", "--config", "config/bot.example.toml",
                               "--no-progress", "--synthetic", "--out", str(out)],
                              cwd=REPO, capture_output=True, text=True, timeout=120)
    finally:
        held.release()
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"in use by process {os.getpid()}" in lines[0], lines
    assert [p.name for p in out.iterdir()] == [".lock"]  # nothing was written


def test_a_stop_that_could_not_cancel_exits_non_zero(tmp_path):
    own = start_exchange()
    try:
        journal, cfg = setup_run(own, tmp_path)
        cfg.write_text(cfg.read_text() + "\n[shell]\nstop_timeout_s = 2.0\n")
        log = tmp_path / "run.log"
        p = start_bot(cfg, bot_env(own.demo_account), log)
        try:
            wait_for(lambda: ours_on(own, market(own)[1]), 15, "the bot quoting")
        except BaseException:
            p.kill()
            p.wait()
            raise
    finally:
        own.stop()  # the exchange is gone: the stop's cancel-all cannot be answered
    try:
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    err = log.read_text()
    assert p.returncode == 1, err[-2000:]
    assert "Traceback" not in err
    assert '"stop_cancel_incomplete"' in err and "the stop could not cancel every order" in err

"""``bot run`` killed with SIGKILL fifty times over in one run, on one journal, against one exchange
whose synthetic traders keep trading with it; after each restart the audit is clean.

Kill points, in turn: a POST /orders written to the socket and not yet read by the exchange (the
orders reach the book after the bot is dead); a POST /orders processed, its answer held; a DELETE
/orders processed, its answer held; a random moment while quoting; a random moment while the bot
starts (restoring its journal). The exchange holds the request (``bot.exchange.app.Hold``), so
the in-flight kills are deterministic. Each bot is a fork of a server that imported everything
once (``tests.integration.forked_bot``): a real process, killed for real, that starts in a blink.

After each restart, once the bot quotes, the audit (``bench.audit``) must hold at one instant:
nothing live at the exchange that the bot does not count as working, no two live orders at one
token, side and price, every fill of the exchange booked once, positions and cash equal. A last run
stops with SIGTERM and leaves nothing open.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.audit import audit_books, duplicate_groups, journal_states, journal_view, untracked
from bench.chaos import bot_env
from bot.exchange.config import FaultConfig, ServerFlowConfig
from tests.integration.exchange_fixture import start_exchange, wait_for

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
KILLS = 50

CONFIG = """
{venue}
[strategy]
path = "strategies.market_maker:MarketMaker"
params = {{ half_spread_ticks = 1, order_size = 10, max_inventory = 60 }}

[reconciler]
orphan_policy = "cancel"

[shell]
orders_sync_s = 1.0
trades_poll_s = 1.0
stop_timeout_s = 10.0

[metrics]
enabled = false

[log]
level = "info"

[journal]
path = "{journal}"
synchronous = "NORMAL"
"""


class ForkServer:
    """``tests.integration.forked_bot`` as a child process: ``start(config, log)`` gives a bot's pid."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.integration.forked_bot"], cwd=REPO, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def start(self, config: Path, log: Path) -> int:
        self.proc.stdin.write(f"{config} {log}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line.strip().isdigit(), f"fork server: {line!r}"
        return int(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def read(log: Path) -> str:
    """A bot's log so far ("" before the bot has opened it)."""
    try:
        return log.read_text()
    except FileNotFoundError:
        return ""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not alive(pid), 10, "the killed bot gone")


class Audit:
    """The bot's journal against the exchange's books, read on the exchange's thread."""

    def __init__(self, ex, journal: Path) -> None:
        self.ex = ex
        self.journal = journal
        self.engine = ex.exchange.state.engine
        self.holder = ex.demo_account.address
        self.start = ex.call(self.engine.balance, self.holder)
        self.last: list[str] = []

    def problems(self) -> list[str]:
        def read():
            live = self.engine.open_orders(by=self.holder)
            asked_at = time.time()
            lost = untracked([o.id for o in live], journal_view(self.journal), asked_at)
            dup = duplicate_groups(((o.asset_id, o.side.value, o.price, o.id) for o in live),
                                   journal_states(self.journal))
            books = audit_books(self.engine, self.holder, self.start, self.journal)
            return live, lost, dup, books

        try:
            live, lost, dup, books = self.ex.call(read)
        except sqlite3.Error as exc:  # the journal is being created
            return [f"journal unreadable: {exc}"]
        out = books.errors()
        if lost:
            out.append(f"{len(lost)} orders live at the exchange, not working in the bot")
        if dup:
            out.append(f"duplicate orders {dup}")
        if not live:
            out.append("no quotes yet")
        return out

    def clean(self) -> bool:
        self.last = self.problems()
        return not self.last

    def wait_clean(self, pid: int, log: Path, what: str) -> None:
        def ok() -> bool:
            if not alive(pid):
                raise AssertionError(f"{what}: the bot exited\n{read(log)[-3000:]}")
            if '"channel": "user"' not in read(log):  # restored, streaming: trading
                self.last = ["not streaming yet"]
                return False
            return self.clean()

        try:
            wait_for(ok, 30, what, interval=0.05)
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {self.last}\n{read(log)[-2000:]}") from None


def held_kill(ex, pid: int, method: str, path: str, when: str) -> None:
    """SIGKILL the bot while its next ``method path`` request is held at the exchange, ``before``
    it is read or ``after`` it is processed; then let the request go on, and wait until it is done."""
    h = ex.hold(method, path, when)
    try:
        wait_for(h.held, 20, f"a {method} {path} held {when} processing", interval=0.01)
        kill(pid)
    finally:
        h.release()
    wait_for(h.done, 10, f"the held {method} {path} done")


@pytest.mark.timeout(300)  # 40-90 s on two idle cores; the machine may be shared
def test_fifty_sigkills_each_restart_audits_clean(tmp_path):
    ex = start_exchange(markets=2, extra_markets=(), accounts=(), neg_risk_events=0,
                        flow=ServerFlowConfig(enabled=True, speed=3.0),
                        faults=FaultConfig(latency_ms_min=1.0, latency_ms_max=30.0, seed=5))
    journal = tmp_path / "journal.sqlite"
    cfg = tmp_path / "bot.toml"
    cfg.write_text(CONFIG.format(venue=ex.urls.venue_toml(), journal=journal))
    server = ForkServer(bot_env(ex.demo_account))
    rng = random.Random(13)
    pids: list[int] = []
    audit = Audit(ex, journal)
    kinds: dict[str, int] = {}
    try:
        for k in range(KILLS):
            log = tmp_path / f"run{k}.log"
            pid = server.start(cfg, log)
            pids.append(pid)
            kind = ("post-before", "post-after", "delete-after", "quoting", "starting")[k % 5]
            kinds[kind] = kinds.get(kind, 0) + 1
            if kind == "starting":  # killed while it restores and reconciles; the next run audits
                time.sleep(rng.uniform(0.0, 0.4))
                kill(pid)
                continue
            audit.wait_clean(pid, log, f"run {k}: the audit clean after the restart")
            if kind == "post-before":
                held_kill(ex, pid, "POST", "/orders", "before")
            elif kind == "post-after":
                held_kill(ex, pid, "POST", "/orders", "after")
            elif kind == "delete-after":
                held_kill(ex, pid, "DELETE", "/orders", "after")
            else:
                time.sleep(rng.uniform(0.0, 0.5))
                kill(pid)
        # the last run finds the last kill's leftovers, then stops cleanly, leaving nothing open
        log = tmp_path / "last.log"
        pid = server.start(cfg, log)
        pids.append(pid)
        audit.wait_clean(pid, log, "the last run's audit clean")
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not alive(pid), 20, "the last run stopped")
        text = read(log)
        assert "Traceback" not in text and "open orders at the exchange: 0" in text, text[-2000:]
        assert ex.call(ex.exchange.state.engine.open_orders, ex.demo_account.address) == []
        wait_for(lambda: not audit.problems()[:-1], 10, "the final audit clean")  # (no quotes now: expected)
        assert audit.problems() == ["no quotes yet"], audit.problems()
        assert kinds["post-before"] + kinds["post-after"] + kinds["delete-after"] >= 30
        fills = ex.call(lambda: audit_books(audit.engine, audit.holder, audit.start, journal).fills)
        assert fills >= 1  # the traders did trade with the bot across the kills
    finally:
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        server.close()
        ex.stop()

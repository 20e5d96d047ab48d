"""``bot run --paper`` against the local exchange: live books over real sockets, every order
filled by the simulated venue, none sent to the exchange, and no key or credential needed."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bot.exchange.config import ServerFlowConfig
from tests.integration.exchange_fixture import start_exchange

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def config_text(ex, cond: str, journal: Path) -> str:
    u = ex.urls
    return f"""
{u.venue_toml()}
[strategy]
path = "strategies.market_maker:MarketMaker"
markets = ["{cond}"]
params = {{ half_spread_ticks = 1, order_size = 20 }}

[sim]
collateral = 1000
holdings = 200

[metrics]
enabled = false

[journal]
path = "{journal}"
"""


def orders_not_from_the_flow(ex) -> set[str]:
    def read():
        return {oid for oid, o in ex.exchange.state.engine.orders.items() if not o.account.startswith("flow")}

    return ex.call(read)


def paper_config(ex, tmp_path: Path) -> Path:
    """A paper config of the exchange's first market, its journal in ``tmp_path``."""
    cfg = tmp_path / "bot.toml"
    cfg.write_text(config_text(ex, ex.exchange.state.catalog.markets[0].condition_id, tmp_path / "journal.sqlite"))
    return cfg


def test_paper_trading_fills_on_live_books_and_sends_nothing(tmp_path: Path):
    ex = start_exchange(flow=ServerFlowConfig(enabled=True, speed=30.0))
    try:
        cfg = paper_config(ex, tmp_path)
        before = orders_not_from_the_flow(ex)
        env = {k: v for k, v in os.environ.items() if not k.startswith("BOT_")}  # no key, no credentials
        proc = subprocess.run([sys.executable, "-m", "bot.cli", "run", "--paper", "--config", str(cfg),
                               "--duration", "8"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert "paper trading: no order was sent" in proc.stdout
        assert orders_not_from_the_flow(ex) == before  # the exchange never received an order of ours
        paper = tmp_path / "journal.paper.sqlite"
        with sqlite3.connect(paper) as db:
            sent = db.execute("SELECT count(*) FROM orders").fetchone()[0]
            fills = db.execute("SELECT count(*) FROM fills").fetchone()[0]
        assert sent > 0 and fills > 0, (sent, fills)
        assert not (tmp_path / "journal.sqlite").exists()  # the live journal is left alone
    finally:
        ex.stop()


def _on_a_terminal(args: list[str], env: dict[str, str], timeout: float = 60.0) -> str:
    """What ``bot`` writes when its output is a terminal (a pseudo-terminal read to its end)."""
    import pty
    import select
    import time

    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", *args], cwd=REPO, env=env, stdin=child, stdout=child,
                            stderr=child, close_fds=True)
    os.close(child)
    out = b""
    end = time.monotonic() + timeout
    try:
        while time.monotonic() < end:
            ready, _, _ = select.select([main], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(main, 65536)
                except OSError:  # the child closed the terminal: nothing more to read
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        assert proc.wait(timeout=max(1.0, end - time.monotonic())) == 0, out.decode(errors="replace")[-2000:]
    finally:
        os.close(main)
        if proc.poll() is None:
            proc.kill()
    return out.decode(errors="replace")


def test_a_run_on_a_terminal_shows_the_live_view_and_json_logs_when_asked(tmp_path: Path):
    ex = start_exchange(flow=ServerFlowConfig(enabled=True, speed=30.0))
    try:
        cfg = paper_config(ex, tmp_path)
        env = {k: v for k, v in os.environ.items() if not k.startswith("BOT_")} | {"COLUMNS": "100", "TERM": "xterm"}
        shown = _on_a_terminal(["run", "--paper", "--config", str(cfg), "--duration", "2"], env)
        assert "Books and our quotes" in shown and "paper trading: no order was sent" in shown
        plain = _on_a_terminal(["run", "--paper", "--config", str(cfg), "--duration", "2", "--log-format", "json"], env)
        assert "Books and our quotes" not in plain and "paper trading: no order was sent" in plain
    finally:
        ex.stop()

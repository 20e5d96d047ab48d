"""``bot demo`` end to end: a real process, the in-process exchange, real sockets."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def figure(text: str, name: str) -> str:
    m = re.search(rf"{re.escape(name)}\s*│\s*([^│]+?)\s*│", text)
    assert m, f"no {name!r} row in:\n{text}"
    return m.group(1)


def test_demo_runs_for_its_duration_and_ends_clean():
    proc = subprocess.run(
        [sys.executable, "-m", "bot.live.demo", "--duration", "4", "--no-view", "--metrics-port", "0", "--seed", "3"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    out = proc.stdout
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in out + proc.stderr
    assert "Run summary" in out
    assert int(figure(out, "orders sent")) > 0
    assert int(figure(out, "orders accepted")) > 0
    assert int(figure(out, "orders rejected")) == 0
    assert figure(out, "final state") == "ACTIVE"
    assert "open orders at the exchange: 0" in out
    assert "state=ACTIVE" in out  # periodic plain lines when stdout is not a terminal
    # where its holdings come from, and the total PnL: realized + unrealized - fees, to the micro-unit
    assert "the exchange's demo account, funded at the start with 100000 USDC and 1000 shares of every token" in out
    units = {k: round(float(figure(out, f"│ {k}")) * 1_000_000) for k in
             ("realized PnL (USDC)", "unrealized PnL (USDC)", "fees (USDC)", "total PnL after fees (USDC)")}
    assert abs(units["total PnL after fees (USDC)"] - (units["realized PnL (USDC)"] + units["unrealized PnL (USDC)"]
                                                       - units["fees (USDC)"])) <= 200  # each shown to 4 decimals
    assert re.search(r"pnl=-?[0-9]+\.[0-9]{4}", out)


def test_demo_paper_trades_the_exchanges_books_without_sending():
    proc = subprocess.run(
        [sys.executable, "-m", "bot.live.demo", "--paper", "--duration", "4", "--no-view", "--metrics-port", "0"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    out = proc.stdout
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "paper trading" in out.splitlines()[0]
    assert int(figure(out, "orders sent")) > 0 and figure(out, "final state") == "ACTIVE"
    assert "paper trading: no order was sent" in out

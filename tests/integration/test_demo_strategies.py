"""``bot demo --strategy NAME`` for every shipped strategy: a real process, the in-process local
exchange, real sockets; each exits 0 having sent orders and cancelled them all, and what it
estimates is in its summary (and, for Avellaneda-Stoikov, scraped from its Prometheus endpoint
while it runs)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.integration.test_live_demo import figure
from tests.services import free_port

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def demo(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot.live.demo", "--strategy", name, "--duration", "3", "--no-view",
                           "--seed", "3", *args], cwd=REPO, capture_output=True, text=True, timeout=60)


def ran(proc: subprocess.CompletedProcess, name: str) -> str:
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "Traceback" not in out + proc.stderr
    assert out.splitlines()[0].startswith(f"demo: {name} on ")
    assert int(figure(out, "orders sent")) > 0
    assert "open orders at the exchange: 0" in out
    return out


def estimate(out: str, name: str) -> list[float]:
    return [float(v) for v in re.findall(rf"estimate {re.escape(name)} \(…\w+\)\s*│\s*([-\d.e+]+)\s*│", out)]


@pytest.mark.parametrize("name", ["bands", "glft"])
def test_market_makers_run_in_the_demo(name: str):
    out = ran(demo(name, "--metrics-port", "0"), name)
    assert figure(out, "final state") == "ACTIVE"
    if name == "glft":
        assert len(estimate(out, "sigma")) == 2 and all(v > 0 for v in estimate(out, "half_spread"))



def test_avellaneda_stoikov_exports_its_estimates_while_it_runs():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "bot.live.demo", "--strategy", "avellaneda-stoikov",
                             "--duration", "4", "--no-view", "--seed", "3", "--metrics-port", str(port)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    body = ""
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and 'name="sigma"' not in body:
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
            except OSError:
                pass
            if 'name="sigma"' not in body:
                time.sleep(0.1)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert re.search(r'bot_strategy_estimate\{name="sigma",strategy="AvellanedaStoikov",token="\w+"\} [\d.e-]+', body)
    assert 'name="time_left_s"' in body and 'name="k"' in body
    ran(subprocess.CompletedProcess(proc.args, proc.returncode, out, err), "avellaneda-stoikov")
    assert len(estimate(out, "spread")) == 2


def test_rewards_option_estimates_the_reward_it_earned():
    out = ran(demo("rewards", "--metrics-port", "0"), "rewards")
    earned = estimate(out, "reward_earned_usdc")
    assert len(earned) == 2 and all(v > 0 for v in earned)


def test_complement_arbitrage_trades_the_exchanges_mispriced_neg_risk_event():
    """The local exchange's neg-risk event keeps its outcomes' YES mids near 1 in sum, and opens a
    window now and then where a whole set is mispriced (its providers' quotes dislocate, about a
    tenth of the time); the demo runs its traders 10x faster, and the demo account (which holds
    every token) trades whole sets in one. Seed 3's first window opens 41 s into the flow (4.1 s
    at 10x); 12 s leave room for the next one when a busy machine slows the bot's start."""
    out = ran(demo("complement-arbitrage", "--metrics-port", "0", "--duration", "12"), "complement-arbitrage")
    assert "(its synthetic traders 10x faster)" in out.splitlines()[0]
    assert sum(estimate(out, "sets")) >= 1 and int(figure(out, "fills")) >= 3


def test_an_unknown_strategy_is_one_line_and_exit_2():
    proc = subprocess.run([sys.executable, "-m", "bot.cli", "demo", "--strategy", "nope"], cwd=REPO,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "bands" in proc.stderr

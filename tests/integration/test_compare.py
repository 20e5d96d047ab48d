"""``bot compare``: a live session of the market maker against the local exchange, recorded, then
backtested with our live orders taken out of the recorded books and aligned with the session.
With a latency model like the session's the fills agree within a stated share; with a
deliberately wrong one the comparison names latency as the cause."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from bot.backtest.compare import backtest_session, compare_runs
from bot.backtest.replay import recorded
from bot.results.read import read_journal
from bot.exchange.config import ServerFlowConfig
from bot.execution.journal import Journal
from bot.ops.config import decode_bot_config
from bot.sim.latency import LatencyConfig
from strategies.market_maker import MarketMaker
from tests.integration.exchange_fixture import start_exchange, wait_for
from tests.integration.recorder_fixture import REPO, recording
from tests.integration.test_live_trading import running_bot

pytestmark = pytest.mark.integration

PARAMS = {"half_spread_ticks": 1, "skew_ticks": 0, "order_size": 10, "max_inventory": 10_000}
AGREEMENT = 0.4  # the stated tolerance: at least 40% of all fills in common (seen: 54-86%)


def config_text(ex, cond: str) -> str:
    u = ex.urls
    params = ", ".join(f"{k} = {v}" for k, v in PARAMS.items())
    return f"""
{u.venue_toml()}[strategy]
path = "strategies.market_maker:MarketMaker"
markets = ["{cond}"]
params = {{ {params} }}
[sim]
holdings = 1000
[sim.latency]
entry = 0.002
response = 0.002
[sim.queue]
kind = "prob"
[risk]
max_orders_per_window = 200
"""


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("session")
    ex = start_exchange(flow=ServerFlowConfig(enabled=True, speed=10.0))
    try:
        with running_bot(ex) as probe:
            cond = probe.markets[0].condition_id
        cfg = tmp / "bot.toml"
        cfg.write_text(config_text(ex, cond))
        journal = Journal(str(tmp / "live.sqlite"), synchronous="NORMAL")
        try:
            with recording(cfg, cond, tmp / "rec", duration_s=40, log=tmp / "rec.log") as rec:
                with running_bot(ex, strategy=MarketMaker(PARAMS), journal=journal) as bot:
                    wait_for(lambda: bot.read(lambda: bot.engine.stats.fills) >= 30, deadline_s=45, what="live fills")
        finally:
            journal.close()
        yield decode_bot_config(cfg.read_text()), tmp / "live.sqlite", rec, cfg
    finally:
        ex.stop()


def test_with_the_sessions_latency_the_fills_agree(session, tmp_path):
    config, journal, rec, _ = session
    live = read_journal(journal, recording=recorded([rec]))
    backtest = backtest_session(config, [rec], live, tmp_path / "bt", seed=1)
    c = compare_runs(live, backtest)
    assert c.live_fills >= 30 and c.paired_orders > 0
    assert c.agreement >= AGREEMENT, (c.agreement, c.cause_counts())


def test_a_wrong_latency_model_is_named_as_the_cause(session, tmp_path):
    config, journal, rec, _ = session
    # 0.75 s each way against the session's 2 ms: wrong by far, yet a round trip (1.5 s) inside
    # the session, whose fills may all come in its first 3 s (with 1.5 s each way the slow run
    # then had no order on that side on the wire, and its misses read as "quotes": 1 run in 8)
    slow = msgspec.structs.replace(config, sim=msgspec.structs.replace(
        config.sim, latency=LatencyConfig(entry=0.75, response=0.75)))
    live = read_journal(journal, recording=recorded([rec]))
    c = compare_runs(live, backtest_session(slow, [rec], live, tmp_path / "bt", seed=1))
    good = compare_runs(live, backtest_session(config, [rec], live, tmp_path / "bt2", seed=1))
    assert c.agreement < good.agreement
    assert c.main_cause == "latency", (c.cause_counts(), good.cause_counts())


def test_the_command_prints_the_table_and_writes_the_report(session, tmp_path):
    _, journal, rec, cfg = session
    proc = subprocess.run([sys.executable, "-m", "bot.cli", "compare", "--config", str(cfg), "--journal", str(journal),
                           "--recording", str(rec), "--out", str(tmp_path / "cmp")],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "fill agreement" in proc.stdout and "main cause" in proc.stdout
    page = (tmp_path / "cmp" / "report.html").read_text()
    assert "Backtest against live" in page and 'id="compare-table"' in page


def test_a_recording_of_another_time_is_refused_with_the_missing_span(session, tmp_path):
    _, journal, _, cfg = session
    proc = subprocess.run([sys.executable, "-m", "bot.cli", "compare", "--config", str(cfg), "--journal", str(journal),
                           "--recording", str(REPO / "data" / "sample"), "--out", str(tmp_path / "cmp")],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("bot compare: the recording (") and "does not cover the session" in line and "missing" in line
    assert not (tmp_path / "cmp" / "report.html").exists()

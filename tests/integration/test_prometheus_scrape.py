"""A real Prometheus (Debian's package) scrapes a ``bot run`` trading on the local exchange, with
deploy/'s alert and recording rules: through Prometheus's HTTP API the bot's series exist and
move, and every rule loads and evaluates."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from bot.exchange.config import ServerFlowConfig
from tests.integration.exchange_fixture import start_exchange, wait_for
from tests.services import DEPLOY, free_port, prometheus, wait_port

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SERIES = (
    'up{job="pmbot"}', "bot_mode", "bot_trading_state", "bot_orders_submitted_total", "bot_throttle_tokens",
    "bot_http_request_seconds_bucket", "bot_stream_connected", "bot_book_staleness_seconds", "bot_position_shares",
    "bot_risk_limit", "bot_daily_pnl_usdc", "bot_shared_throttle_up", "bot_heartbeats_total",
)


def bot_config(ex, metrics_port: int, journal: Path) -> str:
    u = ex.urls
    return f"""
{u.venue_toml()}
[strategy]
path = "strategies.market_maker:MarketMaker"
params = {{ half_spread_ticks = 1, order_size = 5 }}

[risk]
stale_halt_s = "off"
max_daily_loss = 1000

[shell]
heartbeat_interval_s = 1.0

[metrics]
port = {metrics_port}

[journal]
path = "{journal}"
"""


def prometheus_config(metrics_port: int) -> str:
    rules = "\n".join(f"  - {DEPLOY / 'rules' / f}" for f in ("recording.yml", "alerts.yml"))
    return f"""
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
{rules}
scrape_configs:
  - job_name: pmbot
    static_configs:
      - targets: ["127.0.0.1:{metrics_port}"]
"""


class Api:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}/api/v1/"

    def ready(self) -> bool:
        try:
            return urllib.request.urlopen(self.base.replace("api/v1/", "-/ready"), timeout=5).status == 200
        except OSError:  # 503 while it starts
            return False

    def get(self, path: str, **params: str):
        url = self.base + path + ("?" + urllib.parse.urlencode(params) if params else "")
        body = json.loads(urllib.request.urlopen(url, timeout=5).read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict]:
        return self.get("query", query=expr)["result"]

    def value(self, expr: str) -> float | None:
        result = self.query(expr)
        return float(result[0]["value"][1]) if result else None


def test_prometheus_scrapes_a_trading_bot_and_evaluates_the_rules(tmp_path):
    binary = prometheus()
    ex = start_exchange(flow=ServerFlowConfig(enabled=True, interval_s=0.1, speed=10.0))
    procs: list[subprocess.Popen] = []
    try:
        metrics_port, prom_port = free_port(), free_port()
        cfg = tmp_path / "bot.toml"
        cfg.write_text(bot_config(ex, metrics_port, tmp_path / "journal.sqlite"))
        acct = ex.demo_account
        env = dict(os.environ, BOT_PRIVATE_KEY=acct.private_key, BOT_API_KEY=acct.creds.apiKey,
                   BOT_API_SECRET=acct.creds.secret, BOT_API_PASSPHRASE=acct.creds.passphrase)
        log = tmp_path / "bot.log"
        bot = subprocess.Popen([sys.executable, "-m", "bot.cli", "run", "--config", str(cfg)], cwd=REPO, env=env,
                               stdout=subprocess.PIPE, stderr=log.open("w"), text=True)
        procs.append(bot)
        prom_cfg = tmp_path / "prometheus.yml"
        prom_cfg.write_text(prometheus_config(metrics_port))
        prom = subprocess.Popen(
            [binary, f"--config.file={prom_cfg}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{prom_port}"],
            stdout=subprocess.DEVNULL, stderr=(tmp_path / "prometheus.log").open("w"))
        procs.append(prom)
        wait_port(prom_port, 30, prom)
        api = Api(prom_port)
        wait_for(lambda: api.ready(), 30, "Prometheus ready", 0.2)

        def all_series() -> bool:
            return all(api.query(s) for s in SERIES) and api.value('up{job="pmbot"}') == 1.0

        wait_for(all_series, 60, "every series scraped", 0.5)
        first = api.value("sum(bot_orders_submitted_total)")
        heartbeats = api.value('sum(bot_heartbeats_total{outcome="ok"})')
        wait_for(lambda: api.value("sum(bot_orders_submitted_total)") > first
                 and api.value('sum(bot_heartbeats_total{outcome="ok"})') > heartbeats, 30, "the series moving", 0.5)
        # the recording rules produce series from the scraped ones
        wait_for(lambda: api.query("pmbot:http_request_seconds:p99_by_route")
                 and api.query("pmbot:position_limit:ratio") and api.query("pmbot:orders_submitted:rate5m"),
                 30, "recorded series", 0.5)
        groups = api.get("rules")["groups"]
        rules = [r for g in groups for r in g["rules"]]
        assert {g["name"] for g in groups} == {"pmbot.recording", "pmbot.alerts"}
        assert len(rules) >= 20
        assert all(r["health"] == "ok" and not r["lastEvaluation"].startswith("0001") for r in rules), [
            (r["name"], r["health"], r.get("lastError")) for r in rules if r["health"] != "ok"]
        assert api.value("bot_trading_state") == 0.0
        firing = [a["labels"]["alertname"] for a in api.get("alerts")["alerts"] if a["state"] == "firing"]
        assert "BotDown" not in firing and "TradingHalted" not in firing
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        ex.stop()

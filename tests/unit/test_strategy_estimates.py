"""What a strategy estimates as it runs is a Prometheus metric (read at scrape time, never failing
the scrape) and part of a run's summary, results file and report."""

from __future__ import annotations

import json
from pathlib import Path

from prometheus_client import generate_latest

from bot.results.read import read_results
from bot.results.report import summary_rows
from bot.backtest.synthetic import SyntheticConfig
from bot.ops.metrics import Metrics
from bot.strategy import Strategy
from tests.unit.strategy_kit import backtest


class Estimating(Strategy):
    def __init__(self) -> None:
        super().__init__()
        self.published = {"123456789": {"sigma": 0.002, "k": 150.0, "ready": True}}

    def estimates(self):
        return self.published


class Broken(Strategy):
    def estimates(self):
        raise RuntimeError("no")


def test_estimates_are_exported_at_each_scrape():
    m = Metrics()
    s = Estimating()
    m.watch_strategy(s)
    m.watch_strategy(s)  # once per strategy
    m.watch_strategy(Broken())  # a failing strategy exports nothing and fails nothing
    body = generate_latest(m.registry).decode()
    assert 'bot_strategy_estimate{name="sigma",strategy="Estimating",token="23456789"} 0.002' in body
    assert body.count('name="sigma"') == 1
    assert 'name="ready"' not in body  # not a number
    s.published = {"123456789": {"sigma": 0.003}}  # a new snapshot: the next scrape reads it
    assert 'token="23456789"} 0.003' in generate_latest(m.registry).decode()


def test_a_base_strategy_estimates_nothing():
    assert Strategy().estimates() == {}


def test_a_backtests_summary_results_and_report_carry_the_estimates(tmp_path: Path):
    summary, out = backtest(tmp_path, "strategies.glft:Glft", {}, synthetic=SyntheticConfig(seed=1, duration_s=120.0))
    (token, values), = summary.estimates.items()
    assert {"sigma", "a", "k", "half_spread"} <= set(values)
    assert json.loads((out / "summary.json").read_text())["estimates"][token]["k"] == values["k"]
    assert read_results(out).summary.estimates == summary.estimates
    rows = dict(summary_rows(summary))
    assert rows[f"estimate k (…{token[-8:]})"] == f"{values['k']:.6g}"

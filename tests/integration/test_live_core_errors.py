"""A turn the core fails on (the strategy's timer raising, here) is one logged and counted core
error: the live run goes on (its later timers run, its quotes rest at the exchange) and stops
cleanly, with nothing left resting."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from bot.ops.metrics import Metrics
from strategies.market_maker import MarketMaker, Params
from tests.integration.exchange_fixture import start_exchange, wait_for
from tests.integration.test_live_trading import open_orders, running_bot

pytestmark = pytest.mark.integration


class FailsOnce(MarketMaker):
    """The market maker whose first timer raises; ``timers``: how many ran."""

    timers = 0

    def on_timer(self, ctx):
        FailsOnce.timers += 1
        if FailsOnce.timers == 1:
            raise RuntimeError("strategy timer failed")
        return super().on_timer(ctx)


def test_a_core_error_in_a_timer_turn_is_logged_and_counted_and_the_run_goes_on():
    ex = start_exchange()
    try:
        metrics = Metrics()
        strategy = FailsOnce(Params(half_spread_ticks=1, order_size=10_000_000))
        with capture_logs() as logs, running_bot(ex, strategy=strategy, metrics=metrics, timer_interval_s=0.2):
            wait_for(lambda: FailsOnce.timers >= 3 or None, 15.0, "later timers")
            wait_for(lambda: open_orders(ex, ex.demo_account), 15.0, "quotes resting")
        errors = [e for e in logs if e["event"] == "core_error"]
        assert [(e["kind"], e["error"]) for e in errors] == [("timer", "RuntimeError: strategy timer failed")]
        assert metrics.registry.get_sample_value("bot_errors_total", {"kind": "core"}) == 1
        assert open_orders(ex, ex.demo_account) == []
    finally:
        ex.stop()

"""Sizes in a config are shares: ``bot config check --venue`` reads the markets a config trades
from the venue and warns, one line each, about an order size no market of it would take."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.exchange_fixture import start_exchange

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def check(cfg: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot.cli", "config", "check", str(cfg), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60)


def test_an_order_size_below_the_markets_minimum_is_a_warning_naming_them(tmp_path: Path):
    ex = start_exchange(markets=2, extra_markets=())
    try:
        markets = ex.call(lambda: [m for m in ex.exchange.state.catalog.markets if m.active and not m.closed])
        assert {str(m.min_order_size) for m in markets} == {"5"}  # the local exchange's markets: 5 shares
        cfg = tmp_path / "bot.toml"
        one = markets[0].condition_id
        cfg.write_text(ex.urls.venue_toml() + '[strategy]\npath = "strategies.market_maker:MarketMaker"\n'
                       f'markets = ["{one}"]\n[strategy.params]\norder_size = "4.99"\n')
        done = check(cfg, "--venue")
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"ok: {cfg}: ")
        assert done.stderr.splitlines() == [
            f"warning: {cfg}: order_size = 4.99 shares is below the minimum order of 1 market(s) (up to 5 shares: "
            f"{one}): none is sent there"]
        assert check(cfg).stderr == ""  # without --venue, nothing is asked of the venue
        cfg.write_text(cfg.read_text().replace('"4.99"', "5"))
        done = check(cfg, "--venue")
        assert (done.returncode, done.stderr) == (0, "")
    finally:
        ex.stop()

"""The GLFT market maker: the closed-form asymptotic quotes, their inventory bounds, their grid
rounding, and its backtests on the synthetic market and on the sample recording."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.backtest.synthetic import SyntheticConfig, SyntheticMarket
from strategies.glft import Params, coefficients, distances, quote
from strategies.model_maker import ModelInputs
from strategies.pairs import Holdings, orders
from tests.unit.strategy_kit import SH, backtest, check_accounts, check_orders, check_quotes, holdings_space, pair, pairs

PATH = "strategies.glft:Glft"


def test_the_closed_form():
    gamma, a, k, sigma = 0.5, 2.0, 10.0, 0.3
    c1, c2 = coefficients(gamma, a, k)
    assert c1 == pytest.approx(math.log(1 + gamma / k) / gamma)
    assert c2 == pytest.approx(math.sqrt(gamma / (2 * a * k) * (1 + gamma / k) ** (1 + k / gamma)))
    for q in (-3, 0, 2):
        bid, ask = distances(q, gamma, sigma, a, k)
        assert bid == pytest.approx(c1 + (2 * q + 1) / 2 * sigma * c2)
        assert ask == pytest.approx(c1 - (2 * q - 1) / 2 * sigma * c2)
    # as risk aversion vanishes the half spread tends to 1/k, the risk-neutral quote
    assert coefficients(1e-9, a, k)[0] == pytest.approx(1 / k, rel=1e-6)
    # xi apart from gamma changes the spread term only through xi
    assert coefficients(gamma, a, k, xi=2.0)[0] == pytest.approx(math.log(1 + 2.0 / k) / 2.0)


def test_quotes_skew_with_inventory_and_stop_at_the_bound():
    p = Params(gamma=50.0, order_size=10 * SH, max_inventory=50 * SH)  # Q = 5 lots
    inputs = ModelInputs(sigma=0.004, a=0.5, k=100.0)
    book = pair(400_000, 600_000)
    flat = quote(book, Holdings(), p, inputs)
    long = quote(book, Holdings(yes=30 * SH), p, inputs)
    assert flat.bids[0].price + flat.asks[0].price == 2 * 500_000  # symmetric at q = 0
    assert long.bids[0].price < flat.bids[0].price and long.asks[0].price < flat.asks[0].price
    at_bound = quote(book, Holdings(yes=50 * SH), p, inputs)
    assert at_bound.bids == () and at_bound.asks  # q = Q: no bid
    short_bound = quote(book, Holdings(no=50 * SH), p, inputs)
    assert short_bound.asks == () and short_bound.bids  # q = -Q: no ask


@settings(max_examples=300, deadline=None)
@given(pairs(), holdings_space, st.floats(0.01, 500.0), st.floats(1e-5, 0.05), st.floats(1e-3, 50.0),
       st.floats(1.0, 2000.0), st.integers(1, 40))
def test_quotes_keep_every_invariant(p, h: Holdings, gamma: float, sigma: float, a: float, k: float, lots: int):
    params = Params(gamma=gamma, order_size=lots * SH, max_inventory=100 * SH)
    q = quote(p, h, params, ModelInputs(sigma, a, k))
    check_quotes(q, p, h, params.max_inventory)
    check_orders(orders(p, q, h), p, h)


def test_synthetic_backtest_keeps_the_inventory_bound(tmp_path: Path):
    syn = SyntheticConfig(seed=8, duration_s=1200.0)
    summary, out = backtest(tmp_path, PATH, {"gamma": 20.0, "max_inventory": 20}, synthetic=syn)
    assert summary.fills > 20
    check_accounts(summary, out, SyntheticMarket(syn).markets, max_inventory=20 * SH)
    est = next(iter(summary.estimates.values()))
    assert est["half_spread"] > 0 and est["skew_per_lot"] > 0


def test_sample_recording_backtest(tmp_path: Path):
    summary, out = backtest(tmp_path, PATH, {})
    assert summary.orders_sent > 0 and summary.fills > 0
    check_accounts(summary, out)

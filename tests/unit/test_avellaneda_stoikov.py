"""The Avellaneda-Stoikov market maker: its formulas, its quotes on the venue's grid, its horizon,
and its backtests on the synthetic market (where its estimators find the market's parameters) and
on the sample recording."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.backtest.synthetic import SyntheticConfig, SyntheticMarket
from bot.core.markets import MarketInfo
from strategies.avellaneda_stoikov import (
    Params, distances, optimal_spread, quote, reservation_price, time_left,
)
from strategies.model_maker import ModelInputs
from strategies.pairs import Holdings, orders
from tests.unit.strategy_kit import (
    MARKET, SH, backtest, check_accounts, check_orders, check_quotes, holdings_space, pair, pairs,
)

PATH = "strategies.avellaneda_stoikov:AvellanedaStoikov"


def test_the_papers_formulas():
    assert reservation_price(100.0, 2, 0.1, 2.0, 0.5) == pytest.approx(99.6)
    assert optimal_spread(0.1, 2.0, 0.5, 1.5) == pytest.approx(0.2 + 20 * math.log(1 + 0.1 / 1.5))
    bid, ask = distances(3, 0.1, 2.0, 0.5, 1.5)
    assert ask - bid == pytest.approx(-2 * 3 * 0.1 * 4 * 0.5)  # long: the ask comes closer than the bid
    assert bid + ask == pytest.approx(optimal_spread(0.1, 2.0, 0.5, 1.5))


def test_flat_quotes_straddle_the_mid_at_half_the_spread_rounded_outwards():
    p = Params(gamma=1.0, order_size=10 * SH)
    inputs = ModelInputs(sigma=0.001, a=1.0, k=100.0)
    book = pair(450_000, 550_000)
    q = quote(book, Holdings(), p, inputs, 50.0)  # half spread 0.009975: within one tick of 0.50
    assert (q.bids[0].price, q.asks[0].price) == (490_000, 510_000)
    assert q.bids[0].size == q.asks[0].size == 10 * SH
    wider = quote(book, Holdings(), p, inputs, 100.0)  # 0.0100003: just past a tick, so two
    assert optimal_spread(1.0, 0.001, 100.0, 100.0) / 2 > 0.01
    assert (wider.bids[0].price, wider.asks[0].price) == (480_000, 520_000)


def test_inventory_moves_the_quotes_against_it():
    p = Params(gamma=20.0, order_size=10 * SH, max_inventory=100 * SH)
    inputs = ModelInputs(sigma=0.002, a=1.0, k=100.0)
    book = pair(400_000, 600_000)
    flat = quote(book, Holdings(), p, inputs, 600.0)
    long = quote(book, Holdings(yes=50 * SH), p, inputs, 600.0)
    short = quote(book, Holdings(no=50 * SH), p, inputs, 600.0)
    assert long.bids[0].price < flat.bids[0].price and long.asks[0].price < flat.asks[0].price
    assert short.bids[0].price > flat.bids[0].price and short.asks[0].price > flat.asks[0].price
    full = quote(book, Holdings(yes=100 * SH), p, inputs, 600.0)
    assert full.bids == () and full.asks  # at the limit: only the side that reduces


def test_the_horizon_is_the_session_end_or_the_markets_end_date():
    p = Params(session_s=3600.0)
    assert time_left(7_200.0, p, MARKET) == 3600.0
    assert time_left(7_500.0, p, MARKET) == 3300.0
    ending = MarketInfo("0xm", ("Y", "N"), end_ts=10_000)
    by_market = Params(horizon="market", session_s=3600.0)
    assert time_left(7_500.0, by_market, ending) == 2_500.0
    assert time_left(12_000.0, by_market, ending) == 3600.0 - 12_000.0 % 3600.0  # ended: the session


def test_a_stale_or_one_sided_market_gets_no_quote():
    p, inputs = Params(), ModelInputs(0.001, 1.0, 100.0)
    assert not quote(pair(stale=True), Holdings(), p, inputs, 60.0)
    assert not quote(pair(480_000, None), Holdings(), p, inputs, 60.0)


@settings(max_examples=300, deadline=None)
@given(pairs(), holdings_space, st.floats(0.01, 500.0), st.floats(1e-5, 0.05), st.floats(1.0, 2000.0),
       st.floats(1.0, 86_400.0), st.integers(1, 40))
def test_quotes_keep_every_invariant(p, h: Holdings, gamma: float, sigma: float, k: float, tau: float, lots: int):
    params = Params(gamma=gamma, order_size=lots * SH, max_inventory=100 * SH)
    q = quote(p, h, params, ModelInputs(sigma, 1.0, k), tau)
    check_quotes(q, p, h, params.max_inventory)
    check_orders(orders(p, q, h), p, h)


def test_bad_params_are_refused_by_name():
    for bad in ({"gamma": 0.0}, {"k": -1.0}, {"sigma": float("nan")}, {"session_s": 0.5}, {"requote_ticks": 0}):
        with pytest.raises(ValueError, match=next(iter(bad)).split("_")[0]):
            Params(**bad)


def test_synthetic_backtest_estimates_the_market_and_keeps_its_limits(tmp_path: Path):
    syn = SyntheticConfig(seed=3, duration_s=1200.0, a=1.0, k=150.0, sigma=0.001)
    params = {"gamma": 2.0, "max_inventory": 30, "estimator": {"warmup_s": 60.0, "half_life_s": 3600.0}}
    summary, out = backtest(tmp_path, PATH, params, synthetic=syn)
    assert summary.fills > 20 and summary.orders_sent > 0
    market = SyntheticMarket(syn).markets
    check_accounts(summary, out, market, max_inventory=30 * SH)
    est = summary.estimates[market[0].tokens[0]]
    assert est["sigma_estimated"] == 1.0 and est["intensity_estimated"] == 1.0
    assert est["k"] == pytest.approx(150.0, rel=0.15) and est["a"] == pytest.approx(1.0, rel=0.25)


def test_fixed_inputs_are_used_as_given(tmp_path: Path):
    syn = SyntheticConfig(seed=5, duration_s=300.0)
    summary, _ = backtest(tmp_path, PATH, {"estimate": False, "sigma": 0.003, "a": 2.0, "k": 90.0}, synthetic=syn)
    est = next(iter(summary.estimates.values()))
    assert (est["sigma"], est["a"], est["k"], est["sigma_estimated"]) == (0.003, 2.0, 90.0, 0.0)


def test_sample_recording_backtest(tmp_path: Path):
    summary, out = backtest(tmp_path, PATH, {"max_inventory": 40})
    assert summary.orders_sent > 0 and summary.fills > 0
    check_accounts(summary, out)
    assert len(summary.estimates) == 3  # one per market of the recording

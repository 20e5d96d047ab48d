"""Rewards-aware quoting: the venue's scoring of resting liquidity, the decision to move quotes into
the rewarded spread only when the expected reward beats the expected adverse selection, and the
reward the strategies estimate they earned."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.backtest.synthetic import SyntheticConfig
from bot.core.markets import MarketInfo, RewardTerms
from strategies.pairs import Level, YesQuotes
from strategies.rewards import (
    RewardsParams, adjust, adverse_rate, candidate, level_score, market_score, others_levels, reward_rate,
)
from tests.unit.strategy_kit import SH, backtest, pair, pairs, rows

TERMS = RewardTerms(daily_rate=864 * SH, min_size=20 * SH, max_spread=30_000)  # 0.01 USDC a second
WIDE = YesQuotes((Level(460_000, 10 * SH),), (Level(540_000, 10 * SH),))  # 4 ticks out, under the minimum


def test_an_order_scores_quadratically_inside_the_spread_at_the_size():
    assert level_score(0, 20 * SH, TERMS) == 20.0
    assert level_score(15_000, 20 * SH, TERMS) == pytest.approx(5.0)  # half way: a quarter
    assert level_score(30_000, 20 * SH, TERMS) == 0.0  # at the edge: nothing
    assert level_score(10_000, 19 * SH, TERMS) == 0.0  # under the minimum size: nothing


def test_one_sided_quoting_scores_a_third_and_nothing_near_the_ends():
    bid = [(490_000, 20 * SH)]
    two = market_score(bid, [(510_000, 20 * SH)], 500_000, TERMS)
    one = market_score(bid, [], 500_000, TERMS)
    assert one == pytest.approx(two / 3)
    assert market_score([(40_000, 20 * SH)], [], 50_000, TERMS) == 0.0  # mid 0.05: both sides needed


def test_the_reward_is_our_share_of_the_days_rate():
    ours = YesQuotes((Level(490_000, 20 * SH),), (Level(510_000, 20 * SH),))
    alone = reward_rate(ours, [], [], 500_000, TERMS)
    assert alone == pytest.approx(0.01)
    shared = reward_rate(ours, [(490_000, 20 * SH)], [(510_000, 20 * SH)], 500_000, TERMS)
    assert shared == pytest.approx(0.005)


def test_the_candidate_comes_in_to_the_edge_at_the_minimum_size():
    c = candidate(WIDE, pair(480_000, 520_000).touch(), TERMS, (100 * SH, 100 * SH))
    assert c == YesQuotes((Level(480_000, 20 * SH),), (Level(520_000, 20 * SH),))  # 2 ticks: inside 3
    no_room = candidate(WIDE, pair(480_000, 520_000).touch(), TERMS, (15 * SH, 100 * SH))
    assert no_room.bids == (Level(480_000, 10 * SH),)  # the bid cannot grow past the inventory room


def test_quotes_move_in_only_when_the_reward_beats_the_adverse_selection():
    touch = pair(480_000, 520_000).touch()
    room = (100 * SH, 100 * SH)
    cheap = RewardsParams(enabled=True, markout=0.001)
    quotes, rate = adjust(WIDE, touch, TERMS, cheap, room, ([], []), (1.0, 150.0))
    assert quotes.bids[0].price == 480_000 and rate == pytest.approx(0.01)  # alone: the whole reward
    costly = RewardsParams(enabled=True, markout=0.05)  # 5 cents lost per filled share
    assert adjust(WIDE, touch, TERMS, costly, room, ([], []), (1.0, 150.0)) == (WIDE, 0.0)
    crowded = ([(480_000, 5000 * SH)], [(520_000, 5000 * SH)])  # others take nearly all of the reward
    assert adjust(WIDE, touch, TERMS, cheap, room, crowded, (1.0, 150.0))[0] == WIDE


def test_without_terms_nothing_changes():
    touch = pair().touch()
    assert adjust(WIDE, touch, None, RewardsParams(enabled=True), (SH, SH), ([], []), (1.0, 150.0)) == (WIDE, 0.0)
    assert RewardsParams().terms(MarketInfo("0xm", ("Y", "N"))) is None
    market = MarketInfo("0xm", ("Y", "N"), rewards=TERMS)
    assert RewardsParams().terms(market) == TERMS
    assert RewardsParams(max_spread=10_000).terms(market).max_spread == 10_000  # config overrides


def test_our_own_orders_are_not_counted_as_others():
    assert others_levels([(490_000, 50 * SH), (480_000, 10 * SH)], [Level(490_000, 20 * SH), Level(480_000, 10 * SH)]) \
        == [(490_000, 30 * SH)]


@settings(max_examples=200, deadline=None)
@given(pairs(), st.integers(1, 10), st.integers(1, 10), st.integers(1, 60), st.integers(1, 60),
       st.floats(0, 0.1), st.integers(0, 200))
def test_adjusted_quotes_stay_on_the_grid_uncrossed_and_within_room(p, bt: int, at: int, bs: int, az: int,
                                                                    markout: float, room: int):
    touch = p.touch()
    base = YesQuotes((Level(max(touch.tick, touch.best_bid - bt * touch.tick), bs * SH),),
                     (Level(min(1_000_000 - touch.tick, touch.best_ask + at * touch.tick), az * SH),))
    quotes, rate = adjust(base, touch, TERMS, RewardsParams(enabled=True, markout=markout), (room * SH, room * SH),
                          ([], []), (1.0, 150.0))
    assert rate >= 0
    for lv, old in zip(quotes.bids + quotes.asks, base.bids + base.asks):
        assert lv.price % touch.tick == 0 and touch.tick <= lv.price <= 1_000_000 - touch.tick
        assert lv.size == old.size or lv.size <= room * SH
    if quotes.bids:
        assert quotes.bids[0].price < touch.best_ask
        # moved in, a bid keeps a tick clear of the ask: a one-tick move of the ask cannot cross it
        assert quotes.bids[0].price == base.bids[0].price or quotes.bids[0].price <= touch.best_ask - 2 * touch.tick
    if quotes.asks:
        assert quotes.asks[0].price > touch.best_bid
        assert quotes.asks[0].price == base.asks[0].price or quotes.asks[0].price >= touch.best_bid + 2 * touch.tick


def test_a_rewarded_backtest_quotes_inside_the_spread_and_counts_its_reward(tmp_path: Path):
    syn = SyntheticConfig(seed=6, duration_s=600.0, half_spread_ticks=3)
    rewards = {"enabled": True, "daily_rate": 8640, "min_size": 20, "max_spread": 0.03, "markout": 0.001}
    params = {"bands": [{"min_ticks": 3, "target_ticks": 5, "max_ticks": 7, "size": 10}], "rewards": rewards}
    summary, out = backtest(tmp_path, "strategies.bands:BandsMarketMaker", params, synthetic=syn)
    est = next(iter(summary.estimates.values()))
    assert est["reward_earned_usdc"] > 0.5 * 0.1 * 600 * 0.5  # a good part of 0.1 USDC/s while quoting
    orders = [o for o in rows(out, "orders") if o["state"] in ("LIVE", "PENDING_SUBMIT")]
    assert orders and all(o["size"] >= 20 * SH for o in orders)  # raised to the rewarded size
    plain, _ = backtest(tmp_path / "plain", "strategies.bands:BandsMarketMaker",
                        {"bands": params["bands"]}, synthetic=syn)
    assert plain.estimates == {}  # without the option: no reward figures

"""What the core keeps of a listed market for quoting: its end date (a horizon) and its liquidity
rewards (daily rate, minimum size, maximum spread in cents), read from a captured venue market."""

from __future__ import annotations

from pathlib import Path

import msgspec

from bot.core.markets import RewardTerms
from bot.live.markets import _end_ts, reward_terms
from bot.venue.models import ClobMarket
from bot.venue.models.markets import RewardRate, Rewards

MARKET = ("realworld/nautechsystems__nautilus_trader/tests/integration_tests/adapters/polymarket/resources/"
          "http_responses/market.json")


def test_a_captured_markets_rewards_and_end_date(data_dir: Path):
    m = msgspec.json.decode((data_dir / MARKET).read_bytes(), type=ClobMarket)
    assert reward_terms(m.rewards) == RewardTerms(daily_rate=750_000_000, min_size=200_000_000, max_spread=15_000)
    assert _end_ts(m.end_date_iso) == 1_730_764_800  # 2024-11-05T00:00:00Z


def test_no_programme_is_none_and_rates_add_up():
    assert reward_terms(None) is None
    assert reward_terms(Rewards(rates=None, min_size=0, max_spread=0)) is None
    two = Rewards(rates=[RewardRate(asset_address="a", rewards_daily_rate=1.5),
                         RewardRate(asset_address="b", rewards_daily_rate=2)], min_size=10, max_spread=3)
    assert reward_terms(two) == RewardTerms(daily_rate=3_500_000, min_size=10_000_000, max_spread=30_000)
    assert reward_terms(Rewards(rates=[RewardRate(asset_address="a", rewards_daily_rate="x")], max_spread=1)) is None
    assert _end_ts(None) == 0 and _end_ts("not a date") == 0

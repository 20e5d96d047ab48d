"""The shipped strategies by name, with the parameters ``bot demo --strategy NAME`` runs them with
on the local exchange (tick 0.01, minimum order 5 shares, its synthetic traders, which keep the
book about two ticks wide around a wandering fair value).

The example configs in ``config/`` carry each strategy's parameters for a real market; these are
the demo's, chosen so a few seconds on the local exchange show the strategy at work.
"""

from __future__ import annotations

from typing import Any

import msgspec


class Shipped(msgspec.Struct, frozen=True):
    """A strategy's ``path`` (``package.module:Class``), its demo parameters (as a config file
    writes them: sizes in shares, amounts in USDC), whether the demo gives it every market the
    exchange lists (a neg-risk event is a set only when whole), and how much faster than real time
    the demo's synthetic traders run for it (what it trades on is rarer than a few seconds of a
    demo at real time)."""

    path: str
    demo_params: dict[str, Any] = {}
    all_markets: bool = False
    about: str = ""
    demo_flow_speed: float = 1.0


_FAST = {"half_life_s": 30.0, "warmup_s": 2.0, "min_moves": 3, "min_prints": 4, "sample_s": 0.5}  # warm within seconds

SHIPPED: dict[str, Shipped] = {
    "market-maker": Shipped(
        "strategies.market_maker:MarketMaker",
        {"half_spread_ticks": 1, "order_size": 10, "max_inventory": 100},
        about="a two-sided quote around the mid, skewed by inventory"),
    "bands": Shipped(
        "strategies.bands:BandsMarketMaker",
        {"bands": [{"min_ticks": 0, "target_ticks": 1, "max_ticks": 2, "size": 10},
                   {"min_ticks": 2, "target_ticks": 3, "max_ticks": 4, "size": 20}],
         "max_inventory": 100},
        about="orders in bands around the mid, replaced only when they leave their band"),
    "avellaneda-stoikov": Shipped(
        "strategies.avellaneda_stoikov:AvellanedaStoikov",
        {"gamma": 2.0, "sigma": 0.002, "a": 0.5, "k": 150.0, "session_s": 600.0, "estimator": _FAST},
        about="Avellaneda-Stoikov quotes, sigma, A and k estimated online"),
    "glft": Shipped(
        "strategies.glft:Glft",
        {"gamma": 20.0, "sigma": 0.002, "a": 0.5, "k": 150.0, "estimator": _FAST},
        about="GLFT asymptotic quotes with inventory bounds, sigma, A and k estimated online"),
    "rewards": Shipped(
        "strategies.bands:BandsMarketMaker",
        {"bands": [{"min_ticks": 2, "target_ticks": 4, "max_ticks": 6, "size": 10}],
         "rewards": {"enabled": True, "daily_rate": 20_000, "min_size": 20, "max_spread": 0.03,
                     "markout": 0.001}},
        about="bands moved into a (configured) rewarded spread, estimating the reward earned"),
    "complement-arbitrage": Shipped(
        "strategies.complement_arb:ComplementArbitrage", {"max_size": 10, "min_size": 5},
        all_markets=True, demo_flow_speed=10.0,  # a neg-risk set is mispriced about a tenth of the time
        about="buys or sells whole sets of outcomes (a market's YES+NO, a neg-risk event's YES) when mispriced"),
}

NAMES = tuple(SHIPPED)

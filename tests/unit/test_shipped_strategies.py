"""Every shipped strategy loads by name with its demo parameters, has an example config that
decodes and loads as it is, and a page in docs/strategies."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.strategy_set import configured_strategy
from bot.ops.config import decode_bot_config
from bot.strategy import Strategy, StrategyError, load_strategy
from strategies.shipped import SHIPPED

REPO = Path(__file__).resolve().parents[2]
CONFIGS = sorted(p for p in (REPO / "config").glob("*.toml")
                 if p.name not in ("bot.example.toml", "exchange.toml", "secrets.example.toml", "sweep.example.toml",
                                  "synthetic.toml"))


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_each_shipped_strategy_loads_with_its_demo_params(name: str):
    s = SHIPPED[name]
    assert isinstance(load_strategy(s.path, s.demo_params), Strategy)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_each_example_config_decodes_and_loads_its_strategy(path: Path):
    config = decode_bot_config(path.read_bytes(), source=str(path))
    strategy = configured_strategy(config)
    members = [m.strategy for m in strategy.members] if config.strategies else [strategy]
    paths = [s.path for s in config.strategies] or [config.strategy.path]
    assert set(paths) <= {s.path for s in SHIPPED.values()}
    assert all(type(s).__module__.startswith("strategies.") for s in members)


def test_every_shipped_strategy_has_a_config_and_a_page():
    paths = {decode_bot_config(p.read_bytes()).strategy.path for p in CONFIGS}
    for name, s in SHIPPED.items():
        if name == "market-maker":
            continue  # config/bot.example.toml
        assert s.path in paths, name
        assert (REPO / "docs" / "strategies" / f"{name}.md").is_file(), name


def test_a_misspelt_param_names_itself():
    with pytest.raises(StrategyError, match="gama"):
        load_strategy("strategies.avellaneda_stoikov:AvellanedaStoikov", {"gama": 1.0})
    with pytest.raises(StrategyError, match="target_ticks"):
        load_strategy("strategies.bands:BandsMarketMaker", {"bands": [{"min_ticks": 1, "max_ticks": 2, "size": 1}]})

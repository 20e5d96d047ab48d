"""``bot new strategy`` and docs/writing-a-strategy.md: the strategy it writes is under 50 lines,
its unit test passes, its config decodes and the strategy backtests; names and files it cannot
take are refused before anything is written. (The docs checker holds the page's blocks to the
files the command writes.)"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from bot.backtest.runner import run_backtest
from bot.backtest.synthetic import SyntheticConfig, SyntheticMarket
from bot.ops.config import decode_bot_config
from bot.ops.scaffold import ScaffoldError, class_name, new_strategy


@pytest.fixture
def written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    paths = new_strategy("join_the_touch", tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("join_the_touch", "test_join_the_touch"):
        sys.modules.pop(name, None)
    return {p.name: p for p in paths}


def test_it_writes_a_strategy_its_test_and_its_config(written: dict[str, Path]):
    assert sorted(written) == ["join_the_touch.py", "join_the_touch.toml", "test_join_the_touch.py"]
    assert len(written["join_the_touch.py"].read_text().strip().splitlines()) < 50


def test_its_unit_test_passes(written: dict[str, Path]):
    module = importlib.import_module("test_join_the_touch")
    tests = [getattr(module, n) for n in dir(module) if n.startswith("test_")]
    assert len(tests) == 2
    for t in tests:
        t()


def test_its_config_decodes_and_it_backtests(written: dict[str, Path], tmp_path: Path):
    config = decode_bot_config(written["join_the_touch.toml"].read_text())
    assert config.strategy.path == "join_the_touch:JoinTheTouch"
    source = SyntheticMarket(SyntheticConfig(seed=2, duration_s=300.0))
    summary = run_backtest(config, [], source=source, out=tmp_path / "results")
    assert summary.orders_sent > 0 and summary.fills > 0
    assert all(0 <= size <= 50_000_000 for size in summary.final_position.values())


@pytest.mark.parametrize("name", ["9lives", "Join", "with-dash", "class", "test_me", ""])
def test_a_name_that_is_not_a_module_is_refused(tmp_path: Path, name: str):
    with pytest.raises(ScaffoldError, match="not a module name"):
        new_strategy(name, tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name, owner", [("json", "standard library"), ("asyncio", "standard library"),
                                         ("bot", "installed"), ("msgspec", "installed")])
def test_a_name_python_already_imports_is_refused(tmp_path: Path, name: str, owner: str):
    with pytest.raises(ScaffoldError, match=f"'{name}' is already a module .*{owner}"):
        new_strategy(name, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_nothing_is_overwritten(tmp_path: Path):
    (tmp_path / "test_mine.py").write_text("mine")
    with pytest.raises(ScaffoldError, match="already exist"):
        new_strategy("mine", tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["test_mine.py"]
    assert (tmp_path / "test_mine.py").read_text() == "mine"


def test_class_names_follow_the_module_name():
    assert class_name("join_the_touch") == "JoinTheTouch" and class_name("mm2") == "Mm2"

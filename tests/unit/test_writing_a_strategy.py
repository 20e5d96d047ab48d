"""docs/writing-a-strategy.md works as written: its strategy is under 50 lines, its unit test
passes, its config decodes and the strategy backtests on the synthetic market."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

from bot.backtest.runner import run_backtest
from bot.backtest.synthetic import SyntheticConfig, SyntheticMarket
from bot.ops.config import decode_bot_config

DOC = Path(__file__).resolve().parents[2] / "docs" / "writing-a-strategy.md"


@pytest.fixture
def doc_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    text = DOC.read_text()
    files = dict(re.findall(r"<!-- file: (\S+) -->\n```python\n(.*?)```", text, re.S))
    for name, code in files.items():
        (tmp_path / name).write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in files:
        sys.modules.pop(name.removesuffix(".py"), None)
    return files


def test_the_strategy_is_complete_in_under_50_lines(doc_files: dict[str, str]):
    assert len(doc_files["join_the_touch.py"].strip().splitlines()) < 50


def test_its_unit_test_passes(doc_files: dict[str, str]):
    module = importlib.import_module("test_join_the_touch")
    tests = [getattr(module, n) for n in dir(module) if n.startswith("test_")]
    assert len(tests) == 2
    for t in tests:
        t()


def test_its_config_decodes_and_it_backtests(doc_files: dict[str, str], tmp_path: Path):
    toml = re.search(r"`bot.toml`:\n\n```toml\n(.*?)```", DOC.read_text(), re.S).group(1)
    config = decode_bot_config(toml)
    source = SyntheticMarket(SyntheticConfig(seed=2, duration_s=300.0))
    summary = run_backtest(config, [], source=source, out=tmp_path / "results")
    assert summary.orders_sent > 0 and summary.fills > 0
    assert all(0 <= size <= 50_000_000 for size in summary.final_position.values())

"""The API reference for strategy authors (docs/api, ``make docs``) builds from the docstrings
with warnings as errors, and documents every hook and every parameter of the shipped maker."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from bot.strategy import Strategy
from strategies.market_maker import Params

REPO = Path(__file__).resolve().parents[2]


def test_the_api_reference_builds_with_warnings_as_errors(tmp_path):
    pytest.importorskip("sphinx", reason="Sphinx comes with requirements-extras.lock (make test installs it)")
    out = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                          str(REPO / "docs" / "api"), str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "index.html").read_text()
    for name in ("bot.strategy.Strategy", "bot.strategy.StrategyContext", "bot.core.intents.QuoteTarget",
                 "bot.core.intents.Take", "bot.core.events.Fill", "strategies.market_maker.Params"):
        assert f'id="{name}"' in page, name


def test_every_hook_a_strategy_may_override_says_when_it_is_called():
    hooks = [n for n, v in vars(Strategy).items() if not n.startswith("_") and (callable(v) or isinstance(v, property))]
    assert {"on_start", "on_book", "on_trade_print", "on_fill", "on_order_update", "on_timer", "on_stop"} <= set(hooks)
    undocumented = [n for n in hooks if not inspect.getdoc(getattr(Strategy, n))]
    assert undocumented == []


def test_every_parameter_of_the_shipped_market_maker_is_documented():
    doc = inspect.getdoc(Params) or ""
    missing = [f for f in msgspec.structs.fields(Params) if f"``{f.name}``:" not in doc]
    assert [f.name for f in missing] == []

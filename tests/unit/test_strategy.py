"""Strategy API: clocks, loading by dotted path, strict params, the read-only context."""

from __future__ import annotations

import sys

import msgspec
import pytest

from bot.core.clock import LiveClock, SimClock, utc_day
from bot.core.intents import CancelAll, Quote, QuoteTarget
from bot.core.markets import MarketIndex, MarketInfo
from bot.portfolio import Portfolio
from bot.strategy import (
    NoParams, Strategy, StrategyContext, StrategyError, intents_of, load_strategy,
)
from bot.venue.enums import Side


class Echo(Strategy):
    class Params(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
        size: int = 5_000_000
        label: str = "x"

    def on_book(self, ctx, token_id):
        b = ctx.books[token_id]
        return [QuoteTarget(token_id, (Quote(token_id, Side.BUY, b["bid"], ctx.params.size),))]


def test_sim_clock_moves_only_forward():
    c = SimClock(100.0)
    assert c.now() == 100.0
    assert c.advance(2.5) == 102.5
    c.set(200)
    assert c.now() == 200.0
    with pytest.raises(ValueError):
        c.set(199)
    with pytest.raises(ValueError):
        c.advance(-1)


def test_live_clock_and_utc_day():
    assert LiveClock().now() > 1_600_000_000
    assert utc_day(86_399.9) == 0 and utc_day(86_400) == 1


def test_load_strategy_decodes_params():
    s = load_strategy(f"{__name__}:Echo", {"size": 7_000_000})
    assert isinstance(s, Echo)
    assert s.params == Echo.Params(size=7_000_000)
    assert load_strategy(f"{__name__}.Echo").params == Echo.Params()  # dotted form too


@pytest.mark.parametrize(
    "path, params, words",
    [
        ("no_such_module_xyz:Foo", {}, "cannot import"),
        (f"{__name__}:Missing", {}, "has no 'Missing'"),
        (f"{__name__}:test_sim_clock_moves_only_forward", {}, "not a Strategy"),
        ("nocolon", {}, "not 'package.module:ClassName'"),
        ("strategies.market_maker", {}, "'package.module:ClassName'"),  # the module, its class left out
        ("strategies.no_such_module", {}, "has no 'no_such_module'; a strategy path is 'package.module:ClassName'"),
        (f"{__name__}:Echo", {"sise": 1}, "unknown field `sise`"),
        (f"{__name__}:Echo", {"size": "big"}, "$.size"),
        (f"{__name__}:Echo", [1, 2], "must be a table"),
    ],
)
def test_load_strategy_errors_are_one_line(path, params, words):
    import strategies.market_maker  # noqa: F401  (imported: its package then holds it as an attribute)

    with pytest.raises(StrategyError) as e:
        load_strategy(path, params)
    assert words in str(e.value)
    assert "\n" not in str(e.value)


def test_params_instance_type_is_checked():
    assert Strategy().params == NoParams()
    with pytest.raises(StrategyError):
        Echo(NoParams())
    with pytest.raises(StrategyError, match="unknown field"):
        Strategy({"a": 1})


def test_context_views_are_read_only_and_live():
    books = {"Y": {"bid": 500_000}}
    orders: dict = {}
    markets = MarketIndex([MarketInfo("c", ("Y", "N"))])
    s = Echo()
    ctx = StrategyContext(books=books, portfolio=Portfolio(), clock=SimClock(5), markets=markets,
                          open_orders=orders, params=s.params)
    assert ctx.now() == 5 and ctx.market("N").condition_id == "c"
    assert "Y" in ctx.books and len(ctx.books) == 1 and ctx.books.get("Z") is None
    with pytest.raises(TypeError):
        ctx.books["Y"] = {}  # type: ignore[index]
    with pytest.raises(AttributeError):
        ctx.books.pop("Y")  # type: ignore[attr-defined]
    orders["o1"] = object()
    assert "o1" in ctx.open_orders  # a view, not a copy
    (t,) = intents_of(s.on_book(ctx, "Y"))
    assert t.quotes[0].size == 5_000_000


def test_default_hooks_return_nothing_and_intents_are_normalised():
    s = Strategy()
    ctx = StrategyContext(books={}, portfolio=Portfolio(), clock=SimClock(), markets=MarketIndex())
    for hook in (s.on_start, s.on_timer, s.on_stop):
        assert intents_of(hook(ctx)) == []
    assert intents_of(s.on_book(ctx, "Y")) == []
    assert intents_of(CancelAll()) == [CancelAll()]
    with pytest.raises(TypeError):
        intents_of(["not an intent"])


def test_intents_are_taken_from_any_iterable_and_from_subclasses():
    from bot.core.intents import QuoteTarget

    class Tagged(QuoteTarget):  # a strategy's own intent class: still an intent
        pass

    mine, plain = Tagged("Y"), QuoteTarget("N")
    assert intents_of(mine) == [mine]
    assert intents_of([plain, mine]) == [plain, mine]
    assert intents_of((mine, CancelAll())) == [mine, CancelAll()]
    assert intents_of(x for x in (plain,)) == [plain]
    hook_list = [plain]
    assert intents_of(hook_list) is not hook_list  # the engine may extend what it gets
    with pytest.raises(TypeError):
        intents_of([plain, 1])


def test_strategy_modules_never_import_io():
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    files = [root / "bot/strategy.py", root / "strategies/market_maker.py",
             *(root / "bot/risk").glob("*.py"), *(root / "bot/portfolio").glob("*.py")]
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for n in names:
                assert n.split(".")[0] not in {"httpx", "websockets", "anyio", "asyncio", "time"} or (
                    f.name == "clock.py"
                ), f"{f} imports {n}"
                assert not n.startswith("bot.venue.") or n in {"bot.venue.units", "bot.venue.enums"}, f"{f}: {n}"


def test_a_strategy_module_in_the_working_directory_is_found_after_the_installed_ones(tmp_path, monkeypatch):
    import sys

    from bot.ops.scaffold import new_strategy
    from bot.strategy import StrategyError, load_strategy

    new_strategy("beside_its_config", tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    assert type(load_strategy("beside_its_config:BesideItsConfig")).__name__ == "BesideItsConfig"
    with pytest.raises(StrategyError, match="cannot import strategy module 'not_anywhere'"):
        load_strategy("not_anywhere:Nothing")


@pytest.mark.parametrize("source, words", [
    ("class Broken(\n", ["cannot import strategy module 'broken_module'", "never closed", "line 1"]),
    ("1 / 0\n", ["cannot import strategy module 'broken_module'", "ZeroDivisionError"]),
])
def test_a_strategy_module_that_does_not_import_is_one_line_naming_it(tmp_path, monkeypatch, source, words):
    (tmp_path / "broken_module.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "broken_module", raising=False)
    with pytest.raises(StrategyError) as e:
        load_strategy("broken_module:Broken")
    assert "\n" not in str(e.value) and all(w in str(e.value) for w in words), str(e.value)
    assert e.value.__cause__ is not None  # --debug shows where in the module it failed

"""``bot new strategy NAME``: a strategy, its unit test and its config, written so that each works
as it stands (the test passes, the config checks, the strategy backtests and trades).

Invariant: nothing is overwritten; a name that is not a Python module name, whose files exist, or
that names a module Python already finds (the standard library's, an installed package's: the new
file would hide it, or be hidden by it), is refused before anything is written.
"""

from __future__ import annotations

import keyword
import re
import sys
from pathlib import Path

__all__ = ["ScaffoldError", "new_strategy", "class_name"]

_MODULE = re.compile(r"[a-z_][a-z0-9_]*")


class ScaffoldError(ValueError):
    """A name or folder that cannot take a new strategy."""


def _module_owner(name: str) -> str | None:
    """Who already ships a top-level module ``name``: the standard library or an installed
    distribution (``None``: no one)."""
    if name in sys.stdlib_module_names:
        return "the standard library's"
    from importlib.metadata import packages_distributions

    shipped = packages_distributions().get(name)
    return f"installed with {shipped[0]}" if shipped else None


def class_name(module: str) -> str:
    """``join_the_touch`` -> ``JoinTheTouch``."""
    return "".join(part.capitalize() for part in module.split("_") if part) or "Strategy"


def new_strategy(name: str, folder: str | Path = ".") -> list[Path]:
    """Write ``NAME.py``, ``test_NAME.py`` and ``NAME.toml`` into ``folder``; the paths written."""
    if not _MODULE.fullmatch(name) or keyword.iskeyword(name) or name.startswith("test"):
        raise ScaffoldError(f"{name!r} is not a module name for a strategy: lowercase letters, digits and _, "
                            "not starting with a digit or 'test' (e.g. join_the_touch)")
    folder = Path(folder)
    if not folder.is_dir():
        raise ScaffoldError(f"{folder} is not a folder")
    files = {folder / f"{name}.py": STRATEGY, folder / f"test_{name}.py": TEST, folder / f"{name}.toml": CONFIG}
    taken = [str(p) for p in files if p.exists()]
    if taken:
        raise ScaffoldError(f"{', '.join(taken)} already exist(s); nothing was written")
    owner = _module_owner(name)
    if owner is not None:
        raise ScaffoldError(f"{name!r} is already a module ({owner}): a strategy of that name would hide it or be "
                            f"hidden by it; choose another name (e.g. my_{name})")
    cls = class_name(name)
    for path, text in files.items():
        path.write_text(text.replace("STRATEGY_MODULE", name).replace("StrategyClass", cls))
    return list(files)


STRATEGY = '''"""Join the touch: bid at the best bid, offer held shares at the best ask, on every token."""

from __future__ import annotations

import msgspec

from bot.core.intents import Quote, QuoteTarget
from bot.core.vocabulary import LOT, OrderSize, Shares, Side
from bot.strategy import Strategy


class Params(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    size: OrderSize = 10_000_000  # shares per quote (10; micro-units inside, shares in the config)
    max_position: Shares = 50_000_000  # never hold more than this of a token (50 shares)


def quote(token_id: str, bid: int | None, ask: int | None, held: int, min_size: int, p: Params) -> QuoteTarget:
    """Both sides of the touch; a buy never takes the position past ``max_position``, a sell never
    sells more than is held; a side smaller than the market's minimum is left out."""
    buy = min(p.size, p.max_position - held) // LOT * LOT
    sell = min(p.size, held) // LOT * LOT
    quotes = []
    if bid is not None and buy >= min_size:
        quotes.append(Quote(token_id, Side.BUY, bid, buy, post_only=True))
    if ask is not None and sell >= min_size:
        quotes.append(Quote(token_id, Side.SELL, ask, sell, post_only=True))
    return QuoteTarget(token_id, tuple(quotes))


class StrategyClass(Strategy):
    Params = Params
    reads = "top"  # called only when a book's best prices or sizes change

    def on_book(self, ctx, token_id):
        book, market = ctx.book(token_id), ctx.markets.get(token_id)
        if book is None or market is None or book.stale:
            return [QuoteTarget(token_id)]  # nothing resting on a book we cannot see
        held = max(0, ctx.portfolio.size(token_id))
        return [quote(token_id, book.best_bid, book.best_ask, held, market.min_size, self.params)]

    def on_fill(self, ctx, fill):
        return self.on_book(ctx, fill.token_id)

    def on_stop(self, ctx):
        return [QuoteTarget(t) for m in ctx.markets for t in m.tokens]
'''

TEST = '''from STRATEGY_MODULE import Params, quote

from bot.core.vocabulary import Side

P = Params(size=10_000_000, max_position=50_000_000)


def test_joins_both_sides_when_holding():
    t = quote("T", 480_000, 520_000, held=20_000_000, min_size=5_000_000, p=P)
    assert [(q.side, q.price, q.size) for q in t.quotes] == [
        (Side.BUY, 480_000, 10_000_000), (Side.SELL, 520_000, 10_000_000)]


def test_never_buys_past_the_limit_nor_sells_what_is_not_held():
    assert [q.side for q in quote("T", 480_000, 520_000, 50_000_000, 5_000_000, P).quotes] == [Side.SELL]
    assert [q.side for q in quote("T", 480_000, 520_000, 0, 5_000_000, P).quotes] == [Side.BUY]
    assert quote("T", 480_000, 520_000, 47_000_000, 5_000_000, P).quotes[0].side is Side.SELL  # 3 < 5
'''

CONFIG = '''# The config of STRATEGY_MODULE.py: bot backtest --config STRATEGY_MODULE.toml ... (docs/config.md has every section)
[strategy]
path = "STRATEGY_MODULE:StrategyClass"  # found in the folder bot runs from
markets = []                    # condition ids; empty: every market

[strategy.params]
size = 10                       # shares per quote (exact decimals: "10.5" or 10.5)
max_position = 50               # shares of a token held at most
'''

"""The Strategy base class users subclass, and the context it reads.

Invariants: a strategy only reads (books, portfolio, open orders, clock, markets through its
context) and returns intents; it never does I/O. Its parameters are a frozen ``Params`` struct
decoded strictly from config, so a misspelt key fails at load time with its name.
"""

from __future__ import annotations

import importlib
import types
import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping

import msgspec
import structlog

from bot.core.clock import Clock
from bot.core.intents import CancelAll, CancelOrder, Intent, QuoteTarget, Take
from bot.core.markets import MarketIndex, MarketInfo
from bot.core.quantities import QuantityError, in_units, undersized
from bot.core.touch import Touch, net_touch

if TYPE_CHECKING:  # the engine passes the real objects; the strategy only reads them
    from bot.core.events import Fill

_INTENT_TYPES = (QuoteTarget, Take, CancelOrder, CancelAll)
# the same classes, for a lookup by exact type: ``isinstance`` on these Struct classes goes through
# their metaclass's instance check, which a hook's usual return value (a list) would pay four times
_INTENT_CLASSES = frozenset(_INTENT_TYPES)


class StrategyError(ValueError):
    """A strategy that cannot be loaded or configured; the message is one line."""


class NoParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Parameters of a strategy that takes none."""


class ReadOnlyView:
    """A read-only window on a live collection (``get``, ``[]``, ``in``, iteration, ``len``)."""

    __slots__ = ("_data", "_get")

    def __init__(self, data: Any) -> None:
        self._data = data
        self._get = getattr(data, "get", None)  # the collection's own lookup, bound once

    def get(self, key: Any, default: Any = None) -> Any:
        getter = self._get
        if getter is not None:
            value = getter(key)
            return default if value is None else value
        try:
            return self._data[key]
        except (KeyError, IndexError):
            return default

    def __getitem__(self, key: Any) -> Any:
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[Any]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def values(self) -> Iterable[Any]:
        values = getattr(self._data, "values", None)
        return values() if values is not None else iter(self._data)

    def __repr__(self) -> str:
        return f"ReadOnlyView({self._data!r})"


class StrategyContext:
    """What a strategy sees: books, portfolio, open orders, clock, markets, params and a logger;
    ``touch(token_id)``: a book's touch net of our own orders (what a quote is centred on)."""

    __slots__ = ("books", "portfolio", "open_orders", "clock", "markets", "params", "log", "_touch")

    def __init__(
        self,
        *,
        books: Any,
        portfolio: Any,
        clock: Clock,
        markets: MarketIndex,
        open_orders: Any = None,
        params: msgspec.Struct | None = None,
        log: Any = None,
        name: str = "strategy",
        touch: Callable[[str], Touch | None] | None = None,
    ) -> None:
        self.books = ReadOnlyView(books)
        self.portfolio = portfolio
        self.open_orders = ReadOnlyView(open_orders if open_orders is not None else {})
        self.clock = clock
        self.markets = markets
        self.params = params if params is not None else NoParams()
        self.log = log if log is not None else structlog.get_logger("strategy").bind(strategy=name)
        # the engine's (it knows our orders); without one, the touch as the book shows it
        self._touch = touch

    def now(self) -> float:
        return self.clock.now()

    def market(self, token_id: str) -> MarketInfo:
        return self.markets.by_token(token_id)

    def book(self, token_id: str) -> Any:
        return self.books.get(token_id)

    def touch(self, token_id: str) -> Touch | None:
        """The touch of ``token_id``'s book without our own orders (``None``: no such book)."""
        if self._touch is not None:
            return self._touch(token_id)
        return net_touch(self.books.get(token_id))


class Strategy:
    """Subclass and override the hooks you need; each returns a list of intents or None.

    Declare parameters as a nested ``Params`` struct (frozen, ``forbid_unknown_fields=True``,
    with defaults); they arrive as ``self.params`` and ``ctx.params``.
    """

    Params: type[msgspec.Struct] = NoParams
    # What ``on_book`` reads of a book: "depth" (any level: called on every change of the book)
    # or "top" (only the touch, ``Book.top()``: called only when best prices or sizes, staleness
    # or the tick change, which spares a backtest most calls)
    reads: str = "depth"

    def book_tokens(self) -> Iterable[str] | None:
        """The tokens whose books ``on_book`` reads (``None``: every token); the engine calls
        ``on_book`` only for these. Asked once, when the engine is built."""
        return None

    def __init__(self, params: msgspec.Struct | Mapping[str, Any] | None = None) -> None:
        if params is None or isinstance(params, Mapping):
            params = decode_params(type(self), params or {})
        elif not isinstance(params, self.Params):
            raise StrategyError(
                f"{type(self).__name__} expects {self.Params.__name__} params, got {type(params).__name__}"
            )
        self.params = params

    @property
    def name(self) -> str:
        """The strategy's name in logs, metrics and reports (its class name unless set)."""
        return type(self).__name__

    def on_start(self, ctx: StrategyContext) -> list[Intent] | None:
        """The run starts (and again after an operator's resume): the books may still be stale."""
        return None

    def on_book(self, ctx: StrategyContext, token_id: str) -> list[Intent] | None:
        """``token_id``'s book changed (once per changed token per batch of updates, on its newest
        state; with ``reads = "top"`` only when its touch moved)."""
        return None

    def on_trade_print(self, ctx: StrategyContext, trade: Any) -> list[Intent] | None:
        """A trade printed on the market channel (``last_trade_price``: ``asset_id``, ``price``,
        ``size``, ``side``), anyone's; not called when the strategy does not override it."""
        return None

    def on_fill(self, ctx: StrategyContext, fill: "Fill") -> list[Intent] | None:
        """One fill of ours (``bot.core.events.Fill``), told once, after the portfolio booked it."""
        return None

    def on_order_update(self, ctx: StrategyContext, update: Any) -> list[Intent] | None:
        """One of our orders changed state or matched size (``order_id``, ``token_id``, ``state``,
        ``filled``, ``remaining``, ``reason``)."""
        return None

    def on_timer(self, ctx: StrategyContext) -> list[Intent] | None:
        """The engine's timer: every ``timer_interval_s`` (0.5 s by default) of the run's clock, wall or
        simulated."""
        return None

    def on_stop(self, ctx: StrategyContext) -> list[Intent] | None:
        """The run stops: what it returns is handled first, then every own order is cancelled."""
        return None

    def undersized(self, markets: Iterable[MarketInfo]) -> list[str]:
        """One line for each order size of ``params`` (an ``OrderSize`` field) below the minimum
        order of one of ``markets``: those markets never get that order."""
        return undersized(self.params, {m.condition_id: m.min_size for m in markets}) \
            if isinstance(self.params, msgspec.Struct) else []

    def estimates(self) -> Mapping[str, Mapping[str, float]]:
        """What the strategy estimates as it runs, by token: ``{token_id: {name: value}}`` (a
        volatility, an intensity, a reward earned). Metrics export it (``bot_strategy_estimate``)
        and run summaries keep it. The metrics thread reads it at scrape time: return a value the
        strategy does not mutate afterwards (build a new one on each change). None by default."""
        return {}


def decode_params(cls: type[Strategy], raw: Mapping[str, Any]) -> msgspec.Struct:
    """``raw`` (a config table, sizes in shares and USDC as written: ``bot.core.quantities``) as
    ``cls.Params``; unknown or mistyped keys raise ``StrategyError`` naming the key."""
    try:
        return msgspec.convert(in_units(dict(raw), cls.Params), type=cls.Params)
    except (msgspec.ValidationError, QuantityError) as e:
        raise StrategyError(f"bad params for {cls.__name__}: {e}") from None


def intents_of(result: Any) -> list[Intent]:
    """A hook's return value as a list of intents (None means none); anything else is an error."""
    if result is None:
        return []
    cls = type(result)
    if cls in _INTENT_CLASSES or cls is not list and isinstance(result, _INTENT_TYPES):
        return [result]
    out = list(result)
    for item in out:
        if type(item) not in _INTENT_CLASSES and not isinstance(item, _INTENT_TYPES):
            raise TypeError(f"a strategy returned {type(item).__name__}, not an intent")
    return out


def overrides(strategy: Any, hook: str) -> bool:
    """True unless ``strategy``'s ``hook`` is the base class's (which returns nothing)."""
    return getattr(getattr(strategy, hook, None), "__func__", None) is not getattr(Strategy, hook)


def _import(module_name: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        cwd = os.getcwd()
        if e.name != module_name.partition(".")[0] or cwd in sys.path or "" in sys.path:
            raise
        sys.path.append(cwd)
        return importlib.import_module(module_name)


def load_strategy(path: str, params: Mapping[str, Any] | None = None) -> Strategy:
    """Instantiate the strategy at ``"package.module:ClassName"`` with ``params`` (a dict).

    Any failure (bad path, missing class, not a Strategy, bad params) is a ``StrategyError``
    with a one-line message. A module not installed is looked for in the working directory too
    (a strategy file beside the config, as ``bot new strategy`` writes it), after the installed
    packages, as under ``python -m``.
    """
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise StrategyError(f"strategy path {path!r} is not 'package.module:ClassName'")
    try:
        module = _import(module_name)
    except ImportError as e:
        raise StrategyError(f"cannot import strategy module {module_name!r}: {e}") from None
    except SyntaxError as e:  # the user's own file: where it is wrong, as Python says it
        raise StrategyError(f"cannot import strategy module {module_name!r}: {e}") from e
    except Exception as e:  # its code raised while importing (``--debug`` shows where)
        raise StrategyError(f"cannot import strategy module {module_name!r}: {type(e).__name__}: {e}") from e
    cls = getattr(module, attr, None)
    if cls is None:
        form = "" if sep else "; a strategy path is 'package.module:ClassName'"
        raise StrategyError(f"module {module_name!r} has no {attr!r}{form}")
    if isinstance(cls, types.ModuleType):
        raise StrategyError(f"{path!r} names the module {cls.__name__!r}, not a class; a strategy path is "
                            "'package.module:ClassName'")
    if not (isinstance(cls, type) and issubclass(cls, Strategy)):
        raise StrategyError(f"{path!r} is not a Strategy subclass")
    if params is not None and not isinstance(params, Mapping):
        raise StrategyError(f"params for {path!r} must be a table, got {type(params).__name__}")
    return cls(dict(params or {}))

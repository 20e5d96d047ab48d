"""Exits: when a strategy stops quoting and leaves its positions, whatever the strategy is.

``Exits`` wraps a strategy (``[strategy.exits]``, or ``[strategies.exits]`` for one of several)
and watches what it holds on its markets:

- a loss: its marked PnL on its tokens (realized + unrealized at the mids - fees) fell
  ``max_loss`` below where it stood when the run started;
- a drawdown: it fell ``max_drawdown`` below the highest it reached;
- an end date: a market's end is less than ``flatten_before_end_s`` away (that market only).

A loss or a drawdown exits every market of the strategy, an end date one market. An exiting market
gets no more quotes (its targets are emptied, so its resting orders are cancelled) and its net
exposure (YES held minus NO held) is sold down with FAK orders at the touch: the side held is
sold at its best bid, or, with ``shed_through_complement``, the other side is bought at its best
ask when that costs less (a YES and a NO make a set worth exactly 1: buying NO at ``a`` sheds a
YES for ``1 - a``, selling it fetches its bid). Once its exposure is under the market's minimum
order the market is done: the strategy never quotes it again in this run.

Invariants: a pure wrapper (it reads the context and returns intents, no I/O); an exit order
never grows the exposure it sheds (it is sized to what is held net, in whole lots, and one at a
time per market: the next waits ``exit_every_s``, for the fills of the last to be booked); a
market that exits stays exited; the wrapped strategy still sees every event (its estimates and
state go on), only its intents on exited markets are dropped.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import msgspec
import structlog

from bot.core.intents import CancelAll, CancelOrder, Intent, QuoteTarget, Take, buy_at_least
from bot.core.markets import MarketInfo
from bot.core.quantities import Usdc
from bot.strategy import Strategy, StrategyContext, intents_of
from bot.venue.enums import OrderType, Side
from bot.venue.units import LOT, UNIT

log = structlog.get_logger("bot.exits")


class ExitRules(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """When a strategy exits (each ``None``: never for that reason); amounts in micro-USDC inside,
    in USDC in a config (``max_loss = 25``)."""

    max_loss: Usdc | None = None  # marked PnL this far below its value at the start: exit every market
    max_drawdown: Usdc | None = None  # marked PnL this far below its highest: exit every market
    flatten_before_end_s: float | None = None  # a market this close to its end date: exit it
    shed_through_complement: bool = True  # buy the other outcome when that sheds exposure for less
    exit_every_s: float = 2.0  # the least time between two exit orders on one market

    def __post_init__(self) -> None:
        for name in ("max_loss", "max_drawdown", "flatten_before_end_s"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"exits.{name} must be positive (or off), got {value}")
        if self.exit_every_s <= 0:
            raise ValueError(f"exits.exit_every_s must be positive, got {self.exit_every_s}")

    @property
    def any(self) -> bool:
        """True when some rule can make the strategy exit."""
        return self.max_loss is not None or self.max_drawdown is not None or self.flatten_before_end_s is not None


def marked_pnl(portfolio: Any, books: Any, tokens: Iterable[str]) -> int:
    """Realized + unrealized (at each book's mid; none: 0) - fees on ``tokens``, micro-USDC."""
    total = 0
    for t in tokens:
        p = portfolio.position(t)
        total += p.realized_e12 - p.fees * UNIT
        book = books.get(t)
        mid = book.mid if book is not None else None
        if mid is not None and p.size:
            total += p.unrealized_e12(mid)
    return total // UNIT


def exit_order(market: MarketInfo, portfolio: Any, books: Any, complement: bool) -> Take | None:
    """The FAK order that sheds ``market``'s net exposure at the touch, or ``None`` when it is under
    the market's minimum order or no book can take it (see the module docstring)."""
    yes, no = market.tokens
    exposure = portfolio.size(yes) - portfolio.size(no)
    held, other = (yes, no) if exposure > 0 else (no, yes)
    shares = abs(exposure) // LOT * LOT
    if shares < max(market.min_size, LOT):
        return None
    held_book, other_book = books.get(held), books.get(other)
    bid = held_book.best_bid if held_book is not None and not held_book.stale else None
    ask = other_book.best_ask if other_book is not None and not other_book.stale else None
    if complement and ask is not None and (bid is None or UNIT - ask > bid):
        return buy_at_least(other, ask, shares)  # a set: what it sheds fetches 1 - ask, more than the bid
    if bid is None:
        return None
    return Take(held, Side.SELL, bid, min(shares, portfolio.size(held) // LOT * LOT), OrderType.FAK)


class Exits(Strategy):
    """``inner`` with ``rules`` applied (see the module docstring); its name, reads and estimates
    are the inner strategy's."""

    def __init__(self, inner: Strategy, rules: ExitRules, markets: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.inner = inner
        self.rules = rules
        self.reads = inner.reads
        self._wanted = markets  # condition ids it trades (empty: every market)
        self._start: int | None = None  # marked PnL when the run started
        self._peak: int | None = None
        self.exiting: dict[str, str] = {}  # condition id -> why it exits
        self.done: set[str] = set()  # exited and flat
        self._last_exit: dict[str, float] = {}

    @property
    def name(self) -> str:
        return self.inner.name

    def book_tokens(self) -> Iterable[str] | None:
        return self.inner.book_tokens()

    def estimates(self) -> Mapping[str, Mapping[str, float]]:
        return self.inner.estimates()

    def undersized(self, markets: Iterable[MarketInfo]) -> list[str]:
        return self.inner.undersized(markets)

    def __getattr__(self, name: str) -> Any:  # figures, reward_earned, ... of the inner strategy
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    # --- hooks: the inner strategy's, then the rules ------------------------------------------
    def on_start(self, ctx: StrategyContext) -> list[Intent]:
        self._start = self._peak = marked_pnl(ctx.portfolio, ctx.books, self._tokens(ctx))
        return self._apply(ctx, intents_of(self.inner.on_start(ctx)), judge=True)

    def on_book(self, ctx: StrategyContext, token_id: str) -> list[Intent]:
        return self._apply(ctx, intents_of(self.inner.on_book(ctx, token_id)))

    def on_trade_print(self, ctx: StrategyContext, trade: Any) -> list[Intent]:
        return self._apply(ctx, intents_of(self.inner.on_trade_print(ctx, trade)))

    def on_fill(self, ctx: StrategyContext, fill: Any) -> list[Intent]:
        return self._apply(ctx, intents_of(self.inner.on_fill(ctx, fill)), judge=True)

    def on_order_update(self, ctx: StrategyContext, update: Any) -> list[Intent]:
        return self._apply(ctx, intents_of(self.inner.on_order_update(ctx, update)))

    def on_timer(self, ctx: StrategyContext) -> list[Intent]:
        out = self._apply(ctx, intents_of(self.inner.on_timer(ctx)), judge=True)
        return out + self._exit_orders(ctx)

    def on_stop(self, ctx: StrategyContext) -> list[Intent]:
        return self._apply(ctx, intents_of(self.inner.on_stop(ctx)))

    # --- the rules ---------------------------------------------------------------------------
    def _markets(self, ctx: StrategyContext) -> list[MarketInfo]:
        wanted = self._wanted
        return [m for m in ctx.markets if not wanted or m.condition_id in wanted]

    def _tokens(self, ctx: StrategyContext) -> list[str]:
        return [t for m in self._markets(ctx) for t in m.tokens]

    def _judge(self, ctx: StrategyContext) -> list[Intent]:
        """Exit what the rules say must exit now; the intents that empty its targets."""
        rules = self.rules
        now = ctx.now()
        markets = self._markets(ctx)
        why: dict[str, str] = {}
        if rules.max_loss is not None or rules.max_drawdown is not None:
            pnl = marked_pnl(ctx.portfolio, ctx.books, [t for m in markets for t in m.tokens])
            if self._start is None or self._peak is None:
                self._start = self._peak = pnl
            self._peak = max(self._peak, pnl)
            if rules.max_loss is not None and self._start - pnl >= rules.max_loss:
                why = dict.fromkeys((m.condition_id for m in markets), "loss")
            elif rules.max_drawdown is not None and self._peak - pnl >= rules.max_drawdown:
                why = dict.fromkeys((m.condition_id for m in markets), "drawdown")
        if rules.flatten_before_end_s is not None:
            for m in markets:
                if m.end_ts and m.end_ts - now <= rules.flatten_before_end_s:
                    why.setdefault(m.condition_id, "end_date")
        out: list[Intent] = []
        for m in markets:
            cid = m.condition_id
            reason = why.get(cid)
            if reason is None or cid in self.exiting:
                continue
            self.exiting[cid] = reason
            log.warning("strategy_exits", strategy=self.name, market=cid, reason=reason)
            out += [QuoteTarget(t) for t in m.tokens]
        return out

    def _apply(self, ctx: StrategyContext, intents: list[Intent], judge: bool = False) -> list[Intent]:
        """``intents`` without those on exiting markets (their cancels kept); with ``judge``, the
        rules are judged first."""
        head = self._judge(ctx) if judge else []
        if not self.exiting:
            return head + intents if head else intents
        kept: list[Intent] = head
        for it in intents:
            if type(it) in (CancelOrder, CancelAll):
                kept.append(it)
                continue
            m = ctx.markets.get(it.token_id)
            if m is not None and m.condition_id in self.exiting:
                continue
            kept.append(it)
        return kept

    def _exit_orders(self, ctx: StrategyContext) -> list[Intent]:
        """One exit order per exiting market that still holds an exposure, at most every
        ``exit_every_s``; a market under its minimum order is done."""
        now = ctx.now()
        out: list[Intent] = []
        for m in self._markets(ctx):
            cid = m.condition_id
            if cid not in self.exiting or cid in self.done:
                continue
            if now - self._last_exit.get(cid, float("-inf")) < self.rules.exit_every_s:
                continue
            order = exit_order(m, ctx.portfolio, ctx.books, self.rules.shed_through_complement)
            if order is None:
                yes, no = m.tokens
                if abs(ctx.portfolio.size(yes) - ctx.portfolio.size(no)) < max(m.min_size, LOT):
                    self.done.add(cid)
                    log.info("strategy_exited", strategy=self.name, market=cid, reason=self.exiting[cid])
                continue
            self._last_exit[cid] = now
            out.append(order)
        return out


def with_exits(strategy: Strategy, rules: ExitRules | None, markets: tuple[str, ...] = ()) -> Strategy:
    """``strategy`` wrapped in ``Exits`` when ``rules`` has any rule, else ``strategy`` itself."""
    if rules is None or not rules.any:
        return strategy
    return Exits(strategy, rules, markets)

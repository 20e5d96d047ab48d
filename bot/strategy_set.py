"""Several strategies on one account (``[[strategies]]``), run as one strategy: ``StrategySet``.

The engine runs a set like any strategy: one portfolio, one risk gate (the account's limits, in
total), one router and its throttles, while each strategy sees only its own markets, gets the
books, prints, fills and order updates of its tokens, and passes its own limits first.
``configured_strategy`` is what a bot config runs: its one ``[strategy]`` or the set of its
``[[strategies]]``.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import msgspec
import structlog

from bot.core.intents import CancelAll, CancelOrder, Intent
from bot.core.markets import MarketIndex, MarketInfo
from bot.exits import with_exits
from bot.risk import RiskGate, RiskLimits
from bot.strategy import Strategy, StrategyContext, StrategyError, intents_of, load_strategy, overrides
from bot.venue.units import format_units

FOREIGN_TOKEN = "foreign_token"
"""The reason a strategy's intent on a token it does not quote is dropped."""


class StrategyTally(msgspec.Struct, frozen=True):
    """What one strategy of a set did so far (a snapshot; metrics read it at scrape time):
    fills and filled shares (micro-units), realized PnL on its tokens (micro-USDC), and its
    intents refused by its own limits (or dropped for a foreign token), by reason."""

    name: str
    tokens: tuple[str, ...]
    fills: int = 0
    volume: int = 0
    realized_pnl: int = 0
    rejections: tuple[tuple[str, int], ...] = ()


class _Member:
    """One strategy of a set, bound to its markets."""

    def __init__(self, name: str, strategy: Strategy, markets: tuple[str, ...], limits: Any) -> None:
        self.name = name
        self.strategy = strategy
        self.market_ids = markets
        self.limits: RiskLimits | None = limits.as_limits() if limits is not None and limits.any else None
        self.log = structlog.get_logger("strategy").bind(strategy=name)
        self.index = MarketIndex(())
        self.gate: RiskGate | None = None  # its own limits on its own markets (``bind``), if any
        self.tokens: frozenset[str] = frozenset()
        self.tops: dict[str, tuple] | None = None  # set when it reads the touch in a set that reads depth
        self.ctx: StrategyContext | None = None
        self.fills = self.volume = self.realized = 0
        self.rejections: dict[str, int] = {}


class StrategySet(Strategy):
    """Several strategies run as one on one account.

    Invariants: a token is quoted by at most one strategy of the set (``bind`` refuses two on the
    same token); a strategy's intents on any other token are dropped, logged and counted
    (``foreign_token``), and its ``CancelAll()`` cancels its own tokens only; every intent passes
    the strategy's own limits (``StrategyLimits``, on its markets, resting orders and order rate)
    before the engine's one risk gate checks the account's; each strategy's context shows its own
    markets, params and a logger bound to its name; the books, prints, fills and order updates of a
    token reach the strategies that read it (books, prints) or quote it (fills, updates).
    """

    def __init__(self, members: Iterable[tuple[str, Strategy, tuple[str, ...], Any]]) -> None:
        self.members = [_Member(*m) for m in members]
        if not self.members:
            raise StrategyError("a strategy set needs at least one strategy")
        super().__init__(None)
        self.reads = "top" if all(getattr(m.strategy, "reads", "depth") == "top" for m in self.members) else "depth"
        for m in self.members:
            if self.reads == "depth" and getattr(m.strategy, "reads", "depth") == "top":
                m.tops = {}
        # a neg-risk event's complete sets are valued whole when a strategy of the set says its
        # events' markets are all of them (``ComplementArbitrage.whole_events``)
        self.whole_events = any(getattr(m.strategy, "whole_events", False) for m in self.members)
        self.owners: dict[str, str] = {}  # token -> the name of the strategy quoting it
        self._owner: dict[str, _Member] = {}
        self._readers: dict[str, tuple[_Member, ...]] = {}
        self._printers: dict[str, tuple[_Member, ...]] = {}
        self.tallies: tuple[StrategyTally, ...] = ()
        self._ctx: Any = None
        # the engine skips the hooks no strategy of the set has (as it does for one strategy)
        for hook in ("on_trade_print", "on_order_update"):
            if not any(overrides(m.strategy, hook) for m in self.members):
                setattr(self, hook, getattr(Strategy, hook).__get__(self))

    @property
    def name(self) -> str:
        return "+".join(m.name for m in self.members)

    def bind(self, markets: list[MarketInfo]) -> None:
        """Give each strategy its markets (by condition id) out of ``markets``. Raises
        ``StrategyError`` (one line) for a market of a strategy that is not in ``markets`` and for
        a token two strategies would quote."""
        by_id = {m.condition_id: m for m in markets}
        owners: dict[str, str] = {}
        for m in self.members:
            missing = [c for c in m.market_ids if c not in by_id]
            if missing:
                raise StrategyError(f"strategy {m.name!r}: market {missing[0]} is not listed by the venue")
            mine = [by_id[c] for c in m.market_ids]
            m.index = MarketIndex(mine)
            m.tokens = frozenset(t for mk in mine for t in mk.tokens)
            for t in (t for mk in mine for t in mk.tokens):  # in market order: one error for one config
                if t in owners:
                    raise StrategyError(f"strategies {owners[t]!r} and {m.name!r} both quote token {t}: "
                                        "a token is quoted by one strategy only")
                owners[t] = m.name
            m.gate = RiskGate(m.limits, m.index, log=m.log) if m.limits is not None else None
        self.owners.clear()
        self.owners.update(owners)
        self._owner = {t: m for m in self.members for t in m.tokens}
        readers: dict[str, list[_Member]] = {}
        printers: dict[str, list[_Member]] = {}
        for m in self.members:
            asked = getattr(m.strategy, "book_tokens", None)
            read = asked() if asked is not None else None
            for t in (m.tokens if read is None else read):
                readers.setdefault(t, []).append(m)
            if overrides(m.strategy, "on_trade_print"):
                for t in m.tokens:
                    printers.setdefault(t, []).append(m)
        self._readers = {t: tuple(ms) for t, ms in readers.items()}
        self._printers = {t: tuple(ms) for t, ms in printers.items()}
        self._publish()

    def book_tokens(self) -> Iterable[str] | None:
        return tuple(self._readers)

    # -- hooks ------------------------------------------------------------------------------

    def on_start(self, ctx: StrategyContext) -> list[Intent] | None:
        return self._each(ctx, "on_start")

    def on_stop(self, ctx: StrategyContext) -> list[Intent] | None:
        return self._each(ctx, "on_stop")

    def on_timer(self, ctx: StrategyContext) -> list[Intent] | None:
        return self._each(ctx, "on_timer")

    def on_book(self, ctx: StrategyContext, token_id: str) -> list[Intent] | None:
        out: list[Intent] | None = None
        for m in self._readers.get(token_id, ()):
            tops = m.tops
            if tops is not None:
                top = ctx.books[token_id].top()
                if tops.get(token_id) == top:
                    continue
                tops[token_id] = top
            got = intents_of(m.strategy.on_book(self._context(m, ctx), token_id))
            if got:
                got = self._own(m, got, ctx)
                out = got if out is None else out + got
        return out

    def on_trade_print(self, ctx: StrategyContext, trade: Any) -> list[Intent] | None:
        out: list[Intent] = []
        for m in self._printers.get(getattr(trade, "asset_id", ""), ()):
            out += self._own(m, intents_of(m.strategy.on_trade_print(self._context(m, ctx), trade)), ctx)
        return out

    def on_fill(self, ctx: StrategyContext, fill: Any) -> list[Intent] | None:
        m = self._owner.get(fill.token_id)
        if m is None:
            return None
        m.fills += 1
        m.volume += fill.size
        positions = ctx.portfolio.positions()
        m.realized = sum(positions[t].realized_pnl for t in m.tokens if t in positions)
        self._publish()
        return self._own(m, intents_of(m.strategy.on_fill(self._context(m, ctx), fill)), ctx)

    def on_order_update(self, ctx: StrategyContext, update: Any) -> list[Intent] | None:
        m = self._owner.get(update.token_id)
        if m is None:
            return None
        return self._own(m, intents_of(m.strategy.on_order_update(self._context(m, ctx), update)), ctx)

    def figures(self) -> dict[str, dict[str, int]]:
        """Per strategy, by name: ``fills``, ``volume`` (shares), ``realized_pnl`` (USDC) in
        micro-units and ``rejections`` (by its own limits or for a foreign token), for summaries."""
        return {t.name: {"fills": t.fills, "volume": t.volume, "realized_pnl": t.realized_pnl,
                         "rejections": sum(n for _, n in t.rejections)} for t in self.tallies}

    def undersized(self, markets: Iterable[MarketInfo]) -> list[str]:
        return [f"{m.name}: {line}" for m in self.members for line in m.strategy.undersized(m.index)]

    def estimates(self) -> Mapping[str, Mapping[str, float]]:
        merged: dict[str, Mapping[str, float]] = {}
        for m in self.members:
            merged.update(m.strategy.estimates())
        return merged

    # -- internals --------------------------------------------------------------------------

    def _each(self, ctx: StrategyContext, hook: str) -> list[Intent]:
        out: list[Intent] = []
        for m in self.members:
            out += self._own(m, intents_of(getattr(m.strategy, hook)(self._context(m, ctx))), ctx)
        return out

    def _context(self, m: _Member, ctx: StrategyContext) -> StrategyContext:
        """``m``'s view of the engine's context: its markets, params and logger, the same books,
        portfolio, open orders and clock (built once per engine context)."""
        if self._ctx is not ctx:
            self._ctx = ctx
            for each in self.members:
                each.ctx = None
        if m.ctx is None:
            m.ctx = StrategyContext(books=ctx.books, portfolio=ctx.portfolio, clock=ctx.clock, markets=m.index,
                                    open_orders=ctx.open_orders, params=getattr(m.strategy, "params", None),
                                    log=m.log, name=m.name, touch=ctx.touch)
        return m.ctx

    def _own(self, m: _Member, intents: list[Intent], ctx: StrategyContext) -> list[Intent]:
        """``m``'s intents on its own tokens, within its own limits (the rest dropped and counted)."""
        if not intents:
            return intents
        mine: list[Intent] = []
        refused = False
        for i in intents:
            t = type(i)
            if t is CancelAll:
                if i.token_id is None:
                    mine += [CancelAll(tok) for tok in sorted(m.tokens)]
                    continue
                token = i.token_id
            elif t is CancelOrder:
                token = self._order_token(m, i.order_id, ctx)
            else:
                token = i.token_id
            if token in m.tokens:
                mine.append(i)
            else:
                refused = True
                self._refuse(m, FOREIGN_TOKEN, token, "the token is not one of this strategy's markets")
        if m.gate is not None and mine:
            working = [o for tok in m.tokens for o in (ctx.open_orders.get(tok) or ())]
            decision = m.gate.check(mine, positions=ctx.portfolio, open_orders=working, books=ctx.books,
                                    now=ctx.clock.now())  # logs each rejection, named by m.log
            for r in decision.rejections:
                refused = True
                reason = r.reason.value
                m.rejections[reason] = m.rejections.get(reason, 0) + 1
            mine = list(decision.accepted)
        if refused:
            self._publish()
        return mine

    @staticmethod
    def _order_token(m: _Member, order_id: str, ctx: StrategyContext) -> str | None:
        for tok in m.tokens:
            for o in ctx.open_orders.get(tok) or ():
                if o.order_id == order_id:
                    return tok
        return None

    def _refuse(self, m: _Member, reason: str, token: str | None, detail: str) -> None:
        m.rejections[reason] = m.rejections.get(reason, 0) + 1
        m.log.warning("strategy_risk_reject", reason=reason, token_id=token, detail=detail)

    def _publish(self) -> None:
        """A new snapshot of every strategy's tally (replaced, never mutated: a scrape reads one)."""
        self.tallies = tuple(StrategyTally(m.name, tuple(sorted(m.tokens)), m.fills, m.volume, m.realized,
                                           tuple(sorted(m.rejections.items())))
                             for m in self.members)


def strategy_rows(figures: dict[str, dict[str, int]]) -> list[tuple[str, str]]:
    """Each strategy's figures when several share the account (``StrategySet.figures``), as
    (figure, value) rows: what the live view, the summaries and the reports all show."""
    m = format_units
    rows: list[tuple[str, str]] = []
    for name, f in figures.items():
        rows += [(f"strategy {name}: fills", f"{f['fills']:,}"), (f"strategy {name}: volume (shares)", m(f["volume"])),
                 (f"strategy {name}: realized (USDC)", m(f["realized_pnl"])),
                 (f"strategy {name}: rejections", f"{f['rejections']:,}")]
    return rows


def configured_strategy(config: Any) -> Strategy:
    """The strategy a bot config runs: ``[strategy]``'s, or a ``StrategySet`` of its
    ``[[strategies]]`` (each loaded with its own params; ``StrategyError`` names the one that fails),
    each wrapped in its exit rules when it has any (``bot.exits``)."""
    instances = getattr(config, "strategies", ())
    if not instances:
        return with_exits(load_strategy(config.strategy.path, config.strategy.params), config.strategy.exits,
                          tuple(config.strategy.markets))
    members = []
    for s in instances:
        try:
            strategy = load_strategy(s.path, s.params)
        except StrategyError as exc:
            raise StrategyError(f"strategy {s.name!r}: {exc}") from None
        members.append((s.name, with_exits(strategy, s.exits, tuple(s.markets)), tuple(s.markets), s.risk))
    return StrategySet(members)

"""What the binary-market makers share: the strategy shell around a pure decision in YES terms.

A subclass says what it wants on one market (``decide``: a ``YesQuotes`` from the market's books
and holdings); this shell picks the markets, applies the rewards option, turns the quotes into
orders on the YES and NO tokens (``strategies.pairs.orders``), sends a market's targets only when
they changed, adds up the reward it estimates the resting quotes earn, and publishes its
estimates (``Strategy.estimates``) on every timer.

Invariants: the strategy only reads its context and returns intents; a market's two targets are
always sent together; on stop every market it quoted gets empty targets.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from bot.core.intents import Intent, QuoteTarget
from bot.core.markets import MarketInfo
from bot.core.vocabulary import Shares
from bot.strategy import Strategy, StrategyContext
from strategies.pairs import Holdings, Pair, YesQuotes, orders, uncrossed
from strategies.rewards import RewardsParams, adjust, others_levels

REWARD_DEPTH = 20  # book levels per side read to score the others' liquidity


class PairParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What every binary-market maker takes (sizes in shares in a config, micro-units inside)."""

    markets: tuple[str, ...] = ()  # condition ids to quote; empty: every market
    max_inventory: Shares = 100_000_000  # |YES - NO| held never exceeds this through our quotes
    fair: Literal["mid", "micro"] = "mid"
    post_only: bool = True
    order_ttl_s: int = 0  # >0: GTD orders expiring after this many seconds (venue minimum 180)
    rewards: RewardsParams = RewardsParams()

    def __post_init__(self) -> None:
        if self.max_inventory <= 0:
            raise ValueError("max_inventory must be positive")
        if self.order_ttl_s < 0:
            raise ValueError("order_ttl_s must not be negative")


class Sent(msgspec.Struct, frozen=True):
    """What was last sent for a market: the quotes and the targets they became."""

    quotes: YesQuotes
    targets: tuple[QuoteTarget, QuoteTarget]


class PairMaker(Strategy):
    """Quotes each selected binary market from ``decide``; see the module docstring."""

    Params = PairParams
    reads = "top"

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        self._sent: dict[str, Sent] = {}
        self._rates: dict[str, float] = {}  # condition id -> expected reward, USDC per second
        self._earned: dict[str, float] = {}  # condition id -> reward estimated earned, USDC
        self._accrued_at: float | None = None
        self._published: dict[str, dict[str, float]] = {}

    # --- what subclasses provide ------------------------------------------------------------
    def decide(self, ctx: StrategyContext, pair: Pair, holdings: Holdings) -> YesQuotes:
        """The quotes wanted on ``pair.market`` now (YES terms)."""
        raise NotImplementedError

    def observe(self, ctx: StrategyContext, market: MarketInfo, pair: Pair) -> None:
        """A book of ``market`` changed (or a timer fired): update what is estimated from books."""

    def intensity(self, market: MarketInfo) -> tuple[float, float]:
        """``(A, k)`` of the takers on ``market`` (the rewards option's adverse selection)."""
        return self.params.rewards.a, self.params.rewards.k

    def market_estimates(self, market: MarketInfo) -> dict[str, float]:
        """This market's estimates for ``estimates()`` (the reward earned is added here)."""
        return {}

    # --- the shell ----------------------------------------------------------------------------
    def selected(self, ctx: StrategyContext) -> list[MarketInfo]:
        wanted = self.params.markets
        return [m for m in ctx.markets if not wanted or m.condition_id in wanted]

    def _market(self, ctx: StrategyContext, token_id: str) -> MarketInfo | None:
        m = ctx.markets.get(token_id)
        if m is None or (self.params.markets and m.condition_id not in self.params.markets):
            return None
        return m

    def refresh(self, ctx: StrategyContext, market: MarketInfo, pair: Pair | None = None) -> list[Intent]:
        """Decide, apply the rewards option, send the market's targets if they changed (``pair``:
        the market's books, when the caller has them already)."""
        p = self.params
        if pair is None:
            pair = Pair.of(ctx.books, market)
        holdings = Holdings.of(ctx.portfolio, market)
        quotes = self.decide(ctx, pair, holdings)
        cid = market.condition_id
        if p.rewards.enabled:
            quotes, rate = self._with_rewards(ctx, market, pair, holdings, quotes)
            self._rates[cid] = rate
        prev = self._sent.get(cid)
        quotes = uncrossed(quotes, prev.quotes if prev is not None else YesQuotes())
        expiration = int(ctx.now()) + p.order_ttl_s if p.order_ttl_s else 0
        targets = orders(pair, quotes, holdings, post_only=p.post_only, expiration=expiration)
        if prev is not None and _same(prev.targets, targets) and not _expiring(prev.targets, ctx.now(), p.order_ttl_s):
            return []
        if prev is None and not quotes:
            return []
        self._sent[cid] = Sent(quotes, targets)
        return list(targets)

    def _with_rewards(self, ctx: StrategyContext, market: MarketInfo, pair: Pair, holdings: Holdings,
                      quotes: YesQuotes) -> tuple[YesQuotes, float]:
        p = self.params
        terms = p.rewards.terms(market)
        touch = pair.touch(gross=True)  # a rewarded quote keeps clear of our own orders too
        if terms is None or touch.stale:
            return quotes, 0.0
        book = ctx.books.get(market.tokens[0])
        prev = self._sent.get(market.condition_id)
        mine = prev.quotes if prev is not None else YesQuotes()
        bids = book.levels(True, REWARD_DEPTH) if book is not None else []
        asks = book.levels(False, REWARD_DEPTH) if book is not None else []
        others = (others_levels(bids, mine.bids), others_levels(asks, mine.asks))
        room = (p.max_inventory - holdings.exposure, p.max_inventory + holdings.exposure)
        return adjust(quotes, touch, terms, p.rewards, room, others, self.intensity(market), market.fee)

    def _accrue(self, ctx: StrategyContext, now: float) -> None:
        """Add the expected reward of the quotes that rested since the last timer."""
        last, self._accrued_at = self._accrued_at, now
        if last is None or now <= last:
            return
        for m in self.selected(ctx):
            rate = self._rates.get(m.condition_id, 0.0)
            if rate > 0 and any(t in ctx.open_orders for t in m.tokens):
                self._earned[m.condition_id] = self._earned.get(m.condition_id, 0.0) + rate * (now - last)

    def publish(self, ctx: StrategyContext) -> None:
        """A new snapshot of every market's estimates (never mutated once published)."""
        out: dict[str, dict[str, float]] = {}
        for m in self.selected(ctx):
            values = dict(self.market_estimates(m))
            if self.params.rewards.enabled:
                values["reward_rate_usdc_per_s"] = self._rates.get(m.condition_id, 0.0)
                values["reward_earned_usdc"] = self._earned.get(m.condition_id, 0.0)
            if values:
                out[m.tokens[0]] = values
        self._published = out

    def estimates(self) -> dict[str, dict[str, float]]:
        return self._published

    @property
    def reward_earned(self) -> float:
        """USDC of rewards the strategy estimates its quotes earned, over every market."""
        return sum(self._earned.values())

    # --- hooks --------------------------------------------------------------------------------
    def on_start(self, ctx: StrategyContext) -> list[Intent]:
        self._sent.clear()
        self._accrued_at = ctx.now()
        return self._refresh_all(ctx)

    def on_book(self, ctx: StrategyContext, token_id: str) -> list[Intent]:
        m = self._market(ctx, token_id)
        if m is None:
            return []
        pair = Pair.of(ctx.books, m)
        self.observe(ctx, m, pair)
        return self.refresh(ctx, m, pair)

    def on_fill(self, ctx: StrategyContext, fill: Any) -> list[Intent]:
        m = self._market(ctx, fill.token_id)
        return self.refresh(ctx, m) if m is not None else []

    def on_timer(self, ctx: StrategyContext) -> list[Intent]:
        self._accrue(ctx, ctx.now())
        return self._refresh_all(ctx)

    def _refresh_all(self, ctx: StrategyContext) -> list[Intent]:
        """Observe and requote every selected market, then publish the estimates."""
        out: list[Intent] = []
        for m in self.selected(ctx):
            pair = Pair.of(ctx.books, m)
            self.observe(ctx, m, pair)
            out += self.refresh(ctx, m, pair)
        self.publish(ctx)
        return out

    def on_stop(self, ctx: StrategyContext) -> list[Intent]:
        out: list[Intent] = []
        for sent in self._sent.values():
            out += [QuoteTarget(t.token_id) for t in sent.targets]
        self._sent.clear()
        self.publish(ctx)
        return out


def _expiring(targets: tuple[QuoteTarget, QuoteTarget], now: float, ttl: int) -> bool:
    """A GTD quote has used half its life: send the targets again with a fresh expiration."""
    return bool(ttl) and any(q.expiration and q.expiration - now < ttl / 2 for t in targets for q in t.quotes)


def _same(a: tuple[QuoteTarget, QuoteTarget], b: tuple[QuoteTarget, QuoteTarget]) -> bool:
    """Targets equal but for the expiration (a GTD order is not replaced to refresh its expiry)."""
    def key(t: QuoteTarget) -> tuple:
        return t.token_id, tuple((q.side, q.price, q.size, q.post_only) for q in t.quotes)

    return key(a[0]) == key(b[0]) and key(a[1]) == key(b[1])

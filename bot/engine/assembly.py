"""The one assembly of an engine, for any mode: live, paper or backtest.

What differs between modes comes in as arguments: the clock (wall or simulated), how orders are
signed (a real builder, or unsigned ids in a backtest), the throttles the router spends (the live
venue's limiter, shared with its HTTP client, or the same limits table on the simulated clock),
the journal and the metrics. Everything else (books, risk, router, reconciler, portfolio, the
strategy's context) is built here the same way, from the same config sections.

Several strategies on one account (``[[strategies]]``, ``bot.strategy_set.StrategySet``) are
bound to their markets here, and the one risk gate names the strategy in its rejections.
"""

from __future__ import annotations

from typing import Any, Callable

import msgspec

from bot.core.book import Books
from bot.core.clock import Clock
from bot.core.feed import Feed, FeedConfig
from bot.core.markets import MarketIndex, MarketInfo
from bot.engine.engine import Engine, EngineConfig
from bot.engine.signing import order_signer, seeded_salts, unsigned_ids
from bot.execution.reconciler import Reconciler, ReconcilerConfig
from bot.execution.router import Router, RouterConfig
from bot.portfolio.pnl import DailyPnl
from bot.risk import RiskGate, RiskLimits
from bot.strategy_set import StrategySet
from bot.venue.limits import LimitsConfig, RouteLimiter, paced_writes

DEFAULT_TICK = 10_000


class Signing(msgspec.Struct, frozen=True):
    """How orders get their ids: ``builder`` (an ``OrderBuilder``) signs them, or, with none,
    they are only numbered (a backtest needs no key); ``seed`` makes salts or ids repeatable
    (None: OS randomness, for live trading)."""

    builder: Any = None
    seed: int | None = None


def router_throttles(limiter: RouteLimiter) -> dict[str, Any]:
    """What the router spends from a limiter: ``place``, ``cancel`` and the per-request route."""
    return {
        "place_throttle": limiter.throttle("orders"),
        "cancel_throttle": limiter.throttle("cancels"),
        "route_throttles": (limiter.throttle("clob:all"),),
    }


def simulated_throttles(limits: LimitsConfig, clock: Clock) -> dict[str, Any]:
    """The venue's limits on a simulated clock: a backtest paces its orders as live would (the
    trading writes spent as ``paced_writes`` says)."""
    return router_throttles(RouteLimiter(paced_writes(limits), "clob", clock=clock.now))


def tick_source(books: Books, markets: MarketIndex) -> Callable[[str], int]:
    """The live tick of a token (books follow ``tick_size_change``), else the market's."""

    def tick_of(token_id: str) -> int:
        b = books.get(token_id)
        if b is not None and b.tick:
            return b.tick
        m = markets.get(token_id)
        return m.tick if m is not None else DEFAULT_TICK

    return tick_of


def build_engine(
    strategy: Any,
    markets: list[MarketInfo],
    *,
    clock: Clock,
    signing: Signing,
    throttles: dict[str, Any],
    risk: RiskLimits | None = None,
    router: RouterConfig | None = None,
    reconciler: ReconcilerConfig | None = None,
    engine: EngineConfig | None = None,
    feed: FeedConfig | None = None,
    owner: str = "",
    journal: Any = None,
    day_start: Any = None,
    metrics: Any = None,
    log: Any = None,
    own_orders_shown: bool = True,
) -> Engine:
    """An engine for ``strategy`` on ``markets``. ``owner`` (our API key) marks our maker legs
    in trades, unless the reconciler's config names one; the reconciler journals when ``journal`` is given, and so does the day's PnL: it
    resumes the journaled ``day_start`` when that is today's, and journals every new day's start.
    ``own_orders_shown``: whether the books the engine reads show our orders (live: they do; paper
    trading and a backtest on books recorded without us: they do not)."""
    index = MarketIndex(markets)
    books = Books()
    for m in markets:
        for t in m.tokens:
            books.add(t, tick=m.tick, market=m.condition_id)
    tick_of = tick_source(books, index)
    if signing.builder is not None:
        salts = seeded_salts(signing.seed) if signing.seed is not None else None
        sign = order_signer(signing.builder, index, clock, tick_of, salts)
    else:
        sign = unsigned_ids(signing.seed or 0)
    rec_config = reconciler or ReconcilerConfig()
    if not rec_config.owner:
        rec_config = msgspec.structs.replace(rec_config, owner=owner)
    rec = Reconciler(rec_config, journal=journal)
    rec.fees = {t: m.fee for m in markets for t in m.tokens}  # each fill is booked with its market's rule
    route = Router(rec.orders, sign, config=router or RouterConfig(), tick_of=tick_of, **throttles)
    if isinstance(strategy, StrategySet):
        strategy.bind(markets)
    gate = RiskGate(risk or RiskLimits(), index)
    if isinstance(strategy, StrategySet):
        gate.owners = strategy.owners  # its rejections name the strategy
    tokens = [t for m in markets for t in m.tokens]
    eng = Engine(strategy=strategy, markets=index, clock=clock, router=route, reconciler=rec, risk=gate,
                 books=books, feed=Feed(feed, tokens, clock.now()), metrics=metrics, config=engine, log=log)
    eng.own_orders_shown = own_orders_shown
    if journal is not None:
        eng.daily = DailyPnl.resume(day_start, clock.now(), on_new_day=journal.day_start)
    return eng

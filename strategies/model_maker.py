"""What the model-based market makers (Avellaneda-Stoikov, GLFT) share: the model's inputs, fixed
in the config or estimated online, and the shell that feeds the estimators and re-quotes.

Inputs are sigma (the mid's standard deviation per square root of a second, price units) and ``A``,
``k`` (takers per second reaching distance ``delta`` from the mid: ``A * exp(-k * delta)``). With
``estimate = true`` each market has its own estimators (``strategies.estimators``), fed with the
mid at every book change and timer and with the distance every trade print reached; the
configured values are the priors used until an estimate is warm. The inputs in use and whether
each is estimated are published as the strategy's estimates (Prometheus ``bot_strategy_estimate``
and the run's summary).

Quotes are kept (queue place) while neither price moves by ``requote_ticks`` and sizes hold. Where
a market pays makers a rebate (``MarketInfo.fee``, ``bot.venue.fees``), a fill earns it on top of
the spread, so each side's distance from the fair price shrinks by the rebate per share (never
below zero).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any, Callable

import msgspec

from bot.core.markets import MarketInfo
from bot.core.vocabulary import UNIT, OrderSize, maker_rebate, parse_units
from bot.strategy import StrategyContext
from strategies.estimators import EstimatorParams, Intensity, Volatility, reached
from strategies.market_maker import fair_price
from strategies.pair_maker import PairMaker, PairParams
from strategies.pairs import Holdings, Pair, YesQuotes, distance_units, on_grid, side_sizes, two_sided


SEEN_PRINTS = 64  # per market: transaction hashes remembered to count a taker once


class ModelParams(PairParams, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Parameters every model maker takes; ``sigma``, ``a``, ``k`` are fixed or, with ``estimate``,
    the priors used until the online estimates warm up. ``q`` counts ``order_size`` lots."""

    gamma: float = 1.0  # risk aversion, per price unit per lot of inventory
    sigma: float = 0.002  # price units per sqrt(second)
    a: float = 0.5  # takers per second (one side) reaching the mid
    k: float = 150.0  # per price unit
    estimate: bool = True
    estimator: EstimatorParams = EstimatorParams()
    order_size: OrderSize = 10_000_000
    requote_ticks: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("gamma", "sigma", "a", "k"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a positive finite number, got {v}")
        if self.order_size <= 0:
            raise ValueError("order_size must be positive")
        if self.requote_ticks < 1:
            raise ValueError("requote_ticks must be at least 1")


class ModelInputs(msgspec.Struct, frozen=True):
    """The model's inputs on one market now, and whether each came from the estimators."""

    sigma: float
    a: float
    k: float
    sigma_estimated: bool = False
    intensity_estimated: bool = False


class Estimators:
    """One market's estimators (sigma; A and k)."""

    __slots__ = ("volatility", "intensity", "mid", "seen")

    def __init__(self, params: EstimatorParams) -> None:
        self.volatility = Volatility(params)
        self.intensity = Intensity(params)
        self.mid: int | None = None
        self.seen: deque[str] = deque(maxlen=SEEN_PRINTS)  # transactions already counted

    def first_sight(self, tx: str | None) -> bool:
        """False for a transaction already counted (one match printed on both tokens is one taker)."""
        if not tx:
            return True
        if tx in self.seen:
            return False
        self.seen.append(tx)
        return True

    def inputs(self, p: ModelParams) -> ModelInputs:
        if not p.estimate:
            return ModelInputs(p.sigma, p.a, p.k)
        sigma = self.volatility.value()
        ak = self.intensity.value()
        return ModelInputs(sigma if sigma is not None else p.sigma, ak[0] if ak else p.a, ak[1] if ak else p.k,
                           sigma is not None, ak is not None)


def quote_at_distances(pair: Pair, holdings: Holdings, params: ModelParams,
                       distances: Callable[[float], tuple[float | None, float | None]]) -> YesQuotes:
    """A model's quotes on ``pair.market``: ``distances(q)`` gives the bid's and the ask's distance
    from the fair price (price units; ``None`` or not a number: no quote on that side) for the
    inventory ``q`` in order sizes.

    Invariants: prices on the grid within ``[tick, 1 - tick]``, the bid floored and the ask ceiled
    from the model's prices, neither crossing the touch, bid < ask; sizes are lots of at least the
    market minimum that keep ``|exposure| <= max_inventory``; a stale or one-sided market gives no
    quote on that side.
    """
    touch = pair.touch()
    if touch.stale:
        return YesQuotes()
    s = fair_price(touch, params.fair)
    d_bid, d_ask = distances(holdings.exposure / params.order_size)
    rebate = maker_rebate(s, UNIT, pair.market.fee) / UNIT if 0 < s < UNIT else 0.0  # per share, price units
    if rebate:
        d_bid = max(d_bid - rebate, 0.0) if d_bid is not None and math.isfinite(d_bid) else d_bid
        d_ask = max(d_ask - rebate, 0.0) if d_ask is not None and math.isfinite(d_ask) else d_ask
    b, a = distance_units(d_bid), distance_units(d_ask)
    bid, ask = on_grid(touch, s - b if b is not None else None, s + a if a is not None else None)
    return two_sided(bid, ask, side_sizes(holdings, params.order_size, params.max_inventory, pair.min_size))


def moved(old: YesQuotes, new: YesQuotes, tick: int, threshold_ticks: int) -> bool:
    """True when ``new`` is worth losing the queue place of ``old``: a level appears or goes, a
    size changes, or a price moves by ``threshold_ticks`` or more."""
    for a, b in ((old.bids, new.bids), (old.asks, new.asks)):
        if len(a) != len(b):
            return True
        for x, y in zip(a, b):
            if x.size != y.size or abs(x.price - y.price) >= threshold_ticks * tick:
                return True
    return False


class ModelMaker(PairMaker):
    """A model maker's shell: subclasses give ``model_quote`` (pure) and ``model_estimates``."""

    Params = ModelParams

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        self._est: dict[str, Estimators] = {}
        self._last: dict[str, YesQuotes] = {}
        self._inputs: dict[str, ModelInputs] = {}
        self._now = 0.0

    def model_quote(self, pair: Pair, holdings: Holdings, inputs: ModelInputs, now: float) -> YesQuotes:
        raise NotImplementedError

    def model_estimates(self, market: MarketInfo, inputs: ModelInputs, now: float) -> dict[str, float]:
        """Model figures worth publishing besides the inputs (a reservation price, a horizon)."""
        return {}

    def estimators(self, market: MarketInfo) -> Estimators:
        est = self._est.get(market.condition_id)
        if est is None:
            est = self._est[market.condition_id] = Estimators(self.params.estimator)
        return est

    def inputs(self, market: MarketInfo) -> ModelInputs:
        return self.estimators(market).inputs(self.params)

    def intensity(self, market: MarketInfo) -> tuple[float, float]:
        i = self.inputs(market)
        return i.a, i.k

    def observe(self, ctx: StrategyContext, market: MarketInfo, pair: Pair) -> None:
        touch = pair.touch()
        est = self.estimators(market)
        now = ctx.now()
        est.intensity.tick(now)
        if touch.stale:
            return
        est.mid = fair_price(touch, "mid")
        est.volatility.observe(now, est.mid)

    def on_trade_print(self, ctx: StrategyContext, trade: Any) -> list[Any]:
        """A print: how far from the mid its taker reached, in YES terms, feeds ``A`` and ``k`` (a
        transaction printed on both tokens counts once)."""
        m = self._market(ctx, getattr(trade, "asset_id", ""))
        if m is None:
            return []
        est = self.estimators(m)
        if est.mid is None or not est.first_sight(getattr(trade, "transaction_hash", None)):
            return []
        try:
            price = parse_units(str(trade.price))
        except ValueError:
            return []
        if not 0 < price < UNIT or trade.side not in ("BUY", "SELL"):
            return []
        buys = trade.side == "BUY"
        if trade.asset_id != m.tokens[0]:  # a NO print: its taker traded YES the other way at 1 - q
            price, buys = UNIT - price, not buys
        est.intensity.observe(ctx.now(), reached(est.mid, price, buys))
        return []

    def decide(self, ctx: StrategyContext, pair: Pair, holdings: Holdings) -> YesQuotes:
        cid = pair.market.condition_id
        inputs = self.inputs(pair.market)
        self._inputs[cid] = inputs
        new = self.model_quote(pair, holdings, inputs, ctx.now())
        old = self._last.get(cid)
        if old is not None and not moved(old, new, pair.tick, self.params.requote_ticks):
            return old
        self._last[cid] = new
        return new

    def market_estimates(self, market: MarketInfo) -> dict[str, float]:
        inputs = self._inputs.get(market.condition_id) or self.inputs(market)
        return {
            "sigma": inputs.sigma, "a": inputs.a, "k": inputs.k,
            "sigma_estimated": float(inputs.sigma_estimated), "intensity_estimated": float(inputs.intensity_estimated),
            **self.model_estimates(market, inputs, self._now),
        }

    def on_start(self, ctx: StrategyContext) -> list[Any]:
        self._last.clear()
        self._now = ctx.now()
        return super().on_start(ctx)

    def on_timer(self, ctx: StrategyContext) -> list[Any]:
        self._now = ctx.now()
        return super().on_timer(ctx)

"""The Guéant-Lehalle-Fernandez-Tapia market maker (Guéant, Lehalle and Fernandez-Tapia, "Dealing
with the inventory risk: a solution to the market making problem", Mathematics and Financial
Economics 7, 2013): the closed-form asymptotic quotes for an infinite horizon with inventory bounds.

In the Avellaneda-Stoikov setting (mid of volatility ``sigma``, takers at intensity
``A * exp(-k * delta)``, risk aversion ``gamma``) with the inventory kept within ``[-Q, Q]``, the
optimal distances far from the horizon are approximately, for inventory ``q`` in lots::

    c1 = (1 / xi) * ln(1 + xi / k)
    c2 = sqrt(gamma / (2 * A * k) * (1 + xi / k) ** (k / xi + 1))
    delta_bid(q) = c1 + (2 q + 1) / 2 * sigma * c2
    delta_ask(q) = c1 - (2 q - 1) / 2 * sigma * c2

with ``xi = gamma`` (the paper's model; ``xi`` may be set apart for the risk-adjusted variant of
Guéant 2017). At ``q = Q`` there is no bid and at ``q = -Q`` no ask: here the lot is
``order_size`` and ``Q = max_inventory / order_size``, so the inventory room stops a side
(``strategies.pairs.side_sizes``). Unlike Avellaneda-Stoikov there is no horizon: the quotes do
not tighten towards a session's end.
"""

from __future__ import annotations

import math
from typing import Any

from bot.core.markets import MarketInfo
from strategies.model_maker import ModelInputs, ModelMaker, ModelParams, quote_at_distances
from strategies.pairs import Holdings, Pair, YesQuotes


def coefficients(gamma: float, a: float, k: float, xi: float | None = None) -> tuple[float, float]:
    """``(c1, c2)`` of the asymptotic quotes (``xi`` defaults to ``gamma``)."""
    xi = gamma if xi is None else xi
    c1 = math.log1p(xi / k) / xi
    c2 = math.sqrt(gamma / (2.0 * a * k) * (1.0 + xi / k) ** (k / xi + 1.0))
    return c1, c2


def distances(q: float, gamma: float, sigma: float, a: float, k: float, xi: float | None = None) -> tuple[float, float]:
    """How far below and above the mid the bid and the ask go with inventory ``q`` lots."""
    c1, c2 = coefficients(gamma, a, k, xi)
    return c1 + (2.0 * q + 1.0) / 2.0 * sigma * c2, c1 - (2.0 * q - 1.0) / 2.0 * sigma * c2


class Params(ModelParams, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """GLFT parameters (see ``ModelParams``); ``xi`` 0 means ``gamma``."""

    gamma: float = 20.0
    xi: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (math.isfinite(self.xi) and self.xi >= 0):
            raise ValueError(f"xi must be a finite number >= 0, got {self.xi}")


def quote(pair: Pair, holdings: Holdings, params: Params, inputs: ModelInputs) -> YesQuotes:
    """The GLFT quotes on ``pair.market``.

    Invariants: as ``strategies.model_maker.quote_at_distances`` (grid, touch, bid < ask, sizes, limits).
    """
    xi = params.xi or None
    return quote_at_distances(pair, holdings, params,
                              lambda q: distances(q, params.gamma, inputs.sigma, inputs.a, inputs.k, xi))


class Glft(ModelMaker):
    """GLFT quotes on every selected binary market, inputs fixed or estimated."""

    Params = Params

    def model_quote(self, pair: Pair, holdings: Holdings, inputs: ModelInputs, now: float) -> YesQuotes:
        return quote(pair, holdings, self.params, inputs)

    def model_estimates(self, market: MarketInfo, inputs: ModelInputs, now: float) -> dict[str, Any]:
        c1, c2 = coefficients(self.params.gamma, inputs.a, inputs.k, self.params.xi or None)
        return {"half_spread": c1 + 0.5 * inputs.sigma * c2, "skew_per_lot": inputs.sigma * c2}

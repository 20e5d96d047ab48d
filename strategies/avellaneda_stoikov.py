"""The Avellaneda-Stoikov market maker (Avellaneda and Stoikov, "High-frequency trading in a limit
order book", Quantitative Finance 8(3), 2008).

With the mid ``s`` a Brownian motion of volatility ``sigma``, takers reaching distance ``delta``
from it at intensity ``A * exp(-k * delta)``, inventory ``q`` and risk aversion ``gamma``, the
quotes that maximise the expected exponential utility of wealth at the horizon ``T`` centre on the
reservation price ``r = s - q * gamma * sigma^2 * (T - t)`` with the total spread
``gamma * sigma^2 * (T - t) + (2 / gamma) * ln(1 + gamma / k)``.

``reservation_price`` and ``optimal_spread`` are those formulas, in one place: the strategy quotes
with them and ``bench/as_experiment.py`` reruns the paper's section 3.3 simulation with them.

On the venue: ``s`` is the YES mid (or micro-price), ``q`` the exposure YES - NO in lots of
``order_size``, time in seconds; the horizon is the end of the current session (consecutive
windows of ``session_s`` seconds of unix time) or the market's end date (``horizon =
"market"``, the session when the end date is unknown or past). Distances become grid prices
rounded away from the mid (``strategies.pairs``).
"""

from __future__ import annotations

import math
from typing import Any, Literal

from bot.core.markets import MarketInfo
from strategies.model_maker import ModelInputs, ModelMaker, ModelParams, quote_at_distances
from strategies.pairs import Holdings, Pair, YesQuotes


def reservation_price(s: float, q: float, gamma: float, sigma: float, tau: float) -> float:
    """``r = s - q * gamma * sigma^2 * tau``: the price at which the maker is indifferent to one more
    unit, ``tau = T - t`` before the horizon."""
    return s - q * gamma * sigma * sigma * tau


def optimal_spread(gamma: float, sigma: float, tau: float, k: float) -> float:
    """The total spread ``gamma * sigma^2 * tau + (2 / gamma) * ln(1 + gamma / k)``."""
    return gamma * sigma * sigma * tau + (2.0 / gamma) * math.log1p(gamma / k)


def distances(q: float, gamma: float, sigma: float, tau: float, k: float) -> tuple[float, float]:
    """How far below and above the mid the bid and the ask go: ``s - (r - spread / 2)`` and
    ``(r + spread / 2) - s``."""
    shift = reservation_price(0.0, q, gamma, sigma, tau)
    half = optimal_spread(gamma, sigma, tau, k) / 2.0
    return half - shift, half + shift


class Params(ModelParams, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Avellaneda-Stoikov parameters (see ``ModelParams``) and the horizon."""

    horizon: Literal["session", "market"] = "session"
    session_s: float = 3600.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (math.isfinite(self.session_s) and 1.0 <= self.session_s <= 366 * 86_400.0):
            raise ValueError(f"session_s must be within [1, 31622400] seconds, got {self.session_s}")


def time_left(now: float, params: Params, market: MarketInfo) -> float:
    """Seconds to the horizon: the market's end date when asked for and ahead, else the end of the
    current session (never 0: a session that just ended starts a new one)."""
    if params.horizon == "market" and market.end_ts > now:
        return market.end_ts - now
    s = params.session_s
    return s - math.fmod(now, s) if now >= 0 else s


def quote(pair: Pair, holdings: Holdings, params: Params, inputs: ModelInputs, tau: float) -> YesQuotes:
    """The Avellaneda-Stoikov quotes on ``pair.market`` with ``tau`` seconds to the horizon.

    Invariants: as ``strategies.model_maker.quote_at_distances`` (grid, touch, bid < ask, sizes,
    limits; a model price that is not a number gives no quote on that side).
    """
    return quote_at_distances(pair, holdings, params, lambda q: distances(q, params.gamma, inputs.sigma, tau, inputs.k))


class AvellanedaStoikov(ModelMaker):
    """Avellaneda-Stoikov quotes on every selected binary market, inputs fixed or estimated."""

    Params = Params

    def model_quote(self, pair: Pair, holdings: Holdings, inputs: ModelInputs, now: float) -> YesQuotes:
        return quote(pair, holdings, self.params, inputs, time_left(now, self.params, pair.market))

    def model_estimates(self, market: MarketInfo, inputs: ModelInputs, now: float) -> dict[str, Any]:
        tau = time_left(now, self.params, market)
        return {"time_left_s": tau, "spread": optimal_spread(self.params.gamma, inputs.sigma, tau, inputs.k)}

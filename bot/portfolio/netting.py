"""Netting across complements and across the markets of a neg-risk event.

Invariants: holding YES and NO of one market is worth ``min(yes, no)`` USDC at resolution whatever
happens (the pair is mergeable back to collateral); what is at risk is the net ``yes - no``. In a
neg-risk event at most one market resolves YES, so the worst case is the minimum over "market i
is YES, the others NO" and "none is YES".
"""

from __future__ import annotations

from typing import Iterable, Mapping

import msgspec

from bot.core.markets import MarketIndex, MarketInfo
from bot.venue.units import UNIT

from .positions import Position


class ComplementNet(msgspec.Struct, frozen=True):
    """One market's YES/NO holdings netted: ``mergeable`` pairs lock ``locked_value`` USDC units."""

    condition_id: str
    yes: int
    no: int

    @property
    def mergeable(self) -> int:
        return max(0, min(self.yes, self.no))

    @property
    def locked_value(self) -> int:
        """USDC micro-units the mergeable pairs are worth whatever the outcome (1 per pair)."""
        return self.mergeable

    @property
    def exposure(self) -> int:
        """Net YES shares: positive is long YES, negative long NO."""
        return self.yes - self.no


def net_market(market: MarketInfo, sizes: Mapping[str, int]) -> ComplementNet:
    yes, no = market.tokens
    return ComplementNet(market.condition_id, sizes.get(yes, 0), sizes.get(no, 0))


def event_markets(markets: MarketIndex, event_id: str) -> list[MarketInfo]:
    """The markets of a neg-risk event, in a stable order (by condition id)."""
    return sorted((m for m in markets if m.event_id == event_id), key=lambda m: m.condition_id)


def outcome_payoffs(group: Iterable[MarketInfo], sizes: Mapping[str, int], *, neg_risk: bool) -> list[int]:
    """Payoff in USDC micro-units of the holdings in each possible outcome of ``group``.

    With ``neg_risk`` the outcomes are "market i resolves YES, the others NO" for each i, then
    "all NO"; otherwise every market resolves independently and only the single market case
    (YES, NO) is meaningful, so ``group`` must hold one market.
    """
    ms = list(group)
    if not neg_risk:
        if len(ms) != 1:
            raise ValueError("independent markets are netted one at a time")
        yes, no = ms[0].tokens
        return [sizes.get(yes, 0), sizes.get(no, 0)]
    all_no = sum(sizes.get(m.tokens[1], 0) for m in ms)
    out = []
    for m in ms:
        yes, no = m.tokens
        out.append(all_no - sizes.get(no, 0) + sizes.get(yes, 0))
    out.append(all_no)
    return out


def worst_case_pnl(group: Iterable[MarketInfo], positions: Mapping[str, Position], *, neg_risk: bool) -> int:
    """The lowest PnL at resolution over the outcomes of ``group`` (micro-units, floored):
    payoff of the holdings minus their entry cost, plus realized PnL, minus fees."""
    ms = list(group)
    tokens = [t for m in ms for t in m.tokens]
    sizes = {t: positions[t].size for t in tokens if t in positions}
    base = 0
    for t in tokens:
        p = positions.get(t)
        if p is not None:
            base += p.realized_e12 - p.cost_e12 - p.fees * UNIT
    worst = min(outcome_payoffs(ms, sizes, neg_risk=neg_risk))
    return (worst * UNIT + base) // UNIT

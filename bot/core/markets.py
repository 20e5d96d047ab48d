"""What the core knows of a market: its two outcome tokens, grid, neg-risk membership, end date,
liquidity rewards and fee schedule.

Invariant: ``tick`` and ``min_size`` are micro-units; ``tokens[0]``/``tokens[1]`` are the YES/NO
(first/second outcome) tokens and are each other's complement.
"""

from __future__ import annotations

import msgspec

from bot.venue.fees import NO_FEE, FeeSchedule


class RewardTerms(msgspec.Struct, frozen=True):
    """A market's liquidity-reward programme, in micro-units: ``daily_rate`` USDC paid per day to
    the market's makers, shared by score; only orders of at least ``min_size`` shares within
    ``max_spread`` (price units) of the mid score."""

    daily_rate: int = 0
    min_size: int = 0
    max_spread: int = 0

    @property
    def active(self) -> bool:
        return self.daily_rate > 0 and self.max_spread > 0


class MarketInfo(msgspec.Struct, frozen=True):
    condition_id: str
    tokens: tuple[str, str]
    tick: int = 10_000  # 0.01
    min_size: int = 5_000_000  # 5 shares
    neg_risk: bool = False
    event_id: str = ""  # markets of one neg-risk event share this id
    outcomes: tuple[str, str] = ("Yes", "No")
    end_ts: int = 0  # the market's end date, unix seconds (0: not known)
    rewards: RewardTerms | None = None
    fee: FeeSchedule = NO_FEE  # the venue's fee rule for this market (``/clob-markets`` ``fd``)

    def complement(self, token_id: str) -> str:
        a, b = self.tokens
        if token_id == a:
            return b
        if token_id == b:
            return a
        raise KeyError(f"token {token_id} is not in market {self.condition_id}")


class MarketIndex:
    """Token id → market lookup for a fixed universe of markets."""

    __slots__ = ("_by_token", "_by_condition")

    def __init__(self, markets: "list[MarketInfo] | tuple[MarketInfo, ...]" = ()) -> None:
        self._by_token: dict[str, MarketInfo] = {}
        self._by_condition: dict[str, MarketInfo] = {}
        for m in markets:
            self.add(m)

    def add(self, market: MarketInfo) -> None:
        self._by_condition[market.condition_id] = market
        for t in market.tokens:
            self._by_token[t] = market

    def by_token(self, token_id: str) -> MarketInfo:
        return self._by_token[token_id]

    def by_condition(self, condition_id: str) -> MarketInfo:
        return self._by_condition[condition_id]

    def get(self, token_id: str) -> MarketInfo | None:
        return self._by_token.get(token_id)

    def __iter__(self):
        return iter(self._by_condition.values())

    def __len__(self) -> int:
        return len(self._by_condition)


def with_default_fee(markets: "list[MarketInfo] | tuple[MarketInfo, ...]", default: FeeSchedule) -> list[MarketInfo]:
    """``markets`` with ``default`` as the fee rule of those whose info carries none (a rate of 0):
    a simulated venue and the books it feeds then charge and book the same rule."""
    if not default.rate:
        return list(markets)
    return [m if m.fee.rate else msgspec.structs.replace(m, fee=m.fee.or_default(default)) for m in markets]

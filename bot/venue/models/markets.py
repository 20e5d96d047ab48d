"""CLOB-surface markets: ``/markets`` (both listing variants), ``/markets/{id}``, simplified and
sampling lists, and ``/clob-markets/{id}`` with its short keys given readable names.

Invariant: one tolerant model per route; fields absent from a variant are ``None``. Informational
numbers (fees, sizes, token prices) accept int, float or string; :func:`number_text` gives an
exact decimal string for ticks and minimum sizes (never compute money from the float).
"""

from __future__ import annotations

from typing import Any, Union

import msgspec

from .decoding import Wire

_F = msgspec.field

Number = Union[int, float, str]
"""An informational number: the venue sends ints, floats or strings."""


def number_text(value: Number | None) -> str | None:
    """The exact decimal text of a number sent as int, float or string (shortest float repr)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value)


class RewardRate(Wire, kw_only=True):
    asset_address: str
    rewards_daily_rate: Number | None = None


class Rewards(Wire, kw_only=True):
    """Liquidity-reward parameters of a market."""

    rates: list[RewardRate] | None = None
    min_size: Number | None = None
    max_spread: Number | None = None


class ClobToken(Wire, kw_only=True):
    """One outcome token of a CLOB market; ``price`` is informational."""

    token_id: str
    outcome: str
    price: Number | None = None
    winner: bool | None = None
    mirror_token_id: str | None = None


class MarketEventRef(Wire, kw_only=True):
    """The parent event embedded in variant A markets."""

    id: str | None = None
    slug: str | None = None
    title: str | None = None
    ticker: str | None = None
    description: str | None = None


class ClobMarket(Wire, kw_only=True):
    """A CLOB market (interface.md 2.13): the common fields plus variant A and variant B extras."""

    enable_order_book: bool | None = None
    active: bool | None = None
    closed: bool | None = None
    archived: bool | None = None
    accepting_orders: bool | None = None
    accepting_order_timestamp: str | None = None
    minimum_order_size: Number | None = None
    minimum_tick_size: Number | None = None
    condition_id: str
    question_id: str | None = None
    question: str | None = None
    description: str | None = None
    market_slug: str | None = None
    end_date_iso: str | None = None
    game_start_time: str | None = None
    seconds_delay: Number | None = None
    fpmm: str | None = None
    maker_base_fee: Number | None = None
    taker_base_fee: Number | None = None
    notifications_enabled: bool | None = None
    neg_risk: bool | None = None
    neg_risk_market_id: str | None = None
    neg_risk_request_id: str | None = None
    icon: str | None = None
    image: str | None = None
    rewards: Rewards | None = None
    is_50_50_outcome: bool | None = None
    tokens: list[ClobToken]
    tags: list[str] | None = None
    # variant A
    creator: str | None = None
    mirror_condition_id: str | None = None
    status: str | None = None
    slug: str | None = None
    market_id: Number | None = None
    assets_ids: list[str] | None = None
    outcomes: list[str] | None = None
    event: MarketEventRef | None = None
    raw_metadata: dict[str, Any] | None = None
    # variant B
    itode: bool | None = None
    taker_order_delay_ms: Number | None = None
    order_age_seconds: Number | None = None
    blockaid_check_enabled: bool | None = None

    @property
    def tick_size(self) -> str | None:
        return number_text(self.minimum_tick_size)

    @property
    def min_order_size(self) -> str | None:
        return number_text(self.minimum_order_size)

    @property
    def token_ids(self) -> list[str]:
        return [t.token_id for t in self.tokens]


class SimplifiedMarket(Wire, kw_only=True):
    """``GET /simplified-markets`` item."""

    condition_id: str
    creator: str | None = None
    mirror_condition_id: str | None = None
    status: str | None = None
    question: str | None = None
    slug: str | None = None
    neg_risk: bool | None = None
    active: bool | None = None
    closed: bool | None = None
    archived: bool | None = None
    accepting_orders: bool | None = None
    market_id: Number | None = None
    tokens: list[ClobToken] | None = None
    rewards: Rewards | None = None
    assets_ids: list[str] | None = None
    outcomes: list[str] | None = None


class SamplingMarket(Wire, kw_only=True):
    """``GET /sampling-markets`` item (the venue may add the full CLOB-market fields)."""

    condition_id: str
    status: str | None = None
    question: str | None = None
    slug: str | None = None
    description: str | None = None
    neg_risk: bool | None = None
    market_id: Number | None = None
    assets_ids: list[str] | None = None
    outcomes: list[str] | None = None
    event: MarketEventRef | None = None
    raw_metadata: dict[str, Any] | None = None
    tokens: list[ClobToken] | None = None
    rewards: Rewards | None = None
    active: bool | None = None
    closed: bool | None = None
    accepting_orders: bool | None = None
    minimum_tick_size: Number | None = None
    minimum_order_size: Number | None = None


class SamplingSimplifiedMarket(Wire, kw_only=True):
    """``GET /sampling-simplified-markets`` item."""

    condition_id: str
    status: str | None = None
    question: str | None = None
    slug: str | None = None
    neg_risk: bool | None = None
    market_id: Number | None = None
    assets_ids: list[str] | None = None
    outcomes: list[str] | None = None
    tokens: list[ClobToken] | None = None
    rewards: Rewards | None = None
    active: bool | None = None
    closed: bool | None = None
    archived: bool | None = None
    accepting_orders: bool | None = None


class InfoToken(Wire, kw_only=True):
    """A token in ``/clob-markets``: ``t`` = token id, ``o`` = outcome."""

    token_id: str = _F(name="t")
    mirror_token_id: str | None = None
    outcome: str | None = _F(default=None, name="o")


class FeeDetails(Wire, kw_only=True):
    """``fd``: fee rate ``r``, exponent ``e``, taker-only flag ``to``; ``rb``, the makers' rebate
    share of a fill's fee worth, is the local exchange's extra (absent: no rebate).

    Fee per share = r * (p * (1 - p)) ** e (venue.md 3.3, bot.venue.fees).
    """

    rate: Number | None = _F(default=None, name="r")
    exponent: int | None = _F(default=None, name="e")
    taker_only: bool | None = _F(default=None, name="to")
    rebate: Number | None = _F(default=None, name="rb")


class ClobMarketInfo(Wire, kw_only=True):
    """``GET /clob-markets/{condition_id}`` (interface.md 2.15), short keys as readable attributes."""

    game_start_time: str | None = _F(default=None, name="gst")
    rewards: Rewards | None = _F(default=None, name="r")
    condition_id: str = _F(name="c")
    creator: str | None = None
    mirror_condition_id: str | None = None
    neg_risk: bool | None = _F(default=None, name="nr")
    rfq_enabled: bool | None = _F(default=None, name="rfqe")
    taker_order_delay_enabled: bool | None = _F(default=None, name="itode")
    blockaid_check_enabled: bool | None = _F(default=None, name="ibce")
    tokens: list[InfoToken] = _F(default_factory=list, name="t")
    min_tick_size: Number | None = _F(default=None, name="mts")
    min_order_size: Number | None = _F(default=None, name="mos")
    fee: FeeDetails | None = _F(default=None, name="fd")
    maker_base_fee: int | None = _F(default=None, name="mbf")
    taker_base_fee: int | None = _F(default=None, name="tbf")
    order_age_seconds: int | None = _F(default=None, name="oas")

    @property
    def tick_size(self) -> str | None:
        return number_text(self.min_tick_size)

    @property
    def token_ids(self) -> list[str]:
        return [t.token_id for t in self.tokens]

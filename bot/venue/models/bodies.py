"""Small CLOB bodies: order results, cancel results, heartbeats, credentials, prices, errors.

Invariant: amounts and prices stay the wire's strings; optional fields left unset are omitted on
encoding, so the local exchange emits exactly what it set.
"""

from __future__ import annotations

from typing import Generic, TypeVar

import msgspec

from bot.venue.pagination import END_CURSORS

from .decoding import Wire
from .numeric import NumericWire, WireDecimal, WireInt

T = TypeVar("T")

ACCEPTED_ORDER_STATUSES = frozenset({"live", "matched", "delayed"})
FIRST_CURSOR = "MA=="


class Page(Wire, Generic[T], kw_only=True):
    """Cursor envelope ``{data, next_cursor, limit, count}`` (sampling lists send only the first two).

    The list ends when ``next_cursor`` is ``""`` or ``LTE=`` (or absent).
    """

    data: list[T]
    next_cursor: str | None = None
    limit: int | None = None
    count: int | None = None

    @property
    def is_last(self) -> bool:
        return self.next_cursor is None or self.next_cursor in END_CURSORS


class ApiCreds(Wire, kw_only=True):
    """L2 credentials issued by ``POST /auth/api-key`` or ``GET /auth/derive-api-key``."""

    api_key: str = msgspec.field(name="apiKey")
    secret: str
    passphrase: str


class OrderResult(Wire, kw_only=True):
    """One element of a ``POST /order(s)`` response (venue.md 10.1). Amounts may be ``""`` (= 0)."""

    success: bool
    error_msg: str | None = msgspec.field(default=None, name="errorMsg")
    order_id: str | None = msgspec.field(default=None, name="orderID")
    taking_amount: str | None = msgspec.field(default=None, name="takingAmount")
    making_amount: str | None = msgspec.field(default=None, name="makingAmount")
    status: str | None = None
    order_hash: str | None = msgspec.field(default=None, name="orderHash")
    trade_ids: list[str] | None = msgspec.field(default=None, name="tradeIDs")
    transactions_hashes: list[str] | None = msgspec.field(default=None, name="transactionsHashes")

    @property
    def accepted(self) -> bool:
        """True iff success, no errorMsg, a non-empty orderID and an accepted status."""
        return (
            self.success
            and not self.error_msg
            and bool(self.order_id)
            and (self.status or "").lower() in ACCEPTED_ORDER_STATUSES
        )


class CancelResult(Wire, omit_defaults=False, kw_only=True):
    """``{canceled: [ids], not_canceled: {id: reason}}``; unknown or closed ids land in ``not_canceled``."""

    canceled: list[str] = []
    not_canceled: dict[str, str] = {}


class Heartbeat(Wire, omit_defaults=False, kw_only=True):
    """``POST /v1/heartbeats`` request and response body: echo the last id (``""`` to arm)."""

    heartbeat_id: str = ""


class ErrorBody(Wire, kw_only=True):
    """Any error body the venue sends (venue.md 10.2, interface.md 7).

    Shapes: ``{error}`` (``<class>: <detail>``), catalog ``{type, error}``, heartbeat 400
    ``{error_msg, heartbeat_id}``, 503 ``{error, code}``, 429 ``{..., retry_after_seconds}``.
    """

    error: str | None = None
    type: str | None = None
    code: str | None = None
    error_msg: str | None = None
    heartbeat_id: str | None = None
    retry_after_seconds: float | None = None

    @property
    def message(self) -> str:
        """The human text: ``error``, else ``error_msg``, else ``""``."""
        return self.error or self.error_msg or ""

    @property
    def error_class(self) -> str | None:
        """``unknown_field`` in ``unknown_field: sortBy``; ``None`` when there is no class prefix."""
        head, sep, _ = self.message.partition(": ")
        if sep and head and " " not in head:
            return head
        return None

    @property
    def detail(self) -> str:
        """The text after ``<class>: `` (the whole message when there is no class prefix)."""
        head, sep, tail = self.message.partition(": ")
        if sep and head and " " not in head:
            return tail
        return self.message


class TokenPrices(Wire, kw_only=True):
    """One price-map entry: ``BUY`` and/or ``SELL`` (a side not requested may be absent)."""

    buy: str | None = msgspec.field(default=None, name="BUY")
    sell: str | None = msgspec.field(default=None, name="SELL")


PriceMap = dict[str, TokenPrices]
"""``POST /prices`` response: token id -> :class:`TokenPrices`."""


class PriceResponse(Wire, kw_only=True):
    """``GET /price``."""

    price: str


class MidpointResponse(Wire, kw_only=True):
    """``GET /midpoint``."""

    mid: str


class SpreadResponse(Wire, kw_only=True):
    """``GET /spread``: best ask minus best bid, as decimal text."""

    spread: str


class LastTradePrice(Wire, kw_only=True):
    """``GET /last-trade-price`` (``{price, side}``) and each item of ``POST /last-trades-prices``
    (with ``token_id``); ``side`` is the taker's side of that trade, ``""`` before any trade."""

    token_id: str | None = None
    price: str
    side: str


class MarketByToken(Wire, kw_only=True):
    """``GET /markets-by-token/{token_id}``: the token's market and both of its tokens."""

    condition_id: str
    primary_token_id: str
    secondary_token_id: str


def _number_text(value: str | int | float) -> str:
    """A tick or fee sent as a number or a string, as exact decimal text (shortest float repr)."""
    return value if isinstance(value, str) else repr(value)


class TickSizeResponse(Wire, kw_only=True):
    """``GET /tick-size``: ``minimum_tick_size`` arrives as a number or a string."""

    minimum_tick_size: str | int | float

    @property
    def tick(self) -> str:
        return _number_text(self.minimum_tick_size)


class NegRiskResponse(Wire, kw_only=True):
    """``GET /neg-risk``."""

    neg_risk: bool


class FeeRateResponse(Wire, kw_only=True):
    """``GET /fee-rate``: ``base_fee`` in bps, a number or a string (informational)."""

    base_fee: str | int | float

    @property
    def bps(self) -> str:
        return _number_text(self.base_fee)


class VersionResponse(Wire, kw_only=True):
    """``GET /version``."""

    version: int


class BanStatus(Wire, kw_only=True):
    """``GET /auth/ban-status/closed-only``: true means only closing trades are allowed."""

    closed_only: bool


class BalanceAllowance(Wire, kw_only=True):
    """``GET /balance-allowance``: units as decimal strings; ``allowance`` may be absent."""

    balance: str
    allowance: str | None = None
    allowances: dict[str, str] | None = None


class HistoryPoint(NumericWire, kw_only=True):
    """One ``prices-history`` point: ``t`` epoch seconds, ``p`` price; each a number or a numeric string."""

    t: WireInt
    p: WireDecimal


class PriceHistory(Wire, kw_only=True):
    """``GET /prices-history``."""

    history: list[HistoryPoint]


class SignedOrder(Wire, kw_only=True):
    """The signed order inside a submission (venue.md 4.1); field order is the client's key order.

    ``salt`` is an integer (a decimal string is accepted); ``expiration`` only on GTD orders;
    ``conditionId`` is sent but not signed.
    """

    salt: int | str
    maker: str
    signer: str
    token_id: str = msgspec.field(name="tokenId")
    condition_id: str | None = msgspec.field(default=None, name="conditionId")
    maker_amount: str = msgspec.field(name="makerAmount")
    taker_amount: str = msgspec.field(name="takerAmount")
    side: str
    expiration: str | None = None
    signature_type: int = msgspec.field(name="signatureType")
    timestamp: str
    metadata: str
    builder: str
    signature: str


class OrderSubmission(Wire, kw_only=True):
    """One ``POST /order`` body or ``POST /orders`` item; key order as the official client sends."""

    order: SignedOrder
    owner: str
    order_type: str = msgspec.field(name="orderType")
    defer_exec: bool | None = msgspec.field(default=None, name="deferExec")
    post_only: bool | None = msgspec.field(default=None, name="postOnly")

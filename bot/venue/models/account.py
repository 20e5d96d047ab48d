"""Account-data surface: positions, holders and public trades.

Two families: the classic camelCase shapes of interface.md 2.11/2.12 (``GET /positions``,
``GET /holders``; what this project serves and calls) and the newer snake_case ``data_v2`` shapes
(``*V2`` models), kept so captures from the newer API decode too.

Invariant: every figure is read exactly, whether sent as a JSON number or a numeric string
(:mod:`~bot.venue.models.numeric`): amounts, prices and PnL as ``Decimal``, timestamps and outcome
indexes as ``int``; anything that is not a number is a DecodeError naming the field.
"""

from __future__ import annotations

import msgspec

from .decoding import Wire
from .numeric import NumericWire, WireDecimal, WireInt

_F = msgspec.field


class DataPosition(NumericWire, kw_only=True):
    """``GET /positions`` item (interface.md 2.11)."""

    proxy_wallet: str = _F(name="proxyWallet")
    asset: str
    condition_id: str = _F(name="conditionId")
    size: WireDecimal
    avg_price: WireDecimal | None = _F(default=None, name="avgPrice")
    initial_value: WireDecimal | None = _F(default=None, name="initialValue")
    current_value: WireDecimal | None = _F(default=None, name="currentValue")
    cash_pnl: WireDecimal | None = _F(default=None, name="cashPnl")
    percent_pnl: WireDecimal | None = _F(default=None, name="percentPnl")
    total_bought: WireDecimal | None = _F(default=None, name="totalBought")
    realized_pnl: WireDecimal | None = _F(default=None, name="realizedPnl")
    percent_realized_pnl: WireDecimal | None = _F(default=None, name="percentRealizedPnl")
    cur_price: WireDecimal | None = _F(default=None, name="curPrice")
    redeemable: bool | None = None
    mergeable: bool | None = None
    negative_risk: bool | None = _F(default=None, name="negativeRisk")
    title: str | None = None
    slug: str | None = None
    icon: str | None = None
    event_slug: str | None = _F(default=None, name="eventSlug")
    outcome: str | None = None
    outcome_index: WireInt | None = _F(default=None, name="outcomeIndex")
    opposite_outcome: str | None = _F(default=None, name="oppositeOutcome")
    opposite_asset: str | None = _F(default=None, name="oppositeAsset")
    timestamp: WireInt | None = None
    end_date: str | None = _F(default=None, name="endDate")


class Holder(NumericWire, kw_only=True):
    """One wallet in a holder group (interface.md 2.12)."""

    proxy_wallet: str = _F(name="proxyWallet")
    bio: str | None = None
    asset: str | None = None
    pseudonym: str | None = None
    amount: WireDecimal
    display_username_public: bool | None = _F(default=None, name="displayUsernamePublic")
    outcome_index: WireInt | None = _F(default=None, name="outcomeIndex")
    name: str | None = None
    profile_image: str | None = _F(default=None, name="profileImage")
    profile_image_optimized: str | None = _F(default=None, name="profileImageOptimized")


class HolderGroup(Wire, kw_only=True):
    """``GET /holders`` item: the top holders of one outcome token."""

    token: str
    holders: list[Holder]


class DataTrade(NumericWire, kw_only=True):
    """A public trade from the account-data ``/trades`` route (camelCase)."""

    proxy_wallet: str | None = _F(default=None, name="proxyWallet")
    side: str
    asset: str
    condition_id: str = _F(name="conditionId")
    size: WireDecimal
    price: WireDecimal
    timestamp: WireInt
    title: str | None = None
    slug: str | None = None
    icon: str | None = None
    event_slug: str | None = _F(default=None, name="eventSlug")
    outcome: str | None = None
    outcome_index: WireInt | None = _F(default=None, name="outcomeIndex")
    name: str | None = None
    pseudonym: str | None = None
    bio: str | None = None
    profile_image: str | None = _F(default=None, name="profileImage")
    profile_image_optimized: str | None = _F(default=None, name="profileImageOptimized")
    transaction_hash: str | None = _F(default=None, name="transactionHash")


class DataPositionV2(NumericWire, kw_only=True):
    """A position in the newer snake_case ``data_v2`` shape (realized/unrealized PnL split)."""

    proxy_wallet: str
    token_id: str
    condition_id: str
    current_size: WireDecimal
    avg_price: WireDecimal | None = None
    entry_cost_usdc: WireDecimal | None = None
    entry_fees_usdc: WireDecimal | None = None
    total_cost_usdc: WireDecimal | None = None
    current_price: WireDecimal | None = None
    current_value: WireDecimal | None = None
    total_size: WireDecimal | None = None
    realized_pnl: WireDecimal | None = None
    unrealized_pnl: WireDecimal | None = None
    total_pnl: WireDecimal | None = None
    percent_pnl: WireDecimal | None = None
    percent_realized_pnl: WireDecimal | None = None
    status: str | None = None
    redeemable: bool | None = None
    mergeable: bool | None = None
    negative_risk: bool | None = None
    archived: bool | None = None
    title: str | None = None
    slug: str | None = None
    icon: str | None = None
    event_id: str | None = None
    event_slug: str | None = None
    outcome: str | None = None
    outcome_index: WireInt | None = None
    opposite_outcome: str | None = None
    opposite_token_id: str | None = None
    end_date: str | None = None
    last_event_at: WireInt | None = None
    name: str | None = None
    profile_image: str | None = None
    verified: bool | None = None


class HolderV2(NumericWire, kw_only=True):
    """A holder in the ``data_v2`` shape (with per-holder PnL)."""

    proxy_wallet: str
    bio: str | None = None
    token_id: str | None = None
    pseudonym: str | None = None
    amount: WireDecimal
    display_username_public: bool | None = None
    outcome_index: WireInt | None = None
    name: str | None = None
    profile_image: str | None = None
    profile_image_optimized: str | None = None
    verified: bool | None = None
    avg_price: WireDecimal | None = None
    entry_cost_usdc: WireDecimal | None = None
    current_price: WireDecimal | None = None
    current_value: WireDecimal | None = None
    realized_pnl: WireDecimal | None = None
    unrealized_pnl: WireDecimal | None = None
    total_pnl: WireDecimal | None = None


class HolderGroupV2(Wire, kw_only=True):
    """A ``data_v2`` holder group, keyed by ``token_id``."""

    token_id: str
    holders: list[HolderV2]


class DataTradeV2(NumericWire, kw_only=True):
    """A public trade in the ``data_v2`` shape."""

    proxy_wallet: str | None = None
    side: str
    token_id: str
    condition_id: str
    size: WireDecimal
    price: WireDecimal
    timestamp: WireInt
    title: str | None = None
    slug: str | None = None
    icon: str | None = None
    event_slug: str | None = None
    outcome: str | None = None
    outcome_index: WireInt | None = None
    name: str | None = None
    pseudonym: str | None = None
    bio: str | None = None
    profile_image: str | None = None
    profile_image_optimized: str | None = None
    transaction_hash: str | None = None

"""Catalog surface: markets, events, series, tags, comments, event creators, search.

Invariants:
- ``outcomes``, ``outcomePrices`` and ``clobTokenIds`` are JSON arrays held in a string on the
  wire; the raw value is kept as received (string, or a real list in some captures) so it
  re-encodes unchanged, and decoded lists are exposed as properties;
- informational numbers (volume, liquidity, prices on the catalog) accept int, float or string;
- the only required field of a catalog market is ``conditionId``; of an event, ``id``.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from .decoding import Wire
from .markets import Number

_F = msgspec.field

StrList = str | list[str]
"""A JSON-encoded array in a string, or (some captures) a real array."""


def str_list(value: StrList | None) -> list[str]:
    """The list inside a JSON-encoded-array string (or the list itself); ``[]`` when absent."""
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    parsed = json.loads(value)
    if not isinstance(parsed, list):
        raise ValueError(f"not a JSON array: {value!r}")
    return [str(v) for v in parsed]


class Tag(Wire, kw_only=True):
    """A catalog tag (``GET /tags`` items; ``tags`` of an event)."""

    id: str
    label: str | None = None
    slug: str | None = None
    force_show: bool | None = _F(default=None, name="forceShow")
    created_at: str | None = _F(default=None, name="createdAt")
    updated_at: str | None = _F(default=None, name="updatedAt")
    requires_translation: bool | None = _F(default=None, name="requiresTranslation")


class Series(Wire, kw_only=True):
    """A recurring series an event belongs to."""

    id: str
    ticker: str | None = None
    slug: str | None = None
    title: str | None = None
    series_type: str | None = _F(default=None, name="seriesType")
    recurrence: str | None = None
    image: str | None = None
    icon: str | None = None
    active: bool | None = None
    closed: bool | None = None
    archived: bool | None = None
    created_at: str | None = _F(default=None, name="createdAt")
    updated_at: str | None = _F(default=None, name="updatedAt")


class EventSummary(Wire, kw_only=True):
    """An event as embedded in a market (``events`` of 2.7; extended in the by-slug response)."""

    id: str
    ticker: str | None = None
    slug: str | None = None
    title: str | None = None
    description: str | None = None
    resolution_source: str | None = _F(default=None, name="resolutionSource")
    start_date: str | None = _F(default=None, name="startDate")
    creation_date: str | None = _F(default=None, name="creationDate")
    end_date: str | None = _F(default=None, name="endDate")
    image: str | None = None
    icon: str | None = None
    active: bool | None = None
    closed: bool | None = None
    archived: bool | None = None
    created_at: str | None = _F(default=None, name="createdAt")
    updated_at: str | None = _F(default=None, name="updatedAt")
    neg_risk: bool | None = _F(default=None, name="negRisk")
    series: list[Series] | None = None
    event_metadata: dict[str, Any] | None = _F(default=None, name="eventMetadata")


class CatalogMarket(Wire, kw_only=True):
    """A catalog market (interface.md 2.7, list and by-slug variants; also nested in events)."""

    id: str | None = None
    question: str | None = None
    condition_id: str = _F(name="conditionId")
    mirror_condition_id: str | None = _F(default=None, name="mirrorConditionId")
    slug: str | None = None
    resolution_source: str | None = _F(default=None, name="resolutionSource")
    start_date: str | None = _F(default=None, name="startDate")
    end_date: str | None = _F(default=None, name="endDate")
    image: str | None = None
    icon: str | None = None
    description: str | None = None
    outcomes: StrList | None = None
    outcome_prices: StrList | None = _F(default=None, name="outcomePrices")
    clob_token_ids: StrList | None = _F(default=None, name="clobTokenIds")
    mirror_clob_token_ids: StrList | None = _F(default=None, name="mirrorClobTokenIds")
    active: bool | None = None
    closed: bool | None = None
    archived: bool | None = None
    created_at: str | None = _F(default=None, name="createdAt")
    updated_at: str | None = _F(default=None, name="updatedAt")
    question_id: str | None = _F(default=None, name="questionID")
    question_id_alt: str | None = _F(default=None, name="questionId")
    events: list[EventSummary] | None = None
    # commonly used extras of the real catalog
    enable_order_book: bool | None = _F(default=None, name="enableOrderBook")
    accepting_orders: bool | None = _F(default=None, name="acceptingOrders")
    neg_risk: bool | None = _F(default=None, name="negRisk")
    order_price_min_tick_size: Number | None = _F(default=None, name="orderPriceMinTickSize")
    order_min_size: Number | None = _F(default=None, name="orderMinSize")
    volume: Number | None = None
    liquidity: Number | None = None
    best_bid: Number | None = _F(default=None, name="bestBid")
    best_ask: Number | None = _F(default=None, name="bestAsk")
    last_trade_price: Number | None = _F(default=None, name="lastTradePrice")

    def __post_init__(self) -> None:
        if self.question_id is None and self.question_id_alt is not None:
            self.question_id, self.question_id_alt = self.question_id_alt, None

    @property
    def outcome_list(self) -> list[str]:
        """Outcome names, decoded from the JSON-in-a-string ``outcomes``."""
        return str_list(self.outcomes)

    @property
    def token_ids(self) -> list[str]:
        """Token ids, decoded from ``clobTokenIds``, in outcome order."""
        return str_list(self.clob_token_ids)

    @property
    def mirror_token_ids(self) -> list[str]:
        return str_list(self.mirror_clob_token_ids)

    @property
    def outcome_price_list(self) -> list[str]:
        """Outcome prices as decimal strings (informational)."""
        return str_list(self.outcome_prices)


class CatalogEvent(EventSummary, kw_only=True):
    """A catalog event (interface.md 2.8): the summary fields plus its tags and markets."""

    tags: list[Tag] | None = None
    markets: list[CatalogMarket] | None = None


class SearchPagination(Wire, kw_only=True):
    has_more: bool | None = _F(default=None, name="hasMore")
    total_results: int | None = _F(default=None, name="totalResults")


class SearchResponse(Wire, kw_only=True):
    """``GET /public-search``: matching events (with markets), tags and profiles."""

    events: list[CatalogEvent] | None = None
    tags: list[dict[str, Any]] | None = None
    profiles: list[dict[str, Any]] | None = None
    pagination: SearchPagination | None = None


class ProfilePosition(Wire, kw_only=True):
    token_id: str = _F(name="tokenId")
    position_size: str = _F(name="positionSize")


class Profile(Wire, kw_only=True):
    """The commenter's public profile."""

    name: str | None = None
    pseudonym: str | None = None
    display_username_public: bool | None = _F(default=None, name="displayUsernamePublic")
    bio: str | None = None
    is_mod: bool | None = _F(default=None, name="isMod")
    is_creator: bool | None = _F(default=None, name="isCreator")
    proxy_wallet: str | None = _F(default=None, name="proxyWallet")
    base_address: str | None = _F(default=None, name="baseAddress")
    profile_image: str | None = _F(default=None, name="profileImage")
    profile_image_optimized: dict[str, Any] | None = _F(default=None, name="profileImageOptimized")
    positions: list[ProfilePosition] | None = None


class Comment(Wire, kw_only=True):
    """``GET /comments/user_address/{address}`` item (interface.md 2.9)."""

    id: str
    body: str | None = None
    parent_entity_type: str | None = _F(default=None, name="parentEntityType")
    parent_entity_id: int | None = _F(default=None, name="parentEntityID")
    parent_comment_id: str | None = _F(default=None, name="parentCommentID")
    user_address: str | None = _F(default=None, name="userAddress")
    reply_address: str | None = _F(default=None, name="replyAddress")
    created_at: str | None = _F(default=None, name="createdAt")
    updated_at: str | None = _F(default=None, name="updatedAt")
    profile: Profile | None = None
    reactions: list[Any] | None = None
    report_count: int | None = _F(default=None, name="reportCount")
    reaction_count: int | None = _F(default=None, name="reactionCount")
    reply_count: int | None = _F(default=None, name="replyCount")
    replies: list[Any] | None = None


class EventCreator(Wire, kw_only=True):
    """``GET /events/creators`` item (interface.md 2.10)."""

    id: str
    creator_name: str | None = _F(default=None, name="creatorName")
    creator_handle: str | None = _F(default=None, name="creatorHandle")
    creator_url: str | None = _F(default=None, name="creatorUrl")
    creator_image: str | None = _F(default=None, name="creatorImage")
    created_at: str | None = _F(default=None, name="createdAt")
    updated_at: str | None = _F(default=None, name="updatedAt")

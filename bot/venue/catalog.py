"""Catalog surface client (interface.md 4.2): markets, events, creators, comments.

Invariant: every argument is validated against the documented bounds (limit 1..100, offset >= 0,
aliases resolved to one spelling) before the request is built; a bad one raises
:class:`~bot.venue.errors.ParameterError` and nothing is sent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from bot.venue import params as p
from bot.venue.errors import ParameterError
from bot.venue.models import CatalogEvent, CatalogMarket, Comment, EventCreator
from bot.venue.pagination import offset_items
from bot.venue.transport import Transport, decode_body

__all__ = ["CatalogClient"]


def _page(limit: int | None, offset: int | None) -> tuple[int | None, int | None]:
    return p.int_in("limit", limit, 1, 100), p.int_in("offset", offset, 0)


def _alias(name: str, value: object, alias: str, alias_value: object) -> object:
    """One value for a parameter that has two spellings; both given and different is an error."""
    if value is not None and alias_value is not None and value != alias_value:
        raise ParameterError(name, f"conflicts with its alias {alias}")
    return value if value is not None else alias_value


class CatalogClient:
    """One method per catalog route; listing methods have ``iter_*`` twins that paginate."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    async def _get(self, path: str, query: list[tuple[str, object]], model: object) -> object:
        response = await self.transport.request("GET", path, params=query)
        return decode_body(response, model)

    async def markets(
        self,
        *,
        limit: int | None = None,
        offset: int | None = None,
        active: bool | None = None,
        closed: bool | None = None,
        archived: bool | None = None,
        tag_slug: str | None = None,
        tag: str | None = None,
        tag_id: int | None = None,
        event_id: int | None = None,
        event_slug: str | None = None,
        condition_id: str | None = None,
        slug: str | None = None,
        order: str | None = None,
        ascending: bool | None = None,
        creator: str | None = None,
    ) -> list[CatalogMarket]:
        """``GET /markets``. ``tag`` is an alias of ``tag_slug``; ``condition_id`` is sent as
        ``conditionId`` and ``event_slug`` as ``event_slug``."""
        query = self._markets_query(
            limit, offset, active, closed, archived, tag_slug, tag, tag_id, event_id, event_slug,
            condition_id, slug, order, ascending, creator,
        )
        return await self._get("/markets", query, list[CatalogMarket])  # type: ignore[return-value]

    @staticmethod
    def _markets_query(
        limit, offset, active, closed, archived, tag_slug, tag, tag_id, event_id, event_slug,
        condition_id, slug, order, ascending, creator,
    ) -> list[tuple[str, object]]:
        limit, offset = _page(limit, offset)
        for name, flag in (("active", active), ("closed", closed), ("archived", archived), ("ascending", ascending)):
            p.optional_bool(name, flag)
        return [
            ("limit", limit),
            ("offset", offset),
            ("active", active),
            ("closed", closed),
            ("archived", archived),
            ("tag_slug", p.text("tag_slug", _alias("tag_slug", tag_slug, "tag", tag))),  # type: ignore[arg-type]
            ("tag_id", p.int_in("tag_id", tag_id, 0)),
            ("event_id", p.int_in("event_id", event_id, 0)),
            ("event_slug", p.text("event_slug", event_slug)),
            ("conditionId", p.text("conditionId", condition_id)),
            ("slug", p.text("slug", slug)),
            ("order", p.text("order", order)),
            ("ascending", ascending),
            ("creator", p.text("creator", creator)),
        ]

    def iter_markets(self, *, limit: int = 100, offset: int = 0, **filters) -> AsyncIterator[CatalogMarket]:
        """All markets matching ``filters`` (the keyword arguments of :meth:`markets`)."""
        _page(limit, offset)
        self._markets_query(None, None, **{**_MARKET_FILTERS, **filters})  # validate before the first fetch
        return offset_items(lambda lim, off: self.markets(limit=lim, offset=off, **filters), limit=limit, offset=offset)

    async def market_by_slug(self, slug: str, *, creator: str | None = None) -> CatalogMarket:
        """``GET /markets/slug/{slug}``."""
        slug = p.text("slug", slug, required=True)  # type: ignore[assignment]
        return await self._get(  # type: ignore[return-value]
            f"/markets/slug/{_segment('slug', slug)}", [("creator", p.text("creator", creator))], CatalogMarket
        )

    async def event(self, event_id: int, *, creator: str | None = None) -> CatalogEvent:
        """``GET /events/{id}``."""
        if event_id is None:
            raise ParameterError("id", "is required")
        p.int_in("id", event_id, 0)
        return await self._get(  # type: ignore[return-value]
            f"/events/{event_id}", [("creator", p.text("creator", creator))], CatalogEvent
        )

    async def event_by_slug(self, slug: str, *, creator: str | None = None) -> CatalogEvent:
        """``GET /events/slug/{slug}``."""
        slug = p.text("slug", slug, required=True)  # type: ignore[assignment]
        return await self._get(  # type: ignore[return-value]
            f"/events/slug/{_segment('slug', slug)}", [("creator", p.text("creator", creator))], CatalogEvent
        )

    async def event_creators(
        self,
        *,
        limit: int | None = None,
        offset: int | None = None,
        order: str | None = None,
        ascending: bool | None = None,
        creator_name: str | None = None,
        creator_handle: str | None = None,
    ) -> list[EventCreator]:
        """``GET /events/creators``."""
        limit, offset = _page(limit, offset)
        query = [
            ("limit", limit),
            ("offset", offset),
            ("order", p.text("order", order)),
            ("ascending", p.optional_bool("ascending", ascending)),
            ("creator_name", p.text("creator_name", creator_name)),
            ("creator_handle", p.text("creator_handle", creator_handle)),
        ]
        return await self._get("/events/creators", query, list[EventCreator])  # type: ignore[return-value]

    def iter_event_creators(self, *, limit: int = 100, offset: int = 0, **filters) -> AsyncIterator[EventCreator]:
        _page(limit, offset)
        return offset_items(
            lambda lim, off: self.event_creators(limit=lim, offset=off, **filters), limit=limit, offset=offset
        )

    async def user_comments(
        self, user_address: str, *, limit: int | None = None, offset: int | None = None
    ) -> list[Comment]:
        """``GET /comments/user_address/{user_address}``."""
        address = p.text("user_address", user_address, required=True)
        limit, offset = _page(limit, offset)
        return await self._get(  # type: ignore[return-value]
            f"/comments/user_address/{_segment('user_address', address)}",  # type: ignore[arg-type]
            [("limit", limit), ("offset", offset)],
            list[Comment],
        )

    def iter_user_comments(self, user_address: str, *, limit: int = 100, offset: int = 0) -> AsyncIterator[Comment]:
        p.text("user_address", user_address, required=True)
        _page(limit, offset)
        return offset_items(
            lambda lim, off: self.user_comments(user_address, limit=lim, offset=off), limit=limit, offset=offset
        )


_MARKET_FILTERS = dict.fromkeys(
    ("active", "closed", "archived", "tag_slug", "tag", "tag_id", "event_id", "event_slug", "condition_id",
     "slug", "order", "ascending", "creator"),
)


def _segment(name: str, value: str) -> str:
    """A path segment: refused when it would change the path (``/``, ``?``, ``#``)."""
    if any(c in value for c in "/?#") or value in (".", ".."):
        raise ParameterError(name, f"must be a single path segment, got {value!r}")
    return value

"""Account-data surface client (interface.md 4.3): ``GET /positions`` and ``GET /holders``.

Invariant: arguments are checked against the documented bounds before anything is sent (limit
0..500, offset 0..10000, thresholds >= 0, enums, title <= 100 characters, required lists); a bad
one raises :class:`~bot.venue.errors.ParameterError` naming the API's parameter.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from decimal import Decimal

from bot.venue import params as p
from bot.venue.models import DataPosition, HolderGroup
from bot.venue.pagination import offset_items
from bot.venue.transport import Transport, decode_body

__all__ = ["AccountClient", "POSITION_SORT", "SORT_DIRECTIONS"]

POSITION_SORT = ("CURRENT", "INITIAL", "TOKENS", "CASHPNL", "PERCENTPNL", "TITLE", "RESOLVING", "PRICE", "AVGPRICE")
SORT_DIRECTIONS = ("ASC", "DESC")
MAX_OFFSET = 10_000

Number = int | Decimal | str | float


class AccountClient:
    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    @staticmethod
    def _positions_query(
        user, market, size_threshold, redeemable, mergeable, limit, offset, sort_by, sort_direction, title
    ) -> list[tuple[str, object]]:
        return [
            ("user", p.text("user", user, required=True)),
            ("market", p.id_list("market", market)),
            ("sizeThreshold", p.number_at_least("sizeThreshold", size_threshold)),
            ("redeemable", p.optional_bool("redeemable", redeemable)),
            ("mergeable", p.optional_bool("mergeable", mergeable)),
            ("limit", p.int_in("limit", limit, 0, 500)),
            ("offset", p.int_in("offset", offset, 0, MAX_OFFSET)),
            ("sortBy", p.one_of("sortBy", sort_by, POSITION_SORT)),
            ("sortDirection", p.one_of("sortDirection", sort_direction, SORT_DIRECTIONS)),
            ("title", p.text_at_most("title", title, 100)),
        ]

    async def positions(
        self,
        user: str,
        *,
        market: str | Iterable[str] | None = None,
        size_threshold: Number | None = None,
        redeemable: bool | None = None,
        mergeable: bool | None = None,
        limit: int | None = None,
        offset: int | None = None,
        sort_by: str | None = None,
        sort_direction: str | None = None,
        title: str | None = None,
    ) -> list[DataPosition]:
        """``GET /positions`` of ``user`` (a wallet address)."""
        query = self._positions_query(
            user, market, size_threshold, redeemable, mergeable, limit, offset, sort_by, sort_direction, title
        )
        response = await self.transport.request("GET", "/positions", params=query)
        return decode_body(response, list[DataPosition])  # type: ignore[return-value]

    def iter_positions(self, user: str, *, limit: int = 500, offset: int = 0, **filters) -> AsyncIterator[DataPosition]:
        """All positions, page by page, to the first empty page (a page shorter than asked is not
        taken for the end: the venue may cap its pages below ``limit``) or the venue's offset cap."""
        p.int_in("limit", limit, 1, 500)
        self._positions_query(user=user, limit=limit, offset=offset, **{**_POSITION_FILTERS, **filters})

        async def fetch(lim: int, off: int) -> list[DataPosition]:
            if off > MAX_OFFSET:
                return []
            return await self.positions(user, limit=lim, offset=off, **filters)

        return offset_items(fetch, limit=limit, offset=offset, until_empty=True)

    async def holders(
        self,
        market: str | Iterable[str],
        *,
        limit: int | None = None,
        min_balance: Number | None = None,
    ) -> list[HolderGroup]:
        """``GET /holders`` of the given condition ids."""
        query = [
            ("market", p.id_list("market", market, required=True)),
            ("limit", p.int_in("limit", limit, 0, 500)),
            ("minBalance", p.number_at_least("minBalance", min_balance)),
        ]
        response = await self.transport.request("GET", "/holders", params=query)
        return decode_body(response, list[HolderGroup])  # type: ignore[return-value]


_POSITION_FILTERS = dict.fromkeys(
    ("market", "size_threshold", "redeemable", "mergeable", "sort_by", "sort_direction", "title")
)

"""Async iteration over the venue's two list styles.

Invariant: an offset listing stops at the first page shorter than ``limit`` (or, with
``until_empty``, at the first empty page: a venue may serve fewer than asked per page); a cursor listing
starts at ``MA==`` and stops on ``""``, ``LTE=`` or an absent cursor (on every list, venue.md
decision 11), and also stops, rather than loops, when the venue hands back a cursor it already
gave. Pages are fetched lazily, one at a time, only as the caller consumes items.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from bot.venue.errors import ParameterError

__all__ = ["FIRST_CURSOR", "LAST_CURSOR", "END_CURSORS", "is_end_cursor", "cursor_offset", "offset_items", "cursor_pages", "cursor_items"]

T = TypeVar("T")

FIRST_CURSOR = "MA=="
LAST_CURSOR = "LTE="  # the cursor that ends a list (every list, in the live venue's spelling)
END_CURSORS = frozenset({"", LAST_CURSOR})


class CursorPage(Protocol[T]):  # type: ignore[misc]
    data: list[T]
    next_cursor: str | None


def is_end_cursor(cursor: str | None) -> bool:
    """True when ``cursor`` means "no more pages"."""
    return cursor is None or cursor in END_CURSORS


def cursor_offset(cursor: str | None) -> int | None:
    """The list position a cursor stands for (venue.md 7.1: base64 of a decimal offset), or
    ``None`` for an end cursor or one that does not read as an offset."""
    if not cursor or len(cursor) > 32:
        return None
    try:
        value = int(base64.b64decode(cursor, validate=True).decode("ascii"))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    return value if value >= 0 else None


async def offset_items(
    fetch: Callable[[int, int], Awaitable[Sequence[T]]], *, limit: int, offset: int = 0, until_empty: bool = False
) -> AsyncIterator[T]:
    """Items of ``fetch(limit, offset)`` pages, advancing ``offset`` by each page's length until a
    short page, or with ``until_empty`` until an empty one (a listing that must be read to its
    end whatever page size the venue serves)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ParameterError("limit", f"must be an integer >= 1 to paginate, got {limit!r}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ParameterError("offset", f"must be an integer >= 0, got {offset!r}")
    while True:
        page = await fetch(limit, offset)
        for item in page:
            yield item
        if not page or (len(page) < limit and not until_empty):
            return
        offset += len(page)


async def cursor_pages(
    fetch: Callable[[str], Awaitable[CursorPage[T]]], *, start: str = FIRST_CURSOR
) -> AsyncIterator[CursorPage[T]]:
    """Pages of ``fetch(cursor)`` from ``start`` until an end cursor or a repeated cursor."""
    seen = {start}
    cursor = start
    while True:
        page = await fetch(cursor)
        yield page
        cursor = page.next_cursor  # type: ignore[assignment]
        if is_end_cursor(cursor) or cursor in seen:
            return
        seen.add(cursor)


async def cursor_items(
    fetch: Callable[[str], Awaitable[CursorPage[T]]], *, start: str = FIRST_CURSOR
) -> AsyncIterator[T]:
    """The items of :func:`cursor_pages`, in order."""
    async for page in cursor_pages(fetch, start=start):
        for item in page.data:
            yield item

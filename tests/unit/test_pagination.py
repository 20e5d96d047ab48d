"""Offset and cursor iteration: end sentinels, short pages, repeated cursors, laziness."""

from __future__ import annotations

import base64

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.venue.errors import ParameterError
from bot.venue.pagination import cursor_items, cursor_offset, cursor_pages, offset_items


class P(msgspec.Struct):
    data: list[int]
    next_cursor: str | None = None


def cursor_source(pages: dict[str, P]):
    asked: list[str] = []

    async def fetch(cursor: str) -> P:
        asked.append(cursor)
        return pages[cursor]

    return fetch, asked


@pytest.mark.anyio
@pytest.mark.parametrize("end", ["", "LTE=", None])
async def test_cursor_stops_on_every_end_sentinel(end) -> None:
    fetch, asked = cursor_source({"MA==": P([1, 2], "Mg=="), "Mg==": P([3], end)})
    assert [x async for x in cursor_items(fetch)] == [1, 2, 3]
    assert asked == ["MA==", "Mg=="]


@pytest.mark.anyio
async def test_cursor_stops_when_a_cursor_repeats() -> None:
    fetch, asked = cursor_source({"MA==": P([1], "MQ=="), "MQ==": P([2], "MA==")})
    assert [x async for x in cursor_items(fetch)] == [1, 2]
    assert asked == ["MA==", "MQ=="]
    fetch, asked = cursor_source({"MA==": P([1], "MA==")})
    assert [len(p.data) async for p in cursor_pages(fetch)] == [1]


@pytest.mark.anyio
async def test_cursor_is_lazy() -> None:
    fetch, asked = cursor_source({"MA==": P([1, 2], "MQ=="), "MQ==": P([3], "")})
    it = cursor_items(fetch)
    assert await it.__anext__() == 1
    assert asked == ["MA=="]
    await it.aclose()


@pytest.mark.anyio
async def test_offset_until_short_page() -> None:
    calls: list[tuple[int, int]] = []

    async def fetch(limit, offset):
        calls.append((limit, offset))
        return list(range(offset, min(offset + limit, 7)))

    assert [x async for x in offset_items(fetch, limit=3, offset=1)] == [1, 2, 3, 4, 5, 6]
    assert calls == [(3, 1), (3, 4), (3, 7)]  # [4, 5, 6] is a full page, so one more (empty) fetch
    calls.clear()
    assert [x async for x in offset_items(fetch, limit=3, offset=0)] == list(range(7))
    assert calls == [(3, 0), (3, 3), (3, 6)]


@pytest.mark.anyio
async def test_offset_exact_multiple_ends_on_empty_page() -> None:
    async def fetch(limit, offset):
        return [0] * limit if offset < 4 else []

    assert len([x async for x in offset_items(fetch, limit=2)]) == 4


@pytest.mark.anyio
async def test_offset_bad_limit() -> None:
    async def fetch(limit, offset):  # pragma: no cover - never called
        raise AssertionError

    with pytest.raises(ParameterError, match="^limit: "):
        [x async for x in offset_items(fetch, limit=0)]


@given(st.integers(0, 10**12))
def test_a_cursor_reads_back_as_its_offset(n):
    assert cursor_offset(base64.b64encode(str(n).encode()).decode()) == n


@given(st.one_of(st.none(), st.text(max_size=40)))
def test_any_other_cursor_is_no_offset_or_a_plain_one(text):
    got = cursor_offset(text)
    assert got is None or (isinstance(got, int) and got >= 0)


def test_end_and_odd_cursors_are_no_offset():
    for text in ("", "LTE=", None, "not base64!", base64.b64encode(b"-5").decode(), base64.b64encode(b"x").decode(),
                 base64.b64encode(b"9" * 40).decode()):
        assert cursor_offset(text) is None

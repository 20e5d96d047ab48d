"""Catalog client: query building, validation before sending, decoding, offset pagination."""

from __future__ import annotations


import httpx
import pytest

from bot.venue.catalog import CatalogClient
from bot.venue.errors import BadRequest, NotFound, ParameterError
from bot.venue.transport import Transport
from tests.unit.recorder import Recorder


def client(rec) -> CatalogClient:
    return CatalogClient(Transport("http://catalog.test", transport=httpx.MockTransport(rec)))


def path(req) -> str:
    return req.url.raw_path.decode()


@pytest.mark.anyio
async def test_markets_query_with_filters_and_aliases() -> None:
    rec = Recorder((200, [{"id": "1", "slug": "m1", "conditionId": "0xab"}]))
    got = await client(rec).markets(limit=5, offset=10, active=True, closed=False, tag="politics", tag_id=3,
                                     event_id=7, event_slug="ev", condition_id="0xab", slug="m1",
                                     order="volume", ascending=True, creator="0xC")
    assert path(rec.requests[0]) == (
        "/markets?limit=5&offset=10&active=true&closed=false&tag_slug=politics&tag_id=3&event_id=7"
        "&event_slug=ev&conditionId=0xab&slug=m1&order=volume&ascending=true&creator=0xC")
    assert rec.requests[0].method == "GET" and "SERVICE_SIGNATURE" not in rec.requests[0].headers
    assert [m.slug for m in got] == ["m1"]


@pytest.mark.anyio
async def test_markets_without_arguments_sends_no_query() -> None:
    rec = Recorder((200, []))
    assert await client(rec).markets() == []
    assert path(rec.requests[0]) == "/markets"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"limit": 0}, "limit"), ({"limit": 101}, "limit"), ({"offset": -1}, "offset"), ({"limit": True}, "limit"),
     ({"tag": "a", "tag_slug": "b"}, "tag_slug"), ({"active": "yes"}, "active"), ({"slug": ""}, "slug")],
)
async def test_markets_bad_arguments_send_nothing(kwargs, name) -> None:
    rec = Recorder((200, []))
    with pytest.raises(ParameterError) as info:
        await client(rec).markets(**kwargs)
    assert info.value.parameter == name and rec.requests == []


@pytest.mark.anyio
async def test_iter_markets_pages_until_short_page() -> None:
    rec = Recorder((200, [{"id": "1", "conditionId": "0x1"}, {"id": "2", "conditionId": "0x2"}]),
                   (200, [{"id": "3", "conditionId": "0x3"}]))
    got = [m.id async for m in client(rec).iter_markets(limit=2, closed=False)]
    assert got == ["1", "2", "3"]
    assert [path(r) for r in rec.requests] == [
        "/markets?limit=2&offset=0&closed=false", "/markets?limit=2&offset=2&closed=false"]


def test_iter_markets_validates_before_fetching() -> None:
    rec = Recorder((200, []))
    with pytest.raises(ParameterError):
        client(rec).iter_markets(limit=500)
    with pytest.raises(ParameterError):
        client(rec).iter_markets(offset=-2)


@pytest.mark.anyio
async def test_market_by_slug_and_events() -> None:
    rec = Recorder((200, {"id": "9", "slug": "s", "conditionId": "0x9"}))
    c = client(rec)
    assert (await c.market_by_slug("s", creator="0xC")).id == "9"
    assert path(rec.requests[-1]) == "/markets/slug/s?creator=0xC"
    await c.event(42)
    assert path(rec.requests[-1]) == "/events/42"
    await c.event_by_slug("ev")
    assert path(rec.requests[-1]) == "/events/slug/ev"


@pytest.mark.anyio
async def test_event_not_found_body_maps_to_not_found() -> None:
    rec = Recorder((404, {"type": "not found error", "error": "id not found"}))
    with pytest.raises(NotFound, match="id not found") as info:
        await client(rec).event(1)
    assert info.value.fields["type"] == "not found error"
    rec = Recorder((400, {"type": "bad request", "error": "q is required"}))
    with pytest.raises(BadRequest, match="q is required"):
        await client(rec).event(1)


@pytest.mark.anyio
async def test_event_and_slug_bad_arguments_send_nothing() -> None:
    rec = Recorder((200, {}))
    for coro, name in [(client(rec).event(-1), "id"), (client(rec).event_by_slug("a/b"), "slug"),
                       (client(rec).market_by_slug(""), "slug"), (client(rec).user_comments(""), "user_address")]:
        with pytest.raises(ParameterError) as info:
            await coro
        assert info.value.parameter == name
    assert rec.requests == []


@pytest.mark.anyio
async def test_event_creators_and_comments() -> None:
    rec = Recorder((200, []))
    c = client(rec)
    assert await c.event_creators(limit=20, order="name", ascending=False, creator_name="al",
                                  creator_handle="@al") == []
    assert path(rec.requests[-1]) == (
        "/events/creators?limit=20&order=name&ascending=false&creator_name=al&creator_handle=%40al")
    assert await c.user_comments("0xAbC", limit=1, offset=3) == []
    assert path(rec.requests[-1]) == "/comments/user_address/0xAbC?limit=1&offset=3"
    got = [x async for x in c.iter_user_comments("0xAbC", limit=5)]
    assert got == [] and path(rec.requests[-1]) == "/comments/user_address/0xAbC?limit=5&offset=0"
    got = [x async for x in c.iter_event_creators(limit=5)]
    assert got == [] and path(rec.requests[-1]) == "/events/creators?limit=5&offset=0"

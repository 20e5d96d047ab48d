"""Account-data client: /positions and /holders query building, bounds and decoding."""

from __future__ import annotations


import httpx
import pytest

from bot.venue.account import AccountClient
from bot.venue.errors import BadRequest, ParameterError, Unauthorized
from bot.venue.transport import Transport
from tests.unit.recorder import Recorder


def client(rec) -> AccountClient:
    return AccountClient(Transport("http://data.test", transport=httpx.MockTransport(rec)))


@pytest.mark.anyio
async def test_positions_query() -> None:
    rec = Recorder((200, []))
    await client(rec).positions("0xU", market=["0xa", "0xb"], size_threshold="0.5", redeemable=True,
                                mergeable=False, limit=500, offset=10000, sort_by="CASHPNL",
                                sort_direction="ASC", title="Will it")
    assert rec.requests[0].url.raw_path.decode() == (
        "/positions?user=0xU&market=0xa%2C0xb&sizeThreshold=0.5&redeemable=true&mergeable=false"
        "&limit=500&offset=10000&sortBy=CASHPNL&sortDirection=ASC&title=Will+it")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"limit": 501}, "limit"), ({"limit": -1}, "limit"), ({"offset": 10001}, "offset"),
     ({"size_threshold": -1}, "sizeThreshold"), ({"size_threshold": float("nan")}, "sizeThreshold"),
     ({"sort_by": "VALUE"}, "sortBy"), ({"sort_direction": "up"}, "sortDirection"),
     ({"title": "x" * 101}, "title"), ({"market": ["a,b"]}, "market"), ({"redeemable": 1}, "redeemable")],
)
async def test_positions_bad_arguments_send_nothing(kwargs, name) -> None:
    rec = Recorder((200, []))
    with pytest.raises(ParameterError) as info:
        await client(rec).positions("0xU", **kwargs)
    assert info.value.parameter == name and rec.requests == []


@pytest.mark.anyio
async def test_positions_user_required() -> None:
    rec = Recorder((200, []))
    with pytest.raises(ParameterError, match="^user: "):
        await client(rec).positions(None)  # type: ignore[arg-type]
    assert rec.requests == []


@pytest.mark.anyio
async def test_positions_decode_and_iterate() -> None:
    pos = {"proxyWallet": "0xU", "asset": "1", "conditionId": "0xc", "size": 3, "avgPrice": 0.5,
           "initialValue": 1.5, "currentValue": 1.5, "cashPnl": 0, "percentPnl": 0, "totalBought": 3,
           "realizedPnl": 0, "percentRealizedPnl": 0, "curPrice": 0.5, "redeemable": False,
           "mergeable": False, "title": "T", "slug": "s", "icon": "", "eventSlug": "e", "outcome": "Yes",
           "outcomeIndex": 0, "oppositeOutcome": "No", "oppositeAsset": "2", "endDate": "2026-01-01",
           "negativeRisk": False}
    rec = Recorder((200, [pos, pos]), (200, [pos]), (200, []))
    got = [p async for p in client(rec).iter_positions("0xU", limit=2)]
    assert len(got) == 3
    # a short page is not the end (a venue may serve fewer than asked): read on to an empty one
    assert [r.url.params["offset"] for r in rec.requests] == ["0", "2", "3"]


@pytest.mark.anyio
async def test_positions_are_read_to_the_end_when_the_venue_serves_shorter_pages() -> None:
    """2,000 positions, asked 500 a page, served 100 a page: all 2,000 are read."""
    pos = {"proxyWallet": "0xU", "conditionId": "0xc", "size": 1000, "outcomeIndex": 0}
    pages = [(200, [dict(pos, asset=str(i)) for i in range(k, k + 100)]) for k in range(0, 2000, 100)]
    rec = Recorder(*pages, (200, []))
    got = [p async for p in client(rec).iter_positions("0xU", limit=500)]
    assert len({p.asset for p in got}) == 2000
    assert [int(r.url.params["offset"]) for r in rec.requests] == list(range(0, 2001, 100))


@pytest.mark.anyio
async def test_holders_query_and_bounds() -> None:
    rec = Recorder((200, []))
    assert await client(rec).holders(["0xa", "0xb"], limit=0, min_balance=0) == []
    assert rec.requests[0].url.raw_path.decode() == "/holders?market=0xa%2C0xb&limit=0&minBalance=0"
    for kwargs, name in [({"limit": 501}, "limit"), ({"min_balance": -0.1}, "minBalance")]:
        with pytest.raises(ParameterError) as info:
            await client(rec).holders("0xa", **kwargs)
        assert info.value.parameter == name
    with pytest.raises(ParameterError, match="^market: "):
        await client(rec).holders([])
    assert len(rec.requests) == 1


@pytest.mark.anyio
async def test_account_error_bodies() -> None:
    rec = Recorder((403, {"error": "unauthorized: ip_not_allowlisted"}))
    with pytest.raises(Unauthorized) as info:
        await client(rec).holders("0xa")
    assert info.value.kind == "unauthorized" and "ip_not_allowlisted" in str(info.value)
    rec = Recorder((400, {"error": "unknown_field: foo"}))
    with pytest.raises(BadRequest) as info2:
        await client(rec).positions("0xU")
    assert info2.value.kind == "unknown_field"

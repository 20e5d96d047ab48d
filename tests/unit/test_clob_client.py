"""CLOB client: request bytes (method, path, query, headers, body) and decoding, per route."""

from __future__ import annotations

import json

import httpx
import msgspec
import pytest

from bot.venue.auth import AuthConfig, Credentials
from bot.venue.clob import ClobClient
from bot.venue.errors import (
    BadRequest, CancelOnlyMode, EngineRestarting, ParameterError, PostOnlyMode, RateLimited, ServerError,
    TransportTimeout, Unauthorized, UnexpectedResponse,
)
from bot.venue.transport import Transport
from tests.unit.recorder import Recorder

TS = 1767225600
COND = "0x" + "ab" * 32
TOKEN = "71321045679252212594626385532706912750332728571942532289631379312455583992563"


def ok(body, headers=None):
    return (200, body, headers)


async def no_sleep(seconds: float) -> None:
    no_sleep.calls.append(seconds)  # type: ignore[attr-defined]


no_sleep.calls = []  # type: ignore[attr-defined]


@pytest.fixture
def vectors(signing_vectors):
    return {r["name"]: r for r in signing_vectors["routes"]}


def make_client(rec: Recorder, signing_vectors=None, **kw) -> ClobClient:
    transport = Transport("http://clob.test", transport=httpx.MockTransport(rec), sleep=no_sleep, **kw)
    creds = address = None
    if signing_vectors is not None:
        c = signing_vectors["api_creds"]
        creds = Credentials(c["apiKey"], c["secret"], c["passphrase"])
        address = signing_vectors["test_eoa_address"]
    return ClobClient(transport, creds=creds, address=address, auth=AuthConfig(timestamp_unit="s"),
                      wall_clock=lambda: float(TS))


def assert_matches_vector(req: httpx.Request, vec: dict) -> None:
    assert req.method == vec["method"]
    assert req.url.raw_path.decode() == vec["url_sent"]
    body = vec["body"]
    if body is None:
        assert req.content == b""
    elif isinstance(body, str):
        assert req.content == body.encode()
    else:
        assert json.loads(req.content) == body
        assert req.content == json.dumps(body, separators=(",", ":")).encode()
    if "POLY_SIGNATURE" in vec["headers"]:
        h = vec["headers"]
        assert req.headers["SERVICE_SIGNATURE"] == h["POLY_SIGNATURE"]
        assert req.headers["SERVICE_TIMESTAMP"] == h["POLY_TIMESTAMP"]
        assert req.headers["SERVICE_ADDRESS"] == h["POLY_ADDRESS"]
        assert req.headers["SERVICE_API_KEY"] == h["POLY_API_KEY"]
        assert req.headers["SERVICE_PASSPHRASE"] == h["POLY_PASSPHRASE"]
        assert req.headers["Content-Type"] == "application/json"
    else:
        assert "SERVICE_SIGNATURE" not in req.headers


CANCEL = {"canceled": ["0x11"], "not_canceled": {"0x22": "order not found"}}
BOOK = {"market": COND, "asset_id": TOKEN, "timestamp": "1767225600123", "hash": "h",
        "bids": [{"price": "0.48", "size": "10"}], "asks": [{"price": "0.52", "size": "5"}],
        "min_order_size": "5", "tick_size": "0.01", "neg_risk": False, "last_trade_price": "0.5"}


# -- routes with golden vectors -----------------------------------------------------------------


@pytest.mark.anyio
async def test_cancel_order_matches_vector(signing_vectors, vectors) -> None:
    rec = Recorder(ok(CANCEL))
    res = await make_client(rec, signing_vectors).cancel("0x" + "11" * 32)
    assert_matches_vector(rec.last, vectors["cancel_order"])
    assert res.canceled == ["0x11"] and res.not_canceled == {"0x22": "order not found"}


@pytest.mark.anyio
async def test_cancel_orders_matches_vector(signing_vectors, vectors) -> None:
    rec = Recorder(ok(CANCEL))
    await make_client(rec, signing_vectors).cancel_orders(["0x" + "11" * 32, "0x" + "22" * 32])
    assert_matches_vector(rec.last, vectors["cancel_orders"])


@pytest.mark.anyio
async def test_cancel_all_matches_vector(signing_vectors, vectors) -> None:
    rec = Recorder(ok(CANCEL))
    await make_client(rec, signing_vectors).cancel_all()
    assert_matches_vector(rec.last, vectors["cancel_all"])


@pytest.mark.anyio
async def test_cancel_market_orders_matches_vector(signing_vectors, vectors) -> None:
    rec = Recorder(ok(CANCEL))
    await make_client(rec, signing_vectors).cancel_market_orders(market=COND, asset_id=TOKEN)
    assert_matches_vector(rec.last, vectors["cancel_market_orders"])


@pytest.mark.anyio
async def test_open_orders_page_matches_vector(signing_vectors, vectors) -> None:
    order = {"id": "0x33", "status": "LIVE", "market": COND, "asset_id": TOKEN, "side": "BUY", "price": "0.5",
             "original_size": "10", "size_matched": "0", "owner": "k", "maker_address": "0xabc",
             "outcome": "Yes", "order_type": "GTC", "expiration": "0", "created_at": 1767225600,
             "associate_trades": []}
    rec = Recorder(ok({"data": [order], "next_cursor": "", "limit": 100, "count": 1}))
    page = await make_client(rec, signing_vectors).orders_page(market=COND)
    assert_matches_vector(rec.last, vectors["get_open_orders"])
    assert [o.id for o in page.data] == ["0x33"] and page.is_last


@pytest.mark.anyio
async def test_trades_page_matches_vector(signing_vectors, vectors) -> None:
    rec = Recorder(ok({"data": [], "next_cursor": "LTE=", "limit": 100, "count": 0}))
    page = await make_client(rec, signing_vectors).trades_page(asset_id=TOKEN, after=TS)
    assert_matches_vector(rec.last, vectors["get_trades"])
    assert page.data == [] and page.is_last


@pytest.mark.anyio
async def test_get_order_matches_vector(signing_vectors, vectors) -> None:
    order = {"id": "0x" + "33" * 32, "status": "LIVE", "market": COND, "asset_id": TOKEN, "side": "SELL",
             "price": "0.5", "original_size": "10", "size_matched": "2"}
    rec = Recorder(ok({"order": order}))
    got = await make_client(rec, signing_vectors).get_order("0x" + "33" * 32)
    assert_matches_vector(rec.last, vectors["get_order"])
    assert got.id == "0x" + "33" * 32


@pytest.mark.anyio
@pytest.mark.parametrize("wrapped", [False, True], ids=["live-bare", "seed-wrapped"])
async def test_get_order_reads_either_spelling(signing_vectors, wrapped) -> None:
    """The live venue answers the bare snake_case order, the seed ``{order: ...}`` in camelCase."""
    live = {"id": "0x44", "status": "LIVE", "owner": "k", "maker_address": "0xabc", "market": COND,
            "asset_id": TOKEN, "side": "BUY", "original_size": "10", "size_matched": "4", "price": "0.5",
            "outcome": "Yes", "expiration": "0", "order_type": "GTC", "associate_trades": [], "created_at": 1767225600}
    seed = {"id": "0x44", "status": "LIVE", "owner": "k", "makerAddress": "0xabc", "market": COND,
            "assetId": TOKEN, "side": "BUY", "originalSize": "10", "sizeMatched": "4", "price": "0.5",
            "outcome": "Yes", "expiration": "0", "order_type": "GTC", "associateTrades": [],
            "createdAt": "2026-01-01T00:00:00Z"}
    rec = Recorder(ok({"order": seed} if wrapped else live))
    got = await make_client(rec, signing_vectors).get_order("0x44")
    assert (got.id, got.asset_id, got.size_matched, got.maker_address, got.created_at_ms) == (
        "0x44", TOKEN, "4", "0xabc", 1767225600000)


@pytest.mark.anyio
async def test_get_order_of_neither_shape_is_an_unexpected_response(signing_vectors) -> None:
    rec = Recorder(ok({"order": {"id": "0x44"}}))
    with pytest.raises(UnexpectedResponse, match="GET /data/order/0x44"):
        await make_client(rec, signing_vectors).get_order("0x44")


@pytest.mark.anyio
async def test_heartbeats_match_vectors(signing_vectors, vectors) -> None:
    rec = Recorder(ok({"heartbeat_id": "hb-0001"}), ok({"heartbeat_id": "hb-0002"}))
    client = make_client(rec, signing_vectors)
    assert await client.heartbeat() == "hb-0001"
    assert_matches_vector(rec.requests[0], vectors["post_heartbeat_first"])
    assert await client.heartbeat() == "hb-0002"
    assert_matches_vector(rec.requests[1], vectors["post_heartbeat_next"])


@pytest.mark.anyio
async def test_heartbeat_invalid_id_resends_expected_id_at_once(signing_vectors) -> None:
    rec = Recorder((400, {"error_msg": "Invalid Heartbeat ID", "heartbeat_id": "hb-7"}, None),
                   ok({"heartbeat_id": "hb-8"}))
    client = make_client(rec, signing_vectors)
    assert await client.heartbeat() == "hb-8"
    assert [json.loads(r.content) for r in rec.requests] == [{"heartbeat_id": ""}, {"heartbeat_id": "hb-7"}]


@pytest.mark.anyio
async def test_heartbeat_other_400_is_raised(signing_vectors) -> None:
    rec = Recorder((400, {"error": "bad_request: nope"}, None))
    with pytest.raises(BadRequest, match="nope"):
        await make_client(rec, signing_vectors).heartbeat()
    assert len(rec.requests) == 1


@pytest.mark.anyio
async def test_balance_allowance_matches_vector(signing_vectors, vectors) -> None:
    rec = Recorder(ok({"balance": "1000000", "allowances": {"0xex": "1"}}))
    got = await make_client(rec, signing_vectors).balance_allowance("COLLATERAL", signature_type=0)
    assert_matches_vector(rec.last, vectors["get_balance_allowance"])
    assert got.balance == "1000000"


@pytest.mark.anyio
async def test_api_keys_matches_vector(signing_vectors, vectors) -> None:
    rec = Recorder(ok({"apiKeys": ["00000000-1111-2222-3333-444444444444"]}))
    got = await make_client(rec, signing_vectors).api_keys()
    assert_matches_vector(rec.last, vectors["get_api_keys"])
    assert got == {"apiKeys": ["00000000-1111-2222-3333-444444444444"]}


@pytest.mark.anyio
async def test_book_matches_vector(vectors) -> None:
    rec = Recorder(ok(BOOK))
    book = await make_client(rec).book(TOKEN)
    assert_matches_vector(rec.last, vectors["get_order_book"])
    assert book.asset_id == TOKEN and book.tick_size == "0.01"


@pytest.mark.anyio
async def test_books_matches_vector(vectors) -> None:
    other = "52114319501245915516055106046884209969926127482827954674443846427813813222426"
    rec = Recorder(ok([BOOK, {**BOOK, "asset_id": other}]))
    books = await make_client(rec).books([TOKEN, other])
    assert_matches_vector(rec.last, vectors["get_order_books"])
    assert [b.asset_id for b in books] == [TOKEN, other]


@pytest.mark.anyio
async def test_prices_matches_vector(vectors) -> None:
    other = "52114319501245915516055106046884209969926127482827954674443846427813813222426"
    rec = Recorder(ok({TOKEN: {"BUY": "0.52"}, other: {"SELL": "0.53"}}))
    got = await make_client(rec).prices([(TOKEN, "BUY"), (other, "SELL")])
    assert_matches_vector(rec.last, vectors["get_prices"])
    assert got[TOKEN].buy == "0.52" and got[other].sell == "0.53" and got[other].buy is None


@pytest.mark.anyio
async def test_prices_drops_empty_side() -> None:
    rec = Recorder(ok({}))
    await make_client(rec).prices([(TOKEN, None), ("1", "")])
    assert rec.last.content == b'[{"token_id":"%s"},{"token_id":"1"}]' % TOKEN.encode()


@pytest.mark.anyio
async def test_tick_size_matches_vector_and_is_cached(vectors) -> None:
    rec = Recorder(ok({"minimum_tick_size": 0.01}))
    client = make_client(rec)
    assert await client.tick_size("999") == "0.01"
    assert_matches_vector(rec.last, vectors["get_tick_size"])
    assert await client.tick_size("999") == "0.01"
    assert len(rec.requests) == 1
    client.set_tick_size("999", None)
    rec.replies = [ok({"minimum_tick_size": "0.001"})]
    assert await client.tick_size("999") == "0.001"
    assert len(rec.requests) == 2


@pytest.mark.anyio
async def test_neg_risk_matches_vector_and_is_cached(vectors) -> None:
    rec = Recorder(ok({"neg_risk": True}))
    client = make_client(rec)
    assert await client.neg_risk("999") is True
    assert await client.neg_risk("999") is True
    assert_matches_vector(rec.last, vectors["get_neg_risk"])
    assert len(rec.requests) == 1


@pytest.mark.anyio
async def test_fee_rate_matches_vector(vectors) -> None:
    rec = Recorder(ok({"base_fee": 0}))
    assert await make_client(rec).fee_rate("999") == "0"
    assert_matches_vector(rec.last, vectors["get_fee_rate_bps"])


@pytest.mark.anyio
async def test_markets_iterator_matches_vector_and_stops_on_empty_cursor(vectors) -> None:
    rec = Recorder(ok({"data": [], "next_cursor": "MTAw", "limit": 100, "count": 0}),
                   ok({"data": [], "next_cursor": "", "limit": 100, "count": 0}))
    got = [m async for m in make_client(rec).iter_markets()]
    assert got == []
    assert_matches_vector(rec.requests[0], vectors["get_markets_page"])
    assert rec.requests[1].url.raw_path == b"/markets?next_cursor=MTAw"
    assert len(rec.requests) == 2


# -- other routes ------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("call", "path", "reply", "expect"),
    [
        ("ok", "/ok", "OK", "OK"),
        ("health", "/", "OK", "OK"),
        ("time", "/time", 1767225600, 1767225600),
        ("version", "/version", {"version": 2}, 2),
    ],
)
async def test_simple_public_routes(call, path, reply, expect) -> None:
    rec = Recorder(ok(reply))
    assert await getattr(make_client(rec), call)() == expect
    assert rec.last.method == "GET" and rec.last.url.raw_path.decode() == path
    assert "SERVICE_SIGNATURE" not in rec.last.headers


@pytest.mark.anyio
async def test_price_and_midpoint() -> None:
    rec = Recorder(ok({"price": "0.52"}))
    assert await make_client(rec).price(TOKEN, "BUY") == "0.52"
    assert rec.last.url.raw_path.decode() == f"/price?token_id={TOKEN}&side=BUY"
    rec = Recorder(ok({"mid": "0.5"}))
    assert await make_client(rec).midpoint(TOKEN) == "0.5"
    assert rec.last.url.raw_path.decode() == f"/midpoint?token_id={TOKEN}"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("simplified_markets_page", "/simplified-markets"),
        ("sampling_markets_page", "/sampling-markets"),
        ("sampling_simplified_markets_page", "/sampling-simplified-markets"),
    ],
)
async def test_market_list_pages(method, path) -> None:
    rec = Recorder(ok({"data": [], "next_cursor": "LTE="}))
    page = await getattr(make_client(rec), method)()
    assert rec.last.url.raw_path.decode() == f"{path}?next_cursor=MA%3D%3D"
    assert page.is_last and page.limit is None


@pytest.mark.anyio
async def test_market_and_clob_market_paths() -> None:
    rec = Recorder((404, {"error": "not_found: market"}, None))
    client = make_client(rec)
    from bot.venue.errors import NotFound

    with pytest.raises(NotFound):
        await client.market(COND)
    assert rec.last.url.raw_path.decode() == f"/markets/{COND}"
    with pytest.raises(NotFound):
        await client.clob_market(COND)
    assert rec.last.url.raw_path.decode() == f"/clob-markets/{COND}"


@pytest.mark.anyio
async def test_get_trades_iterates_until_lte(signing_vectors) -> None:
    trade = {"id": "t1", "taker_order_id": "0x1", "market": COND, "asset_id": TOKEN, "side": "BUY",
             "size": "1", "price": "0.5", "status": "MATCHED", "match_time": "1767225600",
             "outcome": "Yes", "owner": "k", "maker_address": "0xm", "transaction_hash": "0x",
             "bucket_index": 0, "fee_rate_bps": "0", "last_update": "1767225600", "trader_side": "TAKER",
             "maker_orders": []}
    rec = Recorder(ok({"data": [trade], "next_cursor": "MQ==", "limit": 1, "count": 1}),
                   ok({"data": [{**trade, "id": "t2"}], "next_cursor": "LTE=", "limit": 1, "count": 1}))
    got = [t.id async for t in make_client(rec, signing_vectors).get_trades(market=COND)]
    assert got == ["t1", "t2"]
    assert rec.requests[1].url.raw_path.decode() == f"/data/trades?market={COND}&next_cursor=MQ%3D%3D"
    # the query string is not signed: both pages carry the same signature at the same timestamp
    assert rec.requests[0].headers["SERVICE_SIGNATURE"] == rec.requests[1].headers["SERVICE_SIGNATURE"]


@pytest.mark.anyio
async def test_builder_trades_bare_array(signing_vectors) -> None:
    rec = Recorder(ok([]))
    assert await make_client(rec, signing_vectors).builder_trades(maker_address="0xm", before=5) == []
    assert rec.last.url.raw_path.decode() == "/builder/trades?maker_address=0xm&before=5"
    assert "SERVICE_SIGNATURE" in rec.last.headers


@pytest.mark.anyio
async def test_ban_status(signing_vectors) -> None:
    rec = Recorder(ok({"closed_only": True}))
    assert (await make_client(rec, signing_vectors).ban_status()).closed_only is True
    assert rec.last.url.raw_path == b"/auth/ban-status/closed-only"


@pytest.mark.anyio
async def test_create_or_derive_api_key_uses_l1_and_falls_back(signing_vectors) -> None:
    from bot.venue.eip712 import Wallet

    wallet = Wallet(signing_vectors["test_private_key"])
    creds = {"apiKey": "k-1", "secret": signing_vectors["api_creds"]["secret"], "passphrase": "pp-secret"}
    rec = Recorder((400, {"error": "bad_request: key exists"}, None), ok(creds))
    client = ClobClient(Transport("http://clob.test", transport=httpx.MockTransport(rec)), wallet=wallet,
                        wall_clock=lambda: float(TS))
    got = await client.create_or_derive_api_key()
    assert got.api_key == "k-1" and client.creds is got
    assert [(r.method, r.url.raw_path) for r in rec.requests] == [
        ("POST", b"/auth/api-key"), ("GET", b"/auth/derive-api-key")]
    for r in rec.requests:
        assert r.headers["SERVICE_ADDRESS"] == wallet.address
        assert r.headers["SERVICE_TIMESTAMP"] == str(TS) and r.headers["SERVICE_NONCE"] == "0"
        assert r.headers["SERVICE_SIGNATURE"].startswith("0x") and len(r.headers["SERVICE_SIGNATURE"]) == 132
    assert "pp-secret" not in repr(got)


# -- orders ------------------------------------------------------------------------------------


def _signed(signing_vectors, n=1):
    from bot.venue.orders import SignedOrder
    from bot.venue.enums import Side

    return [
        SignedOrder(salt=i + 1, maker=signing_vectors["test_eoa_address"], signer=signing_vectors["test_eoa_address"],
                    token_id=TOKEN, maker_amount=5_000_000, taker_amount=10_000_000, side=Side.BUY,
                    signature_type=0, timestamp=1767225600123, metadata="0x" + "00" * 32,
                    builder="0x" + "00" * 32, hash="0x" + f"{i:064x}", signature="0x" + "aa" * 65,
                    condition_id=COND)
        for i in range(n)
    ]


RESULT = {"success": True, "errorMsg": "", "orderID": "0x01", "status": "live", "makingAmount": "",
          "takingAmount": "", "orderHash": "0x01"}


@pytest.mark.anyio
async def test_post_orders_sends_orders_body_bytes_and_signs_them(signing_vectors) -> None:
    from bot.venue.auth import hmac_signature
    from bot.venue.orders import orders_body

    signed = _signed(signing_vectors, 3)
    rec = Recorder(ok([RESULT] * 3))
    results = await make_client(rec, signing_vectors).post_orders(signed)
    key = signing_vectors["api_creds"]["apiKey"]
    assert rec.last.method == "POST" and rec.last.url.raw_path == b"/orders"
    assert rec.last.content == orders_body(signed, key)
    assert rec.last.headers["SERVICE_SIGNATURE"] == hmac_signature(
        signing_vectors["api_creds"]["secret"], str(TS), "POST", "/orders", rec.last.content)
    assert [r.accepted for r in results] == [True] * 3


@pytest.mark.anyio
async def test_post_order_sends_order_body(signing_vectors) -> None:
    from bot.venue.orders import order_body

    signed = _signed(signing_vectors)[0]
    rec = Recorder(ok({**RESULT, "success": False, "errorMsg": "invalid post-only order: order crosses book",
                       "status": "unmatched"}))
    res = await make_client(rec, signing_vectors).post_order(signed, post_only=True)
    assert rec.last.url.raw_path == b"/order"
    assert rec.last.content == order_body(signed, signing_vectors["api_creds"]["apiKey"], post_only=True)
    assert not res.accepted


@pytest.mark.anyio
@pytest.mark.parametrize("n", [0, 16])
async def test_post_orders_bounds_send_nothing(signing_vectors, n) -> None:
    rec = Recorder(ok([]))
    with pytest.raises(ParameterError, match="^orders: "):
        await make_client(rec, signing_vectors).post_orders(_signed(signing_vectors, n))
    assert rec.requests == []


@pytest.mark.anyio
async def test_bad_arguments_send_nothing(signing_vectors) -> None:
    rec = Recorder(ok({}))
    client = make_client(rec, signing_vectors)
    cases = [
        (client.cancel_orders(["0x1"] * 3001), "order_ids"),
        (client.cancel_orders([]), "order_ids"),
        (client.cancel_market_orders(), "market"),
        (client.cancel(""), "order_id"),
        (client.book(""), "token_id"),
        (client.price(TOKEN, "HOLD"), "side"),
        (client.balance_allowance("USD"), "asset_type"),
        (client.balance_allowance("CONDITIONAL"), "token_id"),
        (client.get_order("a/b"), "order_id"),
        (client.trades_page(before=-1), "before"),
        (client.books([]), "token_ids"),
        (make_client(rec).cancel_all(), "creds"),
    ]
    for coro, name in cases:
        with pytest.raises(ParameterError) as info:
            await coro
        assert info.value.parameter == name
        assert str(info.value).startswith(f"{name}: ") and "\n" not in str(info.value)
    assert rec.requests == []


# -- status mapping and retry rules ------------------------------------------------------------


@pytest.mark.anyio
async def test_write_is_never_retried_on_429(signing_vectors) -> None:
    rec = Recorder((429, {"error": "rate_limited: orders"}, {"Retry-After": "1"}))
    with pytest.raises(RateLimited) as info:
        await make_client(rec, signing_vectors).post_orders(_signed(signing_vectors))
    assert info.value.retry_after == 1.0
    assert len(rec.requests) == 1


@pytest.mark.anyio
async def test_read_retried_on_short_429_then_succeeds(signing_vectors) -> None:
    no_sleep.calls.clear()
    rec = Recorder((429, {"error": "rate_limited"}, {"Retry-After": "2"}),
                   (429, {"retry_after_seconds": 0.5}, None), ok(BOOK))
    client = make_client(rec)
    assert (await client.book(TOKEN)).asset_id == TOKEN
    assert len(rec.requests) == 3 and no_sleep.calls == [2.0, 0.5]
    assert client.transport.retries == 2


@pytest.mark.anyio
async def test_read_gives_up_after_two_retries() -> None:
    rec = Recorder((429, {"error": "rate_limited"}, {"Retry-After": "1"}))
    with pytest.raises(RateLimited):
        await make_client(rec).book(TOKEN)
    assert len(rec.requests) == 3


@pytest.mark.anyio
async def test_read_not_retried_when_wait_too_long_or_unknown() -> None:
    rec = Recorder((429, {"error": "rate_limited"}, {"Retry-After": "6"}))
    with pytest.raises(RateLimited) as info:
        await make_client(rec).book(TOKEN)
    assert info.value.retry_after == 6.0 and len(rec.requests) == 1
    rec = Recorder((429, b"slow down", None))
    with pytest.raises(RateLimited) as info:
        await make_client(rec).book(TOKEN)
    assert info.value.retry_after is None and len(rec.requests) == 1


@pytest.mark.anyio
async def test_read_429_http_date_retry_after() -> None:
    no_sleep.calls.clear()
    rec = Recorder((429, {"error": "x"}, {"Retry-After": "Thu, 01 Jan 2026 00:00:03 GMT"}), ok(BOOK))
    client = make_client(rec, wall_clock=lambda: 1767225600.0)  # 2026-01-01T00:00:00Z
    await client.book(TOKEN)
    assert no_sleep.calls == [3.0]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "body", "exc"),
    [
        (425, {"error": "engine restarting"}, EngineRestarting),
        (503, {"error": "post only", "code": "post_only_mode"}, PostOnlyMode),
        (503, {"error": "exchange is in cancel-only mode"}, CancelOnlyMode),
        (500, {"error": "internal_error: db"}, ServerError),
        (401, {"error": "unauthorized: bad signature"}, Unauthorized),
    ],
)
async def test_write_status_mapping_without_retry(signing_vectors, status, body, exc) -> None:
    rec = Recorder((status, body, None))
    with pytest.raises(exc) as info:
        await make_client(rec, signing_vectors).post_orders(_signed(signing_vectors))
    assert len(rec.requests) == 1
    assert info.value.status == status and info.value.route == "POST /orders"
    assert signing_vectors["api_creds"]["passphrase"] not in str(info.value)


@pytest.mark.anyio
async def test_timeout_on_write_is_outcome_unknown(signing_vectors) -> None:
    def boom(request):
        raise httpx.ReadTimeout("slow", request=request)

    transport = Transport("http://clob.test", transport=httpx.MockTransport(boom))
    c = signing_vectors["api_creds"]
    client = ClobClient(transport, creds=Credentials(c["apiKey"], c["secret"], c["passphrase"]),
                        address=signing_vectors["test_eoa_address"])
    with pytest.raises(TransportTimeout) as info:
        await client.cancel_all()
    assert info.value.outcome_unknown


@pytest.mark.anyio
async def test_secret_echoed_by_venue_is_redacted(signing_vectors) -> None:
    pp = signing_vectors["api_creds"]["passphrase"]
    rec = Recorder((401, {"error": f"unauthorized: bad passphrase {pp}"}, None))
    with pytest.raises(Unauthorized) as info:
        await make_client(rec, signing_vectors).cancel_all()
    assert pp not in str(info.value) and pp not in repr(info.value) and "***" in str(info.value)


@pytest.mark.anyio
async def test_throttled_client_waits_and_reports(signing_vectors) -> None:
    from bot.venue.limits import LimitsConfig, RouteLimiter

    clock = [0.0]
    slept: list[float] = []

    async def sleep(s):
        slept.append(s)
        clock[0] += s

    waits = []
    limiter = RouteLimiter(LimitsConfig(scale=0.01), "clob", clock=lambda: clock[0], sleep=sleep,
                           on_wait=lambda route, s: waits.append((route, s)))
    rec = Recorder(ok(BOOK))
    transport = Transport("http://clob.test", transport=httpx.MockTransport(rec), limiter=limiter)
    client = ClobClient(transport)
    for _ in range(3):  # GET /book: 200/10 s scaled to 2
        await client.book(TOKEN)
    assert len(rec.requests) == 3 and slept == [pytest.approx(10.0)]
    assert waits == [("GET /book", pytest.approx(10.0))]


@pytest.mark.anyio
async def test_rate_limit_headers_are_observable() -> None:
    seen = []
    rec = Recorder(ok(BOOK, {"Poly-RateLimit-Remaining": "-3", "Poly-RateLimit-Reset": "1767225610",
                             "Poly-RateLimit-Warning": "true"}))
    transport = Transport("http://clob.test", transport=httpx.MockTransport(rec), on_rate_limit=seen.append)
    await ClobClient(transport).book(TOKEN)
    info = transport.rate_limit
    assert info is not None and info.remaining == -3 and info.reset == 1767225610 and info.warning
    assert info.route == "GET /book" and seen == [info]

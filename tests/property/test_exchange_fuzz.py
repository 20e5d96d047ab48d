"""Every route of the local exchange under generated input: no 5xx (a venue route the exchange does
not serve answers 501 ``not_implemented``, whatever the input), the venue's error bodies, and a
refused request changes nothing.

The routes are read from the app itself, so a new route is fuzzed without editing this file. Query
strings, headers and bodies are built from the interface's shapes (its parameter names, the order
item of interface.md 2.1, the batch bodies, the L2 headers, signed over the generated body so the
handlers past authentication are reached) mixed with hostile values: huge, negative, non-finite and
non-ASCII numbers, deep nesting, long strings and wrong JSON types. Requests go in-process through
``httpx.ASGITransport`` on one event loop.
"""

from __future__ import annotations

import functools
import json
import re
from urllib.parse import quote

import httpx
import msgspec
import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.routing import Mount, Route

from bot.exchange.app import MOUNTS, Exchange
from bot.exchange.config import ExchangeConfig, ServerFlowConfig
from bot.venue.auth import Credentials, auth_timestamp, l1_headers, l2_headers
from bot.venue.eip712 import Wallet
from bot.venue.enums import Side
from bot.venue.orders import OrderBuilder, order_body

CONFIG = ExchangeConfig(seed=11, markets=3, single_port=True, limits_enabled=False, allow_ips=("*",),
                        flow=ServerFlowConfig(enabled=False), auth_window_s=60)
EXCHANGE = Exchange(CONFIG)
APP = EXCHANGE.apps()["all"]
STATE = EXCHANGE.state
DEMO = STATE.demo
CREDS = Credentials(DEMO.creds.apiKey, DEMO.creds.secret, DEMO.creds.passphrase)


def http_routes(app) -> list[tuple[str, str, str]]:
    """(method, mount prefix, route path) of every HTTP route of ``app``, HEAD aside."""
    out = []
    for mount in app.routes:
        if not isinstance(mount, Mount):
            continue
        for route in mount.routes:
            if isinstance(route, Route):
                out.extend((m, mount.path, route.path) for m in sorted(route.methods - {"HEAD"}))
    return out


ROUTES = http_routes(APP)

# -- values ----------------------------------------------------------------------------------------
MARKETS = STATE.catalog.markets
TOKENS = [t for m in MARKETS for t in m.token_ids]
REAL = [*TOKENS, *(m.condition_id for m in MARKETS), *(m.id for m in MARKETS), *(m.slug for m in MARKETS),
        *(e.id for e in STATE.catalog.events), *(e.slug for e in STATE.catalog.events), DEMO.address,
        *DEMO.wallets.all(), DEMO.creds.apiKey, "BUY", "SELL", "GTC", "FOK", "GTD", "FAK", "COLLATERAL",
        "CONDITIONAL", "MA==", "LTE=", "TOKENS", "DESC", "ASC", "1h", "max", "true", "false"]
HOSTILE = ["", " ", "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e309", "-1e309", "1e-400", "-0", "-1",
           "-5", "0", "1", "1.5", "0x", "0x1", "1_000", "+7", " 7", "٣", "²", "𝟗", "\u00a0", "%00", "null", "[]",
           "{}", "[[[[", "\"", "\\", "1e2", "0.0000001", "true", "FALSE", "LTE=", "!!!", "========"]
long_text = st.builds(lambda ch, n, sign: sign + ch * n, st.sampled_from("9a0["), st.sampled_from([20, 30, 100, 400, 5000]),
                      st.sampled_from(["", "-"]))
value = st.one_of(st.sampled_from(HOSTILE), long_text, st.sampled_from(REAL), st.integers().map(str),
                  st.floats().map(repr), st.text(max_size=40))
PARAMS = ["token_id", "market", "side", "startTs", "endTs", "fidelity", "interval", "next_cursor", "id",
          "asset_id", "taker", "maker", "maker_address", "before", "after", "signature_type", "asset_type",
          "user", "sizeThreshold", "redeemable", "mergeable", "limit", "offset", "sortBy", "sortDirection",
          "title", "eventId", "minBalance", "active", "closed", "archived", "tag", "tag_id", "tag_slug",
          "event_id", "event_slug", "eventSlug", "conditionId", "condition_id", "slug", "order", "ascending",
          "creator", "creator_name", "creator_handle", "q", "limit_per_type", "variant"]
query = st.dictionaries(st.one_of(st.sampled_from(PARAMS), st.text(max_size=12)), value, max_size=5)
path_value = st.one_of(st.sampled_from(REAL), st.sampled_from(HOSTILE), st.text(min_size=1, max_size=40))

# -- bodies ----------------------------------------------------------------------------------------
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=2**64, max_value=2**300),
                      st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=30), value)
any_json = st.recursive(json_leaf, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c,
                                                                                     max_size=4), max_leaves=12)
ORDER_FIELDS = ["salt", "maker", "signer", "tokenId", "conditionId", "makerAmount", "takerAmount", "side",
                "expiration", "signatureType", "timestamp", "metadata", "builder", "signature"]
ITEM_FIELDS = ["order", "owner", "orderType", "deferExec", "postOnly"]


def _signed_item(kind: int, price_cents: int, size: int, side: Side, token: str) -> dict:
    """A genuine order of the demo account (wallet of signature type ``kind``) as a POST item."""
    market = STATE.catalog.by_token[token]
    maker = None if kind == 0 else DEMO.wallets.of(kind)
    builder = OrderBuilder(Wallet(DEMO.private_key), CONFIG.chain_id, maker=maker, signature_type=kind)
    signed = builder.limit(token, side, price_cents * 10_000, size * 1_000_000, 10_000, market.neg_risk,
                           condition_id=market.condition_id)
    return json.loads(order_body(signed, DEMO.creds.apiKey))


signed_item = st.builds(_signed_item, st.integers(0, 3), st.integers(1, 99), st.integers(5, 40),
                        st.sampled_from(list(Side)), st.sampled_from(TOKENS))


@st.composite
def order_item(draw) -> dict:
    """An order item: a genuine one with some fields replaced or dropped, or one made of parts."""
    if draw(st.booleans()):
        item = draw(signed_item)
        for name in draw(st.lists(st.sampled_from(ORDER_FIELDS + ITEM_FIELDS), max_size=3)):
            target = item.get("order") if name in ORDER_FIELDS else item
            if not isinstance(target, dict):
                continue
            if draw(st.booleans()):
                target[name] = draw(json_leaf)
            else:
                target.pop(name, None)
        return item
    order = draw(st.dictionaries(st.sampled_from(ORDER_FIELDS), json_leaf, max_size=len(ORDER_FIELDS)))
    return {"order": order, **draw(st.dictionaries(st.sampled_from(ITEM_FIELDS[1:]), json_leaf, max_size=4))}


token_item = st.fixed_dictionaries({"token_id": st.one_of(st.sampled_from(TOKENS), json_leaf)},
                                   optional={"side": st.one_of(st.sampled_from(["BUY", "SELL", ""]), json_leaf)})
shaped = st.one_of(
    order_item(), st.lists(order_item(), max_size=16), st.lists(token_item, max_size=8),
    st.lists(st.one_of(st.text(max_size=70), json_leaf), max_size=5),
    st.fixed_dictionaries({}, optional={"orderID": json_leaf, "market": json_leaf, "asset_id": json_leaf,
                                        "heartbeat_id": json_leaf}),
    any_json,
)
deep = st.builds(lambda n, o: (o * n + (b"]" if o == b"[" else b"}") * n), st.integers(30, 60_000),
                 st.sampled_from([b"[", b"{"]))
body = st.one_of(
    st.none(),
    shaped.map(lambda v: msgspec.json.encode(v)),
    deep,
    st.sampled_from([b"NaN", b"Infinity", b"-Infinity", b"1e400", b"[1e400]", b'{"a":NaN}', b"\xff\xfe", b"{",
                     b'"\\ud800"', b'{"a":1,"a":2}']),
    st.builds(lambda n, wrap: (b"[" * wrap) + b"9" * n + (b"]" * wrap), st.sampled_from([30, 400, 5000]),
              st.sampled_from([0, 1, 40])),
    st.binary(max_size=64),
)

# -- headers ---------------------------------------------------------------------------------------
AUTH_HEADERS = ["SERVICE_ADDRESS", "SERVICE_API_KEY", "SERVICE_PASSPHRASE", "SERVICE_TIMESTAMP",
                "SERVICE_SIGNATURE", "SERVICE_NONCE"]
AUTH_HEADERS += [h.replace("SERVICE_", "POLY_") for h in AUTH_HEADERS]  # the live venue's spelling, read too
header_text = st.one_of(st.sampled_from([h for h in HOSTILE if h.isascii() and h.isprintable()]), long_text,
                        st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=60))
auth_mode = st.sampled_from(["none", "l2", "l1", "l2-broken"])
overrides = st.dictionaries(st.sampled_from(AUTH_HEADERS + ["Content-Type"]), header_text, max_size=3)


def headers_for(mode: str, method: str, path: str, raw: bytes | None, extra: dict) -> dict[str, str]:
    if mode == "l2" or mode == "l2-broken":
        h = l2_headers(CREDS, DEMO.address, method, path, raw, auth_timestamp())
    elif mode == "l1":
        h = l1_headers(Wallet(DEMO.private_key), CONFIG.chain_id, str(int(STATE.clock())))
    else:
        h = {}
    return h | extra if mode != "l2" else h


def fingerprint() -> tuple:
    """What a refused request must leave untouched."""
    eng = STATE.engine
    bal = [eng.balance(w) for w in DEMO.wallets.all()]
    return (len(STATE.keys), len(eng.orders), len(eng.trades), len(STATE.heartbeats),
            [(b.collateral, b.collateral_reserved, sorted(b.tokens_reserved.items())) for b in bal])


def venue_error_body(prefix: str, status: int, payload) -> bool:
    if not isinstance(payload, dict):
        return False
    if prefix == MOUNTS["catalog"]:
        return set(payload) == {"type", "error"} and all(isinstance(v, str) for v in payload.values())
    if "error_msg" in payload:  # the heartbeat's own 400 body (venue.md 10.4)
        return status == 400 and set(payload) == {"error_msg", "heartbeat_id"}
    return isinstance(payload.get("error"), str) and payload["error"] != "" and set(payload) <= {
        "error", "code", "retry_after_seconds"}


@pytest.fixture(scope="module")
def call():
    with start_blocking_portal() as portal:
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=APP), base_url="http://exchange")
        yield lambda *a, **kw: portal.call(functools.partial(client.request, *a, **kw))
        portal.call(client.aclose)


def test_every_route_is_enumerated():
    served = {(m, p + r) for m, p, r in ROUTES}
    assert ("GET", "/clob/prices-history") in served and ("POST", "/clob/order") in served
    assert ("GET", "/data-api/positions") in served and ("GET", "/catalog/events/{id}") in served
    assert len(ROUTES) >= 50


@pytest.mark.parametrize("method,prefix,route", ROUTES, ids=[f"{m} {p}{r}" for m, p, r in ROUTES])
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_no_input_gets_a_server_error(call, method, prefix, route, data):
    STATE.keys.register(DEMO.creds, DEMO.address, 0)  # a fuzzed DELETE /auth/api-key may have revoked it
    params = {name: data.draw(path_value, label=name) for name in re.findall(r"{(\w+)}", route)}
    local = re.sub(r"{(\w+)}", lambda m: quote(params[m.group(1)], safe=""), route)
    raw = data.draw(body, label="body")
    mode = data.draw(auth_mode, label="auth")
    headers = headers_for(mode, method, local, raw, data.draw(overrides, label="headers"))
    q = data.draw(query, label="query")
    before = fingerprint()
    r = call(method, prefix + local, params=q, content=raw, headers=headers)
    unserved = r.status_code == 501 and r.json()["error"].startswith("not_implemented: ")  # never served
    assert r.status_code < 500 or unserved, (r.status_code, r.text[:300])
    if r.status_code >= 400:
        assert venue_error_body(prefix, r.status_code, r.json()), r.text[:300]
        assert fingerprint() == before, r.text[:300]

"""Golden vectors (order_signing.json and data/vectors): amounts, hashes, signatures, bodies, HMAC."""

from __future__ import annotations

import json

import pytest

from bot.venue import eip712
from bot.venue.auth import Credentials, hmac_signature, l1_headers, l2_headers
from bot.venue.eip712 import Wallet, recover_address
from bot.venue.enums import OrderType, Side, SignatureType
from bot.venue.orders import OrderBuilder, order_body, orders_body, parse_and_verify_order

HEADER_NAMES = {
    "POLY_ADDRESS": "SERVICE_ADDRESS",
    "POLY_API_KEY": "SERVICE_API_KEY",
    "POLY_PASSPHRASE": "SERVICE_PASSPHRASE",
    "POLY_TIMESTAMP": "SERVICE_TIMESTAMP",
    "POLY_SIGNATURE": "SERVICE_SIGNATURE",
    "POLY_NONCE": "SERVICE_NONCE",
}


def project_body(official: str, condition_ids: list[str], order_types: list[str]) -> bytes:
    """Official body -> ours: conditionId after tokenId; expiration only on GTD."""
    value = json.loads(official)
    items = value if isinstance(value, list) else [value]
    for item, cond, otype in zip(items, condition_ids, order_types, strict=True):
        edited = {}
        for key, val in item["order"].items():
            if key == "expiration" and otype != "GTD":
                continue
            edited[key] = val
            if key == "tokenId":
                edited["conditionId"] = cond
        item["order"] = edited
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def mapped(headers: dict) -> dict:
    return {HEADER_NAMES[k]: v for k, v in headers.items() if k in HEADER_NAMES}


@pytest.fixture(scope="module")
def vectors(signing_vectors):
    return signing_vectors


@pytest.fixture(scope="module")
def wallet(vectors):
    return Wallet(vectors["test_private_key"])


@pytest.fixture(scope="module")
def creds(vectors):
    c = vectors["api_creds"]
    return Credentials(c["apiKey"], c["secret"], c["passphrase"])


def test_constants(vectors, wallet):
    c = vectors["constants"]
    assert wallet.address == vectors["test_eoa_address"]
    assert eip712.ORDER_TYPE == c["order_type_string"]
    assert len(eip712.ORDER_TYPE) == 186
    assert "0x" + eip712.ORDER_TYPE_HASH.hex() == c["order_type_hash"]
    table = {
        (137, False): "0x3264e159346253e26a64e00b69032db0e7d32f94628de3e6eecb50304d7af3d2",
        (137, True): "0x9b858f53327b0bd13af8ec14cfb35234fb9eb7b0504d1a4e61f433840d30e81a",
        (80002, False): "0xa440cbd865bc0c6243d7a8df9a8bf48a8827b0a4abbb61c30e96d305423af148",
        (80002, True): "0x1468e39841f0a0e05d3762b235cb7acecabf8cd7b6d3a672965a5d415bf9378e",
    }
    for (chain, neg), sep in table.items():
        assert "0x" + eip712.domain_separator(chain, neg).hex() == sep


def _build(vec, wallet):
    i = vec["inputs"]
    builder = OrderBuilder(
        wallet, i["chain_id"], maker=i["maker"], signature_type=SignatureType(i["signature_type"])
    )
    common = dict(
        salt=int(i["salt"]),
        timestamp_ms=int(i["timestamp_ms"]),
        condition_id=i["condition_id_for_service_variant"],
        metadata=i["metadata"],
        builder=i["builder"],
    )
    if vec["kind"] == "limit":
        return builder.limit_decimal(
            i["token_id"], i["side"], i["price"], i["size"], i["tick_size"], i["neg_risk"],
            i["order_type"], expiration=int(i["expiration"]), post_only=i["post_only"], **common,
        )
    return builder.market_decimal(
        i["token_id"], i["side"], i["amount"], i["price"], i["tick_size"], i["neg_risk"], i["order_type"], **common
    )


def _venue_refused(vec) -> bool:
    """A market vector whose taker leg carries more than 4 decimals: the official client signs it
    (the tick's amount decimals, venue.md 3.3) and production refuses it ("taker amount a max of 4
    decimals"); our builder floors that leg to 4 decimals instead."""
    return vec["kind"] == "market" and int(vec["outputs"]["takerAmount"]) % 100 != 0


def _build_as_vector(vec, wallet):
    """The vector's own amounts through the builder's signing core (hash and signature check)."""
    i, o = vec["inputs"], vec["outputs"]
    builder = OrderBuilder(wallet, i["chain_id"], maker=i["maker"], signature_type=SignatureType(i["signature_type"]))
    return builder._sign(  # noqa: SLF001 - the official amounts, which our rounding no longer makes
        i["token_id"], Side(i["side"]), int(o["makerAmount"]), int(o["takerAmount"]), i["neg_risk"],
        OrderType(i["order_type"]), 0, int(i["salt"]), int(i["timestamp_ms"]), False,
        i["condition_id_for_service_variant"], i["metadata"], i["builder"],
    )


def test_orders_exact(vectors, wallet, creds):
    assert len(vectors["orders"]) == 11
    assert [v["id"] for v in vectors["orders"] if _venue_refused(v)] == ["market_buy_fak_safe_t0001_rounding"]
    for vec in vectors["orders"]:
        i, o = vec["inputs"], vec["outputs"]
        signed = _build(vec, wallet)
        msg = o["eip712_message"]
        assert str(signed.maker_amount) == o["makerAmount"], vec["id"]
        if _venue_refused(vec):  # 17.62857 shares -> 17.6285: what the venue accepts
            assert signed.taker_amount == int(o["takerAmount"]) // 100 * 100 == 17_628_500
            signed = _build_as_vector(vec, wallet)
        assert str(signed.taker_amount) == o["takerAmount"], vec["id"]
        assert eip712.exchange_address(i["neg_risk"]) == o["exchange"]
        dom = eip712.domain_separator(i["chain_id"], i["neg_risk"])
        assert "0x" + dom.hex() == o["domain_separator"]
        struct_hash = eip712.order_struct_hash(
            msg["salt"], msg["maker"], msg["signer"], msg["tokenId"], msg["makerAmount"], msg["takerAmount"],
            msg["side"], msg["signatureType"], msg["timestamp"], eip712.bytes32(msg["metadata"]),
            eip712.bytes32(msg["builder"]),
        )
        assert "0x" + struct_hash.hex() == o["struct_hash"], vec["id"]
        assert "0x" + eip712.typed_data_digest(dom, struct_hash).hex() == o["typed_data_hash"]
        assert signed.hash == o["typed_data_hash"], vec["id"]
        assert signed.signature == o["signature"], vec["id"]
        assert (signed.maker, signed.signer, signed.side.uint8) == (msg["maker"], msg["signer"], o["side_uint8"])

        body = order_body(signed, i["owner"], defer_exec=i["defer_exec"])
        expected = project_body(o["post_body"], [i["condition_id_for_service_variant"]], [i["order_type"]])
        assert body == expected, vec["id"]

        # the official bytes' HMAC, and our body's headers
        official_headers = mapped(o["post_headers"])
        ts = official_headers["SERVICE_TIMESTAMP"]
        ours = l2_headers(creds, i["eoa_address"], "POST", "/order", o["post_body"].encode(), ts)
        assert {k: ours[k] for k in official_headers} == official_headers, vec["id"]
        mine = l2_headers(creds, i["eoa_address"], "POST", "/order", body, ts)
        assert mine["SERVICE_SIGNATURE"] == hmac_signature(creds.secret, ts, "POST", "/order", body)

        # exchange side: the body we send parses and verifies to the same hash
        verified = parse_and_verify_order(json.loads(body)["order"], i["chain_id"], i["neg_risk"])
        assert verified.hash == o["typed_data_hash"]
        assert verified.recovered == i["signer"]


def test_batch_body(vectors, wallet, creds):
    batch = vectors["batch_post_orders"]
    items = json.loads(batch["body"])
    assert len(items) == batch["n_orders"] == 3
    cond = "0x" + "cd" * 32
    signed = []
    for item in items:
        order = item["order"]
        verified = parse_and_verify_order(order, 137, False, item["orderType"], item["postOnly"])
        assert verified.recovered == vectors["test_eoa_address"]
        # rebuild from the amounts with our builder: same hash and signature
        b = OrderBuilder(wallet, 137)
        otype = OrderType(item["orderType"])
        side = Side(order["side"])
        shares = int(order["takerAmount"] if side is Side.BUY else order["makerAmount"])
        usdc = int(order["makerAmount"] if side is Side.BUY else order["takerAmount"])
        s = b.limit(
            order["tokenId"], side, usdc * 1_000_000 // shares, shares, 1_000, False, otype,
            expiration=int(order["expiration"]), salt=order["salt"], timestamp_ms=int(order["timestamp"]),
            condition_id=cond,
        )
        assert s.signature == order["signature"]
        assert s.hash == verified.hash
        signed.append(s)
    body = orders_body(signed, items[0]["owner"])
    assert body == project_body(batch["body"], [cond] * 3, [it["orderType"] for it in items])
    official = mapped(batch["headers"])
    ours = l2_headers(creds, vectors["test_eoa_address"], batch["method"], batch["path"], batch["body"].encode(),
                      official["SERVICE_TIMESTAMP"])
    assert {k: ours[k] for k in official} == official


def test_hmac_vectors(vectors):
    for vec in vectors["hmac"]:
        expected = vec.get("signature_without_quote_replacement", vec["signature"])
        body = vec["body"].encode() if vec["body"] is not None else None
        assert hmac_signature(vec["secret"], vec["timestamp"], vec["method"], vec["path"], body) == expected
        unpadded = vec["secret"].rstrip("=")
        assert hmac_signature(unpadded, vec["timestamp"], vec["method"], vec["path"], body) == expected
        if "signature_without_quote_replacement" not in vec:
            from bot.venue.auth import hmac_message

            assert hmac_message(vec["timestamp"], vec["method"], vec["path"], body).decode() == vec["message_signed"]


def test_routes(vectors, creds):
    for route in vectors["routes"]:
        official = mapped(route["headers"])
        if "SERVICE_SIGNATURE" not in official:
            continue
        assert "?" not in route["path_signed"]
        body = route["body"].encode() if isinstance(route["body"], str) else None
        ours = l2_headers(creds, vectors["test_eoa_address"], route["method"], route["path_signed"], body,
                          official["SERVICE_TIMESTAMP"])
        assert {k: ours[k] for k in official} == official, route["name"]
        assert ours["Content-Type"] == "application/json"


def test_l1_clob_auth(vectors, wallet):
    assert len(vectors["l1_clob_auth"]) == 2
    for vec in vectors["l1_clob_auth"]:
        m = vec["message"]
        chain = vec["chain_id"]
        assert "0x" + eip712.clob_auth_domain_separator(chain).hex() == vec["domain_separator"]
        struct_hash = eip712.clob_auth_struct_hash(m["address"], m["timestamp"], m["nonce"])
        assert "0x" + struct_hash.hex() == vec["struct_hash"]
        digest = eip712.clob_auth_digest(chain, m["address"], m["timestamp"], m["nonce"])
        assert "0x" + digest.hex() == vec["typed_data_hash"]
        headers = l1_headers(wallet, chain, m["timestamp"], m["nonce"])
        assert headers == mapped(vec["headers"])
        assert headers["SERVICE_SIGNATURE"] == vec["signature"]
        assert recover_address(digest, bytes.fromhex(vec["signature"][2:])) == m["address"]


def test_poly_1271_upstream_vector(data_dir):
    """The deposit-wallet vector of py-clob-client-v2 (Amoy), recomputed exactly."""
    data = json.loads((data_dir / "vectors" / "polymarket_signing_vectors.json").read_text())
    vec = data["order_v2_ctf_exchange_poly1271"][0]
    owner = Wallet(data["test_key"]["private_key"])
    o = vec["order"]
    assert vec["order_type"] == eip712.ORDER_TYPE
    builder = OrderBuilder(owner, vec["domain"]["chainId"], maker=o["maker"], signature_type=SignatureType.POLY_1271)
    shares, usdc = int(o["takerAmount"]), int(o["makerAmount"])
    # BUY 50 shares paying 100 USDC is not a valid price; sign the raw amounts through the builder's core
    signed = builder._sign(  # noqa: SLF001 - raw amounts reproduce the upstream vector as given
        o["tokenId"], Side.BUY, usdc, shares, False, OrderType.GTC, 0, int(o["salt"]), int(o["timestamp"]),
        False, None, o["metadata"], o["builder"],
    )
    assert signed.signature == vec["expected_signature"]
    assert len(bytes.fromhex(signed.signature[2:])) == 317
    verified = parse_and_verify_order(json.loads(order_body(signed, "k"))["order"], 80002, False)
    assert verified.recovered == owner.address
    assert verified.hash == signed.hash

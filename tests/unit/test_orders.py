"""Order building, signature types, bodies, and the exchange-side parse-and-verify."""

from __future__ import annotations

import json
import time

import pytest

from bot.venue import eip712
from bot.venue.amounts import AmountError
from bot.venue.eip712 import SignatureError, Wallet, recover_address
from bot.venue.enums import OrderType, Side, SignatureType
from bot.venue.orders import (
    OrderBuilder,
    OrderError,
    order_body,
    orders_body,
    parse_and_verify_order,
)

KEY = "0x" + "0123456789abcdef" * 4
FUNDER = "0x6A9296CEb89D12e1F53b2Dd5Df45d3ADB3A814c2"
DEPOSIT = "0x1111111111111111111111111111111111111111"
TOKEN = "71321045679252212594626385532706912750332728571942532289631379312455583992563"
COND = "0x" + "ab" * 32
OWNER = "00000000-1111-2222-3333-444444444444"
TS = 1767225600123


@pytest.fixture(scope="module")
def wallet():
    return Wallet(KEY)


@pytest.fixture(scope="module")
def eoa(wallet):
    return OrderBuilder(wallet, 137)


def limit(order_builder, **kw):
    args = dict(token_id=TOKEN, side=Side.BUY, price_units=500_000, size_units=10_000_000, tick_units=10_000,
                neg_risk=False, salt=42, timestamp_ms=TS, condition_id=COND)
    args.update(kw)
    return order_builder.limit(**args)


def verify(signed, chain=137, neg_risk=False):
    return parse_and_verify_order(json.loads(order_body(signed, OWNER))["order"], chain, neg_risk)


def test_wallet_sign_and_recover(wallet):
    digest = eip712.keccak256(b"hello")
    sig = wallet.sign_digest(digest)
    assert len(sig) == 65 and sig[64] in (27, 28)
    assert recover_address(digest, sig) == wallet.address
    assert recover_address(digest, sig[:64] + bytes((sig[64] - 27,))) == wallet.address
    with pytest.raises(SignatureError, match="65 bytes"):
        recover_address(digest, sig[:64])
    with pytest.raises(SignatureError, match="v byte"):
        recover_address(digest, sig[:64] + b"\x05")
    with pytest.raises(SignatureError, match="32 bytes"):
        wallet.sign_digest(b"short")


def test_direct_signing_matches_the_public_api(wallet):
    """The wallet signs on the library binding directly; the bytes are coincurve's own."""
    for digest in (eip712.keccak256(b"a"), eip712.keccak256(b"b"), bytes(32)):
        sig = wallet._key.sign_recoverable(digest, hasher=None)
        assert wallet.sign_digest(digest) == sig[:64] + bytes((sig[64] + 27,))


def test_checksum_address():
    assert eip712.to_checksum_address(FUNDER.lower()) == FUNDER
    with pytest.raises(SignatureError, match="address"):
        eip712.to_checksum_address("0x1234")


def test_deterministic_hash_is_order_id(eoa):
    a, b = limit(eoa), limit(eoa)
    assert a.hash == b.hash and a.signature == b.signature
    assert limit(eoa, salt=43).hash != a.hash
    assert limit(eoa, neg_risk=True).hash != a.hash  # other exchange, other domain
    assert verify(a).hash == a.hash


def test_defaults_salt_and_clock(eoa):
    before = time.time_ns() // 1_000_000
    s = eoa.limit(TOKEN, Side.SELL, 420_000, 1_000_000, 10_000, False)
    assert 0 <= s.salt < 2**53
    assert before <= s.timestamp <= time.time_ns() // 1_000_000
    assert s.condition_id is None and s.expiration == 0 and s.order_type is OrderType.GTC
    assert limit(eoa, side="SELL").side is Side.SELL


def test_proxy_and_safe_makers(wallet):
    for sig_type in (SignatureType.POLY_PROXY, SignatureType.POLY_GNOSIS_SAFE):
        b = OrderBuilder(wallet, 137, maker=FUNDER.lower(), signature_type=sig_type)
        s = limit(b)
        assert (s.maker, s.signer, s.signature_type) == (FUNDER, wallet.address, int(sig_type))
        v = verify(s)
        assert v.recovered == wallet.address


def test_poly_1271_round_trip(wallet):
    b = OrderBuilder(wallet, 80002, maker=DEPOSIT, signature_type=SignatureType.POLY_1271)
    s = limit(b, neg_risk=True)
    assert s.maker == s.signer == eip712.to_checksum_address(DEPOSIT)
    raw = bytes.fromhex(s.signature[2:])
    assert len(raw) == 317 and raw[-2:] == b"\x00\xba"
    assert raw[65:97] == eip712.domain_separator(80002, True)
    v = verify(s, 80002, True)
    assert v.recovered == wallet.address  # the deposit wallet's owner
    assert v.hash == s.hash
    # wrong exchange or chain: the embedded domain no longer matches
    with pytest.raises(SignatureError, match="wrapper"):
        verify(s, 80002, False)
    # a wrapper signed by someone else recovers another owner
    other = OrderBuilder(Wallet("0x" + "22" * 32), 80002, maker=DEPOSIT, signature_type=3)
    assert verify(limit(other, neg_risk=True), 80002, True).recovered != wallet.address
    obj = json.loads(order_body(s, OWNER))["order"]
    obj["signature"] = obj["signature"][:-4] + "00bb"
    with pytest.raises(SignatureError, match="type string"):
        parse_and_verify_order(obj, 80002, True)
    obj = json.loads(order_body(s, OWNER))["order"]
    obj["signature"] = obj["signature"][:132]
    with pytest.raises(SignatureError, match="317"):
        parse_and_verify_order(obj, 80002, True)


def test_builder_refusals(wallet, eoa):
    with pytest.raises(OrderError, match="deposit wallet"):
        OrderBuilder(wallet, 137, signature_type=SignatureType.POLY_1271)
    with pytest.raises(OrderError, match="maker == signer"):
        OrderBuilder(wallet, 137, maker=FUNDER)
    with pytest.raises(OrderError, match="GTD expiration"):
        limit(eoa, order_type=OrderType.GTD, expiration=TS // 1000 + 179)
    with pytest.raises(OrderError, match="only allowed on GTD"):
        limit(eoa, expiration=TS // 1000 + 3600)
    with pytest.raises(OrderError, match="GTC or GTD"):
        limit(eoa, order_type=OrderType.FOK)
    with pytest.raises(OrderError, match="FOK or FAK"):
        eoa.market(TOKEN, Side.BUY, 1_000_000, 500_000, 10_000, False, OrderType.GTC)
    with pytest.raises(OrderError, match="token id"):
        limit(eoa, token_id="12x")
    with pytest.raises(OrderError, match="conditionId"):
        limit(eoa, condition_id="0x1234")
    with pytest.raises(OrderError, match="salt"):
        limit(eoa, salt=2**53)
    with pytest.raises(OrderError, match="builder code"):
        limit(eoa, builder="0x1234")
    with pytest.raises(AmountError, match="tick"):
        limit(eoa, price_units=505_000)
    with pytest.raises(AmountError, match="minimum"):
        limit(eoa, min_size_units=20_000_000)


def test_builder_code_filled_in(wallet):
    b = OrderBuilder(wallet, 137, builder_code=FUNDER)
    s = limit(b)
    assert s.builder == "0x" + "00" * 12 + FUNDER[2:].lower()
    assert limit(b, builder="0x" + "b1" * 32).builder == "0x" + "b1" * 32
    assert verify(s).hash == s.hash


def test_body_bytes(eoa):
    gtc = limit(eoa, post_only=True)
    body = order_body(gtc, OWNER)
    text = body.decode()
    assert '"expiration"' not in text
    assert f'"tokenId":"{TOKEN}","conditionId":"{COND}","makerAmount":"5000000"' in text
    assert text.endswith('"owner":"%s","orderType":"GTC","deferExec":false,"postOnly":true}' % OWNER)
    assert json.loads(body)["order"]["salt"] == 42
    gtd = limit(eoa, order_type=OrderType.GTD, expiration=TS // 1000 + 3600)
    assert f'"side":"BUY","expiration":"{TS // 1000 + 3600}","signatureType":0' in order_body(gtd, OWNER).decode()
    assert '"deferExec":true' in order_body(gtc, OWNER, defer_exec=True).decode()
    # owner is JSON-escaped, never spliced raw
    assert json.loads(order_body(gtc, 'a"b\\c'))["owner"] == 'a"b\\c'
    # no condition id anywhere: the key is left out
    bare = eoa.limit(TOKEN, Side.BUY, 500_000, 10_000_000, 10_000, False, salt=1, timestamp_ms=TS)
    assert '"conditionId"' not in order_body(bare, OWNER).decode()
    assert '"conditionId":"%s"' % COND in order_body(bare, OWNER, condition_id=COND).decode()


def test_market_orders(eoa):
    s = eoa.market(TOKEN, Side.BUY, 100_000_000, 550_000, 10_000, False, salt=1, timestamp_ms=TS)
    assert (s.maker_amount, s.taker_amount, s.order_type) == (100_000_000, 181_818_100, OrderType.FOK)
    body = order_body(s, OWNER).decode()
    assert '"orderType":"FOK"' in body and '"postOnly":false' in body and '"expiration"' not in body
    with pytest.raises(OrderError, match="postOnly"):
        order_body(s, OWNER, post_only=True)
    fak = eoa.market_decimal(TOKEN, "SELL", "37.5", "0.45", "0.01", True, "FAK", salt=2, timestamp_ms=TS)
    assert (fak.maker_amount, fak.taker_amount) == (37_500_000, 16_875_000)


def test_batch_bounds(eoa):
    one = limit(eoa)
    assert json.loads(orders_body([one] * 15, OWNER)) == [json.loads(order_body(one, OWNER))] * 15
    for n in (0, 16):
        with pytest.raises(OrderError, match="1 to 15"):
            orders_body([one] * n, OWNER)


def test_parse_and_verify_tolerance_and_tampering(eoa, wallet):
    s = limit(eoa, order_type=OrderType.GTD, expiration=TS // 1000 + 3600)
    obj = json.loads(order_body(s, OWNER))["order"]
    # salt as a decimal string, keys in any order
    shuffled = dict(reversed(list({**obj, "salt": str(obj["salt"])}.items())))
    v = parse_and_verify_order(shuffled, 137, False, "GTD")
    assert v.hash == s.hash and v.order.expiration == s.expiration and v.order.condition_id == COND
    assert v.order.maker_amount == s.maker_amount and v.order.side is Side.BUY
    # any signed field changed: the signature no longer recovers the signer
    for key, value in [("makerAmount", "5000001"), ("salt", 43), ("timestamp", str(TS + 1)), ("side", "SELL")]:
        with pytest.raises(SignatureError, match="signer does not match"):
            parse_and_verify_order({**obj, key: value}, 137, False)
    # unsigned fields do not change the hash
    assert parse_and_verify_order({**obj, "conditionId": "0x" + "cd" * 32}, 137, False).hash == s.hash
    # wrong exchange: another domain, another digest
    with pytest.raises(SignatureError):
        parse_and_verify_order(obj, 137, True)
    for key, value, match in [
        ("salt", -1, "salt"), ("salt", "1.5", "salt"), ("side", "HOLD", "side"), ("maker", "0x12", "maker"),
        ("signatureType", 4, "signatureType"), ("makerAmount", True, "makerAmount"), ("metadata", "0x12", "metadata"),
    ]:
        with pytest.raises(OrderError, match=match):
            parse_and_verify_order({**obj, key: value}, 137, False)
    with pytest.raises(OrderError, match="maker == signer"):
        parse_and_verify_order({**obj, "maker": FUNDER}, 137, False)
    with pytest.raises(OrderError, match="missing tokenId"):
        parse_and_verify_order({k: v for k, v in obj.items() if k != "tokenId"}, 137, False)
    with pytest.raises(SignatureError, match="signature"):
        parse_and_verify_order({**obj, "signature": "0xzz"}, 137, False)


@pytest.mark.parametrize("digits", [79, 5000, 100_000])
def test_an_integer_field_too_long_for_uint256_is_an_order_error(eoa, digits):
    obj = json.loads(order_body(limit(eoa), OWNER))["order"]
    obj["salt"] = "9" * digits  # int() of it would raise ValueError past 4300 digits, or take long
    with pytest.raises(OrderError, match="salt"):
        parse_and_verify_order(obj, 137, False)

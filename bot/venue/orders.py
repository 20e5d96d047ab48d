"""Signed orders: building, EIP-712 signing, the exact POST bodies, and the exchange's check.

Invariant: a ``SignedOrder``'s ``hash`` is the EIP-712 digest of its 11 signed fields (the order
id, known before sending), its ``signature`` verifies against that digest, and ``order_body``
yields the exact bytes of venue.md 4.1 (official key order plus ``conditionId``; ``expiration``
only on GTD). ``conditionId``, ``expiration`` and the order type are not signed.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping, Sequence
from decimal import Decimal

import msgspec

from bot.venue import amounts as am
from bot.venue.eip712 import (
    SignatureError,
    Wallet,
    address_bytes,
    bytes32,
    domain_separator,
    keccak256,
    poly_1271_digest,
    recover_address,
    to_checksum_address,
    unwrap_poly_1271,
    wrap_poly_1271,
    ORDER_TYPE_HASH,
)
from bot.venue.enums import OrderType, Side, SignatureType
from bot.venue.units import MAX_BATCH

ZERO32 = "0x" + "00" * 32
MAX_SALT = 2**53 - 1
MIN_GTD_LEAD_S = 180


class OrderError(ValueError):
    """An order the client refuses to build, or a received order the exchange refuses."""


class SignedOrder(msgspec.Struct, frozen=True):
    """One signed order: the 11 signed fields, their hash and signature, plus unsigned extras."""

    salt: int
    maker: str
    signer: str
    token_id: str
    maker_amount: int
    taker_amount: int
    side: Side
    signature_type: int
    timestamp: int  # epoch ms
    metadata: str
    builder: str
    hash: str  # 0x hex order hash = the order id
    signature: str  # 0x hex; 317 bytes for POLY_1271
    order_type: OrderType = OrderType.GTC
    expiration: int = 0  # unix seconds, GTD only
    condition_id: str | None = None
    post_only: bool = False


def _builder_word(code: str | None) -> str:
    """A builder code (address or bytes32 hex) as a lowercase 0x bytes32; empty -> zero."""
    value = (code or "").strip()
    if not value:
        return ZERO32
    raw = value[2:] if value[:2] in ("0x", "0X") else value
    try:
        data = bytes.fromhex(raw)
    except ValueError:
        raise OrderError(f"builder code is not hex: {code!r}") from None
    if len(data) not in (20, 32):
        raise OrderError(f"builder code must be an address or 32 bytes: {code!r}")
    return "0x" + data.rjust(32, b"\0").hex()


_CONDITION_IDS: dict[str, str] = {}  # condition ids already validated -> their lowercase form


def _check_condition_id(condition_id: str) -> str:
    known = _CONDITION_IDS.get(condition_id)
    if known is not None:
        return known
    if len(condition_id) != 66 or condition_id[:2] != "0x":
        raise OrderError(f"conditionId must be 0x + 64 hex: {condition_id!r}")
    try:
        bytes.fromhex(condition_id[2:])
    except ValueError:
        raise OrderError(f"conditionId must be 0x + 64 hex: {condition_id!r}") from None
    if len(_CONDITION_IDS) < _TOKEN_CACHE_MAX:
        _CONDITION_IDS[condition_id] = condition_id.lower()
    return condition_id.lower()


_SIDE_WORD = {Side.BUY: (0).to_bytes(32, "big"), Side.SELL: (1).to_bytes(32, "big")}
_TOKEN_CACHE_MAX = 4096
_GTD = OrderType.GTD
_WIRE: dict[Side | OrderType, str] = {m: m.value for m in (*Side, *OrderType)}  # without ``.value`` calls


class OrderBuilder:
    """Builds and signs orders for one wallet configuration (hot path: precomputed words).

    For signature types 0-2 the signer is the wallet's own address and ``maker`` (the funder)
    defaults to it; for type 3 ``maker`` is the deposit wallet and also the signer.
    """

    def __init__(
        self,
        wallet: Wallet,
        chain_id: int,
        maker: str | None = None,
        signature_type: SignatureType | int = SignatureType.EOA,
        builder_code: str | None = None,
    ) -> None:
        sig_type = SignatureType(signature_type)
        if sig_type is SignatureType.POLY_1271:
            if maker is None:
                raise OrderError("signature type POLY_1271 needs the deposit wallet address as maker")
            signer = to_checksum_address(maker)
        else:
            signer = wallet.address
        maker = to_checksum_address(maker) if maker is not None else signer
        if sig_type is SignatureType.EOA and maker != signer:
            raise OrderError("signature type EOA needs maker == signer (configure a funder with type 1 or 2)")
        self.wallet = wallet
        self.chain_id = chain_id
        self.maker = maker
        self.signer = signer
        self.signature_type = int(sig_type)
        self._wrapped = sig_type is SignatureType.POLY_1271  # type 3: the signature is wrapped
        self.builder = _builder_word(builder_code)
        self._domains = (domain_separator(chain_id, False), domain_separator(chain_id, True))
        self._prefixes = tuple(b"\x19\x01" + d for d in self._domains)  # the digest's first 66 bytes
        self._head = ORDER_TYPE_HASH
        self._parties = address_bytes(maker).rjust(32, b"\0") + address_bytes(signer).rjust(32, b"\0")
        self._sig_type_word = self.signature_type.to_bytes(32, "big")
        self._tail = bytes(32) + bytes.fromhex(self.builder[2:])  # default metadata + builder words
        self._tokens: dict[str, bytes] = {}

    def __repr__(self) -> str:
        return f"OrderBuilder(maker={self.maker}, signer={self.signer}, type={self.signature_type})"

    # -- amounts in units (hot path) ---------------------------------------------------------

    def limit(
        self,
        token_id: str,
        side: Side,
        price_units: int,
        size_units: int,
        tick_units: int,
        neg_risk: bool,
        order_type: OrderType = OrderType.GTC,
        expiration: int = 0,
        salt: int | None = None,
        timestamp_ms: int | None = None,
        min_size_units: int = 0,
        post_only: bool = False,
        condition_id: str | None = None,
        metadata: str | None = None,
        builder: str | None = None,
    ) -> SignedOrder:
        """A signed GTC/GTD order of ``size_units`` shares at ``price_units`` (venue.md 3.2)."""
        if order_type.is_market:
            raise OrderError(f"limit orders are GTC or GTD, not {order_type.value}")
        maker_amount, taker_amount = am.limit_amounts(side, price_units, size_units, tick_units, min_size_units)
        if timestamp_ms is None:
            timestamp_ms = time.time_ns() // 1_000_000
        if order_type is _GTD:
            if expiration < timestamp_ms // 1000 + MIN_GTD_LEAD_S:
                raise OrderError(f"GTD expiration must be at least {MIN_GTD_LEAD_S} s after the order time")
        elif expiration:
            raise OrderError("expiration is only allowed on GTD orders")
        return self._sign(
            token_id, side, maker_amount, taker_amount, neg_risk, order_type, expiration, salt,
            timestamp_ms, post_only, condition_id, metadata, builder,
        )

    def market(
        self,
        token_id: str,
        side: Side,
        amount_units: int,
        price_units: int,
        tick_units: int,
        neg_risk: bool,
        order_type: OrderType = OrderType.FOK,
        salt: int | None = None,
        timestamp_ms: int | None = None,
        condition_id: str | None = None,
        metadata: str | None = None,
        builder: str | None = None,
    ) -> SignedOrder:
        """A signed FOK/FAK order: BUY spends ``amount_units`` USDC, SELL sells that many shares."""
        if not order_type.is_market:
            raise OrderError(f"market orders are FOK or FAK, not {order_type.value}")
        maker_amount, taker_amount = am.market_amounts(side, amount_units, price_units, tick_units)
        if timestamp_ms is None:
            timestamp_ms = time.time_ns() // 1_000_000
        return self._sign(
            token_id, side, maker_amount, taker_amount, neg_risk, order_type, 0, salt,
            timestamp_ms, False, condition_id, metadata, builder,
        )

    # -- decimal convenience (CLI, config) -----------------------------------------------------

    def limit_decimal(
        self,
        token_id: str,
        side: Side | str,
        price: str | Decimal,
        size: str | Decimal,
        tick: str | Decimal,
        neg_risk: bool,
        order_type: OrderType | str = OrderType.GTC,
        min_size: str | Decimal | None = None,
        **kwargs,
    ) -> SignedOrder:
        """``limit`` from decimal strings: the price must sit on the tick; size floors to 0.01."""
        tick_units = am.parse_tick(tick)
        return self.limit(
            token_id,
            Side(side),
            am.exact_price_units(price, tick_units),
            am.decimal_units(size, "size", 2),
            tick_units,
            neg_risk,
            OrderType(order_type),
            min_size_units=am.decimal_units(min_size, "min size") if min_size is not None else 0,
            **kwargs,
        )

    def market_decimal(
        self,
        token_id: str,
        side: Side | str,
        amount: str | Decimal,
        price: str | Decimal,
        tick: str | Decimal,
        neg_risk: bool,
        order_type: OrderType | str = OrderType.FOK,
        **kwargs,
    ) -> SignedOrder:
        """``market`` from decimal strings: price floors to the tick, amount to 0.01."""
        tick_units = am.parse_tick(tick)
        rule = am.tick_rule(tick_units)
        return self.market(
            token_id,
            Side(side),
            am.decimal_units(amount, "amount", 2),
            am.decimal_units(price, "price", rule.price_decimals),
            tick_units,
            neg_risk,
            OrderType(order_type),
            **kwargs,
        )

    # -- signing ---------------------------------------------------------------------------------

    def _token_word(self, token_id: str) -> bytes:
        word = self._tokens.get(token_id)
        if word is None:
            if not token_id.isdigit() or not token_id.isascii():
                raise OrderError(f"token id must be a decimal integer: {token_id!r}")
            value = int(token_id)
            if value >= 2**256:
                raise OrderError("token id does not fit in uint256")
            if len(self._tokens) >= _TOKEN_CACHE_MAX:
                self._tokens.clear()
            word = self._tokens[token_id] = value.to_bytes(32, "big")
        return word

    def _sign(
        self,
        token_id: str,
        side: Side,
        maker_amount: int,
        taker_amount: int,
        neg_risk: bool,
        order_type: OrderType,
        expiration: int,
        salt: int | None,
        timestamp_ms: int,
        post_only: bool,
        condition_id: str | None,
        metadata: str | None,
        builder: str | None,
    ) -> SignedOrder:
        if post_only and order_type.is_market:
            raise OrderError("postOnly is only allowed on GTC and GTD orders")
        if side.__class__ is not Side:
            side = Side(side)
        if salt is None:
            salt = secrets.randbits(53)
        elif not 0 <= salt <= MAX_SALT:
            raise OrderError("salt must be an integer in [0, 2^53 - 1]")
        if metadata is None and builder is None:
            meta, build, tail = ZERO32, self.builder, self._tail
        else:
            meta = ZERO32 if metadata is None else "0x" + bytes32(metadata).hex()
            build = self.builder if builder is None or builder == ZERO32 else _builder_word(builder)
            tail = bytes.fromhex(meta[2:] + build[2:])
        if condition_id is not None:
            condition_id = _check_condition_id(condition_id)
        domain = self._domains[1 if neg_risk else 0]
        struct_hash = keccak256(b"".join((
            self._head,
            salt.to_bytes(32, "big"),
            self._parties,
            self._tokens.get(token_id) or self._token_word(token_id),
            maker_amount.to_bytes(32, "big"),
            taker_amount.to_bytes(32, "big"),
            _SIDE_WORD[side],
            self._sig_type_word,
            timestamp_ms.to_bytes(32, "big"),
            tail,
        )))
        digest = keccak256(self._prefixes[1 if neg_risk else 0] + struct_hash)  # 0x1901 || domain || struct
        if self._wrapped:
            inner = self.wallet.sign_digest(poly_1271_digest(self.chain_id, domain, struct_hash, self.maker))
            signature = wrap_poly_1271(inner, domain, struct_hash)
        else:
            signature = self.wallet.sign_digest(digest)
        return SignedOrder(
            salt, self.maker, self.signer, token_id, maker_amount, taker_amount, side,
            self.signature_type, timestamp_ms, meta, build, "0x" + digest.hex(), "0x" + signature.hex(),
            order_type, expiration, condition_id, post_only,
        )


# --------------------------------------------------------------------------------------------
# Bodies (venue.md 4)

_json_str = msgspec.json.Encoder().encode
_OWNERS: dict[str, str] = {}  # owner -> its JSON string literal


def _owner_json(owner: str) -> str:
    text = _OWNERS.get(owner)
    if text is None:
        text = _json_str(owner).decode()
        if len(_OWNERS) < _TOKEN_CACHE_MAX:
            _OWNERS[owner] = text
    return text


def order_item_json(
    signed: SignedOrder,
    owner: str,
    condition_id: str | None = None,
    order_type: OrderType | None = None,
    post_only: bool | None = None,
    defer_exec: bool = False,
) -> str:
    """One order object of a POST body as compact JSON text (key order of venue.md 4.1)."""
    order_type = order_type or signed.order_type
    post_only = signed.post_only if post_only is None else post_only
    if post_only and order_type.is_market:
        raise OrderError("postOnly is only allowed on GTC and GTD orders")
    cond = condition_id if condition_id is not None else signed.condition_id
    cond_part = f'"conditionId":"{_check_condition_id(cond)}",' if cond is not None else ""
    exp_part = f'"expiration":"{signed.expiration}",' if order_type is _GTD else ""
    return (
        f'{{"order":{{"salt":{signed.salt},"maker":"{signed.maker}","signer":"{signed.signer}",'
        f'"tokenId":"{signed.token_id}",{cond_part}"makerAmount":"{signed.maker_amount}",'
        f'"takerAmount":"{signed.taker_amount}","side":"{_WIRE[signed.side]}",{exp_part}'
        f'"signatureType":{signed.signature_type},"timestamp":"{signed.timestamp}",'
        f'"metadata":"{signed.metadata}","builder":"{signed.builder}","signature":"{signed.signature}"}},'
        f'"owner":{_owner_json(owner)},"orderType":"{_WIRE[order_type]}",'
        f'"deferExec":{"true" if defer_exec else "false"},"postOnly":{"true" if post_only else "false"}}}'
    )


def order_body(
    signed: SignedOrder,
    owner: str,
    condition_id: str | None = None,
    order_type: OrderType | None = None,
    post_only: bool | None = None,
    defer_exec: bool = False,
) -> bytes:
    """Exact ``POST /order`` bytes; unset arguments come from the signed order."""
    return order_item_json(signed, owner, condition_id, order_type, post_only, defer_exec).encode()


def orders_body(orders: Sequence[SignedOrder], owner: str, defer_exec: bool = False) -> bytes:
    """Exact ``POST /orders`` bytes: a JSON array of 1 to 15 order objects."""
    if not 1 <= len(orders) <= MAX_BATCH:
        raise OrderError(f"a batch holds 1 to {MAX_BATCH} orders, got {len(orders)}")
    return ("[" + ",".join(order_item_json(o, owner, defer_exec=defer_exec) for o in orders) + "]").encode()


# --------------------------------------------------------------------------------------------
# Exchange side: parse a received order and verify its signature


class VerifiedOrder(msgspec.Struct, frozen=True):
    """A received order whose signature checked out.

    ``recovered`` is the EOA that signed: equal to ``signer`` for types 0-2; for type 3 it is the
    deposit wallet's owner, which the exchange compares with the account's address.
    """

    order: SignedOrder
    hash: str
    recovered: str


def _uint(obj: Mapping, key: str, *, required: bool = True, default: int = 0) -> int:
    value = obj.get(key)
    if value is None:
        if required:
            raise OrderError(f"invalid order: missing {key}")
        return default
    if isinstance(value, bool):
        raise OrderError(f"invalid order: {key} is not an integer")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and len(value) <= 78 and value.isdigit() and value.isascii():  # < 2**256
        number = int(value)
    else:
        raise OrderError(f"invalid order: {key} is not a non-negative integer")
    if not 0 <= number < 2**256:
        raise OrderError(f"invalid order: {key} out of range")
    return number


def _address(obj: Mapping, key: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise OrderError(f"invalid order: missing {key}")
    try:
        return to_checksum_address(value)
    except SignatureError:
        raise OrderError(f"invalid order: {key} is not an address") from None


def _hex32(obj: Mapping, key: str) -> str:
    value = obj.get(key, ZERO32)
    if not isinstance(value, str):
        raise OrderError(f"invalid order: {key} is not hex")
    try:
        return "0x" + bytes32(value).hex()
    except SignatureError:
        raise OrderError(f"invalid order: {key} is not 32-byte hex") from None


def parse_and_verify_order(
    obj: Mapping,
    chain_id: int,
    neg_risk: bool,
    order_type: OrderType | str = OrderType.GTC,
    post_only: bool = False,
) -> VerifiedOrder:
    """Recompute a received ``order`` object's hash and check its signature (venue.md 2.3-2.4).

    Accepts ``salt`` as an integer or decimal string and any key order. Raises ``OrderError``
    (malformed fields) or ``SignatureError`` (a signature that does not verify).
    """
    salt = _uint(obj, "salt")
    maker = _address(obj, "maker")
    signer = _address(obj, "signer")
    token = _uint(obj, "tokenId")
    maker_amount = _uint(obj, "makerAmount")
    taker_amount = _uint(obj, "takerAmount")
    side_raw = obj.get("side")
    if side_raw in ("BUY", 0, "0"):
        side = Side.BUY
    elif side_raw in ("SELL", 1, "1"):
        side = Side.SELL
    else:
        raise OrderError(f"invalid order: side {side_raw!r}")
    sig_type = _uint(obj, "signatureType")
    if sig_type > 3:
        raise OrderError(f"invalid order: signatureType {sig_type}")
    timestamp = _uint(obj, "timestamp")
    expiration = _uint(obj, "expiration", required=False)
    metadata = _hex32(obj, "metadata")
    builder = _hex32(obj, "builder")
    cond = obj.get("conditionId")
    if cond is not None:
        if not isinstance(cond, str):
            raise OrderError("invalid order: conditionId is not a string")
        cond = _check_condition_id(cond)
    sig_text = obj.get("signature")
    if not isinstance(sig_text, str) or sig_text[:2] not in ("0x", "0X"):
        raise SignatureError("invalid signature: missing or not 0x hex")
    try:
        signature = bytes.fromhex(sig_text[2:])
    except ValueError:
        raise SignatureError("invalid signature: not hex") from None

    domain = domain_separator(chain_id, neg_risk)
    struct_hash = keccak256(
        ORDER_TYPE_HASH
        + salt.to_bytes(32, "big")
        + address_bytes(maker).rjust(32, b"\0")
        + address_bytes(signer).rjust(32, b"\0")
        + token.to_bytes(32, "big")
        + maker_amount.to_bytes(32, "big")
        + taker_amount.to_bytes(32, "big")
        + _SIDE_WORD[side]
        + sig_type.to_bytes(32, "big")
        + timestamp.to_bytes(32, "big")
        + bytes.fromhex(metadata[2:])
        + bytes.fromhex(builder[2:])
    )
    digest = keccak256(b"\x19\x01" + domain + struct_hash)
    if sig_type == SignatureType.POLY_1271:
        if maker != signer:
            raise SignatureError("invalid signature: POLY_1271 needs signer == maker")
        inner, wrapped_domain, wrapped_struct = unwrap_poly_1271(signature)
        if wrapped_domain != domain or wrapped_struct != struct_hash:
            raise SignatureError("invalid signature: POLY_1271 wrapper does not match the order")
        recovered = recover_address(poly_1271_digest(chain_id, domain, struct_hash, maker), inner)
    else:
        if sig_type == SignatureType.EOA and maker != signer:
            raise OrderError("invalid order: EOA orders need maker == signer")
        recovered = recover_address(digest, signature)
        if recovered != signer:
            raise SignatureError("invalid signature: signer does not match")
    signed = SignedOrder(
        salt, maker, signer, str(token), maker_amount, taker_amount, side, sig_type, timestamp,
        metadata, builder, "0x" + digest.hex(), "0x" + signature.hex(), OrderType(order_type),
        expiration, cond, post_only,
    )
    return VerifiedOrder(signed, signed.hash, recovered)

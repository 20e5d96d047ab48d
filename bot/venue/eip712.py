"""EIP-712 hashing and secp256k1 signatures for the venue's orders and ClobAuth messages.

Invariant: ``order_digest`` is the venue's order hash (venue.md 2.3) and ``Wallet.sign_digest``
returns the 65-byte ``r || s || v`` signature (v = 27/28, RFC 6979 nonces, low s) that the venue
recovers. Type hashes and the four exchange domain separators are computed once at import.
"""

from __future__ import annotations

import secrets
import threading

import coincurve
from Crypto.Hash import keccak as _keccak

from bot.venue.enums import SignatureType


class SignatureError(ValueError):
    """A malformed key, address, signature or digest."""


def _keccak_portable(data: bytes) -> bytes:
    return _keccak.new(digest_bits=256, data=data).digest()


def _keccak_fast():
    """Keccak-256 from safe-pysha3's C extension: one call and no object setup beyond the hash,
    about a third of pycryptodome's cost per call on the signing hot path. Used only when it
    agrees with pycryptodome on probes at import; ``None`` otherwise (the caller keeps the
    portable function)."""
    try:
        from sha3 import keccak_256
    except ImportError:
        return None

    def keccak256(data: bytes) -> bytes:
        return keccak_256(data).digest()

    probes = (b"", b"abc", bytes(range(256)) * 3)
    if all(keccak256(p) == _keccak_portable(p) for p in probes):
        return keccak256
    return None


keccak256 = _keccak_fast() or _keccak_portable
keccak256.__doc__ = "Keccak-256 (the Ethereum variant, not SHA3-256)."


def _word(value: int) -> bytes:
    return value.to_bytes(32, "big")


# --------------------------------------------------------------------------------------------
# Addresses


def to_checksum_address(address: str | bytes) -> str:
    """EIP-55 spelling of a 20-byte address (``0x`` + 40 hex, mixed case)."""
    if isinstance(address, bytes):
        if len(address) != 20:
            raise SignatureError(f"address must be 20 bytes, got {len(address)}")
        low = address.hex()
    else:
        low = address[2:].lower() if address[:2] in ("0x", "0X") else address.lower()
        if len(low) != 40:
            raise SignatureError(f"not a 20-byte hex address: {address!r}")
        try:
            bytes.fromhex(low)
        except ValueError:
            raise SignatureError(f"not a 20-byte hex address: {address!r}") from None
    h = keccak256(low.encode()).hex()
    return "0x" + "".join(c.upper() if int(h[i], 16) >= 8 else c for i, c in enumerate(low))


def address_bytes(address: str) -> bytes:
    """The 20 bytes of a ``0x`` hex address (any letter case)."""
    try:
        raw = bytes.fromhex(address[2:] if address[:2] in ("0x", "0X") else address)
    except ValueError:
        raise SignatureError(f"not a 20-byte hex address: {address!r}") from None
    if len(raw) != 20:
        raise SignatureError(f"not a 20-byte hex address: {address!r}")
    return raw


def bytes32(value: str) -> bytes:
    """The 32 bytes of a ``0x`` + 64 hex value (metadata, builder, hashes)."""
    try:
        raw = bytes.fromhex(value[2:] if value[:2] in ("0x", "0X") else value)
    except ValueError:
        raise SignatureError(f"not a 32-byte hex value: {value!r}") from None
    if len(raw) != 32:
        raise SignatureError(f"not a 32-byte hex value: {value!r}")
    return raw


# --------------------------------------------------------------------------------------------
# Type hashes and domains

ORDER_TYPE = (
    "Order(uint256 salt,address maker,address signer,uint256 tokenId,uint256 makerAmount,"
    "uint256 takerAmount,uint8 side,uint8 signatureType,uint256 timestamp,bytes32 metadata,"
    "bytes32 builder)"
)
ORDER_TYPE_HASH = keccak256(ORDER_TYPE.encode())
DOMAIN_TYPE_HASH = keccak256(
    b"EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
)
EXCHANGE_NAME = "Polymarket CTF Exchange"
EXCHANGE_VERSION = "2"
EXCHANGE = "0xE111180000d2663C0091e4f400237545B87B996B"
NEG_RISK_EXCHANGE = "0xe2222d279d744050d28e00520010520000310F59"
CHAINS = (137, 80002)

CLOB_AUTH_DOMAIN_TYPE_HASH = keccak256(b"EIP712Domain(string name,string version,uint256 chainId)")
CLOB_AUTH_TYPE_HASH = keccak256(b"ClobAuth(address address,string timestamp,uint256 nonce,string message)")
CLOB_AUTH_MESSAGE = "This message attests that I control the given wallet"

TYPED_DATA_SIGN_TYPE = (
    "TypedDataSign(Order contents,string name,string version,uint256 chainId,"
    "address verifyingContract,bytes32 salt)" + ORDER_TYPE
)
TYPED_DATA_SIGN_TYPE_HASH = keccak256(TYPED_DATA_SIGN_TYPE.encode())
DEPOSIT_WALLET_NAME_HASH = keccak256(b"DepositWallet")
DEPOSIT_WALLET_VERSION_HASH = keccak256(b"1")
POLY_1271_SUFFIX = ORDER_TYPE.encode() + len(ORDER_TYPE).to_bytes(2, "big")
POLY_1271_LENGTH = 65 + 32 + 32 + len(POLY_1271_SUFFIX)


def exchange_address(neg_risk: bool) -> str:
    """The verifying contract: the neg-risk exchange when the market is neg-risk."""
    return NEG_RISK_EXCHANGE if neg_risk else EXCHANGE


def exchange_domain_separator(chain_id: int, verifying_contract: str) -> bytes:
    """EIP-712 domain separator of an exchange contract (name/version fixed by venue.md 2.2)."""
    return keccak256(
        DOMAIN_TYPE_HASH
        + keccak256(EXCHANGE_NAME.encode())
        + keccak256(EXCHANGE_VERSION.encode())
        + _word(chain_id)
        + address_bytes(verifying_contract).rjust(32, b"\0")
    )


_DOMAINS: dict[tuple[int, bool], bytes] = {
    (chain, neg): exchange_domain_separator(chain, exchange_address(neg))
    for chain in CHAINS
    for neg in (False, True)
}


def domain_separator(chain_id: int, neg_risk: bool) -> bytes:
    """The precomputed exchange domain separator for a chain and exchange."""
    sep = _DOMAINS.get((chain_id, neg_risk))
    if sep is None:
        sep = _DOMAINS[(chain_id, neg_risk)] = exchange_domain_separator(chain_id, exchange_address(neg_risk))
    return sep


def clob_auth_domain_separator(chain_id: int) -> bytes:
    """Domain of the L1 ClobAuth message (no verifying contract)."""
    return keccak256(
        CLOB_AUTH_DOMAIN_TYPE_HASH + keccak256(b"ClobAuthDomain") + keccak256(b"1") + _word(chain_id)
    )


def typed_data_digest(domain_sep: bytes, struct_hash: bytes) -> bytes:
    """keccak256(0x1901 || domainSeparator || structHash): the digest that is signed."""
    return keccak256(b"\x19\x01" + domain_sep + struct_hash)


# --------------------------------------------------------------------------------------------
# Order struct


def order_struct_hash(
    salt: int,
    maker: str,
    signer: str,
    token_id: int,
    maker_amount: int,
    taker_amount: int,
    side: int,
    signature_type: int,
    timestamp: int,
    metadata: bytes = b"\0" * 32,
    builder: bytes = b"\0" * 32,
) -> bytes:
    """structHash of the 11-field Order (venue.md 2.1); every field one 32-byte word."""
    return keccak256(
        ORDER_TYPE_HASH
        + _word(salt)
        + address_bytes(maker).rjust(32, b"\0")
        + address_bytes(signer).rjust(32, b"\0")
        + _word(token_id)
        + _word(maker_amount)
        + _word(taker_amount)
        + _word(side)
        + _word(signature_type)
        + _word(timestamp)
        + metadata
        + builder
    )


def clob_auth_struct_hash(address: str, timestamp: str, nonce: int) -> bytes:
    """structHash of the ClobAuth message (venue.md 5.2)."""
    return keccak256(
        CLOB_AUTH_TYPE_HASH
        + address_bytes(address).rjust(32, b"\0")
        + keccak256(timestamp.encode())
        + _word(nonce)
        + keccak256(CLOB_AUTH_MESSAGE.encode())
    )


def clob_auth_digest(chain_id: int, address: str, timestamp: str, nonce: int = 0) -> bytes:
    return typed_data_digest(clob_auth_domain_separator(chain_id), clob_auth_struct_hash(address, timestamp, nonce))


# --------------------------------------------------------------------------------------------
# Keys and signatures


class PrivateKey:
    """A secp256k1 private key whose repr and str never show the key."""

    __slots__ = ("_key",)

    def __init__(self, secret: str | bytes) -> None:
        if isinstance(secret, str):
            text = secret[2:] if secret[:2] in ("0x", "0X") else secret
            try:
                secret = bytes.fromhex(text)
            except ValueError:
                raise SignatureError("private key is not hex") from None
        if len(secret) != 32:
            raise SignatureError("private key must be 32 bytes")
        try:
            self._key = coincurve.PrivateKey(secret)
        except Exception:
            raise SignatureError("private key is out of range") from None

    def __repr__(self) -> str:
        return "PrivateKey(<redacted>)"

    __str__ = __repr__

    def __reduce__(self):  # never pickle a key by accident
        raise TypeError("a private key cannot be pickled")


def new_private_key() -> bytes:
    """32 bytes from the CSPRNG that are a valid secp256k1 private key (not zero, below the order)."""
    while True:
        raw = secrets.token_bytes(32)
        try:
            coincurve.PrivateKey(raw)
        except ValueError:  # zero or not below the curve order: vanishingly rare
            continue
        return raw


def _address_of(public_key: coincurve.PublicKey) -> str:
    return to_checksum_address(keccak256(public_key.format(compressed=False)[1:])[12:])


def _sign_portable(key: coincurve.PrivateKey, digest: bytes) -> bytes:
    sig = key.sign_recoverable(digest, hasher=None)
    return sig[:64] + bytes((sig[64] + 27,))


_V_BYTE = (b"\x1b", b"\x1c")  # recovery id 0/1 as v = 27/28


def _sign_direct(key: coincurve.PrivateKey):
    """``digest -> r || s || v`` straight on coincurve's libsecp256k1 binding, with the output
    buffers allocated once per thread (the same two library calls as
    ``PrivateKey.sign_recoverable`` without its per-call setup). Returns ``None`` when the
    binding does not look as expected or disagrees with the public API; the caller then keeps
    ``_sign_portable``."""
    try:
        from coincurve._libsecp256k1 import ffi, lib

        ctx, secret = key.context.ctx, key.secret
        sign, serialize = lib.secp256k1_ecdsa_sign_recoverable, lib.secp256k1_ecdsa_recoverable_signature_serialize_compact
        null, buffer, new = ffi.NULL, ffi.buffer, ffi.new
    except (ImportError, AttributeError):
        return None
    local = threading.local()

    def sign_digest(digest: bytes) -> bytes:
        try:
            sig, out, recid = local.bufs
        except AttributeError:
            sig, out, recid = local.bufs = (
                new("secp256k1_ecdsa_recoverable_signature *"), new("unsigned char[64]"), new("int *"),
            )
        if not sign(ctx, sig, digest, secret, null, null):
            raise SignatureError("signing failed: the nonce function failed or the key is invalid")
        serialize(ctx, out, recid, sig)
        return buffer(out)[:] + _V_BYTE[recid[0]]

    probes = (bytes(32), bytes(range(32)), bytes(range(100, 132)))
    try:
        if all(sign_digest(p) == _sign_portable(key, p) for p in probes):
            return sign_digest
    except Exception:
        pass
    return None


class Wallet:
    """An EOA: signs 32-byte digests with its key; ``address`` is its checksummed address."""

    __slots__ = ("_key", "address", "_sign")

    def __init__(self, private_key: PrivateKey | str | bytes) -> None:
        key = private_key if isinstance(private_key, PrivateKey) else PrivateKey(private_key)
        self._key = key._key
        self.address = _address_of(self._key.public_key)
        self._sign = _sign_direct(self._key) or (lambda digest, _k=self._key: _sign_portable(_k, digest))

    def __repr__(self) -> str:
        return f"Wallet({self.address})"

    def sign_digest(self, digest: bytes) -> bytes:
        """65 bytes ``r || s || v`` with v = 27 or 28."""
        if len(digest) != 32:
            raise SignatureError(f"digest must be 32 bytes, got {len(digest)}")
        return self._sign(digest)


def recover_address(digest: bytes, signature: bytes) -> str:
    """The checksummed address that produced a 65-byte ``r || s || v`` signature of ``digest``."""
    if len(signature) != 65:
        raise SignatureError(f"signature must be 65 bytes, got {len(signature)}")
    if len(digest) != 32:
        raise SignatureError(f"digest must be 32 bytes, got {len(digest)}")
    v = signature[64]
    if v >= 27:
        v -= 27
    if v not in (0, 1):
        raise SignatureError(f"invalid signature v byte: {signature[64]}")
    try:
        public = coincurve.PublicKey.from_signature_and_message(signature[:64] + bytes((v,)), digest, hasher=None)
    except Exception:
        raise SignatureError("signature does not recover to a public key") from None
    return _address_of(public)


# --------------------------------------------------------------------------------------------
# POLY_1271 (deposit wallet) wrapper, venue.md 2.4


def poly_1271_digest(chain_id: int, domain_sep: bytes, struct_hash: bytes, wallet: str) -> bytes:
    """The digest the wallet owner signs for a type-3 order (ERC-7739 TypedDataSign)."""
    inner = keccak256(
        TYPED_DATA_SIGN_TYPE_HASH
        + struct_hash
        + DEPOSIT_WALLET_NAME_HASH
        + DEPOSIT_WALLET_VERSION_HASH
        + _word(chain_id)
        + address_bytes(wallet).rjust(32, b"\0")
        + b"\0" * 32
    )
    return typed_data_digest(domain_sep, inner)


def wrap_poly_1271(signature: bytes, domain_sep: bytes, struct_hash: bytes) -> bytes:
    """sig(65) || domainSeparator || structHash || Order type string || uint16 length: 317 bytes."""
    return signature + domain_sep + struct_hash + POLY_1271_SUFFIX


def unwrap_poly_1271(wrapped: bytes) -> tuple[bytes, bytes, bytes]:
    """Split a type-3 signature into (65-byte signature, domain separator, struct hash)."""
    if len(wrapped) != POLY_1271_LENGTH:
        raise SignatureError(f"POLY_1271 signature must be {POLY_1271_LENGTH} bytes, got {len(wrapped)}")
    if wrapped[129:] != POLY_1271_SUFFIX:
        raise SignatureError("POLY_1271 signature does not carry the Order type string")
    return wrapped[:65], wrapped[65:97], wrapped[97:129]


def sign_order_digest(
    wallet: Wallet,
    signature_type: int,
    chain_id: int,
    domain_sep: bytes,
    struct_hash: bytes,
    order_hash: bytes,
    maker: str,
) -> bytes:
    """The order's signature bytes: plain for types 0-2, the wrapped form for type 3."""
    if signature_type == SignatureType.POLY_1271:
        inner = wallet.sign_digest(poly_1271_digest(chain_id, domain_sep, struct_hash, maker))
        return wrap_poly_1271(inner, domain_sep, struct_hash)
    return wallet.sign_digest(order_hash)

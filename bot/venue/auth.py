"""L1 (ClobAuth signature) and L2 (HMAC) authentication headers, and their server-side check.

Invariant: the L2 signature is base64url(HMAC-SHA256(secret, timestamp + METHOD + path + body))
over the exact body bytes sent (no character substitution), with ``=`` padding; the path never
carries the query string. Secrets live only inside :class:`Secret`, whose repr and str are
redacted, so credentials can be logged or printed without leaking.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Callable, Mapping
from typing import Literal

import msgspec

from bot.venue.eip712 import SignatureError, Wallet, clob_auth_digest, recover_address, to_checksum_address

ADDRESS = "SERVICE_ADDRESS"
API_KEY = "SERVICE_API_KEY"
PASSPHRASE = "SERVICE_PASSPHRASE"
TIMESTAMP = "SERVICE_TIMESTAMP"
SIGNATURE = "SERVICE_SIGNATURE"
NONCE = "SERVICE_NONCE"
#: The live venue spells the same headers ``POLY_ADDRESS``, ``POLY_SIGNATURE``...; a server reads
#: either spelling (``header_value``), this client sends the ``SERVICE_`` one.
LIVE_PREFIX = "POLY_"
JSON_CONTENT = {"Content-Type": "application/json"}


class AuthError(Exception):
    """Authentication refused; ``str()`` is the venue's ``unauthorized: <detail>`` text."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"unauthorized: {detail}")
        self.detail = detail


class Secret:
    """A secret string (API secret, passphrase) that never shows in repr, str or logs."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError("a secret is a string")
        self._value = value

    def reveal(self) -> str:
        """The secret itself; call only where it is sent or used as a key."""
        return self._value

    def __repr__(self) -> str:
        return "Secret(<redacted>)"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash(("Secret", hashlib.sha256(self._value.encode()).digest()))

    def __reduce__(self):
        raise TypeError("a secret cannot be pickled")


def decode_secret(secret: str) -> bytes:
    """HMAC key bytes: base64url-decode after padding with ``=`` to a multiple of 4."""
    text = secret.strip().replace("-", "+").replace("_", "/")
    text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("API secret is not base64url") from None


class Credentials:
    """L2 API credentials; the secret and passphrase are redacted everywhere they could show."""

    __slots__ = ("api_key", "secret", "passphrase", "_mac")

    def __init__(self, api_key: str, secret: str | Secret, passphrase: str | Secret) -> None:
        self.api_key = api_key
        self.secret = secret if isinstance(secret, Secret) else Secret(secret)
        self.passphrase = passphrase if isinstance(passphrase, Secret) else Secret(passphrase)
        self._mac = hmac.new(decode_secret(self.secret.reveal()), digestmod=hashlib.sha256)

    @classmethod
    def from_response(cls, obj: Mapping) -> "Credentials":
        """From the ``{"apiKey","secret","passphrase"}`` answer of the key routes."""
        try:
            return cls(obj["apiKey"], obj["secret"], obj["passphrase"])
        except KeyError as exc:
            raise ValueError(f"credentials response lacks {exc.args[0]}") from None

    def __repr__(self) -> str:
        return f"Credentials(api_key={self.api_key!r}, secret=<redacted>, passphrase=<redacted>)"

    __str__ = __repr__

    def __reduce__(self):
        raise TypeError("credentials cannot be pickled")

    def sign(self, message: bytes) -> str:
        """base64url(HMAC-SHA256(key, message)) with padding."""
        mac = self._mac.copy()
        mac.update(message)
        return base64.urlsafe_b64encode(mac.digest()).decode()


def hmac_message(timestamp: str, method: str, path: str, body: bytes | str | None) -> bytes:
    """timestamp + METHOD + path (no query) + body; ``None`` and empty bodies sign alike."""
    head = f"{timestamp}{method.upper()}{path}".encode()
    if not body:
        return head
    return head + (body.encode() if isinstance(body, str) else body)


def hmac_signature(secret: str | Secret, timestamp: str, method: str, path: str, body: bytes | str | None) -> str:
    """The L2 signature for one request (accepts padded or unpadded secrets)."""
    key = decode_secret(secret.reveal() if isinstance(secret, Secret) else secret)
    mac = hmac.new(key, hmac_message(timestamp, method, path, body), hashlib.sha256)
    return base64.urlsafe_b64encode(mac.digest()).decode()


class AuthConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How the client stamps L2 requests and how long the exchange accepts a timestamp."""

    timestamp_unit: Literal["ms", "s"] = "ms"
    max_age_s: int = 60


def auth_timestamp(unit: Literal["ms", "s"] = "ms", now_s: float | None = None) -> str:
    """The ``SERVICE_TIMESTAMP`` value: epoch milliseconds (default) or seconds, as a string."""
    now = time.time() if now_s is None else now_s
    return str(int(now * 1000)) if unit == "ms" else str(int(now))


def l2_headers(
    creds: Credentials, address: str, method: str, path: str, body: bytes | str | None, timestamp: str
) -> dict[str, str]:
    """L2 headers of one request; ``address`` is the signer EOA, ``path`` has no query string."""
    headers = {
        ADDRESS: address,
        SIGNATURE: creds.sign(hmac_message(timestamp, method, path, body)),
        TIMESTAMP: timestamp,
        API_KEY: creds.api_key,
        PASSPHRASE: creds.passphrase.reveal(),
    }
    headers["Content-Type"] = "application/json"
    return headers


def l1_signature(wallet: Wallet, chain_id: int, timestamp_s: int | str, nonce: int = 0) -> str:
    """0x-hex ClobAuth signature (venue.md 5.2) by the wallet, for key creation/derivation."""
    return "0x" + wallet.sign_digest(clob_auth_digest(chain_id, wallet.address, str(timestamp_s), nonce)).hex()


def l1_headers(wallet: Wallet, chain_id: int, timestamp_s: int | str, nonce: int = 0) -> dict[str, str]:
    """L1 headers: SERVICE_ADDRESS, SERVICE_SIGNATURE, SERVICE_TIMESTAMP (s), SERVICE_NONCE."""
    return {
        ADDRESS: wallet.address,
        SIGNATURE: l1_signature(wallet, chain_id, timestamp_s, nonce),
        TIMESTAMP: str(timestamp_s),
        NONCE: str(nonce),
    }


# --------------------------------------------------------------------------------------------
# Exchange side


class L2Identity(msgspec.Struct, frozen=True):
    """Who a verified L2 request comes from: the API key and the address it claims."""

    api_key: str
    address: str


def _one_header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:
        value = headers.get(name.lower())
    if value is None:
        for key, val in headers.items():
            if key.lower() == name.lower():
                return val
    return value


def header_value(headers: Mapping[str, str], name: str) -> str | None:
    """The auth header ``name`` (``SERVICE_...``) in either spelling, any case; ``None`` if absent."""
    value = _one_header(headers, name)
    if value is None and name.startswith("SERVICE_"):
        value = _one_header(headers, LIVE_PREFIX + name[len("SERVICE_"):])
    return value


def _header(headers: Mapping[str, str], name: str) -> str:
    value = header_value(headers, name)
    if value is None:
        raise AuthError(f"missing header {name}")
    return value


_MAX_STAMP_DIGITS = 16  # milliseconds until the year 2286: anything longer is no timestamp


def timestamp_seconds(text: str) -> float:
    """A ``SERVICE_TIMESTAMP`` in seconds: a value >= 10^12 is milliseconds, else seconds."""
    if not text.isdigit() or not text.isascii() or len(text) > _MAX_STAMP_DIGITS:
        raise AuthError("invalid timestamp")
    value = int(text)
    return value / 1000 if value >= 10**12 else float(value)


def verify_l2(
    headers: Mapping[str, str],
    method: str,
    path: str,
    body: bytes | None,
    lookup: Callable[[str], Credentials | None],
    now_s: float,
    max_age_s: float = 60,
) -> L2Identity:
    """Check an L2 request over the raw body bytes received; raises :class:`AuthError`.

    The timestamp must lie within ``max_age_s`` of ``now_s`` (either direction); the same headers
    may be reused within that window (paginated listings), so no replay check is made here.
    """
    api_key = _header(headers, API_KEY)
    creds = lookup(api_key)
    if creds is None:
        raise AuthError("unknown api key")
    if not hmac.compare_digest(_header(headers, PASSPHRASE).encode(), creds.passphrase.reveal().encode()):
        raise AuthError("invalid passphrase")
    stamp = _header(headers, TIMESTAMP)
    if abs(timestamp_seconds(stamp) - now_s) > max_age_s:
        raise AuthError("timestamp outside the allowed window")
    expected = creds.sign(hmac_message(stamp, method, path, body))
    if not hmac.compare_digest(_header(headers, SIGNATURE).encode(), expected.encode()):
        raise AuthError("invalid signature")
    return L2Identity(api_key, _header(headers, ADDRESS))


def verify_l1(
    headers: Mapping[str, str], chain_id: int, now_s: float, max_age_s: float = 60
) -> tuple[str, int]:
    """Check L1 headers; returns (checksummed address, nonce) or raises :class:`AuthError`."""
    stamp = _header(headers, TIMESTAMP)
    if abs(timestamp_seconds(stamp) - now_s) > max_age_s:
        raise AuthError("timestamp outside the allowed window")
    nonce_text = header_value(headers, NONCE) or "0"
    if not (nonce_text.isdigit() and nonce_text.isascii() and len(nonce_text) <= 78 and int(nonce_text) < 2**256):
        raise AuthError("invalid nonce")  # a uint256 in the signed ClobAuth
    try:
        address = to_checksum_address(_header(headers, ADDRESS))
        sig_text = _header(headers, SIGNATURE)
        signature = bytes.fromhex(sig_text[2:] if sig_text[:2] == "0x" else sig_text)
        recovered = recover_address(clob_auth_digest(chain_id, address, stamp, int(nonce_text)), signature)
    except (SignatureError, ValueError):
        raise AuthError("invalid L1 signature") from None
    if recovered != address:
        raise AuthError("invalid L1 signature")
    return address, int(nonce_text)

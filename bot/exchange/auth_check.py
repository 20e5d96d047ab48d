"""Request authentication at the exchange edge (venue.md 5.1, 5.2) and the IP allow-list.

Invariant: a trading route runs only after ``require_l2`` verified the HMAC over the raw body
bytes received, the timestamp freshness (ms if >= 10^12 else s) and that ``SERVICE_ADDRESS`` is
the address the API key was issued to. Every auth header is read in the spec's spelling
(``SERVICE_...``) or the live venue's (``POLY_...``), whatever the exchange's ``spelling``.
Reusing the same headers within the window is allowed (paginated listings), so there is no replay
check. A ``SERVICE_TIMESTAMP`` or ``SERVICE_NONCE`` that
is not a plain decimal in range is malformed input (400 ``invalid_header: ...``, checked before any
arithmetic on it); every other refusal is HTTP 401 ``{"error": "unauthorized: <detail>"}``;
secrets never appear in a message.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

import msgspec
from starlette.requests import Request

from bot.exchange.keys import KeyStore
from bot.exchange.query import MAX_UNIX_S, parse_int
from bot.exchange.replies import Reply, bad_request, error, unauthorized
from bot.venue.auth import NONCE, TIMESTAMP, AuthError, Credentials, header_value, verify_l1, verify_l2

MAX_NONCE_DIGITS = 78  # a ClobAuth nonce is a uint256 (< 2^256, 78 decimal digits)


def check_auth_numbers(headers) -> None:
    """Refuse (400) a ``SERVICE_TIMESTAMP`` that is not a decimal of at most epoch-ms size, or a
    ``SERVICE_NONCE`` that is not a decimal uint256; absent headers are left to the auth check."""
    stamp = header_value(headers, TIMESTAMP)
    if stamp is not None:
        try:
            parse_int(stamp, 0, MAX_UNIX_S * 1000)
        except ValueError:
            raise bad_request(f"invalid_header: {TIMESTAMP} must be unix seconds or milliseconds") from None
    nonce = header_value(headers, NONCE)
    if nonce is not None and nonce != "" and not (
        nonce.isascii() and nonce.isdigit() and len(nonce) <= MAX_NONCE_DIGITS and int(nonce) < 2**256
    ):
        raise bad_request(f"invalid_header: {NONCE} must be an integer in [0, 2^256)")


class Identity(msgspec.Struct, frozen=True):
    """A verified L2 caller: its API key and the (lowercase) address the key belongs to."""

    api_key: str
    address: str


class Authenticator:
    def __init__(self, keys: KeyStore, chain_id: int, window_s: float, clock: Callable[[], float]) -> None:
        self.keys = keys
        self.chain_id = chain_id
        self.window_s = window_s
        self.clock = clock  # wall clock, unix seconds

    def _lookup(self, api_key: str) -> Credentials | None:
        rec = self.keys.get(api_key)
        if rec is None:
            return None
        return Credentials(rec.creds.apiKey, rec.creds.secret, rec.creds.passphrase)

    def require_l2(self, request: Request, body: bytes) -> Identity:
        check_auth_numbers(request.headers)
        full = request.url.path
        root = request.scope.get("root_path", "")
        paths = [full[len(root):] or "/", full] if root and full.startswith(root) else [full]
        ident = None
        for i, path in enumerate(paths):
            try:
                ident = verify_l2(
                    request.headers, request.method.upper(), path, body or None,
                    self._lookup, self.clock(), self.window_s,
                )
                break
            except AuthError as exc:
                if i == len(paths) - 1:
                    raise unauthorized(exc.detail) from None
            except Exception as exc:  # malformed secrets and the like
                raise unauthorized(f"invalid credentials ({type(exc).__name__})") from None
        rec = self.keys.get(ident.api_key)
        if rec is None or rec.address != ident.address.lower():
            raise unauthorized("address does not match the api key")
        return Identity(ident.api_key, rec.address)

    def require_l1(self, request: Request) -> tuple[str, int]:
        check_auth_numbers(request.headers)
        try:
            return verify_l1(request.headers, self.chain_id, self.clock(), self.window_s)
        except AuthError as exc:
            raise unauthorized(str(exc.detail if hasattr(exc, "detail") else exc)) from None


class AllowList:
    """Which client IPs may read account data (/positions, /holders); default: loopback only."""

    def __init__(self, allowed: tuple[str, ...]) -> None:
        self.any = "*" in allowed or "0.0.0.0/0" in allowed
        self.names = {a for a in allowed if not _is_net(a)}
        self.nets = [ipaddress.ip_network(a, strict=False) for a in allowed if _is_net(a)]

    def check(self, request: Request) -> None:
        if self.any:
            return
        host = request.client.host if request.client else ""
        if host in self.names:
            return
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            raise self.refusal() from None
        if not any(ip in n for n in self.nets):
            raise self.refusal()

    @staticmethod
    def refusal() -> Reply:
        return error(403, "unauthorized: ip_not_allowlisted")


def _is_net(text: str) -> bool:
    try:
        ipaddress.ip_network(text, strict=False)
        return True
    except ValueError:
        return False

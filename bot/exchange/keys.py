"""API credentials issued by the local exchange.

Invariant: credentials come from the operating system's CSPRNG (``secrets``) and are stored per
(address, nonce) when first issued, so ``GET /auth/derive-api-key`` returns the same
``{apiKey, secret, passphrase}`` as the earlier ``POST /auth/api-key`` for that signer and nonce
while the exchange runs, and nothing public (the seed, an address) lets anyone compute them.
Only ``deterministic_credentials`` computes them from a seed, for a demo account that asked for
it. Each API key belongs to exactly one address (compared lowercase). Secrets are never logged.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import uuid

import msgspec


class Credentials(msgspec.Struct, frozen=True):
    apiKey: str
    secret: str
    passphrase: str

    def __repr__(self) -> str:
        return f"Credentials(apiKey={self.apiKey!r}, secret=<redacted>, passphrase=<redacted>)"


class KeyRecord(msgspec.Struct, frozen=True):
    creds: Credentials
    address: str  # lowercase
    nonce: int


def random_credentials() -> Credentials:
    """Fresh credentials from the CSPRNG: a UUID4 key, a 44-char padded base64url secret, a hex passphrase."""
    return Credentials(
        apiKey=str(uuid.UUID(bytes=secrets.token_bytes(16), version=4)),
        secret=base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
        passphrase=secrets.token_hex(32),
    )


def deterministic_credentials(seed: int, address: str, nonce: int) -> Credentials:
    """Credentials computed from (seed, address, nonce): reproducible, hence guessable by anyone who
    knows the seed; only for a demo account whose configuration asks for them."""
    root = hashlib.sha256(f"pmbot-exchange|{seed}|{address.lower()}|{nonce}".encode()).digest()
    return Credentials(
        apiKey=str(uuid.UUID(bytes=hashlib.sha256(root + b"key").digest()[:16], version=4)),
        secret=base64.urlsafe_b64encode(hashlib.sha256(root + b"secret").digest()).decode(),
        passphrase=hashlib.sha256(root + b"passphrase").hexdigest(),
    )


class KeyStore:
    def __init__(self) -> None:
        self._by_key: dict[str, KeyRecord] = {}
        self._issued: dict[tuple[str, int], str] = {}  # (lowercase address, nonce) -> api key

    def issue(self, address: str, nonce: int) -> Credentials:
        """The credentials of ``address`` and ``nonce``: those issued before, else fresh random ones."""
        addr = address.lower()
        known = self._issued.get((addr, nonce))
        if known is not None:
            return self._by_key[known].creds
        creds = random_credentials()
        self.register(creds, addr, nonce)
        return creds

    def register(self, creds: Credentials, address: str, nonce: int = -1) -> None:
        """Install given credentials for ``address`` (e.g. the test vectors' keys, nonce -1: never
        returned by an L1 derivation; or a demo's reproducible ones at its nonce)."""
        addr = address.lower()
        self._by_key[creds.apiKey] = KeyRecord(creds, addr, nonce)
        if nonce >= 0:
            self._issued[(addr, nonce)] = creds.apiKey

    def __len__(self) -> int:
        return len(self._by_key)

    def get(self, api_key: str) -> KeyRecord | None:
        return self._by_key.get(api_key)

    def keys_of(self, address: str) -> list[str]:
        addr = address.lower()
        return [k for k, r in self._by_key.items() if r.address == addr]

    def revoke(self, api_key: str) -> bool:
        """Forget ``api_key``; a later create or derive for its (address, nonce) issues new credentials."""
        rec = self._by_key.pop(api_key, None)
        if rec is None:
            return False
        if self._issued.get((rec.address, rec.nonce)) == api_key:
            del self._issued[(rec.address, rec.nonce)]
        return True

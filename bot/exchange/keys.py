"""API credentials issued by the local exchange.

Invariant: credentials derive deterministically from (server seed, address, nonce), so
``GET /auth/derive-api-key`` returns the same ``{apiKey, secret, passphrase}`` as the earlier
``POST /auth/api-key`` for that address and nonce, across restarts with the same seed. Each API
key belongs to exactly one address (compared lowercase). Secrets are never logged.
"""

from __future__ import annotations

import base64
import hashlib
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


class KeyStore:
    def __init__(self, seed: int) -> None:
        self._seed = seed
        self._by_key: dict[str, KeyRecord] = {}

    def derive(self, address: str, nonce: int) -> Credentials:
        """The credentials for ``address`` and ``nonce`` (registered on first use)."""
        addr = address.lower()
        root = hashlib.sha256(f"pmbot-exchange|{self._seed}|{addr}|{nonce}".encode()).digest()
        creds = Credentials(
            apiKey=str(uuid.UUID(bytes=hashlib.sha256(root + b"key").digest()[:16], version=4)),
            secret=base64.urlsafe_b64encode(hashlib.sha256(root + b"secret").digest()).decode(),
            passphrase=hashlib.sha256(root + b"passphrase").hexdigest(),
        )
        self._by_key.setdefault(creds.apiKey, KeyRecord(creds, addr, nonce))
        return creds

    def register(self, creds: Credentials, address: str) -> None:
        """Install fixed credentials (e.g. the test vectors' keys) for ``address``."""
        self._by_key[creds.apiKey] = KeyRecord(creds, address.lower(), -1)

    def __len__(self) -> int:
        return len(self._by_key)

    def get(self, api_key: str) -> KeyRecord | None:
        return self._by_key.get(api_key)

    def keys_of(self, address: str) -> list[str]:
        addr = address.lower()
        return [k for k, r in self._by_key.items() if r.address == addr]

    def revoke(self, api_key: str) -> bool:
        return self._by_key.pop(api_key, None) is not None

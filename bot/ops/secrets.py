"""The private key and API credentials: from environment variables, an owner-only TOML file, or
an encrypted keystore for the key (``bot.ops.keystore``).

Invariant: secret values exist only inside redacted wrappers (:class:`~bot.venue.auth.Secret`,
:class:`~bot.venue.auth.Credentials`) and are registered with the log redactor the moment they
are read; no error message ever contains one. A command that needs a missing secret fails with
one line naming the environment variable (or file key) to set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import msgspec

from bot.ops.config import ConfigError, SecretsConfig, read_owner_only
from bot.ops.logging import register_secret
from bot.venue.auth import Credentials, Secret
from bot.venue.eip712 import SignatureError, Wallet

ENV_PRIVATE_KEY = "BOT_PRIVATE_KEY"
ENV_API_KEY = "BOT_API_KEY"
ENV_API_SECRET = "BOT_API_SECRET"
ENV_API_PASSPHRASE = "BOT_API_PASSPHRASE"

# secrets-file key -> environment variable of the same secret
FILE_KEYS = {
    "private_key": ENV_PRIVATE_KEY,
    "api_key": ENV_API_KEY,
    "api_secret": ENV_API_SECRET,
    "api_passphrase": ENV_API_PASSPHRASE,
}


class MissingSecret(ConfigError):
    """A secret a command needs is not configured; the message says where to put it."""


def _register(value: str) -> None:
    register_secret(value)
    if value[:2] in ("0x", "0X"):
        register_secret(value[2:])


class BotSecrets:
    """What was found: an optional private key and optional API credentials, all redacted.

    ``wallet()`` and ``credentials()`` raise :class:`MissingSecret` naming what to set.
    """

    __slots__ = ("private_key", "api_key", "api_secret", "api_passphrase", "origin")

    def __init__(
        self,
        private_key: Secret | None = None,
        api_key: str | None = None,
        api_secret: Secret | None = None,
        api_passphrase: Secret | None = None,
        origin: str = "env",
    ) -> None:
        self.private_key = private_key
        self.api_key = api_key
        self.api_secret = api_secret
        self.api_passphrase = api_passphrase
        self.origin = origin  # "env" or the secrets file path

    def __repr__(self) -> str:
        return f"BotSecrets(origin={self.origin!r}, {self.describe()})"

    def describe(self) -> str:
        """Which secrets are present, e.g. ``private key: set, API credentials: missing``."""
        key = "set" if self.private_key else "missing"
        creds = "set" if self.has_credentials else ("partial" if self._any_creds else "missing")
        return f"private key: {key}, API credentials: {creds}"

    @property
    def has_credentials(self) -> bool:
        return bool(self.api_key and self.api_secret and self.api_passphrase)

    @property
    def _any_creds(self) -> bool:
        return bool(self.api_key or self.api_secret or self.api_passphrase)

    def _missing(self, file_key: str) -> MissingSecret:
        env = FILE_KEYS[file_key]
        if self.origin == "env":
            return MissingSecret(f"missing secret: set the environment variable {env}")
        return MissingSecret(f"missing secret: set `{file_key}` in {self.origin} (the {env} secret)")

    def wallet(self) -> Wallet:
        """The signing wallet; a malformed key is reported without showing it."""
        if self.private_key is None:
            raise self._missing("private_key")
        try:
            return Wallet(self.private_key.reveal())
        except SignatureError as exc:
            where = ENV_PRIVATE_KEY if self.origin == "env" else f"private_key in {self.origin}"
            raise ConfigError(f"{where}: {exc} (expected 0x + 64 hex)") from None

    def credentials(self) -> Credentials:
        """The L2 API credentials."""
        for file_key, value in (
            ("api_key", self.api_key),
            ("api_secret", self.api_secret),
            ("api_passphrase", self.api_passphrase),
        ):
            if not value:
                raise self._missing(file_key)
        try:
            return Credentials(self.api_key, self.api_secret, self.api_passphrase)  # type: ignore[arg-type]
        except ValueError as exc:
            where = ENV_API_SECRET if self.origin == "env" else f"api_secret in {self.origin}"
            raise ConfigError(f"{where}: {exc}") from None


def _build(values: Mapping[str, str], origin: str) -> BotSecrets:
    clean = {k: (values.get(k) or "").strip() for k in FILE_KEYS}
    for key in ("private_key", "api_secret", "api_passphrase"):
        if clean[key]:
            _register(clean[key])
    return BotSecrets(
        private_key=Secret(clean["private_key"]) if clean["private_key"] else None,
        api_key=clean["api_key"] or None,
        api_secret=Secret(clean["api_secret"]) if clean["api_secret"] else None,
        api_passphrase=Secret(clean["api_passphrase"]) if clean["api_passphrase"] else None,
        origin=origin,
    )


def secrets_from_env(environ: Mapping[str, str] | None = None) -> BotSecrets:
    """Secrets from ``BOT_PRIVATE_KEY``, ``BOT_API_KEY``, ``BOT_API_SECRET``, ``BOT_API_PASSPHRASE``."""
    env = os.environ if environ is None else environ
    return _build({k: env.get(var, "") for k, var in FILE_KEYS.items()}, "env")


def secrets_from_file(path: str | os.PathLike[str]) -> BotSecrets:
    """Secrets from an owner-only TOML file (mode 600); unknown keys are refused by name only."""
    raw = read_owner_only(path)
    try:
        table = msgspec.toml.decode(raw)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        # the parser's message may quote the offending line, which may hold a secret
        raise ConfigError(f"{path}: secrets file is not valid TOML") from None
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: secrets file must be a TOML table")
    unknown = sorted(k for k in table if k not in FILE_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key `{unknown[0]}` in secrets file (allowed: {', '.join(FILE_KEYS)})")
    bad = sorted(k for k, v in table.items() if not isinstance(v, str))
    if bad:
        raise ConfigError(f"{path}: `{bad[0]}` in secrets file must be a string")
    return _build(table, str(Path(path)))


def secrets_from_keystore(path: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> BotSecrets:
    """The private key from an encrypted keystore (passphrase from ``BOT_KEYSTORE_PASSPHRASE`` or
    the terminal); the API credentials from the environment."""
    from bot.ops.keystore import passphrase, read_keystore, unlock

    found = secrets_from_env(environ)
    read_keystore(path)  # a missing or unreadable keystore is said before any passphrase is asked for
    key = unlock(path, passphrase(environ))
    found.private_key = Secret(key)  # the origin stays "env": a missing credential is set there
    return found


def load_secrets(config: SecretsConfig, environ: Mapping[str, str] | None = None) -> BotSecrets:
    """Secrets from the source the config names (``env``, ``file`` or ``keystore``)."""
    if config.source == "file":
        return secrets_from_file(config.file)
    if config.source == "keystore":
        return secrets_from_keystore(config.file, environ)
    return secrets_from_env(environ)

"""The private key in an encrypted Ethereum keystore file (version 3 JSON, scrypt or pbkdf2).

Invariant: the key leaves the file only through :func:`unlock`, which registers it with the log
redactor before returning it; no error names the key or the passphrase. A keystore's work
factors are bounded (:data:`MAX_SCRYPT_N`, :data:`MAX_PBKDF2_ROUNDS`), so a hostile file cannot
make unlocking take unbounded time or memory. Files are written owner-only (mode 600) and never
over an existing file.
"""

from __future__ import annotations

import getpass
import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

from bot.ops.config import ConfigError, read_owner_only
from bot.ops.logging import register_secret

ENV_KEYSTORE_PASSPHRASE = "BOT_KEYSTORE_PASSPHRASE"
KDFS = ("scrypt", "pbkdf2")
# The standard work factors (those geth and eth-keyfile write): about a second to unlock.
STANDARD_WORK = {"scrypt": 262_144, "pbkdf2": 1_000_000}
MAX_SCRYPT_N = 1 << 20  # 1 GiB of memory at r = 8; four times the standard
MAX_SCRYPT_R, MAX_SCRYPT_P = 32, 16
MAX_PBKDF2_ROUNDS = 10_000_000
MAX_KEYSTORE_BYTES = 64 * 1024

Kdf = Literal["scrypt", "pbkdf2"]


class KeystoreError(ConfigError):
    """A keystore that cannot be read, is malformed, or does not open with the passphrase."""


def _bad(path: Path, why: str) -> KeystoreError:
    return KeystoreError(f"{path}: {why}")


def check_work(doc: Mapping, path: Path) -> None:
    """Refuse a keystore whose key derivation is unknown or would cost more than the bounds."""
    crypto = doc.get("crypto") if isinstance(doc, Mapping) else None
    if not isinstance(crypto, Mapping):
        crypto = doc.get("Crypto") if isinstance(doc, Mapping) else None
    if not isinstance(crypto, Mapping):
        raise _bad(path, "not an Ethereum keystore (no crypto section)")
    kdf, params = crypto.get("kdf"), crypto.get("kdfparams")
    if kdf not in KDFS or not isinstance(params, Mapping):
        raise _bad(path, f"unsupported keystore key derivation {str(kdf)[:20]!r} (supported: {', '.join(KDFS)})")

    def number(name: str, low: int, high: int) -> int:
        v = params.get(name)
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
            raise _bad(path, f"keystore {kdf} parameter {name} must be an integer in [{low}, {high}]")
        return v

    if kdf == "scrypt":
        n = number("n", 2, MAX_SCRYPT_N)
        if n & (n - 1):
            raise _bad(path, "keystore scrypt parameter n must be a power of two")
        number("r", 1, MAX_SCRYPT_R)
        number("p", 1, MAX_SCRYPT_P)
    else:
        if params.get("prf") != "hmac-sha256":
            raise _bad(path, "keystore pbkdf2 prf must be hmac-sha256")
        number("c", 1, MAX_PBKDF2_ROUNDS)
    number("dklen", 32, 64)


def read_keystore(path: str | os.PathLike[str]) -> dict:
    """The keystore document at ``path`` (owner-only, bounded in size, work factors checked)."""
    p = Path(path)
    raw = read_owner_only(p, "keystore")
    if len(raw) > MAX_KEYSTORE_BYTES:
        raise _bad(p, f"keystore file is larger than {MAX_KEYSTORE_BYTES} bytes")
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        raise _bad(p, "keystore file is not valid JSON") from None
    if not isinstance(doc, dict):
        raise _bad(p, "keystore file must be a JSON object")
    check_work(doc, p)
    return doc


def unlock(path: str | os.PathLike[str], passphrase: str) -> str:
    """The private key (``0x`` + 64 hex) held by the keystore at ``path``."""
    from eth_keyfile import decode_keyfile_json

    p = Path(path)
    doc = read_keystore(p)
    try:
        key = decode_keyfile_json(doc, passphrase.encode())
    except ValueError as exc:
        if "MAC" in str(exc):
            raise _bad(p, "wrong keystore passphrase") from None
        raise _bad(p, "malformed keystore file") from None
    except Exception:  # a field of the wrong type or shape: the library's words may quote it
        raise _bad(p, "malformed keystore file") from None
    if len(key) != 32:
        raise _bad(p, "keystore does not hold a 32-byte private key")
    hexkey = "0x" + key.hex()
    register_secret(hexkey)
    register_secret(hexkey[2:])
    return hexkey


def write_keystore(
    path: str | os.PathLike[str], private_key: bytes, passphrase: str, kdf: Kdf = "scrypt",
    work: int | None = None,
) -> dict:
    """Encrypt ``private_key`` with ``passphrase`` into a new owner-only file at ``path``
    (refused if it exists); ``work`` is scrypt's n or pbkdf2's rounds (default: the standard)."""
    from eth_keyfile import create_keyfile_json

    if kdf not in KDFS:
        raise ConfigError(f"unsupported key derivation {kdf!r} (supported: {', '.join(KDFS)})")
    p = Path(path)
    doc = create_keyfile_json(private_key, passphrase.encode(), kdf=kdf, iterations=work or STANDARD_WORK[kdf])
    check_work(doc, p)  # never write a keystore that ``unlock`` would refuse
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise ConfigError(f"{p}: already exists; a keystore is never overwritten") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot write keystore ({exc.strerror})") from None
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f)
        f.write("\n")
    return doc


def passphrase(
    environ: Mapping[str, str] | None = None, *, confirm: bool = False,
    prompt: Callable[[str], str] = getpass.getpass, interactive: bool | None = None,
) -> str:
    """The keystore passphrase: ``BOT_KEYSTORE_PASSPHRASE`` if set, else asked on the terminal
    (twice with ``confirm``); with neither, a one-line error naming the variable."""
    env = os.environ if environ is None else environ
    given = env.get(ENV_KEYSTORE_PASSPHRASE)
    if given:
        register_secret(given)
        return given
    if interactive is None:
        interactive = sys.stdin is not None and sys.stdin.isatty()
    if not interactive:
        raise ConfigError(f"keystore passphrase needed: set {ENV_KEYSTORE_PASSPHRASE} or run on a terminal")
    first = prompt("keystore passphrase: ")
    if not first:
        raise ConfigError("empty keystore passphrase")
    if confirm and prompt("again: ") != first:
        raise ConfigError("the two passphrases differ")
    register_secret(first)
    return first

"""The private key in an encrypted Ethereum keystore: written owner-only, opened with the
passphrase, hostile or malformed files refused with one line that names no secret."""

from __future__ import annotations

import json
import os
import stat
import time

import pytest

from bot.cli import main
from bot.ops.config import ConfigError, SecretsConfig
from bot.ops.keystore import (
    ENV_KEYSTORE_PASSPHRASE, MAX_PBKDF2_ROUNDS, MAX_SCRYPT_N, KeystoreError, passphrase, unlock,
    write_keystore,
)
from bot.ops.secrets import load_secrets
from bot.venue.eip712 import new_private_key
from bot.venue.eip712 import Wallet

KEY = bytes.fromhex("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
HEX = "0x" + KEY.hex()
WORDS = "correct horse battery staple"
LIGHT = {"scrypt": 1024, "pbkdf2": 1000}  # light work factors: these tests stay fast


@pytest.fixture
def logging_kept():
    """``bot`` configures logging to the stderr of its call (here a capture closed after the test):
    the configuration before the test is put back after it."""
    import structlog

    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


@pytest.mark.parametrize("kdf", ["scrypt", "pbkdf2"])
def test_a_written_keystore_opens_with_its_passphrase_only(tmp_path, kdf):
    path = tmp_path / "key.json"
    doc = write_keystore(path, KEY, WORDS, kdf, LIGHT[kdf])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert doc["crypto"]["kdf"] == kdf and doc["version"] == 3 and KEY.hex() not in path.read_text()
    assert unlock(path, WORDS) == HEX
    with pytest.raises(KeystoreError, match="wrong keystore passphrase") as err:
        unlock(path, WORDS + "!")
    assert KEY.hex() not in str(err.value) and WORDS not in str(err.value)
    with pytest.raises(ConfigError, match="never overwritten"):
        write_keystore(path, new_private_key(), WORDS, kdf, LIGHT[kdf])
    assert unlock(path, WORDS) == HEX


@pytest.mark.parametrize("kdf", ["scrypt", "pbkdf2"])
def test_a_keystore_of_the_standard_library_opens(tmp_path, kdf):
    from eth_account import Account

    path = tmp_path / "key.json"
    path.write_text(json.dumps(Account.encrypt(HEX, WORDS, kdf=kdf, iterations=LIGHT[kdf])))
    path.chmod(0o600)
    assert unlock(path, WORDS) == HEX


def test_a_keystore_others_can_read_is_refused(tmp_path):
    path = tmp_path / "key.json"
    write_keystore(path, KEY, WORDS, "scrypt", LIGHT["scrypt"])
    path.chmod(0o640)
    with pytest.raises(ConfigError, match="owner only"):
        unlock(path, WORDS)


def _good(tmp_path, kdf="scrypt") -> dict:
    path = tmp_path / f"good-{kdf}.json"
    if not path.exists():
        write_keystore(path, KEY, WORDS, kdf, LIGHT[kdf])
    return json.loads(path.read_text())


def _hostile(tmp_path):
    scrypt, pbkdf2 = _good(tmp_path, "scrypt"), _good(tmp_path, "pbkdf2")

    def with_params(doc, **params):
        doc = json.loads(json.dumps(doc))
        doc["crypto"]["kdfparams"].update(params)
        return doc

    yield "huge scrypt n", with_params(scrypt, n=MAX_SCRYPT_N * 2)
    yield "scrypt n not a power of two", with_params(scrypt, n=1000)
    yield "huge scrypt r", with_params(scrypt, r=10**6)
    yield "huge scrypt p", with_params(scrypt, p=10**6)
    yield "scrypt n a string", with_params(scrypt, n="1024")
    yield "huge pbkdf2 rounds", with_params(pbkdf2, c=MAX_PBKDF2_ROUNDS + 1)
    yield "pbkdf2 rounds a bool", with_params(pbkdf2, c=True)
    yield "other prf", with_params(pbkdf2, prf="hmac-sha1")
    yield "huge dklen", with_params(scrypt, dklen=10**9)
    yield "unknown kdf", {**scrypt, "crypto": {**scrypt["crypto"], "kdf": "argon2"}}
    yield "no crypto", {"version": 3}
    yield "a list", [scrypt]
    yield "cipher text not hex", {**scrypt, "crypto": {**scrypt["crypto"], "ciphertext": "zz"}}
    yield "cipher params missing", {**scrypt, "crypto": {k: v for k, v in scrypt["crypto"].items() if k != "cipherparams"}}
    yield "mac a number", {**scrypt, "crypto": {**scrypt["crypto"], "mac": 7}}
    yield "deep nesting", "[" * 100_000 + "]" * 100_000
    yield "not json", "{'crypto': "
    yield "too large", {"pad": "x" * 100_000, **scrypt}


def test_hostile_or_malformed_keystores_are_refused_in_bounded_time(tmp_path):
    for name, doc in _hostile(tmp_path):
        path = tmp_path / "k.json"
        path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
        path.chmod(0o600)
        start = time.monotonic()
        with pytest.raises(KeystoreError) as err:
            unlock(path, WORDS)
        assert time.monotonic() - start < 30, name  # a refused work factor is never attempted
        message = str(err.value)
        assert "\n" not in message and KEY.hex() not in message and WORDS not in message, name


def test_the_passphrase_comes_from_the_environment_or_the_terminal():
    assert passphrase({ENV_KEYSTORE_PASSPHRASE: "from env"}, interactive=False) == "from env"
    with pytest.raises(ConfigError, match=ENV_KEYSTORE_PASSPHRASE):
        passphrase({}, interactive=False)
    answers = iter(["typed", "typed"])
    assert passphrase({}, confirm=True, interactive=True, prompt=lambda _: next(answers)) == "typed"
    answers = iter(["typed", "other"])
    with pytest.raises(ConfigError, match="differ"):
        passphrase({}, confirm=True, interactive=True, prompt=lambda _: next(answers))
    with pytest.raises(ConfigError, match="empty"):
        passphrase({}, interactive=True, prompt=lambda _: "")


def test_the_keystore_source_gives_the_wallet_and_credentials_from_the_environment(tmp_path):
    path = tmp_path / "key.json"
    write_keystore(path, KEY, WORDS, "pbkdf2", LIGHT["pbkdf2"])
    env = {ENV_KEYSTORE_PASSPHRASE: WORDS, "BOT_API_KEY": "k"}
    found = load_secrets(SecretsConfig(source="keystore", file=str(path)), env)
    assert found.wallet().address == Wallet(HEX).address and found.api_key == "k"
    assert HEX not in repr(found)
    with pytest.raises(ValueError, match="secrets.file"):
        SecretsConfig(source="keystore")


def test_bot_keys_new_writes_an_owner_only_keystore(tmp_path, monkeypatch, capsys, logging_kept):
    monkeypatch.setenv(ENV_KEYSTORE_PASSPHRASE, WORDS)
    path = tmp_path / "new.json"
    assert main(["keys", "new", str(path), "--kdf", "pbkdf2", "--work", "1000"]) == 0
    out = capsys.readouterr().out
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    key = unlock(path, WORDS)
    assert Wallet(key).address in out and key[2:] not in out
    assert main(["keys", "new", str(path), "--work", "1024"]) == 2
    assert "never overwritten" in capsys.readouterr().err
    assert main(["keys", "new", str(tmp_path / "b.json"), "--work", "1000"]) == 2  # scrypt: a power of two
    monkeypatch.delenv(ENV_KEYSTORE_PASSPHRASE)
    monkeypatch.setattr("sys.stdin", None)
    assert main(["keys", "new", str(tmp_path / "c.json")]) == 2
    assert ENV_KEYSTORE_PASSPHRASE in capsys.readouterr().err

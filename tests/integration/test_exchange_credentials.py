"""API credentials cannot be computed from anything public: the seed in the banner and an address
give an attacker nothing; derivation returns what was issued for the same signer and nonce; only a
demo that asks for it gets credentials (and a key) computed from the seed."""

from __future__ import annotations

import base64
import hashlib
import time
import uuid

import httpx
import pytest

from bot.exchange.config import ExchangeConfig
from bot.exchange.state import ExchangeState, demo_private_key
from bot.venue.auth import Credentials, auth_timestamp, l1_headers, l2_headers
from bot.venue.eip712 import Wallet
from tests.integration.exchange_fixture import exchange, start_exchange  # noqa: F401

pytestmark = pytest.mark.integration


def seed_recipe(seed: int, address: str, nonce: int) -> Credentials:
    """What an attacker computes from the seed printed in the banner and an account's address."""
    root = hashlib.sha256(f"pmbot-exchange|{seed}|{address.lower()}|{nonce}".encode()).digest()
    return Credentials(str(uuid.UUID(bytes=hashlib.sha256(root + b"key").digest()[:16], version=4)),
                       base64.urlsafe_b64encode(hashlib.sha256(root + b"secret").digest()).decode(),
                       hashlib.sha256(root + b"passphrase").hexdigest())


def list_orders(base: str, creds: Credentials, address: str) -> httpx.Response:
    headers = l2_headers(creds, address, "GET", "/data/orders", None, auth_timestamp())
    return httpx.get(base + "/data/orders", headers=headers, timeout=10)


def test_the_seed_and_an_address_do_not_open_an_account(exchange):
    seed = exchange.exchange.config.seed
    for acct in (exchange.demo_account, exchange.new_account(61)):
        mine = Credentials(acct.creds.apiKey, acct.creds.secret, acct.creds.passphrase)
        assert list_orders(exchange.urls.clob, mine, acct.address).status_code == 200
        guessed = list_orders(exchange.urls.clob, seed_recipe(seed, acct.address, 0), acct.address)
        assert guessed.status_code == 401 and guessed.json()["error"].startswith("unauthorized: ")
        # nor is the wallet key itself the seed's: the L1 routes stay closed to the attacker too
        assert acct.private_key != demo_private_key(seed, 0) and acct.private_key != demo_private_key(seed, 61)
    forged = Wallet(demo_private_key(seed, 0))
    assert forged.address != exchange.demo_account.address


def test_derive_returns_what_was_issued_for_the_signer_and_nonce(exchange):
    w = Wallet("0x" + "12" * 32)
    ts = str(int(time.time()))
    base = exchange.urls.clob
    made = httpx.post(base + "/auth/api-key", headers=l1_headers(w, 137, ts, nonce=5)).json()
    again = httpx.get(base + "/auth/derive-api-key", headers=l1_headers(w, 137, ts, nonce=5)).json()
    other = httpx.get(base + "/auth/derive-api-key", headers=l1_headers(w, 137, ts, nonce=6)).json()
    assert made == again and other["apiKey"] != made["apiKey"] and other["secret"] != made["secret"]
    assert made["apiKey"] != seed_recipe(exchange.exchange.config.seed, w.address, 5).api_key
    assert len(base64.urlsafe_b64decode(made["secret"])) == 32 and len(made["secret"]) == 44
    creds = Credentials(made["apiKey"], made["secret"], made["passphrase"])
    assert list_orders(base, creds, w.address).status_code == 200
    # revoked, the pair is issued afresh: the old secret opens nothing
    headers = l2_headers(creds, w.address, "DELETE", "/auth/api-key", None, auth_timestamp())
    assert httpx.delete(base + "/auth/api-key", headers=headers).status_code == 200
    fresh = httpx.get(base + "/auth/derive-api-key", headers=l1_headers(w, 137, ts, nonce=5)).json()
    assert fresh["apiKey"] != made["apiKey"] and list_orders(base, creds, w.address).status_code == 401


def test_another_exchange_with_the_same_seed_issues_other_credentials(exchange):
    w = Wallet("0x" + "13" * 32)
    ts = str(int(time.time()))
    second = start_exchange()
    try:
        a = httpx.get(exchange.urls.clob + "/auth/derive-api-key", headers=l1_headers(w, 137, ts)).json()
        b = httpx.get(second.urls.clob + "/auth/derive-api-key", headers=l1_headers(w, 137, ts)).json()
        assert a["apiKey"] != b["apiKey"] and a["secret"] != b["secret"] and a["passphrase"] != b["passphrase"]
        assert second.demo_account.address != exchange.demo_account.address
    finally:
        second.stop()


def test_only_a_demo_that_asks_gets_credentials_from_the_seed():
    asked = ExchangeConfig(seed=9, markets=1, neg_risk_events=0, demo_credentials="deterministic")
    one, two = ExchangeState(asked), ExchangeState(asked)
    assert one.demo == two.demo and one.demo.private_key == demo_private_key(9, 0)
    assert one.new_account(3).creds == two.new_account(3).creds
    plain = ExchangeConfig(seed=9, markets=1, neg_risk_events=0)
    three, four = ExchangeState(plain), ExchangeState(plain)
    assert three.demo.creds != four.demo.creds and three.demo.private_key != four.demo.private_key
    assert three.demo.creds.apiKey != one.demo.creds.apiKey

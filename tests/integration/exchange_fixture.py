"""Reusable helpers: start the local exchange in-process on free ports for a test.

Usage::

    from tests.integration.exchange_fixture import exchange  # noqa: F401  (pytest fixture)

    def test_x(exchange):
        exchange.urls.clob, exchange.demo_account.creds.apiKey, exchange.new_account(1)

``exchange`` is module-scoped and runs with the venue's limits, fast settlement and no flow; it
answers in the live venue's spelling, ``seed_exchange`` (the same otherwise) in the spec's text.
``start_exchange(**overrides)`` starts one with other settings (call ``.stop()``), e.g.
``start_exchange(spelling="seed")``.
"""

from __future__ import annotations

import json
import time

import pytest

from bot.exchange.config import AccountSeed, ExchangeConfig, MarketSeed, ServerFlowConfig, ServerSettlementConfig
from bot.exchange.server import ThreadedExchange, start_in_thread
from tests.conftest import SHARED


def vector_seeds() -> tuple[tuple[MarketSeed, ...], tuple[AccountSeed, ...]]:
    """Markets and the funded account of the shared ``vectors/order_signing.json`` (``BOT_SHARED_DIR``)."""
    v = json.loads((SHARED / "vectors" / "order_signing.json").read_text())
    markets: dict[str, MarketSeed] = {}
    for o in v["orders"]:
        i = o["inputs"]
        cond = i["condition_id_for_service_variant"]
        if cond not in markets:
            markets[cond] = MarketSeed(condition_id=cond, token_id=i["token_id"], tick_size="0.01",
                                       neg_risk=False, question=f"Vector market {cond[:8]}?", mid="0.8")
    c = v["api_creds"]
    acct = AccountSeed(address=v["test_eoa_address"], api_key=c["apiKey"], secret=c["secret"],
                       passphrase=c["passphrase"], usdc="100000")
    return tuple(markets.values()), (acct,)


def test_config(**overrides) -> ExchangeConfig:
    markets, accounts = vector_seeds()
    base = dict(
        seed=3, markets=4, extra_markets=markets, accounts=accounts,
        settlement=ServerSettlementConfig(mined_after_s=0.2, confirmed_after_s=0.2),
        flow=ServerFlowConfig(enabled=False), auth_window_s=10**9,
    )
    base.update(overrides)
    return ExchangeConfig(**base)


def start_exchange(**overrides) -> ThreadedExchange:
    return start_in_thread(test_config(**overrides))


@pytest.fixture(scope="module")
def exchange():
    ex = start_exchange()
    try:
        yield ex
    finally:
        ex.stop()


@pytest.fixture(scope="module")
def seed_exchange():
    ex = start_exchange(spelling="seed")
    try:
        yield ex
    finally:
        ex.stop()


def wait_for(cond, deadline_s: float = 8.0, what: str = "condition", interval: float = 0.05):
    """Poll ``cond()`` until it returns something truthy (returned) or the deadline passes."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        value = cond()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")

"""The exchange's wallet registry: the venue's CREATE2 derivations, one owner per wallet, funders."""

from __future__ import annotations

import msgspec
import pytest

from bot.exchange.config import AccountSeed, ExchangeConfig, ServerFlowConfig
from bot.exchange.state import ExchangeState
from bot.exchange.wallets import WalletRegistry, proxy_wallet, safe_wallet
from bot.venue.units import parse_units

# a public vector of the venue's factories: the well-known Anvil test EOA and its two wallets
ANVIL_EOA = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"


def test_proxy_and_safe_are_the_venues_create2_addresses():
    assert proxy_wallet(ANVIL_EOA).lower() == "0x365f0ca36ae1f641e02fe3b7743673da42a13a70"
    assert safe_wallet(ANVIL_EOA).lower() == "0xd93b25cb943d14d0d34fbaf01fc93a0f8b5f6e47"
    assert proxy_wallet(ANVIL_EOA.lower()) == proxy_wallet(ANVIL_EOA)  # case-insensitive input, checksummed out


def test_registry_gives_each_wallet_one_owner():
    reg = WalletRegistry(seed=1)
    w = reg.register(ANVIL_EOA.lower())
    assert w.owner == ANVIL_EOA and [w.of(t) for t in range(4)] == list(w.all())
    assert len({a.lower() for a in w.all()}) == 4
    assert reg.register(ANVIL_EOA) is w  # registering again changes nothing
    assert {reg.owner_of(a.upper().replace("0X", "0x")) for a in w.all()} == {ANVIL_EOA}
    assert reg.owner_of("0x" + "12" * 20) is None
    assert WalletRegistry(seed=2).register(ANVIL_EOA).deposit != w.deposit  # the deposit wallet is registered
    # a configured funder replaces the derived wallet of its type, and cannot be somebody else's
    other = "0x" + "ab" * 20
    w2 = reg.register(other, funder="0x" + "cd" * 20, signature_type=2)
    assert w2.safe.lower() == "0x" + "cd" * 20 and reg.owner_of(w2.safe) == w2.owner
    with pytest.raises(ValueError):
        reg.register("0x" + "ef" * 20, funder=w.proxy, signature_type=1)
    with pytest.raises(ValueError):
        reg.register("0x" + "ef" * 20, funder="0x" + "01" * 20, signature_type=0)


def test_funds_sit_in_the_configured_wallet():
    acct = AccountSeed(address="0x" + "ab" * 20, funder="0x" + "cd" * 20, signature_type=1, usdc="7")
    st = ExchangeState(ExchangeConfig(seed=4, markets=1, neg_risk_events=0, flow=ServerFlowConfig(enabled=False),
                                      demo_signature_type=2, demo_usdc="123", accounts=(acct,)))
    demo = st.demo
    assert st.engine.balance(demo.wallets.safe).collateral == parse_units("123")
    assert st.engine.balance(demo.address).collateral == 0
    funder = st.wallets.of(acct.address).proxy
    assert funder.lower() == "0x" + "cd" * 20 and st.engine.balance(funder).collateral == parse_units("7")
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"address": "0x" + "ab" * 20, "funder": "0x" + "cd" * 20}, AccountSeed)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"demo_signature_type": 4}, ExchangeConfig)

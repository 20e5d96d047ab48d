"""Order ids and signatures by mode: the engine clock stamps orders, simulation is repeatable."""

from __future__ import annotations

import pytest

from bot.core.clock import SimClock
from bot.core.markets import MarketIndex, MarketInfo
from bot.engine.signing import order_signer, seeded_salts, unsigned_ids
from bot.execution.router import OrderRequest
from bot.venue.eip712 import Wallet
from bot.venue.enums import OrderType, Side
from bot.venue.orders import OrderBuilder, OrderError

KEY = "0x" + "11" * 32
MARKET = MarketInfo("0x" + "ab" * 32, ("111", "222"))
BID = OrderRequest("111", Side.BUY, 400_000, 10_000_000)


def signer(clock, seed=None):
    salts = seeded_salts(seed) if seed is not None else None
    return order_signer(OrderBuilder(Wallet(KEY), 137), MarketIndex([MARKET]), clock, lambda _t: 10_000, salts)


def test_orders_carry_the_engine_clock_and_seeded_salts_repeat():
    clock = SimClock(1_600_000_000.25)
    a = signer(clock, seed=7)(BID)
    assert a.timestamp == 1_600_000_000_250
    b = signer(SimClock(1_600_000_000.25), seed=7)(BID)
    assert (a.salt, a.hash) == (b.salt, b.hash)
    assert signer(SimClock(1_600_000_000.25), seed=8)(BID).hash != a.hash


def test_gtd_expiry_is_judged_on_the_engine_clock():
    clock = SimClock(1_600_000_000.0)  # years ago: an expiry in the past of the wall clock
    gtd = OrderRequest("111", Side.BUY, 400_000, 10_000_000, order_type=OrderType.GTD, expiration=1_600_000_300)
    assert signer(clock, seed=1)(gtd).expiration == 1_600_000_300
    with pytest.raises(OrderError, match="expiration"):
        signer(SimClock(1_600_000_250.0), seed=1)(gtd)  # less than the venue's lead ahead of the clock


def test_unsigned_ids_are_unique_and_repeat_for_a_seed():
    sign = unsigned_ids(3)
    run = [sign(BID).hash for _ in range(1000)]
    assert len(set(run)) == 1000
    again = unsigned_ids(3)
    assert [again(BID).hash for _ in range(1000)] == run
    assert unsigned_ids(4)(BID).hash != run[0]
    assert all(len(h) == 66 and h.startswith("0x") for h in run)


def test_unsigned_ids_hash_the_seed_once_and_count_orders():
    sign = unsigned_ids(3)
    ids = [sign(BID).hash for _ in range(3)]
    assert {h[:50] for h in ids} == {ids[0][:50]}  # the seed's part, the same for the whole run
    assert [int(h[50:], 16) for h in ids] == [1, 2, 3]  # then the order's number
    assert unsigned_ids(4)(BID).hash[:50] != ids[0][:50]

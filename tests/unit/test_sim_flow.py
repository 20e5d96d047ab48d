"""Synthetic traders: deterministic, keep the book two-sided, informed flow beats the quotes."""

from __future__ import annotations

import pytest

from bot.core.markets import MarketInfo
from bot.sim.events import TradeEvent
from bot.sim.flow import FlowConfig, BackgroundTraders
from bot.sim.matching import MatchingConfig, MatchingEngine
from bot.venue.units import UNIT

M = MarketInfo("0xflowmarket", ("YES", "NO"), tick=10_000, min_size=5_000_000)


def simulate(seed: int, seconds: int = 900, config: FlowConfig | None = None):
    eng = MatchingEngine(MatchingConfig(seed=11))
    sim = BackgroundTraders(eng, M, config or FlowConfig(), seed=seed)
    events = []
    for t in range(seconds):
        events += sim.step(1_000.0 + t)
        events += eng.advance(1_000.0 + t)
    return eng, sim, events


def test_same_seed_same_event_stream_and_other_seed_differs():
    _, _, a = simulate(3, 300)
    _, _, b = simulate(3, 300)
    _, _, c = simulate(4, 300)
    assert a == b
    assert a != c


def test_books_stay_live_and_conserve():
    eng, sim, events = simulate(5)
    bid, ask = eng.best_bid_ask("YES")
    assert 0 < bid < ask < UNIT
    assert ask - bid <= 100_000
    assert abs((bid + ask) / 2 / UNIT - sim.fair) < 0.1
    assert any(isinstance(e, TradeEvent) for e in events)
    led = eng.ledger
    assert sum(a.collateral for a in led.accounts.values()) + led.pairs.get(M.condition_id, 0) \
        == led.funded


def test_informed_trader_profits_from_stale_quotes():
    cfg = FlowConfig(volatility=0.05, jump_rate=0.02, lp_rate=0.05, informed_rate=1.0,
                     noise_rate=0.2)
    eng, sim, _ = simulate(8, 1_800, cfg)
    fair = sim.fair
    pos = {p.token: p for p in eng.positions(sim.informed)}
    assert pos, "the informed trader never traded"
    # mark to the hidden value: what it bought is worth more than it paid
    value = sum(p.size * (fair if p.token == "YES" else 1 - fair) for p in pos.values())
    cost = sum(p.cost for p in pos.values())
    assert value - cost > 0


def test_config_is_strict():
    import msgspec

    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"lp_count": 2, "bogus": 1}, FlowConfig)
    with pytest.raises(ValueError):
        FlowConfig(start_price=1.5)


def test_a_faster_flow_is_the_same_traders_on_a_faster_clock():
    base = FlowConfig()
    fast = base.faster(10.0)
    assert (fast.lp_rate, fast.noise_rate, fast.informed_rate) == (
        base.lp_rate * 10, base.noise_rate * 10, base.informed_rate * 10)
    assert fast.jump_rate == base.jump_rate * 10 and fast.volatility == pytest.approx(base.volatility * 10 ** 0.5)
    assert base.faster(1.0) is base
    _, _, slow_events = simulate(5, 120)
    _, _, fast_events = simulate(5, 120, fast)
    trades = [sum(isinstance(e, TradeEvent) for e in ev) for ev in (slow_events, fast_events)]
    assert trades[1] > 4 * trades[0] > 0  # ten times the takers, in the same two minutes


def test_liquidity_providers_keep_quoting_when_a_failed_trade_took_back_tokens_they_had_merged():
    # settlement failures reverse trades after the providers merged their pairs: a balance can
    # go below zero, and a provider must not stop requoting (the books would drain)
    eng = MatchingEngine(MatchingConfig(seed=11))
    sim = BackgroundTraders(eng, M, FlowConfig(), seed=5)
    sim.step(1_000.0)
    for lp in sim.lps:
        eng.ledger.get(lp).tokens["YES"] = -10_000_000_000
    for t in range(1, 120):
        sim.step(1_000.0 + t)
        eng.advance(1_000.0 + t)
    bid, ask = eng.best_bid_ask("YES")
    assert 0 < bid < ask < UNIT
    assert all(sim._quotes[lp] for lp in sim.lps)

"""The fee rule booked end to end on test markets with ``e = 1`` and ``e = 2``: the matching
engine charges it, the reconciler books it, and both equal the rule's figures."""

from __future__ import annotations

import msgspec
import pytest

from bot.core.events import Fill
from bot.core.markets import MarketInfo, with_default_fee
from bot.execution.orders import OwnOrder
from bot.exchange import render
from bot.execution.reconciler import Reconciler
from bot.sim.matching import MatchingConfig, MatchingEngine
from bot.sim.orders import NewOrder
from bot.venue.enums import OrderType, Side
from bot.venue.fees import NO_FEE, FeeError, FeeSchedule, record_schedule, schedule_from_wire
from bot.venue.units import UNIT

BUY, SELL = Side.BUY, Side.SELL
SH = UNIT  # one share


def market(exponent: int, rebate: int = 0) -> MarketInfo:
    # r = 0.02 (200 bps), rebate share in millionths
    return MarketInfo(f"0xfee{exponent}", (f"YES{exponent}", f"NO{exponent}"), tick=10_000, min_size=SH,
                      fee=FeeSchedule(rate=20_000, exponent=exponent, rebate=rebate))


def trade(eng: MatchingEngine, m: MarketInfo, side: Side, price: int, size: int):
    """A maker ``a`` rests the other side; ``b`` takes ``size`` shares at ``price``."""
    yes = m.tokens[0]
    eng.place(NewOrder("m1" + side.value, "a", yes, side.opposite, price, size, OrderType.GTC), 1.0)
    res = eng.place(NewOrder("t1" + side.value, "b", yes, side, price, size, OrderType.GTC), 1.0)
    return res, eng.trades[res.trade_ids[0]]


def booked(m: MarketInfo, t, side: Side, maker: bool = False) -> Fill:
    """What our reconciler books for our order of ``side`` in ``t`` (the taker's, or the maker's),
    from the trade as the local exchange renders it on ``GET /data/trades``."""
    rec = Reconciler()
    rec.fees = {tok: m.fee for tok in m.tokens}
    oid = t.makers[0].order_id if maker else t.taker_order_id
    rec.on_places_sent([OwnOrder(oid, t.token, side, t.price, t.size, signed={"hash": oid})], 0.0)
    wire = msgspec.to_builtins(render.trade(t.view(), "MAKER" if maker else "TAKER"))
    (fill,) = [o for o in rec.on_trade_event(wire, 1.0) if isinstance(o, Fill)]
    return fill


@pytest.mark.parametrize(("exponent", "fee_shares", "fee_usdc"), [
    # 100 shares at 0.30, r = 0.02: e = 1: 100 * 0.02 * 0.21 = 0.42 USDC (1.4 shares on a BUY)
    (1, 1_400_000, 420_000),
    # e = 2: 100 * 0.02 * 0.21^2 = 0.0882 USDC (0.294 share on a BUY)
    (2, 294_000, 88_200),
])
def test_fee_booked_equals_the_rule(exponent, fee_shares, fee_usdc):
    m = market(exponent)
    eng = MatchingEngine(MatchingConfig(emit_events=False))
    eng.add_market(m)
    for acct in ("a", "b"):
        eng.fund(acct, 1_000 * SH)
        eng.split(acct, m.condition_id, 500 * SH)
    res, t = trade(eng, m, BUY, 300_000, 100 * SH)
    assert t.fee == fee_shares and t.fee_rate_bps == 200
    assert res.taking_amount == 100 * SH - fee_shares
    assert eng.balance("fees").tokens[m.tokens[0]] == fee_shares
    fill = booked(m, t, BUY)
    assert (fill.size, fill.fee) == (100 * SH - fee_shares, fee_usdc)  # the shares kept, at 0.30
    res, t = trade(eng, m, SELL, 300_000, 100 * SH)
    assert t.fee == fee_usdc and res.taking_amount == 30 * SH - fee_usdc
    fill = booked(m, t, SELL)
    assert (fill.size, fill.fee) == (100 * SH, fee_usdc)


def test_maker_rebate_is_paid_by_the_fee_account_and_booked_negative():
    m = market(2, rebate=250_000)  # makers get a quarter of their fill's fee worth
    eng = MatchingEngine(MatchingConfig(emit_events=False))
    eng.add_market(m)
    for acct in ("a", "b"):
        eng.fund(acct, 1_000 * SH)
        eng.split(acct, m.condition_id, 500 * SH)
    before = eng.balance("a").collateral
    _, t = trade(eng, m, BUY, 300_000, 100 * SH)  # a sells 100 at 0.30 as the maker
    rebate = 22_050  # 0.25 * 0.0882 USDC
    assert t.makers[0].rebate == rebate
    assert eng.balance("a").collateral == before + 30 * SH + rebate
    assert eng.balance("fees").collateral == -rebate  # paid out of the fees collected
    fill = booked(m, t, SELL, maker=True)
    assert (fill.size, fill.fee, fill.is_maker) == (100 * SH, -rebate, True)


def test_a_record_without_a_rate_gets_the_markets_rule():
    sched = FeeSchedule(rate=20_000, exponent=2, rebate=1)
    assert record_schedule(sched, 0) is sched
    assert record_schedule(sched, 150) == FeeSchedule(rate=15_000, exponent=2, rebate=1)
    assert record_schedule(None, 0) is NO_FEE
    assert record_schedule(None, 100) == FeeSchedule(rate=10_000)
    finer = FeeSchedule(rate=1_250)  # 12.5 bps: records carry 12, which still means the market's own
    assert record_schedule(finer, 12) is finer and record_schedule(finer, 13).rate == 1_300


def test_markets_without_a_rule_take_the_configured_one():
    m = MarketInfo("0xc", ("Y", "N"))
    default = FeeSchedule(rate=10_000, exponent=2)
    (priced,) = with_default_fee([m], default)
    assert priced.fee == default
    assert with_default_fee([market(1)], default)[0].fee == market(1).fee
    assert with_default_fee([m], NO_FEE) == [m]


@pytest.mark.parametrize("bad", [("x", 1), (0.02, 1.5), (0.02, True), ("1.0000001", 1), (2, 1), (0.1, 0)])
def test_unusable_wire_values_are_refused(bad):
    with pytest.raises(FeeError):
        schedule_from_wire(*bad)


def test_a_makers_rebate_tightens_the_model_makers_quotes():
    """A fill earns the rebate on top of the spread: each side's distance shrinks by it."""
    from strategies.model_maker import ModelParams, quote_at_distances
    from strategies.pairs import Holdings
    from tests.unit.strategy_kit import pair

    plain = MarketInfo("0xmkt", ("YES", "NO"), tick=1_000, min_size=5 * SH)
    paying = msgspec.structs.replace(plain, fee=FeeSchedule(rate=100_000, exponent=1, rebate=1_000_000))
    # rebate per share at the 0.50 mid: 0.1 * 0.25 = 0.025; model distances 0.03 each side
    params = ModelParams(order_size=10 * SH, max_inventory=100 * SH)
    distances = lambda q: (0.03, 0.03)  # noqa: E731
    base = quote_at_distances(pair(400_000, 600_000, tick=1_000, market=plain), Holdings(), params, distances)
    tight = quote_at_distances(pair(400_000, 600_000, tick=1_000, market=paying), Holdings(), params, distances)
    assert (base.bids[0].price, base.asks[0].price) == (470_000, 530_000)
    assert (tight.bids[0].price, tight.asks[0].price) == (495_000, 505_000)


def test_the_rewards_option_counts_the_rebates_its_quotes_earn():
    import math

    from strategies.pairs import Level, YesQuotes
    from strategies.rewards import rebate_rate

    q = YesQuotes((Level(490_000, 10 * SH),), (Level(510_000, 10 * SH),))
    sched = FeeSchedule(rate=100_000, exponent=1, rebate=500_000)
    assert rebate_rate(q, 500_000, 2.0, 100.0, NO_FEE) == 0.0
    per_side = 2.0 * math.exp(-100.0 * 0.01) * 10 * 0.5 * 0.1 * 0.49 * 0.51  # fills/s * rebate of 10 shares
    assert rebate_rate(q, 500_000, 2.0, 100.0, sched) == pytest.approx(2 * per_side, rel=1e-12)


def test_fees_paid_and_rebates_earned_are_counted_apart():
    from bot.results.report import summary_rows
    from bot.results.folder import ResultsSink, Summary
    from bot.portfolio import Portfolio

    paid = Fill("t1", "o1", "Y", BUY, 300_000, 10 * SH, fee=8_820, is_maker=False)
    earned = Fill("t2", "o2", "Y", SELL, 300_000, 10 * SH, fee=-2_205, is_maker=True)
    sink = ResultsSink(None)
    pf = Portfolio()
    for f in (paid, earned):
        sink.fill(f)
        pf.apply_fill(f)
    assert (sink.fees_paid, sink.rebates) == (8_820, 2_205)
    assert (pf.fees, pf.rebates) == (8_820 - 2_205, 2_205)  # net fees; paid = fees + rebates
    sink.reversal(earned)
    assert (sink.fees_paid, sink.rebates) == (8_820, 0)
    figures = dict(fills=2, maker_fills=1, volume=20 * SH, notional=6 * SH, fill_rate=1.0, maker_share=0.5,
                   realized=0, unrealized=0, fees=6_615, pnl=-6_615, max_drawdown=0, inventory={},
                   final_position={}, fees_paid=8_820, rebates=2_205)
    s = Summary(mode="backtest", events=0, seconds=1.0, wall_seconds=0.0, events_per_s=0.0, orders_sent=2,
                orders_rejected=0, cancels_sent=0, **figures)
    rows = dict(summary_rows(s))
    assert (rows["fees (USDC)"], rows["fees paid (USDC)"], rows["rebates earned (USDC)"]) == (
        "0.006615", "0.00882", "0.002205")

"""Complement arbitrage: a whole set of outcomes is worth 1. Opportunities net of fees and margin,
exact amounts, neg-risk sets, the repair of a set whose legs did not all fill, and backtests on a
mispriced synthetic market and on the (fairly priced) sample recording."""

from __future__ import annotations

from pathlib import Path

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.backtest.synthetic import SyntheticConfig, SyntheticMarket
from bot.core.book import Books
from bot.core.clock import SimClock
from bot.core.events import Fill
from bot.core.intents import Take
from bot.core.markets import MarketIndex, MarketInfo
from bot.portfolio import Portfolio, complete_sets, fills_of, set_groups
from bot.results.read import read_results
from bot.results.report import summary_rows
from bot.strategy import StrategyContext
from bot.venue.enums import OrderType, Side
from bot.venue.fees import BPS, FeeSchedule, taker_fee
from bot.venue.models.ws import BookEvent, Level
from bot.venue.units import LOT, UNIT, format_units
from strategies.complement_arb import (
    ComplementArbitrage, Leg, Params, Top, exact_step, groups, opportunity, repair, too_large,
)
from tests.unit.strategy_kit import SH, backtest, check_accounts

PATH = "strategies.complement_arb:ComplementArbitrage"
P = Params(margin=5_000, max_size=50 * SH, min_size=SH)


def top(token: str, bid: int | None, ask: int | None, size: int = 100 * SH, held: int = 0) -> Top:
    return Top(token, bid, size if bid else 0, ask, size if ask else 0, held)


def test_buys_the_set_when_the_asks_add_up_under_one_by_more_than_the_margin():
    opp = opportunity([top("Y", 400_000, 450_000), top("N", 500_000, 530_000)], P)  # 0.98
    assert opp.kind == "buy" and opp.size == 50 * SH
    assert opp.edge == 50 * SH - 50 * (450_000 + 530_000) - 50 * 5_000  # 0.015 a set after the margin
    assert [leg.take() for leg in opp.legs] == [Take("Y", Side.BUY, 450_000, 22_500_000, OrderType.FOK),
                                               Take("N", Side.BUY, 530_000, 26_500_000, OrderType.FOK)]
    assert opportunity([top("Y", 400_000, 470_000), top("N", 500_000, 527_000)], P) is None  # 0.997: margin eats it


def test_sells_the_set_it_holds_when_the_bids_add_up_over_one():
    tops = [top("Y", 480_000, 500_000, held=30 * SH), top("N", 530_000, 560_000, held=20 * SH)]
    opp = opportunity(tops, P)
    assert opp.kind == "sell" and opp.size == 20 * SH  # what is held of each caps it
    assert [leg.take().amount for leg in opp.legs] == [20 * SH, 20 * SH]
    assert opportunity([top("Y", 480_000, 500_000), top("N", 530_000, 560_000)], P) is None  # nothing held


def test_fees_count_against_the_edge():
    tops = [top("Y", 400_000, 450_000), top("N", 500_000, 530_000)]
    params = Params(margin=0, max_size=50 * SH, min_size=SH)

    def at(bps: int) -> list[Top]:  # each leg's market charges r = bps (e = 1): the rule of bot.venue.fees
        return [msgspec.structs.replace(t, fee=FeeSchedule(rate=bps * BPS)) for t in tops]

    assert opportunity(at(100), params) is not None
    assert opportunity(at(1000), params) is None  # 0.1 * 0.55 share kept back per share > the 0.02 edge


def test_a_neg_risk_event_is_one_set_of_its_yes_tokens():
    ms = [MarketInfo(f"0x{i}", (f"Y{i}", f"N{i}"), neg_risk=True, event_id="E") for i in range(3)]
    ms.append(MarketInfo("0xb", ("YB", "NB")))
    gs = groups(ms, Params())
    assert [g.tokens for g in gs] == [("Y0", "N0"), ("Y1", "N1"), ("Y2", "N2"), ("YB", "NB"), ("Y0", "Y1", "Y2")]
    opp = opportunity([top("Y0", 190_000, 210_000), top("Y1", 290_000, 310_000), top("Y2", 440_000, 460_000)], P)
    assert opp.kind == "buy" and len(opp.legs) == 3  # 0.98 for a set that pays 1
    assert [g.key for g in groups(ms, Params(neg_risk=False))] == ["0x0", "0x1", "0x2", "0xb"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 999), st.integers(1, 99), st.integers(1, 400)), min_size=2, max_size=5),
       st.sampled_from([1_000, 10_000]), st.integers(0, 200), st.integers(0, 30_000))
def test_every_opportunity_is_exact_and_really_pays(legs: list, tick: int, bps: int, margin: int):
    tops = []
    for i, (ask_ticks, spread, size) in enumerate(legs):
        ask = min(UNIT - tick, max(2 * tick, ask_ticks * 1_000 // tick * tick))
        bid = max(tick, ask - spread * tick)
        tops.append(Top(f"T{i}", bid, size * SH, ask, size * SH, held=size * SH,
                        fee=FeeSchedule(rate=bps * BPS)))
    params = Params(margin=margin, max_size=200 * SH, min_size=LOT)
    fee = FeeSchedule(rate=bps * BPS)  # the legs' fee rule
    opp = opportunity(tops, params)
    if opp is None:
        return
    size = opp.size
    assert size % LOT == 0 and size >= LOT
    if opp.kind == "buy":
        spent = 0
        kept = []
        for leg in opp.legs:
            amount = leg.take().amount
            assert amount % 10_000 == 0 and amount * UNIT // leg.price == size  # whole cents buy exactly the size
            spent += amount
            kept.append(size - taker_fee(Side.BUY, leg.price, size, fee))
        assert min(kept) - spent >= margin * size // UNIT  # the complete sets redeem for more than they cost
    else:
        got = sum(size * leg.price // UNIT - taker_fee(Side.SELL, leg.price, size, fee) for leg in opp.legs)
        assert got - size >= margin * size // UNIT
        assert all(size <= t.held for t in tops)


def test_exact_step():
    assert exact_step([450_000, 530_000]) == SH  # whole shares at cent prices
    assert exact_step([375_000]) == 80_000  # 0.08 share at 0.375 costs exactly 0.03
    assert all(exact_step([p]) * p % (UNIT * 10_000) == 0 for p in (1_000, 333_000, 999_000))


LEGS = (Leg("Y", Side.BUY, 450_000, 10 * SH), Leg("N", Side.BUY, 530_000, 10 * SH))


def test_a_balanced_set_needs_nothing():
    assert repair({"Y": 10 * SH, "N": 10 * SH}, LEGS, {}, P, False, LOT) == ([], True)
    assert repair({"Y": 0, "N": 0}, LEGS, {}, P, False, LOT) == ([], True)  # both killed: nothing happened


def test_a_broken_bought_set_is_completed_within_the_loss_bound():
    tops = {"Y": top("Y", 440_000, 460_000, held=10 * SH), "N": top("N", 520_000, 545_000)}
    takes, balanced = repair({"Y": 10 * SH, "N": 0}, LEGS, tops, Params(max_leg_loss=20_000), False, LOT)
    assert not balanced and len(takes) == 1
    t = takes[0]
    assert (t.token_id, t.side, t.price, t.order_type) == ("N", Side.BUY, 545_000, OrderType.FAK)
    assert t.amount * UNIT // t.price >= 10 * SH and t.amount % 10_000 == 0


def test_else_it_is_unwound_and_after_the_timeout_at_any_price():
    tops = {"Y": top("Y", 440_000, 460_000, held=10 * SH), "N": top("N", 560_000, 600_000)}  # N moved away
    takes, _ = repair({"Y": 10 * SH, "N": 0}, LEGS, tops, Params(max_leg_loss=20_000), False, LOT)
    assert [(t.token_id, t.side, t.price, t.amount) for t in takes] == [("Y", Side.SELL, 440_000, 10 * SH)]
    crashed = {"Y": top("Y", 300_000, 320_000, held=10 * SH), "N": top("N", 700_000, 720_000)}
    assert repair({"Y": 10 * SH, "N": 0}, LEGS, crashed, Params(max_leg_loss=20_000), False, LOT) == ([], False)
    takes, _ = repair({"Y": 10 * SH, "N": 0}, LEGS, crashed, Params(max_leg_loss=20_000), True, LOT)
    assert [(t.token_id, t.side, t.price, t.amount) for t in takes] == [("Y", Side.SELL, 10_000, 10 * SH)]


def test_a_broken_sold_set_sells_the_unsold_leg_first():
    legs = (Leg("Y", Side.SELL, 480_000, 10 * SH), Leg("N", Side.SELL, 530_000, 10 * SH))
    tops = {"Y": top("Y", 470_000, 490_000, held=0), "N": top("N", 520_000, 540_000, held=10 * SH)}
    takes, _ = repair({"Y": -10 * SH, "N": 0}, legs, tops, Params(max_leg_loss=20_000), False, LOT)
    assert [(t.token_id, t.side, t.price) for t in takes] == [("N", Side.SELL, 520_000)]


def book_event(token: str, bid: int, ask: int, size: int = 100 * SH) -> BookEvent:
    return BookEvent(market="0xm", asset_id=token, timestamp="1000",
                     bids=[Level(price=format_units(bid), size=format_units(size))],
                     asks=[Level(price=format_units(ask), size=format_units(size))])


def one_set() -> tuple[ComplementArbitrage, StrategyContext, Portfolio, SimClock]:
    """The strategy on one binary market whose asks sum to 0.98: a set to buy at once."""
    market = MarketInfo("0xm", ("Y", "N"))
    books = Books()
    for t in market.tokens:
        books.add(t, tick=10_000, market="0xm")
    books.apply_event(book_event("Y", 400_000, 450_000))
    books.apply_event(book_event("N", 500_000, 530_000))
    pf, clock = Portfolio(), SimClock(1000.0)
    ctx = StrategyContext(books=books, portfolio=pf, clock=clock, markets=MarketIndex([market]),
                          params=P, name="arb")
    return ComplementArbitrage(P), ctx, pf, clock


def test_the_strategy_waits_for_the_legs_then_repairs_what_one_leg_left():
    strategy, ctx, pf, clock = one_set()
    sent = strategy.on_start(ctx)
    assert [(t.token_id, t.side) for t in sent] == [("Y", Side.BUY), ("N", Side.BUY)]
    pf.apply(Fill("t1", "o1", "Y", Side.BUY, 450_000, 50 * SH, is_maker=False))  # only YES filled
    assert strategy.on_book(ctx, "Y") == []  # nothing new while the set is pending
    clock.set(1000.5)
    assert strategy.on_timer(ctx) == []  # before settle_s: the legs' results may still come
    clock.set(1002.0)
    repair_orders = strategy.on_timer(ctx)
    assert [(t.token_id, t.side, t.order_type) for t in repair_orders] == [("N", Side.BUY, OrderType.FAK)]
    pf.apply(Fill("t2", "o2", "N", Side.BUY, 530_000, 50 * SH, is_maker=False))
    clock.set(1004.0)
    strategy.on_timer(ctx)
    est = strategy.estimates()["Y"]
    assert est["sets"] == 1 and est["broken"] == 1 and est["repairs"] == 1 and est["pending"] == 0


def test_synthetic_backtest_trades_mispriced_sets_and_ends_balanced(tmp_path: Path):
    syn = SyntheticConfig(seed=4, duration_s=900.0, complement_gap_sd=0.03, half_spread_ticks=1)
    summary, out = backtest(tmp_path, PATH, {"max_size": 20, "min_size": 5}, synthetic=syn)
    market = SyntheticMarket(syn).markets[0]
    est = summary.estimates[market.tokens[0]]
    assert est["sets"] >= 3 and summary.fills >= 6
    check_accounts(summary, out)
    yes, no = (summary.final_position[t] for t in market.tokens)
    assert abs(yes - no) <= LOT  # every set it took is whole


def test_synthetic_backtest_pnl_is_the_sets_edge_plus_the_rest(tmp_path: Path):
    """The sets held at the end are valued at 1 each, not at their legs' mids: the unrealized PnL
    is exactly their edge (every share held is in a set), the same for any mids, and the PnL is
    realized + that edge - fees, with each figure rebuilt from the fills."""
    syn = SyntheticConfig(seed=4, duration_s=900.0, complement_gap_sd=0.03, half_spread_ticks=1)
    summary, out = backtest(tmp_path, PATH, {"max_size": 20, "min_size": 5}, synthetic=syn)
    market = SyntheticMarket(syn).markets[0]
    yes, no = (summary.final_position[t] for t in market.tokens)
    assert yes == no > 0 and summary.estimates[market.tokens[0]]["edge_usdc"] > 0
    pf = fills_of(f.as_fill() for f in read_results(out).fills)
    [held] = complete_sets(pf.positions(), [market])
    assert (summary.sets, summary.sets_value, summary.sets_edge) == (yes, yes, held.edge)
    assert (summary.mergeable, summary.mergeable_cost) == (yes, held.cost)
    assert summary.realized == pf.realized_pnl and summary.fees == pf.fees
    assert summary.unrealized == summary.sets_edge
    assert summary.pnl == summary.realized + summary.sets_edge - summary.fees
    pf.value_sets(set_groups([market]))
    for mids in ({}, dict.fromkeys(market.tokens, 10_000), dict(zip(market.tokens, (900_000, 300_000)))):
        assert pf.unrealized_pnl(mids) == summary.sets_edge
    rows = dict(summary_rows(summary))
    assert rows["edge realized on the sets (USDC)"] == format_units(summary.sets_edge)


def test_a_set_bought_under_one_is_no_loss_for_the_kill_switch():
    """Legs whose mids fell apart would show a loss past the limit; the set they form is worth 1
    whatever the mids, so the engine's total PnL shows its edge and nothing halts."""
    from bot.engine.assembly import Signing, build_engine, simulated_throttles
    from bot.ops.config import BotConfig
    from bot.risk import RiskLimits, TradingState

    market = MarketInfo("0x" + "ab" * 32, ("Y", "N"))
    clock = SimClock(1000.0)
    eng = build_engine(ComplementArbitrage(P), [market], clock=clock, signing=Signing(None, 1),
                       throttles=simulated_throttles(BotConfig().venue.limits, clock),
                       risk=RiskLimits(max_total_loss=SH, stale_halt_s=None))
    eng.portfolio.seed("Y", 10 * SH, 450_000)
    eng.portfolio.seed("N", 10 * SH, 520_000)  # 10 sets at 0.97
    marks = {"Y": 100_000, "N": 500_000}  # leg by leg: 10 * (0.10 - 0.45 + 0.50 - 0.52) = -3.70
    assert eng.portfolio.total_pnl(marks) == 300_000
    assert not [a for a in eng._judge_losses(clock.now(), marks) if a] and eng.state is TradingState.ACTIVE
    eng.portfolio.seed("N", 5 * SH, 520_000)  # 5 sets, and 5 Y at their mid: -1.75 + 0.15
    assert eng.portfolio.total_pnl(marks) == -1_600_000
    eng._judge_losses(clock.now(), marks)
    assert eng.state is TradingState.HALTED


def test_sample_recording_has_no_mispriced_set(tmp_path: Path):
    """The sample's books mirror each other (as the venue's do): a YES+NO set always costs more
    than 1 to buy and brings less than 1 to sell, so nothing may be sent."""
    summary, _ = backtest(tmp_path, PATH, {})
    assert summary.events > 2000 and summary.orders_sent == 0 and summary.fills == 0


def test_the_legs_leave_as_fok_orders_in_one_batch():
    """Through the engine, risk and router: both legs of a set are one placement request."""
    from bot.engine.assembly import Signing, build_engine, simulated_throttles
    from bot.execution.protocol import SendPlaces
    from bot.ops.config import BotConfig
    from bot.venue.stream import ConnectionEvent

    market = MarketInfo("0x" + "ab" * 32, ("Y", "N"))
    clock = SimClock(1000.0)
    eng = build_engine(ComplementArbitrage(P), [market], clock=clock, signing=Signing(None, 1),
                       throttles=simulated_throttles(BotConfig().venue.limits, clock))
    eng.start()
    eng.on_connection(ConnectionEvent(kind="connected", channel="market", shard=0, attempt=0, at=clock.now(),
                                      subscriptions=market.tokens))
    out = eng.on_market([book_event("Y", 400_000, 450_000)])
    assert not [a for a in out if isinstance(a, SendPlaces)]  # one leg's book alone: nothing
    out = eng.on_market([book_event("N", 500_000, 530_000)])
    batches = [a.batch.orders for a in out if isinstance(a, SendPlaces)]
    assert len(batches) == 1
    assert [(o.token_id, o.side, o.order_type) for o in batches[0]] == [("Y", Side.BUY, OrderType.FOK),
                                                                       ("N", Side.BUY, OrderType.FOK)]


def test_a_sets_legs_share_one_group_and_a_set_risk_cuts_goes_not_at_all():
    """The legs of a set are marked as one (the router sends them together); when risk refuses
    one leg (here a position limit on N), no leg of the set is sent."""
    from bot.engine.assembly import Signing, build_engine, simulated_throttles
    from bot.execution.protocol import SendPlaces
    from bot.ops.config import BotConfig
    from bot.risk import RiskLimits
    from bot.venue.stream import ConnectionEvent

    market = MarketInfo("0x" + "ab" * 32, ("Y", "N"))
    # 1,000 N held: a position limit of 500 shares refuses the N leg alone (the Y leg passes it)
    limits = RiskLimits(max_position=500 * UNIT, max_orders_per_window=None, max_open_orders=None,
                        max_market_notional=None, max_event_notional=None, max_net_exposure=None,
                        max_event_loss=None)
    for held, sent in ((0, 2), (1_000 * UNIT, 0)):
        clock = SimClock(1000.0)
        eng = build_engine(ComplementArbitrage(P), [market], clock=clock, signing=Signing(None, 1),
                           throttles=simulated_throttles(BotConfig().venue.limits, clock), risk=limits)
        if held:
            eng.portfolio.seed("N", held, 400_000)
        eng.start()
        eng.on_connection(ConnectionEvent(kind="connected", channel="market", shard=0, attempt=0, at=clock.now(),
                                          subscriptions=market.tokens))
        eng.on_market([book_event("Y", 400_000, 450_000)])
        out = eng.on_market([book_event("N", 500_000, 530_000)])
        orders = [o for a in out if isinstance(a, SendPlaces) for o in a.batch.orders]
        assert len(orders) == sent
        assert eng.stats.risk_rejections == (1 if held else 0)  # one leg refused, the other dropped with it
    takes = [leg.take(group="s#1") for leg in (Leg("Y", Side.BUY, 450_000, 10 * UNIT),
                                               Leg("N", Side.BUY, 530_000, 10 * UNIT))]
    assert {t.group for t in takes} == {"s#1"}


def test_an_event_of_more_outcomes_than_one_post_carries_is_no_set_to_trade():
    ms = [MarketInfo(f"0x{i:064x}", (f"Y{i}", f"N{i}"), neg_risk=True, event_id="E") for i in range(16)]
    assert [g.key for g in groups(ms, P) if g.key.startswith("event:")] == []
    assert too_large(ms) == [("E", 16)]
    assert [g.key for g in groups(ms[:15], P) if g.key.startswith("event:")] == ["event:E"]


def test_a_set_nothing_evens_out_is_left_as_it_is_after_the_timeout_and_trades_again():
    """Past ``leg_timeout_s``, a set whose repairs keep failing (here: the venue never fills the
    repair, as when no order can carry the difference) is left as it is after MAX_REPAIRS, said
    and counted, and its next opportunity is taken."""
    from structlog.testing import capture_logs

    from strategies.complement_arb import MAX_REPAIRS

    with capture_logs() as logs:  # the strategy's logger is bound inside (structlog caches it on first use)
        strategy, ctx, pf, clock = one_set()
        assert len(strategy.on_start(ctx)) == 2
        pf.apply(Fill("t1", "o1", "Y", Side.BUY, 450_000, 50 * SH, is_maker=False))  # only YES filled
        repairs = 0
        while clock.now() < 1000.0 + 3600:
            clock.set(clock.now() + 1.0)
            out = strategy.on_timer(ctx)
            if out and all(t.order_type is OrderType.FAK for t in out):
                repairs += 1  # never filled
            elif out:
                break  # a new opportunity on the set: it is no longer pending
    est = strategy.estimates()["Y"]
    assert est["uneven"] == 1 and repairs == MAX_REPAIRS and est["sets"] == 2
    assert clock.now() >= 1000.0 + P.leg_timeout_s
    [line] = [e for e in logs if e["event"] == "complement_set_left_uneven"]
    assert line["repairs"] == MAX_REPAIRS and line["got"] == {"Y": 50 * SH, "N": 0}

"""Complete sets: a market's YES+NO, a neg-risk event's YES (or NO) of every market, held and
valued at what they pay; the remainder marked at the mids; the summary and report rows."""

from __future__ import annotations

import msgspec

from bot.core.events import Fill
from bot.core.markets import MarketInfo
from bot.portfolio import Portfolio, SetGroup, complete_sets, set_groups, totals
from bot.portfolio.sets import NO, PAIR, YES, unrealized_e12
from bot.results.folder import Summary
from bot.results.report import summary_rows
from bot.venue.enums import Side
from bot.venue.units import UNIT

SH = UNIT
_n = iter(range(10**6))
A = MarketInfo("0xa", ("AY", "AN"), neg_risk=True, event_id="E")
B = MarketInfo("0xb", ("BY", "BN"), neg_risk=True, event_id="E")
C = MarketInfo("0xc", ("CY", "CN"), neg_risk=True, event_id="E")
M = MarketInfo("0xm", ("Y", "N"))


def buy(pf: Portfolio, token: str, price: int, size: int) -> None:
    pf.apply(Fill(f"t{next(_n)}", "o", token, Side.BUY, price, size))


def sell(pf: Portfolio, token: str, price: int, size: int) -> None:
    pf.apply(Fill(f"t{next(_n)}", "o", token, Side.SELL, price, size))


def test_groups_are_pairs_then_each_events_yes_and_no_sets():
    gs = set_groups([M, C, A, B])
    assert [(g.key, g.kind, g.tokens, g.payout) for g in gs] == [
        ("0xm", PAIR, ("Y", "N"), 1), ("0xc", PAIR, ("CY", "CN"), 1), ("0xa", PAIR, ("AY", "AN"), 1),
        ("0xb", PAIR, ("BY", "BN"), 1),
        ("E", YES, ("AY", "BY", "CY"), 1), ("E", NO, ("AN", "BN", "CN"), 2),  # 3 markets: 2 NO pay
    ]
    assert [g.kind for g in set_groups([M, A, B], events=False)] == [PAIR] * 3
    assert [g.kind for g in set_groups([A])] == [PAIR]  # one market of an event is no event set
    assert gs[0].mergeable and not gs[4].mergeable


def test_a_pair_bought_under_one_shows_its_edge_whatever_the_mids():
    pf = Portfolio()
    pf.value_sets(set_groups([M]))
    buy(pf, "Y", 450_000, 10 * SH)
    buy(pf, "N", 520_000, 14 * SH)  # 10 pairs at 0.97, 4 NO beyond them
    [held] = pf.complete_sets()
    assert (held.sets, held.value, held.cost, held.edge) == (10 * SH, 10 * SH, 9_700_000, 300_000)
    for my, mn in ((100_000, 100_000), (990_000, 10_000), (500_000, 500_000)):
        # the pairs: +0.30 whatever the mids; the 4 NO beyond them at the NO mid
        assert pf.unrealized_pnl({"Y": my, "N": mn}) == 300_000 + 4 * (mn - 520_000)
    assert pf.unrealized_pnl({}) == 300_000  # a set needs no mark; an unmarked remainder counts 0
    assert pf.total_pnl({"Y": 10_000, "N": 10_000}) == 300_000 - 2_040_000


def test_without_set_groups_every_token_is_marked_at_its_mid():
    pf = Portfolio()
    buy(pf, "Y", 450_000, 10 * SH)
    buy(pf, "N", 520_000, 10 * SH)
    assert pf.complete_sets() == []
    assert pf.unrealized_pnl({"Y": 400_000, "N": 500_000}) == -700_000


def test_neg_risk_yes_set_from_what_the_pairs_leave():
    pf = Portfolio()
    pf.value_sets(set_groups([A, B, C]))
    for t, price in (("AY", 300_000), ("BY", 300_000), ("CY", 350_000)):
        buy(pf, t, price, 20 * SH)  # a YES set of the event at 0.95
    buy(pf, "AN", 600_000, 5 * SH)  # 5 A pairs at 0.90 (their YES at A's average 0.30)
    held = {(h.group.key, h.group.kind): h for h in pf.complete_sets()}
    assert set(held) == {("0xa", PAIR), ("E", YES)}
    pair, yes = held["0xa", PAIR], held["E", YES]
    assert (pair.sets, pair.cost, pair.edge) == (5 * SH, 4_500_000, 500_000)
    assert (yes.sets, yes.cost, yes.edge) == (15 * SH, 14_250_000, 750_000)  # 15 of each YES left
    t = totals(held.values())
    assert (t.sets, t.value, t.edge, t.mergeable, t.mergeable_cost) == (20 * SH, 20 * SH, 1_250_000, 5 * SH, 4_500_000)
    # A's shares are all in sets; 5 BY and 5 CY are left over, at their mids
    marks = {"AY": 10_000, "BY": 990_000, "CY": 500_000, "AN": 10_000}
    assert pf.unrealized_pnl(marks) == 1_250_000 + 5 * (990_000 - 300_000) + 5 * (500_000 - 350_000)


def test_a_sold_yes_set_leaves_no_sets_worth_k_minus_one():
    """A neg-risk event of 3 markets held whole (a pair of each), then a YES set sold at bids
    adding up to 1.02: what is left pays exactly as much whatever happens, and the PnL moves
    by exactly the edge of the sale, whatever the mids."""
    pf = Portfolio()
    pf.value_sets(set_groups([A, B, C]))
    mids = {"AY": 200_000, "AN": 800_000, "BY": 300_000, "BN": 700_000, "CY": 500_000, "CN": 500_000}
    for t, mid in mids.items():
        pf.seed(t, 100 * SH, mid)
    before = pf.total_pnl(mids)
    assert before == 0 and pf.unrealized_pnl({}) == 0
    for t, bid in (("AY", 210_000), ("BY", 300_000), ("CY", 510_000)):
        sell(pf, t, bid, 10 * SH)
    held = {(h.group.key, h.group.kind): h.sets for h in pf.complete_sets()}
    assert held == {("0xa", PAIR): 90 * SH, ("0xb", PAIR): 90 * SH, ("0xc", PAIR): 90 * SH, ("E", NO): 10 * SH}
    assert totals(pf.complete_sets()).value == 270 * SH + 20 * SH
    for marks in (mids, {}, {t: 10_000 for t in mids}):
        assert pf.total_pnl(marks) == before + 200_000  # 10 sets sold 0.02 over 1


def test_complete_sets_reads_positions_and_markets():
    pf = Portfolio()
    buy(pf, "Y", 333_333, 3 * SH)
    buy(pf, "N", 600_000, 2 * SH)
    [held] = complete_sets(pf.positions(), [M])
    # the pair's YES cost is two thirds of the YES cost: floored in micro-units times UNIT
    assert held.leg_costs_e12 == (333_333 * 3 * SH * 2 // 3, 600_000 * 2 * SH)
    assert held.edge == 2 * SH - (666_666 + 1_200_000)


def test_negative_sizes_form_no_set():
    pf = Portfolio()
    pf.seed("Y", -5 * SH, 500_000)
    buy(pf, "N", 500_000, 5 * SH)
    assert complete_sets(pf.positions(), [M]) == []
    assert unrealized_e12(pf.positions(), set_groups([M]), {}) == (0, 0)


def test_old_summaries_load_and_set_rows_show_when_there_are_sets():
    old = {f: v for f, v in msgspec.structs.asdict(_summary()).items()
           if f not in ("sets", "sets_value", "sets_edge", "mergeable", "mergeable_cost")}
    s = msgspec.json.decode(msgspec.json.encode(old), type=Summary)
    assert (s.sets, s.sets_value, s.sets_edge, s.mergeable, s.mergeable_cost) == (0, 0, 0, 0, 0)
    assert not [r for r in summary_rows(s) if "set" in r[0] or "merge" in r[0]]
    s = _summary(sets=30 * SH, sets_value=30 * SH, sets_edge=1_500_000, mergeable=10 * SH, mergeable_cost=9_800_000)
    rows = dict(summary_rows(s))
    assert rows["complete sets (shares)"] == "30"
    assert rows["locked value of the sets (USDC)"] == "30"
    assert rows["edge realized on the sets (USDC)"] == "1.5"
    assert rows["mergeable YES+NO pairs (shares)"] == "10"
    assert rows["capital locked in mergeable pairs (USDC)"] == "9.8"


def _summary(**kw) -> Summary:
    return Summary(mode="backtest", events=0, seconds=0.0, wall_seconds=0.0, events_per_s=0.0, orders_sent=0,
                   orders_rejected=0, cancels_sent=0, fills=0, maker_fills=0, volume=0, notional=0, fill_rate=0.0,
                   maker_share=0.0, realized=0, unrealized=0, fees=0, pnl=0, max_drawdown=0, inventory={},
                   final_position={}, **kw)


def test_set_group_of_unknown_tokens_holds_nothing():
    g = SetGroup("x", PAIR, ("P", "Q"))
    pf = Portfolio()
    pf.value_sets((g,))
    buy(pf, "P", 500_000, SH)
    assert pf.complete_sets() == [] and pf.unrealized_pnl({"P": 600_000}) == 100_000


def test_a_sweep_shows_the_set_figures_as_usdc_and_shares():
    from bot.backtest.sweep import mean_text

    assert [mean_text(f, 1_500_000) for f in ("sets", "sets_value", "sets_edge", "mergeable", "mergeable_cost")] \
        == ["1.5"] * 5


def test_the_engine_values_an_events_sets_only_for_a_strategy_that_takes_its_events_whole():
    from bot.core.clock import SimClock
    from bot.engine.assembly import Signing, build_engine, simulated_throttles
    from bot.ops.config import BotConfig
    from bot.strategy import Strategy
    from bot.strategy_set import StrategySet
    from strategies.complement_arb import ComplementArbitrage, Params

    def kinds(strategy) -> set[str]:
        clock = SimClock(1000.0)
        eng = build_engine(strategy, [A, B], clock=clock, signing=Signing(None, 1),
                           throttles=simulated_throttles(BotConfig().venue.limits, clock))
        eng.portfolio.seed("AY", 5 * SH, 400_000)
        eng.portfolio.seed("BY", 5 * SH, 500_000)
        return {h.group.kind for h in eng.portfolio.complete_sets()}

    assert kinds(ComplementArbitrage()) == {YES}
    assert kinds(ComplementArbitrage(Params(neg_risk=False))) == set()
    assert kinds(Strategy()) == set()  # another strategy may trade a part of an event: its YES are no set
    both = StrategySet([("arb", ComplementArbitrage(), (A.condition_id, B.condition_id), None)])
    assert both.whole_events and kinds(both) == {YES}

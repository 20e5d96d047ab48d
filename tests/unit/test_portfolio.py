"""Portfolio: positions, PnL, netting across complements and neg-risk events, drift, daily PnL."""

from __future__ import annotations

from bot.core.clock import SimClock
from bot.core.events import Fill, FillReversal
from bot.core.markets import MarketIndex, MarketInfo
from bot.portfolio import (
    DailyPnl, Drift, Portfolio, event_markets, marks_from_books, net_market, outcome_payoffs,
    snapshot, worst_case_pnl,
)
from bot.portfolio.pnl import DayStart
from bot.venue.enums import Side
from bot.venue.units import UNIT

SH = UNIT
_n = iter(range(10**6))


def fill(token, side, price, size, fee=0):
    return Fill(f"t{next(_n)}", "o", token, side, price, size, fee=fee)


def test_average_price_and_realized_pnl():
    pf = Portfolio()
    pf.apply(fill("Y", Side.BUY, 400_000, 10 * SH))
    pf.apply(fill("Y", Side.BUY, 600_000, 10 * SH))
    p = pf.position("Y")
    assert p.size == 20 * SH and p.avg_price == 500_000 and p.cost == 10 * SH
    pf.apply(fill("Y", Side.SELL, 700_000, 5 * SH, fee=20_000))
    p = pf.position("Y")
    assert p.size == 15 * SH and p.avg_price == 500_000
    assert pf.realized_pnl == 1 * SH  # 5 * (0.70 - 0.50)
    assert pf.fees == 20_000
    assert pf.unrealized_pnl({"Y": 550_000}) == 750_000
    assert pf.total_pnl({"Y": 550_000}) == 1 * SH + 750_000 - 20_000
    assert pf.cash == -10 * SH + 3_500_000 - 20_000


def test_thirds_stay_exact():
    pf = Portfolio()
    pf.apply(fill("Y", Side.BUY, 330_000, 3 * SH))
    pf.apply(fill("Y", Side.BUY, 340_000, 3 * SH))  # avg 0.335
    for _ in range(3):
        pf.apply(fill("Y", Side.SELL, 340_000, 2 * SH))
    p = pf.position("Y")
    assert p.size == 0 and p.cost_e12 == 0
    assert p.realized_e12 == 3 * SH * 10_000  # exactly 0.03 USDC, no unit lost to rounding
    assert pf.positions()["Y"].realized_pnl == 30_000


def test_crossing_through_zero_opens_the_other_way():
    pf = Portfolio()
    pf.apply(fill("Y", Side.BUY, 500_000, 5 * SH))
    pf.apply(fill("Y", Side.SELL, 600_000, 8 * SH))
    p = pf.position("Y")
    assert p.size == -3 * SH and p.avg_price == 600_000 and pf.realized_pnl == 500_000


def test_fills_are_idempotent_and_reversals_exact():
    pf = Portfolio()
    a = fill("Y", Side.BUY, 500_000, 10 * SH)
    b = fill("Y", Side.SELL, 550_000, 4 * SH, fee=1_000)
    assert pf.apply(a) and not pf.apply(a)
    before = pf.positions()
    assert pf.apply(b)
    assert pf.apply(FillReversal(b)) and not pf.apply(FillReversal(b))
    assert pf.positions() == before
    assert not pf.apply(b)  # a reversed fill never comes back
    assert pf.apply(FillReversal(a))
    assert pf.positions() == {} and pf.realized_pnl == 0


def test_reversal_before_fill_blocks_the_fill():
    pf = Portfolio()
    a = fill("Y", Side.BUY, 500_000, 10 * SH)
    assert not pf.apply(FillReversal(a))
    assert not pf.apply(a)
    assert pf.size("Y") == 0


def test_seed_then_trade():
    pf = Portfolio()
    pf.seed("Y", 10 * SH, avg_price=400_000)
    pf.apply(fill("Y", Side.SELL, 500_000, 10 * SH))
    assert pf.size("Y") == 0 and pf.realized_pnl == 1 * SH


def test_complement_netting():
    m = MarketInfo("c", ("Y", "N"))
    n = net_market(m, {"Y": 30 * SH, "N": 12 * SH})
    assert n.mergeable == 12 * SH and n.locked_value == 12 * SH and n.exposure == 18 * SH
    assert net_market(m, {}).mergeable == 0


def test_neg_risk_worst_case():
    markets = MarketIndex([
        MarketInfo("a", ("Ya", "Na"), neg_risk=True, event_id="E"),
        MarketInfo("b", ("Yb", "Nb"), neg_risk=True, event_id="E"),
        MarketInfo("x", ("Yx", "Nx")),
    ])
    ev = event_markets(markets, "E")
    assert [m.condition_id for m in ev] == ["a", "b"]
    sizes = {"Ya": 10 * SH, "Nb": 10 * SH}
    # a YES: Ya pays 10, Nb pays 10; b YES: nothing; none YES: Nb pays 10
    assert outcome_payoffs(ev, sizes, neg_risk=True) == [20 * SH, 0, 10 * SH]
    pf = Portfolio()
    pf.apply(fill("Ya", Side.BUY, 300_000, 10 * SH))
    pf.apply(fill("Nb", Side.BUY, 600_000, 10 * SH))
    assert worst_case_pnl(ev, pf.positions(), neg_risk=True) == -9 * SH
    pf.apply(fill("Yx", Side.BUY, 500_000, 4 * SH))
    pf.apply(fill("Nx", Side.BUY, 400_000, 4 * SH))
    x = markets.by_condition("x")
    assert worst_case_pnl([x], pf.positions(), neg_risk=False) == 400_000  # 4 pairs locked at 0.90


def test_reconcile_reports_drift():
    pf = Portfolio()
    pf.apply(fill("A", Side.BUY, 500_000, 10 * SH))
    pf.apply(fill("B", Side.BUY, 500_000, 500_000))
    pf.apply(fill("C", Side.BUY, 500_000, 5 * SH))
    drifts = pf.reconcile({"A": 10 * SH, "C": 4 * SH, "D": 2 * SH}, size_threshold=1 * SH)
    assert drifts == [Drift("C", 5 * SH, 4 * SH), Drift("D", 0, 2 * SH)]
    assert drifts[0].diff == -SH
    assert pf.reconcile({"A": 10 * SH, "C": 4 * SH, "D": 2 * SH}, tolerance=2 * SH, size_threshold=SH) == []
    assert Drift("B", 500_000, 0) in pf.reconcile({"A": 10 * SH, "C": 5 * SH})


def test_daily_pnl_resets_at_utc_midnight():
    clock = SimClock(86_400 * 100 + 3_600)
    d = DailyPnl()
    assert d.observe(clock.now(), 5 * SH) == 0  # a fresh run starts the day at 0
    clock.advance(3_600)
    assert d.observe(clock.now(), 3 * SH) == -2 * SH
    clock.set(86_400 * 101 - 1)
    assert d.observe(clock.now(), 4 * SH) == -1 * SH
    clock.advance(2)  # past midnight
    assert d.observe(clock.now(), 1 * SH) == -3 * SH  # against the last total of yesterday
    assert d.baseline == 4 * SH


def test_daily_pnl_resumes_a_journaled_start_of_the_same_day():
    day = 100
    noon = 86_400 * day + 43_200
    starts: list[DayStart] = []
    d = DailyPnl.resume(DayStart(day, 5 * SH), noon, on_new_day=starts.append)
    assert d.start == DayStart(day, 5 * SH)
    assert d.observe(noon, 2 * SH) == -3 * SH  # the morning's loss still counts after the restart
    assert d.observe(noon + 60, 1 * SH) == -4 * SH
    assert starts == []  # nothing new to journal: the day's start is the journaled one
    assert d.observe(86_400 * (day + 1) + 1, 3 * SH) == 2 * SH  # midnight: from the last total seen
    assert starts == [DayStart(day + 1, 1 * SH)]


def test_daily_pnl_starts_a_fresh_day_from_a_stale_start():
    day = 100
    starts: list[DayStart] = []
    d = DailyPnl.resume(DayStart(day - 1, 5 * SH), 86_400 * day + 10, on_new_day=starts.append)
    assert d.start is None
    assert d.observe(86_400 * day + 10, -7 * SH) == 0  # yesterday's start does not count today
    assert starts == [DayStart(day, -7 * SH)] and d.baseline == -7 * SH
    assert d.observe(86_400 * day + 20, -8 * SH) == -1 * SH


def test_daily_pnl_start_for_a_day_the_run_never_sees_counts_from_the_first_total():
    # journaled for day 100, resumed just before midnight, first observed on day 101: the run saw
    # no total on day 100, so the new day starts from the first total (not from 0)
    starts: list[DayStart] = []
    d = DailyPnl(DayStart(100, 5 * SH), on_new_day=starts.append)
    assert d.observe(86_400 * 101 + 1, 9 * SH) == 0
    assert starts == [DayStart(101, 9 * SH)]


def test_daily_pnl_journals_every_new_start():
    starts: list[DayStart] = []
    d = DailyPnl(on_new_day=starts.append)
    assert d.start is None
    d.observe(86_400 * 100 + 5, 2 * SH)
    d.observe(86_400 * 100 + 6, 4 * SH)
    d.observe(86_400 * 102 + 7, 1 * SH)  # two midnights while asleep: one new start
    assert starts == [DayStart(100, 2 * SH), DayStart(102, 4 * SH)]
    assert d.start == DayStart(102, 4 * SH)


def test_snapshot_and_marks():
    class B:
        def __init__(self, t, mid):
            self.token_id, self.mid = t, mid

    marks = marks_from_books([B("Y", 600_000), B("N", None)])
    assert marks == {"Y": 600_000}
    pf = Portfolio()
    pf.apply(fill("Y", Side.BUY, 500_000, 10 * SH, fee=10_000))
    s = snapshot(pf, marks, 0.0, DailyPnl())
    assert (s.realized, s.unrealized, s.fees, s.total, s.daily) == (0, 1 * SH, 10_000, 990_000, 0)

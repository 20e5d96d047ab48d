"""The report's statistics against values worked out by hand: markouts, queue waits, fill rate,
drawdown (on the scripted run of ``tests.results_fixture`` and on tiny cases)."""

from __future__ import annotations


import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.results import stats
from bot.results.read import FillRecord, OrderChange, RunOrder, Sample, TokenSample, read_results
from bot.execution.orders import OrderState as S
from bot.venue.enums import Side, TradeStatus
from tests.results_fixture import write_results


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return read_results(write_results(tmp_path_factory.mktemp("run") / "results"))


def fill(side: Side, ts: float, size: int = 1_000_000, price: int = 500_000, maker: bool = True,
         order: str = "o", trade: str = "t") -> FillRecord:
    return FillRecord(trade, order, "tok", side, price, size, 0, maker, TradeStatus.MATCHED, ts)


def mids(*points: tuple[float, int, int]) -> list[Sample]:
    return [Sample(t, 0, 0, tokens={"tok": TokenSample(bid=b, ask=a)}) for t, b, a in points]


def test_markouts_of_the_scripted_run_by_hand(run):
    # o1 buys 10 YES @ .50 at 38.5: mid .51 before; .49 at 40 (1 s), 49 (10 s); .50 at 99 (60 s)
    # o4 buys 5 NO @ .52 at 60.6: NO mid .51 at 60, 62, 71; the run ends before 120.6 (no 60 s)
    # o3 sells 4 YES at 50.5 (mid .49 at 50, 52, 61; .50 at 111) and 6 at 70.5 (.49 at 70, 72; .50 at 81)
    means = {(m.side, m.horizon): (m.mean, m.fills) for m in stats.markout_means(stats.markouts(run.fills, run.series))}
    assert means[(Side.BUY, 1.0)] == (pytest.approx((10 * -20_000 + 5 * 0) / 15), 2)
    assert means[(Side.BUY, 10.0)] == (pytest.approx(-40_000 / 3), 2)
    assert means[(Side.BUY, 60.0)] == (-10_000, 1)
    assert means[(Side.SELL, 1.0)] == (0, 2)
    assert means[(Side.SELL, 10.0)] == (pytest.approx((4 * 0 + 6 * -10_000) / 10), 2)
    assert means[(Side.SELL, 60.0)] == (-10_000, 1)


def test_markout_is_signed_for_our_side_and_needs_a_mid_on_both_ends():
    series = mids((0, 480_000, 500_000), (1, 500_000, 520_000), (2, 460_000, 480_000))
    buy, sell = fill(Side.BUY, 0.5), fill(Side.SELL, 0.5)
    [mb, ms] = stats.markouts([buy, sell], series, horizons=(0.5, 1.5, 5.0))
    assert mb.moves == (20_000, -20_000, None)  # mid .49 -> .51 at 1 s, -> .47 at 2 s; none by 5 s
    assert ms.moves == (-20_000, 20_000, None)
    # a mid older than the shortest horizon is no base; a later one past ts + 2h is no end
    stale = mids((0, 480_000, 500_000), (10, 500_000, 520_000))
    assert stats.markouts([fill(Side.BUY, 5.0)], stale, horizons=(1.0,))[0].moves == (None,)
    assert stats.markouts([fill(Side.BUY, 0.5)], stale, horizons=(1.0,))[0].moves == (None,)


def test_markout_means_weigh_fills_by_size():
    series = mids((0, 480_000, 500_000), (1, 500_000, 520_000))
    marks = stats.markouts([fill(Side.BUY, 0.0, size=3_000_000), fill(Side.SELL, 0.0, size=1_000_000)], series,
                           horizons=(1.0,))
    means = stats.markout_means(marks + stats.markouts([fill(Side.BUY, 0.0, size=1_000_000, price=1)],
                                                       mids((0, 500_000, 500_000), (1, 500_000, 500_000)),
                                                       horizons=(1.0,)), horizons=(1.0,))
    assert [(m.side, m.mean, m.fills) for m in means] == [(Side.BUY, 15_000, 2), (Side.SELL, -20_000, 1)]


def test_queue_waits_of_the_scripted_run_by_hand(run):
    # o1: LIVE 1.7, first maker fill 38.5; o3: LIVE 42.7, first maker fill 50.5; o4 only took; o5's
    # fill was reversed, so it never filled
    waits = {o.order_id: w for o, w in stats.queue_waits(run.orders, run.fills)}
    assert waits == {"o1": pytest.approx(36.8), "o3": pytest.approx(7.8)}


def test_queue_wait_counts_from_send_when_live_came_after_the_fill():
    changes = (OrderChange(S.PENDING_SUBMIT, 0, 10.0), OrderChange(S.LIVE, 0, 14.0))
    o = RunOrder("o", "tok", Side.BUY, 500_000, 1_000_000, 10.0, changes)
    assert stats.queue_wait(o, [fill(Side.BUY, 12.0)]) == 2.0  # answer late: from the send
    assert stats.queue_wait(o, [fill(Side.BUY, 20.0), fill(Side.BUY, 16.0, trade="u")]) == 2.0  # from LIVE
    assert stats.queue_wait(o, [fill(Side.BUY, 16.0, maker=False)]) is None  # a take waits in no queue


def test_fill_rate_and_fractions_of_the_scripted_run_by_hand(run):
    # accepted: o1 o2 o3 o4 o5 o7 (o6 rejected); filled: o1, o3, o4 and o5 (its order says FILLED)
    fractions = {o.order_id: x for o, x in stats.fill_fractions(run.orders)}
    assert fractions == {"o1": 1.0, "o2": 0.0, "o3": 1.0, "o4": 1.0, "o5": 1.0, "o7": 0.0}
    assert stats.fill_rate(run.orders) == pytest.approx(4 / 6)
    assert stats.fill_rate([]) == 0.0


def test_an_order_is_accepted_unless_rejected_or_unanswered():
    def order(*states: S, filled: int = 0) -> RunOrder:
        return RunOrder("o", "tok", Side.BUY, 1, 1_000_000, 0.0,
                           tuple(OrderChange(st, filled if st is states[-1] else 0, float(i)) for i, st in enumerate(states)))

    assert stats.accepted(order(S.PENDING_SUBMIT, S.PENDING_CANCEL, S.CANCELED))  # cancelled before its ack
    assert stats.accepted(order(S.PENDING_SUBMIT, S.LIVE))
    assert not stats.accepted(order(S.PENDING_SUBMIT))  # no answer yet
    assert not stats.accepted(order(S.PENDING_SUBMIT, S.UNKNOWN))
    assert stats.accepted(order(S.PENDING_SUBMIT, S.UNKNOWN, filled=1))  # it traded: the venue had it
    assert not stats.accepted(order(S.PENDING_SUBMIT, S.REJECTED))


def test_drawdown_of_the_scripted_run_by_hand(run):
    # total PnL: 0, +0.10 (bought 10 @ .50, mid .51), then -0.10, -0.06, -0.16 (NO bought at .52,
    # mid .51, fee .05), -0.10, -0.15, -0.05 (o5, later reversed), -0.15: max drawdown .10 - (-.16)
    totals = [s.total for s in run.series]
    assert sorted(set(totals)) == [-160_000, -150_000, -100_000, -60_000, -50_000, 0, 100_000]
    assert stats.max_drawdown(totals) == 260_000
    assert stats.drawdown([0, 5, 3, 7, 1, 9]) == [0, 0, 2, 0, 6, 0]
    assert stats.max_drawdown([]) == 0


@given(st.lists(st.integers(-10**12, 10**12), max_size=60))
def test_max_drawdown_is_the_largest_fall_from_an_earlier_high(values):
    brute = max((values[i] - values[j] for i in range(len(values)) for j in range(i, len(values))), default=0)
    assert stats.max_drawdown(values) == brute

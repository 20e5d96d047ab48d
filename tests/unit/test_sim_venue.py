"""The simulated venue of paper trading and backtests: queue, fills, depletion, validation,
latency, expiry, balances and settlement, each answer run through a Reconciler."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.execution.protocol import CancelsAnswered, OrderSeen, PlacesAnswered, TradeSeen
from bot.execution.orders import OrderState, OwnOrder
from bot.sim import results as R
from bot.sim.latency import LatencyConfig
from bot.sim.queue import QueueConfig
from bot.sim.settlement import SettlementConfig
from bot.venue.fees import FeeSchedule, taker_fee
from bot.sim.venue import SimVenueConfig, market_amount
from bot.venue.enums import OrderType, TradeStatus
from bot.venue.models.ws import MarketResolvedEvent
from tests.unit.sim_feed import (
    BUY, C, SELL, M, S, Shell, book, change, limit, take, tick_change, trade,
)

NOW = LatencyConfig(entry=0.0, response=0.0)


def cfg(**kw) -> SimVenueConfig:
    kw.setdefault("latency", NOW)
    return SimVenueConfig(**kw)


def resting_bid(shell: Shell, size: int = 20 * S, ahead: int = 100 * S) -> None:
    """Our bid at 0.50 behind ``ahead`` shares, asks from 0.52."""
    shell.market(book({50 * C: ahead, 49 * C: 100 * S}, {52 * C: 50 * S, 53 * C: 80 * S}), at=1.0)
    shell.place(limit("b1", BUY, 50 * C, size))
    shell.until(1.0)
    assert shell.state("b1") == "LIVE"


# --- queue --------------------------------------------------------------------------------------


def test_a_touch_is_not_a_fill():
    shell = Shell(cfg())
    resting_bid(shell)
    # the ask comes down to our price, then our level shrinks with no trade: touches, no fill
    shell.market(change(("Y", SELL, 50 * C, 30 * S)), at=2.0)
    shell.market(change(("Y", BUY, 50 * C, 60 * S)), at=3.0)
    shell.settle()
    assert shell.trades() == [] and shell.filled("b1") == 0
    assert shell.venue.open_orders()[0].ahead == 60 * S  # risk averse: only the shrink below us
    # an ask strictly below our price crosses it: a seller there would have hit us first
    shell.market(change(("Y", SELL, 49 * C, 7 * S)), at=4.0)
    assert shell.filled("b1") == 7 * S and shell.state("b1") == "PARTIALLY_FILLED"
    # ... and what it sold to us is gone from the venue's view of that level
    assert shell.venue.visible("Y", SELL, 49 * C) == 0


def test_trades_at_our_price_consume_the_queue_then_fill_us():
    shell = Shell(cfg())
    resting_bid(shell, size=20 * S, ahead=100 * S)
    shell.market(trade(SELL, 50 * C, 60 * S), at=2.0)
    assert shell.filled("b1") == 0 and shell.venue.open_orders()[0].ahead == 40 * S
    shell.market(trade(SELL, 50 * C, 50 * S), at=3.0)  # 40 ahead, then 10 of ours
    assert shell.filled("b1") == 10 * S
    shell.market(trade(SELL, 50 * C, 30 * S), at=4.0)
    assert shell.filled("b1") == 20 * S and shell.state("b1") == "FILLED"
    assert [t.size for t in shell.trades()] == [10 * S, 10 * S]
    assert all(t.maker_orders[0].order_id == "b1" for t in shell.trades())
    assert shell.venue.open_orders() == []


def test_trades_below_our_bid_fill_it_without_queue():
    shell = Shell(cfg())
    resting_bid(shell, size=20 * S, ahead=100 * S)
    shell.market(trade(SELL, 49 * C, 8 * S), at=2.0)
    assert shell.filled("b1") == 8 * S
    shell.market(trade(BUY, 52 * C, 50 * S), at=3.0)  # the other side of the book: not ours
    assert shell.filled("b1") == 8 * S


@pytest.mark.parametrize("kind", ["risk_averse", "prob"])
@pytest.mark.parametrize("trade_first", [True, False])
def test_a_trade_and_its_level_decrease_count_once_in_either_order(trade_first, kind):
    shell = Shell(cfg(queue=QueueConfig(kind=kind, power=1.0)))
    resting_bid(shell, size=20 * S, ahead=60 * S)  # level: 60 others ahead of our 20
    shell.market(change(("Y", BUY, 50 * C, 100 * S)), at=1.5)  # 40 join behind us
    print_ = trade(SELL, 50 * C, 30 * S)  # half of those ahead of us trade
    shrink = change(("Y", BUY, 50 * C, 70 * S))  # the feed shows the same 30 leaving
    first, second = (print_, shrink) if trade_first else (shrink, print_)
    shell.market(first, at=2.0)
    shell.market(second, at=2.0)
    assert shell.venue.open_orders()[0].ahead == 30 * S and shell.filled("b1") == 0
    shell.market(trade(SELL, 50 * C, 40 * S), at=3.0)  # 30 ahead, then 10 of ours
    assert shell.filled("b1") == 10 * S


@pytest.mark.parametrize("kind", ["risk_averse", "prob"])
@pytest.mark.parametrize("trade_first", [True, False])
def test_a_trade_through_our_place_and_its_decrease_fill_us_once(trade_first, kind):
    shell = Shell(cfg(queue=QueueConfig(kind=kind, power=1.0)))
    resting_bid(shell, size=20 * S, ahead=60 * S)
    shell.market(change(("Y", BUY, 50 * C, 100 * S)), at=1.5)  # 40 join behind us
    print_ = trade(SELL, 50 * C, 70 * S)  # the 60 ahead of us, then 10 of ours
    shrink = change(("Y", BUY, 50 * C, 30 * S))
    first, second = (print_, shrink) if trade_first else (shrink, print_)
    shell.market(first, at=2.0)
    shell.market(second, at=2.0)
    assert shell.filled("b1") == 10 * S
    assert shell.venue.open_orders()[0].ahead == 0


@pytest.mark.parametrize("kind, ahead_after, ahead_last",
                         [("risk_averse", 100 * S, 30 * S), ("prob", 80 * S, 15 * S)])
def test_level_shrink_moves_the_queue_per_model(kind, ahead_after, ahead_last):
    shell = Shell(cfg(queue=QueueConfig(kind=kind, power=1.0)))
    resting_bid(shell, size=10 * S, ahead=100 * S)
    shell.market(change(("Y", BUY, 50 * C, 200 * S)), at=2.0)  # growth joins behind us
    assert shell.venue.open_orders()[0].ahead == 100 * S
    # 40 cancelled with 100 ahead and 100 behind: proportional splits them 20/20
    shell.market(change(("Y", BUY, 50 * C, 160 * S)), at=3.0)
    assert shell.venue.open_orders()[0].ahead == ahead_after
    # a shrink below what we thought was ahead moves us up in any model (risk averse: to the
    # new total; proportional: 80 ahead and 80 behind share the 130 cancelled)
    shell.market(change(("Y", BUY, 50 * C, 30 * S)), at=4.0)
    assert shell.venue.open_orders()[0].ahead == ahead_last
    assert shell.filled("b1") == 0


def test_our_orders_at_one_level_queue_in_arrival_order():
    shell = Shell(cfg())
    resting_bid(shell, size=10 * S, ahead=30 * S)
    shell.market(change(("Y", BUY, 50 * C, 50 * S)), at=1.5)
    shell.place(limit("b2", BUY, 50 * C, 10 * S), at=1.6)  # behind 50 others and b1
    shell.market(trade(SELL, 50 * C, 45 * S), at=2.0)  # 30 ahead of b1, 10 of b1, 5 more
    assert (shell.filled("b1"), shell.filled("b2")) == (10 * S, 0)
    assert shell.venue.open_orders()[0].ahead == 15 * S  # 20 were between b1 and b2
    shell.market(trade(SELL, 50 * C, 20 * S), at=3.0)
    assert shell.filled("b2") == 5 * S


# --- takes and depletion ------------------------------------------------------------------------


def test_a_take_walks_levels_and_depletes_them_until_the_feed_refreshes():
    shell = Shell(cfg())
    shell.market(book({48 * C: 100 * S}, {51 * C: 30 * S, 52 * C: 50 * S}), at=1.0)
    shell.market(book({49 * C: 50 * S}, {52 * C: 40 * S}, token="N"), at=1.0)
    shell.place(limit("t1", BUY, 52 * C, 60 * S), at=1.0)
    shell.until(1.0)
    r = shell.results()["t1"]
    assert r.status == "matched" and r.making_amount == 30 * 51 * C + 30 * 52 * C
    assert [(t.price, t.size) for t in shell.trades()] == [(51 * C, 30 * S), (52 * C, 30 * S)]
    assert shell.state("t1") == "FILLED"
    v = shell.venue
    assert v.visible("Y", SELL, 51 * C) == 0 and v.visible("Y", SELL, 52 * C) == 20 * S
    assert v.visible("N", BUY, 49 * C) == 20 * S  # the mirrored level lost the same 30
    # an update elsewhere does not bring the taken liquidity back
    shell.market(change(("Y", BUY, 48 * C, 90 * S)), at=2.0)
    shell.place(limit("t2", BUY, 51 * C, 10 * S), at=2.0)
    shell.until(2.0)
    assert shell.results()["t2"].status == "live"
    # the feed updating that level makes its total the truth again: a new order takes it
    shell.market(change(("Y", SELL, 52 * C, 45 * S)), at=3.0)
    assert v.visible("Y", SELL, 52 * C) == 45 * S
    shell.cancel("t2", at=3.0)
    shell.place(limit("t3", BUY, 52 * C, 45 * S), at=3.0)
    shell.until(3.0)
    assert shell.results()["t3"].status == "matched" and shell.filled("t3") == 45 * S


def test_fok_is_killed_and_fak_keeps_what_it_got():
    shell = Shell(cfg())
    shell.market(book({48 * C: 100 * S}, {51 * C: 30 * S, 52 * C: 50 * S}), at=1.0)
    # 100 USDC cannot be spent at 0.52 or better: 30 * 0.51 + 50 * 0.52 = 41.30 is all there is
    shell.place(take("k1", BUY, 52 * C, 100 * S, OrderType.FOK), at=1.0)
    shell.until(1.0)
    assert shell.results()["k1"].error_msg == R.FOK_KILLED and shell.state("k1") == "REJECTED"
    shell.place(take("k2", BUY, 52 * C, 100 * S, OrderType.FAK), at=1.0)
    shell.until(1.0)
    r = shell.results()["k2"]
    assert r.status == "matched" and r.making_amount == 41_300_000 and r.taking_amount == 80 * S
    assert shell.state("k2") == "FILLED" and shell.filled("k2") == 80 * S
    # nothing left at or below 0.52: a FAK finds nothing
    shell.place(take("k3", BUY, 52 * C, 10 * S, OrderType.FAK), at=1.0)
    shell.until(1.0)
    assert shell.results()["k3"].error_msg == R.FAK_KILLED
    # a FOK that can be filled is: sell 50 of the 80 shares into the 0.48 bid
    shell.place(take("k4", SELL, 48 * C, 50 * S, OrderType.FOK), at=1.0)
    shell.until(1.0)
    assert shell.results()["k4"].making_amount == 50 * S and shell.filled("k4") == 50 * S


def test_taker_fee_follows_the_venue_rule():
    shell = Shell(cfg(fee_rate_bps=200))
    shell.market(book({40 * C: 100 * S}, {60 * C: 100 * S}), at=1.0)
    shell.place(limit("f1", BUY, 60 * C, 10 * S), at=1.0)
    shell.until(1.0)
    fee = taker_fee(BUY, 60 * C, 10 * S, FeeSchedule(rate=20_000))  # in shares on a BUY: r = 0.02, e = 1
    assert fee > 0
    assert shell.venue.balance().tokens["Y"] == 10 * S - fee
    assert shell.results()["f1"].taking_amount == 10 * S - fee
    assert shell.venue.ledger.get("fees").tokens["Y"] == fee
    assert shell.trades()[0].fee_rate_bps == 200


# --- validation ---------------------------------------------------------------------------------


def test_post_only_that_would_cross_is_rejected():
    shell = Shell(cfg())
    shell.market(book({48 * C: 100 * S}, {51 * C: 30 * S}), at=1.0)
    shell.place(limit("p1", BUY, 51 * C, 5 * S, post_only=True),
                limit("p2", BUY, 50 * C, 5 * S, post_only=True), at=1.0)
    shell.until(1.0)
    res = shell.results()
    assert res["p1"].error_msg == R.POST_ONLY_CROSSES and not res["p1"].accepted
    assert res["p2"].status == "live"
    assert (shell.state("p1"), shell.state("p2")) == ("REJECTED", "LIVE")
    assert shell.trades() == []


def test_tick_grid_min_size_and_tick_size_change():
    shell = Shell(cfg())
    shell.market(book({40 * C: 100 * S}, {60 * C: 100 * S}), at=1.0)
    shell.place(limit("x1", BUY, 505_000, 5 * S), limit("x2", BUY, 50 * C, S // 2),
                limit("x3", BUY, 50 * C, 1_005_000), limit("x4", BUY, 0, 5 * S), at=1.0)
    shell.until(1.0)
    res = shell.results()
    assert res["x1"].error_msg == R.invalid_tick(505_000, 10_000)
    assert res["x2"].error_msg == R.invalid_size(S // 2, 1_000_000)
    assert res["x3"].error_msg == R.invalid_lot(1_005_000)
    assert res["x4"].error_msg == R.invalid_tick(0, 10_000)
    shell.market(tick_change(10_000, 1_000), at=2.0)
    shell.place(limit("x5", BUY, 505_000, 5 * S), at=2.0)
    shell.until(2.0)
    assert shell.results()["x5"].status == "live"
    # a snapshot's min_order_size is the market's minimum from then on
    shell.market(book({40 * C: 100 * S}, {60 * C: 100 * S}, min_order_size="10"), at=3.0)
    shell.place(limit("x6", BUY, 50 * C, 5 * S), at=3.0)
    shell.until(3.0)
    assert shell.results()["x6"].error_msg == R.invalid_size(5 * S, 10 * S)


def test_gtd_expires_at_its_expiration_and_releases_its_reservation():
    shell = Shell(cfg(latency=LatencyConfig(entry=0.01, response=0.02)))
    shell.market(book({40 * C: 100 * S}, {60 * C: 100 * S}), at=1.0)
    shell.place(limit("g1", BUY, 50 * C, 10 * S, expiration=10),
                limit("g2", BUY, 50 * C, 10 * S, expiration=1), at=1.0)
    shell.until(2.0)
    res = shell.results()
    assert res["g1"].status == "live" and res["g2"].error_msg == R.INVALID_EXPIRATION
    assert shell.venue.balance().collateral_reserved == 5 * S
    shell.until(9.99)
    assert shell.state("g1") == "LIVE"
    assert shell.venue.next_due() == 10.0
    shell.until(10.02)
    seen = [a for a in shell.answers if isinstance(a, OrderSeen)]
    assert [(s.record.order_id, s.record.status) for s in seen] == [("g1", "CANCELED_EXPIRED_ORDER")]
    assert shell.state("g1") == "CANCELED"
    assert shell.venue.balance().collateral_reserved == 0
    # a GTC must not carry an expiration
    shell.place(OwnOrder("g3", "Y", BUY, 50 * C, 10 * S, expiration=100), at=11.0)
    shell.until(12.0)
    assert shell.results()["g3"].error_msg == R.INVALID_EXPIRATION


def test_a_resolved_market_closes_our_orders_there():
    shell = Shell(cfg(), tokens={"N": 10 * S})
    shell.market(book({40 * C: 100 * S}, {60 * C: 100 * S}), at=1.0)
    shell.place(limit("z1", BUY, 50 * C, 10 * S), limit("z2", SELL, 70 * C, 10 * S, token="N"),
                at=1.0)
    shell.market(MarketResolvedEvent(market=M.condition_id, assets_ids=list(M.tokens),
                                     winning_asset_id="Y", timestamp="2"), at=2.0)
    seen = [a.record for a in shell.answers if isinstance(a, OrderSeen)]
    assert [(r.order_id, r.status) for r in seen] == [("z1", "CANCELED_MARKET_RESOLVED"),
                                                       ("z2", "CANCELED_MARKET_RESOLVED")]
    assert (shell.state("z1"), shell.state("z2")) == ("CANCELED", "CANCELED")
    b = shell.venue.balance()
    assert (b.collateral_reserved, b.tokens_reserved) == (0, {})


def test_balances_refuse_what_the_venue_would():
    shell = Shell(cfg(), collateral=10 * S)
    shell.market(book({40 * C: 100 * S}, {60 * C: 100 * S}), at=1.0)
    shell.place(limit("m1", BUY, 50 * C, 30 * S),  # 15 USDC > 10
                limit("m2", BUY, 50 * C, 15 * S),  # 7.50 reserved
                limit("m3", BUY, 50 * C, 10 * S),  # 5 > 2.50 free
                limit("m4", SELL, 55 * C, 5 * S),  # no tokens
                take("m5", BUY, 60 * C, 3 * S, OrderType.FAK), at=1.0)  # 3 > 2.50 free
    shell.until(1.0)
    res = shell.results()
    assert [res[f"m{i}"].error_msg for i in range(1, 6)] == [
        R.NOT_ENOUGH_BALANCE, "", R.NOT_ENOUGH_BALANCE, R.NOT_ENOUGH_BALANCE, R.NOT_ENOUGH_BALANCE]
    b = shell.venue.balance()
    assert (b.collateral, b.collateral_reserved) == (10 * S, 7_500_000)
    shell.cancel("m2", at=2.0)
    shell.place(limit("m6", BUY, 50 * C, 20 * S), at=2.0)
    shell.until(2.0)
    assert shell.results()["m6"].status == "live"


# --- latency ------------------------------------------------------------------------------------


class Scripted:
    """Entry delays taken in order from a list; answers after ``response``."""

    def __init__(self, entries: list[float], response: float = 0.0) -> None:
        self.entries = list(entries)
        self.resp = response

    def entry(self, now: float) -> float:
        return self.entries.pop(0)

    def response(self, now: float) -> float:
        return self.resp


def test_an_order_meets_the_book_as_it_is_when_it_arrives():
    shell = Shell(cfg(), latency=Scripted([0.5], response=0.1))
    shell.market(book({48 * C: 100 * S}, {51 * C: 30 * S}), at=1.0)
    shell.place(limit("l1", BUY, 51 * C, 10 * S), at=1.0)  # reaches the venue at 1.5
    shell.market(change(("Y", SELL, 51 * C, 0)), at=1.2)  # the ask is gone before it arrives
    shell.until(1.59)
    assert shell.state("l1") == "PENDING_SUBMIT"  # the answer is still on its way back
    shell.until(1.6)
    assert shell.results()["l1"].status == "live" and shell.trades() == []
    assert shell.venue.open_orders()[0].ahead == 0  # nobody was bidding 0.51 when it arrived


@pytest.mark.parametrize("cancel_first", [True, False])
def test_a_cancel_and_its_place_in_either_order_of_arrival(cancel_first):
    entries = [0.2, 0.05] if cancel_first else [0.05, 0.2]
    shell = Shell(cfg(), latency=Scripted(entries, response=0.01))
    shell.market(book({40 * C: 100 * S}, {60 * C: 100 * S}), at=1.0)
    shell.place(limit("c1", BUY, 50 * C, 10 * S), at=1.0)
    shell.cancel("c1", at=1.01)
    shell.settle()
    cancels = [a.result for a in shell.answers if isinstance(a, CancelsAnswered)]
    if cancel_first:  # the cancel overtook the place: not found, and the order rests
        assert cancels[0].not_canceled == {"c1": R.CANCEL_NOT_FOUND}
        assert [o.id for o in shell.venue.open_orders()] == ["c1"]
        assert shell.state("c1") == "LIVE"  # "not found" proves nothing: the ack decides
    else:
        assert cancels[0].canceled == ("c1",)
        assert shell.venue.open_orders() == [] and shell.state("c1") == "CANCELED"
    kinds = [type(a).__name__ for a in shell.answers]
    assert kinds == (["CancelsAnswered", "PlacesAnswered"] if cancel_first
                     else ["PlacesAnswered", "CancelsAnswered"])


def test_answers_leave_after_the_response_latency_in_time_order():
    shell = Shell(cfg(latency=LatencyConfig(entry=0.1, response=0.3)))
    shell.market(book({40 * C: 100 * S}, {60 * C: 100 * S}), at=1.0)
    shell.place(limit("a1", BUY, 60 * C, 10 * S), at=1.0)
    v = shell.venue
    assert v.next_due() == pytest.approx(1.1)
    assert v.due(1.1) == []  # processed at 1.1, answered at 1.4
    assert v.next_due() == pytest.approx(1.4)
    assert v.due(1.39) == []
    out = v.due(v.next_due())
    assert [type(a) for a in out] == [PlacesAnswered, TradeSeen]
    assert out[1].record.match_time == pytest.approx(1.1)
    assert v.next_due() is None


def test_cancel_all_cancels_what_rests_when_it_arrives():
    shell = Shell(cfg())
    shell.market(book({40 * C: 100 * S}, {60 * C: 100 * S}), at=1.0)
    shell.place(limit("a1", BUY, 50 * C, 10 * S), limit("a2", BUY, 49 * C, 10 * S), at=1.0)
    shell.cancel_all(at=2.0)
    shell.settle()
    ans = [a for a in shell.answers if isinstance(a, CancelsAnswered)][0]
    assert ans.result.canceled == ("a1", "a2") and ans.batch.order_ids == ()
    assert (shell.state("a1"), shell.state("a2")) == ("CANCELED", "CANCELED")
    assert shell.venue.balance().collateral_reserved == 0


# --- settlement ---------------------------------------------------------------------------------


def test_backtest_trades_are_confirmed_at_once():
    shell = Shell(cfg())
    shell.market(book({40 * C: 100 * S}, {60 * C: 100 * S}), at=1.0)
    shell.place(limit("s1", BUY, 60 * C, 10 * S), at=1.0)
    shell.settle()
    assert [t.status for t in shell.trades()] == [TradeStatus.CONFIRMED]
    assert [f.status for f in shell.rec.fills()] == [TradeStatus.CONFIRMED]


def test_paper_trades_settle_matched_then_mined_then_confirmed():
    shell = Shell(cfg(mode="paper", settlement=SettlementConfig(mined_after=2.0, confirmed_after=3.0)))
    shell.market(book({40 * C: 100 * S}, {60 * C: 100 * S}), at=1.0)
    shell.place(limit("s1", BUY, 60 * C, 10 * S), at=1.0)
    shell.until(1.0)
    assert [t.status for t in shell.trades()] == [TradeStatus.MATCHED]
    assert shell.venue.next_due() == 3.0
    shell.until(6.0)
    assert [t.status for t in shell.trades()] == [TradeStatus.MATCHED, TradeStatus.MINED,
                                                   TradeStatus.CONFIRMED]
    assert shell.rec.trade_status(shell.trades()[0].trade_id) is TradeStatus.CONFIRMED
    assert len(shell.rec.fills()) == 1


def test_paper_failed_trade_is_reversed_exactly():
    shell = Shell(cfg(mode="paper", settlement=SettlementConfig(fail_share=1.0)))
    shell.market(book({40 * C: 100 * S}, {60 * C: 100 * S}), at=1.0)
    before = shell.venue.balance()
    shell.place(limit("s1", BUY, 60 * C, 10 * S), at=1.0)
    shell.settle()
    assert shell.trades()[-1].status is TradeStatus.FAILED
    after = shell.venue.balance()
    assert (after.collateral, after.tokens.get("Y", 0)) == (before.collateral, 0)
    assert shell.portfolio.size("Y") == 0


# --- through the reconciler ---------------------------------------------------------------------


def test_the_reconciler_reads_the_same_orders_fills_and_positions():
    shell = Shell(cfg(latency=LatencyConfig(entry=0.02, response=0.03)), tokens={"Y": 50 * S})
    shell.market(book({48 * C: 100 * S, 47 * C: 50 * S}, {52 * C: 40 * S, 53 * C: 60 * S}), at=1.0)
    shell.place(limit("r1", BUY, 48 * C, 20 * S), limit("r2", SELL, 53 * C, 30 * S),
                limit("r3", BUY, 52 * C, 15 * S), take("r4", SELL, 47 * C, 10 * S, OrderType.FAK),
                at=1.0)
    shell.market(trade(SELL, 48 * C, 110 * S), at=2.0)  # 100 ahead of r1, then 10 of it
    shell.market(trade(BUY, 53 * C, 200 * S), at=3.0)  # 60 ahead of r2, then all 30
    shell.cancel("r1", "r2", "zz", at=4.0)
    shell.settle()
    states = {o: shell.state(o) for o in ("r1", "r2", "r3", "r4")}
    assert states == {"r1": "CANCELED", "r2": "FILLED", "r3": "FILLED", "r4": "FILLED"}
    assert {o: shell.filled(o) for o in states} == {"r1": 10 * S, "r2": 30 * S, "r3": 15 * S,
                                                    "r4": 10 * S}
    fills = shell.rec.fills()
    assert sorted((f.order_id, f.is_maker, f.price) for f in fills) == [
        ("r1", True, 48 * C), ("r2", True, 53 * C), ("r3", False, 52 * C), ("r4", False, 48 * C)]
    # the portfolio built from those fills holds what the venue's ledger holds
    bal = shell.venue.balance()
    assert shell.portfolio.size("Y") == bal.tokens["Y"] == 50 * S + 10 * S - 30 * S + 15 * S - 10 * S
    assert bal.collateral_reserved == 0 and bal.tokens_reserved == {}
    assert all(o.state is not OrderState.PENDING_CANCEL for o in shell.rec.orders)


def test_duplicate_and_unknown_token_are_rejected():
    shell = Shell(cfg())
    shell.market(book({40 * C: 100 * S}, {60 * C: 100 * S}), at=1.0)
    shell.place(limit("d1", BUY, 50 * C, 5 * S), at=1.0)
    shell.place(limit("d1", BUY, 49 * C, 5 * S), limit("d2", BUY, 49 * C, 5 * S, token="Q"),
                at=1.0)
    shell.settle()
    second = [a for a in shell.answers if isinstance(a, PlacesAnswered)][1].results
    assert [r.error_msg for r in second] == [R.DUPLICATED, R.UNKNOWN_TOKEN]
    assert [o.price for o in shell.venue.open_orders()] == [50 * C]  # the first d1 stands


@given(st.integers(1, 10**6).map(lambda n: n * 10_000), st.integers(1, 999_999),
       st.sampled_from([BUY, SELL]))
def test_an_unsigned_market_order_keeps_its_exact_amount(amount, price, side):
    assert market_amount(take("k", side, price, amount)) == amount


def test_a_signed_market_order_spends_its_signed_amount():
    order = take("k", BUY, 55 * C, 100 * S)
    order.signed = SimpleNamespace(maker_amount=99 * S)
    assert market_amount(order) == 99 * S


def test_draining_everything_ever_due_stops_when_nothing_is_left():
    from bot.sim.venue import SimVenue, SimVenueConfig

    venue = SimVenue([], SimVenueConfig(mode="paper"))
    assert venue.due(float("inf")) == []


def test_levels_in_micro_units_move_and_fill_our_orders_as_their_price_change_does(monkeypatch):
    from bot.core.book import price_levels_of
    from bot.core.levels import PriceLevels

    def run(levels: bool) -> tuple:
        shell = Shell(cfg())
        resting_bid(shell, size=20 * S, ahead=100 * S)
        shell.place(limit("a1", SELL, 53 * C, 10 * S))
        shell.until(1.0)
        for at, ev in enumerate((
            change(("Y", BUY, 50 * C, 70 * S), ("Y", SELL, 53 * C, 30 * S)),  # our levels shrink
            change(("Y", SELL, 49 * C, 7 * S), ("Y", BUY, 48 * C, 5 * S)),  # an ask crosses our bid
            change(("Y", BUY, 50 * C, 40 * S), ("Y", BUY, 50 * C, 20 * S)),  # one level twice
        ), start=2):
            shell.market(price_levels_of(ev) if levels else ev, at=float(at))
        shell.settle()
        ahead = sorted((o.id, o.ahead) for o in shell.venue.open_orders())
        return ahead, shell.filled("b1"), [(t.side, t.price, t.size) for t in shell.trades()]

    plain = run(False)

    def unread(self):
        raise AssertionError("levels in micro-units were turned back into strings")

    monkeypatch.setattr(PriceLevels, "price_changes", property(unread))
    assert run(True) == plain
    assert plain[1] == 7 * S  # the crossing ask filled part of the bid


def test_levels_in_micro_units_with_one_out_of_range_are_refused_whole_as_the_feed_book_refuses_them():
    from bot.core.book import price_levels_of
    from bot.core.levels import PriceLevels, pack_levels

    shell = Shell(cfg())
    resting_bid(shell)  # 100 shares ahead of ours at 0.50
    good = price_levels_of(change(("Y", BUY, 50 * C, 70 * S)))
    bads = [PriceLevels(good.market, good.timestamp_ms, good.tokens,
                        good.levels + pack_levels([(slot, 1, price, size)]), good.hashes)
            for slot, price, size in ((0, 200 * C, 5 * S), (3, 49 * C, 5 * S), (0, 49 * C, -1))]  # price, token, size
    bads.append(PriceLevels(good.market, good.timestamp_ms, good.tokens, good.levels[:-1], good.hashes))  # not whole
    bads.append(PriceLevels(good.market, good.timestamp_ms, list(good.tokens), good.levels, good.hashes))  # type: ignore[arg-type]
    for bad in bads:
        errors = shell.venue.books.errors
        shell.market(bad, at=2.0)
        assert shell.venue.books.errors == errors + 1  # the feed book refused it too
        assert [o.ahead for o in shell.venue.open_orders()] == [100 * S]
        assert shell.venue.visible("Y", BUY, 50 * C) == 100 * S
    shell.market(good, at=3.0)  # the same level alone moves the queue
    assert [o.ahead for o in shell.venue.open_orders()] == [70 * S]


def test_a_market_buy_receives_spent_over_price_to_the_unit_at_each_level():
    """As the venue fills: 20 USDC at 0.51 then 0.57 gets the 0.51 level whole (15.30 USDC) and
    4.70 / 0.57 = 8.245614 shares of the next, every unit spent."""
    shell = Shell(cfg())
    shell.market(book({48 * C: 100 * S}, {51 * C: 30 * S, 57 * C: 50 * S}), at=1.0)
    shell.place(take("m1", BUY, 57 * C, 20 * S, OrderType.FOK), at=1.0)
    shell.until(1.0)
    r = shell.results()["m1"]
    assert r.status == "matched" and (r.making_amount, r.taking_amount) == (20 * S, 38_245_614)
    assert [(t.price, t.size) for t in shell.trades()] == [(51 * C, 30 * S), (57 * C, 8_245_614)]
    assert shell.venue.visible("Y", SELL, 57 * C) == 50 * S - 8_245_614


def test_a_six_decimal_print_fills_our_order_to_the_unit_and_its_reservation_goes_exactly():
    """A trade print of 6-decimal size through our bid fills that many units of it; once the bid
    is gone nothing of its reservation stays."""
    shell = Shell(cfg())
    resting_bid(shell, size=20 * S, ahead=0)
    shell.market(trade(SELL, 49 * C, 11_371_898), at=2.0)
    assert shell.filled("b1") == 11_371_898
    shell.market(trade(SELL, 49 * C, 8_628_102), at=3.0)
    assert shell.filled("b1") == 20 * S and shell.state("b1") == "FILLED"
    assert shell.venue.balance().collateral_reserved == 0

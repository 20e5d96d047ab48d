"""The matching engine: rules of venue.md applied to orders, balances, trades and events."""

from __future__ import annotations

import pytest

from bot.core.markets import MarketInfo
from bot.sim import results as R
from bot.sim.events import BookLevelChanged, OrderEvent, TickSizeChanged, TradeEvent, TradePrint
from bot.sim.matching import MatchingConfig, MatchingEngine
from bot.sim.orders import AmountsError, NewOrder
from bot.sim.settlement import SettlementConfig
from bot.sim.trades import apply_trade
from bot.venue.enums import OrderStatus, OrderType, Side, TradeStatus

BUY, SELL = Side.BUY, Side.SELL
M = MarketInfo("0xmarket", ("YES", "NO"), tick=10_000, min_size=1_000_000)
USDC = 1_000_000


def engine(**cfg) -> MatchingEngine:
    eng = MatchingEngine(MatchingConfig(**cfg))
    eng.add_market(M)
    for a in ("a", "b", "c"):
        eng.fund(a, 1_000 * USDC)
        eng.split(a, M.condition_id, 100 * USDC)
    return eng


_n = 0


def req(account, token, side, price, size, **kw) -> NewOrder:
    global _n
    _n += 1
    return NewOrder(kw.pop("oid", f"0x{_n:04x}"), account, token, side, price, size, **kw)


def test_rest_then_cross_same_book_at_maker_price():
    eng = engine()
    r1 = eng.place(req("a", "YES", SELL, 550_000, 10 * USDC), 1.0)
    assert r1.success and r1.status == "live" and r1.error_msg == ""
    r2 = eng.place(req("b", "YES", BUY, 600_000, 4 * USDC), 2.0)
    assert r2.status == "matched"
    assert (r2.making_amount, r2.taking_amount) == (2_200_000, 4 * USDC)  # paid the maker price
    t = eng.trade(r2.trade_ids[0])
    assert (t.price, t.size, t.side, t.taker_order_id) == (550_000, 4 * USDC, BUY, r2.order_id)
    assert [(m.order_id, m.matched_amount, m.price) for m in t.maker_orders] == [
        (r1.order_id, 4 * USDC, 550_000)
    ]
    assert eng.order(r1.order_id).size_matched == 4 * USDC
    assert eng.best_bid_ask("YES") == (0, 550_000)
    a, b = eng.balance("a"), eng.balance("b")
    assert a.tokens["YES"] == 96 * USDC and a.tokens_reserved == {"YES": 6 * USDC}
    assert a.collateral == 900 * USDC + 2_200_000
    assert b.tokens["YES"] == 104 * USDC and b.collateral == 900 * USDC - 2_200_000


def test_price_then_time_priority():
    eng = engine()
    first = eng.place(req("a", "YES", SELL, 560_000, 2 * USDC), 1.0).order_id
    second = eng.place(req("b", "YES", SELL, 560_000, 2 * USDC), 2.0).order_id
    better = eng.place(req("c", "YES", SELL, 550_000, 2 * USDC), 3.0).order_id
    r = eng.place(req("a", "YES", BUY, 560_000, 5 * USDC), 4.0)
    fills = [(m.order_id, m.matched_amount) for tid in r.trade_ids
             for m in eng.trade(tid).maker_orders]
    assert fills == [(better, 2 * USDC), (first, 2 * USDC), (second, 1 * USDC)]
    assert [eng.trade(t).bucket_index for t in r.trade_ids] == [0, 1]


def test_buy_matches_complement_bid_by_minting():
    eng = engine()
    no_bid = eng.place(req("a", "NO", BUY, 400_000, 10 * USDC), 1.0)
    assert eng.best_bid_ask("YES") == (0, 600_000)  # mirrored as a YES ask at 1 - p
    pairs_before = eng.ledger.pairs[M.condition_id]
    r = eng.place(req("b", "YES", BUY, 650_000, 10 * USDC), 2.0)
    t = eng.trade(r.trade_ids[0])
    assert t.price == 600_000 and t.maker_orders[0].asset_id == "NO"
    assert t.maker_orders[0].price == 400_000 and t.maker_orders[0].side is BUY
    assert eng.ledger.pairs[M.condition_id] == pairs_before + 10 * USDC
    a, b = eng.balance("a"), eng.balance("b")
    assert a.collateral == 900 * USDC - 4 * USDC and a.tokens["NO"] == 110 * USDC
    assert b.collateral == 900 * USDC - 6 * USDC and b.tokens["YES"] == 110 * USDC
    assert a.collateral_reserved == 0
    assert eng.order(no_bid.order_id).status is OrderStatus.MATCHED


def test_sell_matches_complement_ask_by_merging():
    eng = engine()
    eng.place(req("a", "NO", SELL, 300_000, 10 * USDC), 1.0)  # a YES bid at 0.70
    assert eng.best_bid_ask("YES") == (700_000, 0)
    r = eng.place(req("b", "YES", SELL, 650_000, 10 * USDC), 2.0)
    assert (r.making_amount, r.taking_amount) == (10 * USDC, 7 * USDC)
    assert eng.ledger.pairs[M.condition_id] == 300 * USDC - 10 * USDC
    assert eng.balance("a").collateral == 903 * USDC
    assert eng.balance("b").collateral == 907 * USDC


def test_equal_effective_price_is_time_ordered_across_books():
    eng = engine()
    comp_first = eng.place(req("a", "NO", BUY, 400_000, 2 * USDC), 1.0).order_id
    own_second = eng.place(req("b", "YES", SELL, 600_000, 2 * USDC), 2.0).order_id
    r = eng.place(req("c", "YES", BUY, 600_000, 3 * USDC), 3.0)
    t = eng.trade(r.trade_ids[0])
    assert [(m.order_id, m.matched_amount) for m in t.maker_orders] == [
        (comp_first, 2 * USDC), (own_second, 1 * USDC)
    ]


def test_time_priority_interleaves_when_both_books_hold_several_orders_at_the_price():
    """Own, complement, own at one effective price: filled in that order, not own level first."""
    eng = engine()
    first = eng.place(req("a", "YES", SELL, 600_000, 1 * USDC), 1.0).order_id
    second = eng.place(req("b", "NO", BUY, 400_000, 1 * USDC), 2.0).order_id
    third = eng.place(req("a", "YES", SELL, 600_000, 1 * USDC), 3.0).order_id
    r = eng.place(req("c", "YES", BUY, 600_000, 3 * USDC), 4.0)
    makers = [m.order_id for t in r.trade_ids for m in eng.trade(t).maker_orders]
    assert makers == [first, second, third]


def test_fok_fak_and_post_only_rejections_use_venue_words():
    eng = engine()
    eng.place(req("a", "YES", SELL, 550_000, 5 * USDC), 1.0)
    fok = eng.place(req("b", "YES", BUY, 600_000, 10 * USDC, order_type=OrderType.FOK), 2.0)
    assert not fok.success and fok.error_msg == R.FOK_KILLED and fok.status == "unmatched"
    assert fok.error_msg == "order couldn't be fully filled. FOK orders are fully filled or killed."
    fak_none = eng.place(req("b", "YES", BUY, 500_000, 10 * USDC, order_type=OrderType.FAK), 2.0)
    assert fak_none.error_msg == (
        "no orders found to match with FAK order. FAK orders are partially filled or killed if "
        "no match is found."
    )
    po = eng.place(req("b", "YES", BUY, 550_000, 5 * USDC, post_only=True), 2.0)
    assert po.error_msg == "invalid post-only order: order crosses book"
    # FAK fills what it can: 5 shares for 2.75 USDC, the rest is killed
    fak = eng.place(req("b", "YES", BUY, 600_000, 10 * USDC, order_type=OrderType.FAK), 3.0)
    assert fak.success and (fak.making_amount, fak.taking_amount) == (2_750_000, 5 * USDC)
    assert eng.open_orders("b") == []
    # FOK that fits: spend 2.2 USDC at 0.55 -> 4 shares
    eng.place(req("a", "YES", SELL, 550_000, 5 * USDC), 4.0)
    ok = eng.place(req("c", "YES", BUY, 550_000, 2_200_000, order_type=OrderType.FOK), 5.0)
    assert ok.success and (ok.making_amount, ok.taking_amount) == (2_200_000, 4 * USDC)


def test_market_sell_respects_worst_price():
    eng = engine()
    eng.place(req("a", "YES", BUY, 500_000, 3 * USDC), 1.0)
    eng.place(req("a", "YES", BUY, 400_000, 3 * USDC), 1.0)
    fok = eng.place(req("b", "YES", SELL, 450_000, 5 * USDC, order_type=OrderType.FOK), 2.0)
    assert fok.error_msg == R.FOK_KILLED
    r = eng.place(req("b", "YES", SELL, 450_000, 5 * USDC, order_type=OrderType.FAK), 2.0)
    assert (r.making_amount, r.taking_amount) == (3 * USDC, 1_500_000)
    ok = eng.place(req("c", "YES", SELL, 400_000, 3 * USDC, order_type=OrderType.FOK), 3.0)
    assert ok.success and ok.taking_amount == 1_200_000


def test_duplicate_balance_expiration_and_tick_rejections():
    eng = engine()
    r = eng.place(req("a", "YES", BUY, 500_000, 5 * USDC, oid="0xdup"), 1.0)
    assert r.success
    dup = eng.place(req("a", "YES", BUY, 500_000, 5 * USDC, oid="0xdup"), 1.0)
    assert not dup.success and dup.error_msg
    poor = eng.place(req("a", "YES", BUY, 500_000, 3_000 * USDC), 1.0)
    assert "not enough balance / allowance" in poor.error_msg
    short = eng.place(req("a", "YES", SELL, 500_000, 101 * USDC), 1.0)
    assert short.error_msg == R.NOT_ENOUGH_BALANCE
    assert eng.place(req("a", "YES", BUY, 505_000, 5 * USDC), 1.0).error_msg.startswith(
        "order is invalid. Price (0.505) breaks minimum tick size rule: 0.01")
    assert eng.place(req("a", "YES", BUY, 0, 5 * USDC), 1.0).error_msg
    assert eng.place(req("a", "YES", BUY, 500_000, 5_005_000), 1.0).error_msg
    assert eng.place(req("a", "YES", BUY, 500_000, 500_000), 1.0).error_msg  # below min size
    gtd_past = eng.place(req("a", "YES", BUY, 500_000, 5 * USDC, order_type=OrderType.GTD,
                             expiration=1), 10.0)
    assert gtd_past.error_msg == "invalid expiration"
    gtc_exp = eng.place(req("a", "YES", BUY, 500_000, 5 * USDC, expiration=100), 10.0)
    assert gtc_exp.error_msg == "invalid expiration"
    assert eng.place(req("a", "NOPE", BUY, 500_000, 5 * USDC), 1.0).error_msg
    assert eng.place(req("a", "YES", BUY, 500_000, 5 * USDC, order_type=OrderType.FOK,
                         post_only=True), 1.0).error_msg


def test_reservations_and_cancel_release():
    eng = engine()
    free0 = eng.balance("a").collateral
    r = eng.place(req("a", "YES", BUY, 500_000, 100 * USDC), 1.0)
    assert eng.balance("a").collateral_reserved == 50 * USDC
    # 950 USDC free now; 1901 shares at 0.5 is more than that
    assert eng.place(req("a", "YES", BUY, 500_000, 1_901 * USDC), 1.0).error_msg == \
        R.NOT_ENOUGH_BALANCE
    s = eng.place(req("a", "NO", SELL, 600_000, 100 * USDC), 1.0)
    assert eng.balance("a").tokens_reserved == {"NO": 100 * USDC}
    res = eng.cancel_orders([r.order_id, s.order_id, "0xnone"], by="a", now=2.0)
    assert res.canceled == [r.order_id, s.order_id] and set(res.not_canceled) == {"0xnone"}
    bal = eng.balance("a")
    assert bal.collateral_reserved == 0 and bal.tokens_reserved == {}
    assert bal.collateral == free0
    again = eng.cancel(r.order_id, by="a")
    assert r.order_id in again.not_canceled
    other = eng.place(req("a", "YES", BUY, 500_000, 5 * USDC), 3.0)
    assert other.order_id in eng.cancel(other.order_id, by="b").not_canceled


def test_cancel_all_and_by_market():
    eng = engine()
    ids = [eng.place(req("a", t, BUY, 300_000, 5 * USDC), 1.0).order_id for t in ("YES", "NO")]
    eng.place(req("b", "YES", BUY, 300_000, 5 * USDC), 1.0)
    assert eng.cancel_market("a", token="NO").canceled == [ids[1]]
    assert eng.cancel_all("a").canceled == [ids[0]]
    assert len(eng.open_orders()) == 1


def test_gtd_expiry_emits_cancellation():
    eng = engine()
    r = eng.place(req("a", "YES", BUY, 500_000, 5 * USDC, order_type=OrderType.GTD,
                      expiration=100), 10.0)
    eng.drain()
    assert eng.advance(99.0) == []
    events = eng.advance(100.0)
    cancels = [e for e in events if isinstance(e, OrderEvent)]
    assert [(e.type, e.order.status) for e in cancels] == [
        ("CANCELLATION", OrderStatus.CANCELED_EXPIRED_ORDER)
    ]
    assert any(isinstance(e, BookLevelChanged) and e.size == 0 for e in events)
    assert eng.order(r.order_id).status is OrderStatus.CANCELED_EXPIRED_ORDER
    assert eng.balance("a").collateral_reserved == 0


def test_events_of_a_match():
    eng = engine()
    maker = eng.place(req("a", "YES", SELL, 550_000, 10 * USDC), 1.0).order_id
    first = eng.drain()
    assert [type(e) for e in first] == [OrderEvent, BookLevelChanged, BookLevelChanged]
    assert first[0].type == "PLACEMENT" and first[0].order.status is OrderStatus.LIVE
    assert (first[1].token, first[1].side, first[1].price, first[1].size) == (
        "YES", SELL, 550_000, 10 * USDC)
    assert (first[2].token, first[2].side, first[2].price) == ("NO", BUY, 450_000)
    assert eng.last_trade("YES") == (0, None)  # no trade yet
    eng.place(req("b", "YES", BUY, 550_000, 10 * USDC), 2.0)
    evs = eng.drain()
    update = [e for e in evs if isinstance(e, OrderEvent) and e.type == "UPDATE"]
    assert update[0].order.id == maker and update[0].order.status is OrderStatus.MATCHED
    trades = [e for e in evs if isinstance(e, TradeEvent)]
    assert len(trades) == 1 and trades[0].trade.status is TradeStatus.MATCHED
    prints = [(p.token, p.price, p.side) for p in evs if isinstance(p, TradePrint)]
    assert prints == [("YES", 550_000, BUY), ("NO", 450_000, SELL)]
    removed = [(e.token, e.size) for e in evs if isinstance(e, BookLevelChanged)]
    assert removed == [("YES", 0), ("NO", 0)]
    assert eng.last_trade_price("YES") == 550_000 and eng.last_trade_price("NO") == 450_000
    assert (eng.last_trade("YES"), eng.last_trade("NO")) == ((550_000, BUY), (450_000, SELL))  # as printed
    changes = eng.take_level_changes()
    assert {(c.token, c.price, c.size) for c in changes} == {("YES", 550_000, 0),
                                                             ("NO", 450_000, 0)}
    assert eng.take_level_changes() == []


def test_book_snapshot_order_and_mirror():
    eng = engine()
    eng.place(req("a", "YES", BUY, 400_000, 5 * USDC), 1.0)
    eng.place(req("a", "YES", BUY, 450_000, 5 * USDC), 1.0)
    eng.place(req("a", "NO", BUY, 400_000, 7 * USDC), 1.0)  # YES ask 0.60
    eng.place(req("b", "YES", SELL, 650_000, 5 * USDC), 1.0)
    eng.place(req("b", "NO", SELL, 550_000, 2 * USDC), 1.0)  # YES bid 0.45
    snap = eng.book("YES")
    assert snap.bids == [(400_000, 5 * USDC), (450_000, 7 * USDC)]  # best last
    assert snap.asks == [(650_000, 5 * USDC), (600_000, 7 * USDC)]  # best last
    no = eng.book("NO")
    assert no.bids == [(350_000, 5 * USDC), (400_000, 7 * USDC)]
    assert no.asks == [(600_000, 5 * USDC), (550_000, 7 * USDC)]
    plain = MatchingEngine(MatchingConfig(mirror_books=False))
    plain.add_market(M)
    plain.fund("a", 100 * USDC)
    plain.place(req("a", "NO", BUY, 400_000, 7 * USDC), 1.0)
    assert plain.book("YES").asks == [] and plain.best_bid_ask("YES") == (0, 600_000)


def test_tick_size_changes_near_extremes():
    eng = engine()
    assert eng.place(req("a", "YES", BUY, 965_000, 5 * USDC), 1.0).error_msg  # off 0.01 grid
    eng.place(req("a", "YES", BUY, 970_000, 5 * USDC), 1.0)
    ticks = [e for e in eng.drain() if isinstance(e, TickSizeChanged)]
    assert {(t.token, t.old, t.new) for t in ticks} == {("YES", 10_000, 1_000),
                                                        ("NO", 10_000, 1_000)}
    assert eng.tick_size("NO") == 1_000
    assert eng.place(req("b", "YES", BUY, 965_000, 5 * USDC), 2.0).success
    assert eng.book("YES").tick == 1_000


def test_tick_reverts_when_configured():
    from bot.sim.ticks import TickConfig

    eng = engine(ticks=TickConfig(revert=True))
    r = eng.place(req("a", "NO", SELL, 30_000, 5 * USDC), 1.0)  # YES bid 0.97
    assert eng.tick_size("YES") == 1_000
    eng.cancel(r.order_id, now=2.0)
    assert eng.tick_size("YES") == 10_000


def test_settlement_lifecycle_same_id():
    eng = engine(settlement=SettlementConfig(mined_after=2, confirmed_after=3))
    eng.place(req("a", "YES", SELL, 550_000, 5 * USDC), 1.0)
    tid = eng.place(req("b", "YES", BUY, 550_000, 5 * USDC), 10.0).trade_ids[0]
    eng.drain()
    steps = [(e.trade.id, e.trade.status) for t in (11.0, 12.0, 14.9, 15.0)
             for e in eng.advance(t) if isinstance(e, TradeEvent)]
    assert steps == [(tid, TradeStatus.MINED), (tid, TradeStatus.CONFIRMED)]
    assert eng.trade(tid).transaction_hash.startswith("0x")


def test_failed_trade_reverses_balances_exactly():
    eng = engine(settlement=SettlementConfig(fail_share=1.0, retrying_after=1,
                                             failed_after=1))
    before = {a: eng.balance(a) for a in ("a", "b")}
    eng.place(req("a", "NO", BUY, 450_000, 5 * USDC), 1.0)
    r = eng.place(req("b", "YES", BUY, 550_000, 5 * USDC), 1.0)
    assert eng.balance("b").tokens["YES"] == 105 * USDC
    eng.drain()
    events = eng.advance(1.5) + eng.advance(3.0)
    statuses = [e.trade.status for e in events if isinstance(e, TradeEvent)]
    assert statuses == [TradeStatus.RETRYING, TradeStatus.FAILED]
    for a in ("a", "b"):
        after = eng.balance(a)
        assert (after.collateral, after.tokens) == (before[a].collateral, before[a].tokens)
    assert eng.ledger.pairs[M.condition_id] == 300 * USDC
    assert eng.trade(r.trade_ids[0]).status is TradeStatus.FAILED
    assert all(p.size == 100 * USDC for p in eng.positions("b") if p.token == "YES")


def test_inline_balances_equal_apply_trade():
    """Undoing a just-made trade with ``apply_trade(-1)`` restores every balance."""
    eng = engine(fee_rate_bps=200)
    eng.place(req("a", "NO", BUY, 420_000, 3 * USDC), 1.0)
    eng.place(req("c", "YES", SELL, 580_000, 2 * USDC), 1.0)
    eng.place(req("a", "YES", SELL, 600_000, 4 * USDC), 1.0)
    snap = {a: (x.collateral, dict(x.tokens)) for a, x in eng.ledger.accounts.items()}
    pairs = dict(eng.ledger.pairs)
    r = eng.place(req("b", "YES", BUY, 600_000, 8 * USDC), 2.0)
    assert len(r.trade_ids) == 2
    for tid in r.trade_ids:
        apply_trade(eng.ledger, eng.trades[tid], "fees", -1)
    for a, x in eng.ledger.accounts.items():
        c0, t0 = snap.get(a, (0, {}))
        assert x.collateral == c0
        assert {k: v for k, v in x.tokens.items() if v} == {k: v for k, v in t0.items() if v}
    assert eng.ledger.pairs == pairs


def test_taker_fee_in_tokens_on_buy_and_collateral_on_sell():
    eng = engine(fee_rate_bps=100)
    eng.place(req("a", "YES", SELL, 500_000, 10 * USDC), 1.0)
    r = eng.place(req("b", "YES", BUY, 500_000, 10 * USDC), 1.0)
    t = eng.trade(r.trade_ids[0])
    # 10 shares * 1% * 0.5 * (1 - 0.5) = 0.025 USDC = 0.05 share at 0.5
    assert t.fee == 50_000 and t.fee_rate_bps == 100
    assert r.taking_amount == 10 * USDC - 50_000
    assert eng.balance("fees").tokens["YES"] == 50_000
    eng.place(req("a", "YES", BUY, 200_000, 10 * USDC), 2.0)
    s = eng.place(req("b", "YES", SELL, 200_000, 10 * USDC), 2.0)
    assert eng.trade(s.trade_ids[0]).fee == 16_000  # 10 * 1% * 0.2 * 0.8 USDC
    assert s.taking_amount == 2 * USDC - 16_000


def test_queries_orders_trades_positions_holders():
    eng = engine()
    o = eng.place(req("a", "YES", SELL, 750_000, 10 * USDC), 1.0).order_id
    eng.place(req("a", "NO", SELL, 300_000, 5 * USDC), 1.0)  # a YES bid at 0.70
    assert [v.id for v in eng.open_orders("a", token="YES")] == [o]
    assert len(eng.open_orders("a", market=M.condition_id)) == 2
    assert eng.open_orders("a", order_id=o)[0].price == 750_000
    b1 = eng.place(req("b", "YES", BUY, 750_000, 4 * USDC), 2.0)
    b2 = eng.place(req("b", "YES", SELL, 700_000, 4 * USDC), 3.0)  # merges with NO bid 0.30
    assert b2.taking_amount == 2_800_000
    assert [t.id for t in eng.trades_of("b")] == b1.trade_ids + b2.trade_ids
    assert [t.id for t in eng.trades_of("a", token="NO")] == b2.trade_ids
    assert eng.trades_of("a", after=2.5)[0].id == b2.trade_ids[0]
    assert eng.trades_of("a", before=2.5)[0].id == b1.trade_ids[0]
    pos = {p.token: p for p in eng.positions("b")}
    # 100 from the split at 0.5, +4 at 0.75, -4 at 0.7
    y = pos["YES"]
    assert y.size == 100 * USDC and y.total_bought == 104 * USDC
    assert y.realized_pnl == 2_800_000 - (53 * USDC) * 4 // 104
    assert y.avg_price == y.cost * USDC // y.size
    assert eng.holders("YES")[0] == ("b", 100 * USDC)
    assert [h[0] for h in eng.holders("YES", limit=2)] == ["b", "c"]


def test_from_amounts_matches_venue_examples():
    r = NewOrder.from_amounts("0x1", "a", "YES", BUY, 11_967_200, 21_370_000)
    assert (r.price, r.size) == (560_000, 21_370_000)
    s = NewOrder.from_amounts("0x2", "a", "YES", SELL, 21_370_000, 11_967_200)
    assert (s.price, s.size) == (560_000, 21_370_000)
    m = NewOrder.from_amounts("0x3", "a", "YES", BUY, 100_000_000, 181_818_100,
                                  OrderType.FOK)
    assert (m.price, m.size) == (550_000, 100_000_000)
    ms = NewOrder.from_amounts("0x4", "a", "YES", SELL, 10_000_000, 5_500_001,
                                   OrderType.FAK)
    assert (ms.price, ms.size) == (550_001, 10_000_000)  # ceil: the least the seller accepts
    with pytest.raises(AmountsError):
        NewOrder.from_amounts("0x5", "a", "YES", BUY, 1_000_001, 3_000_000)


def test_same_seed_same_trade_ids():
    def ids(seed):
        eng = engine(seed=seed)
        eng.place(req("a", "YES", SELL, 550_000, 5 * USDC, oid="0xs"), 1.0)
        return eng.place(req("b", "YES", BUY, 550_000, 5 * USDC, oid="0xb"), 1.0).trade_ids

    assert ids(3) == ids(3) != ids(4)
    assert len(ids(3)[0]) == 36 and ids(3)[0].count("-") == 4


def conserved(eng: MatchingEngine) -> None:
    """Collateral and tokens are neither made nor lost, and reservations match resting orders."""
    led = eng.ledger
    assert sum(a.collateral for a in led.accounts.values()) + sum(led.pairs.values()) == led.funded
    for tok in ("YES", "NO"):
        assert sum(a.tokens.get(tok, 0) for a in led.accounts.values()) == led.pairs[M.condition_id]
    for a in led.accounts.values():
        assert a.reserved == sum(o.price * o.remaining // USDC for o in a.open_orders.values() if o.side is BUY)
        assert 0 <= a.reserved <= a.collateral


@pytest.mark.parametrize("fast", [False, True])
def test_a_market_buy_receives_spent_over_price_to_the_unit(fast):
    """A market BUY of 10 USDC at 0.57 gets 10 / 0.57 = 17.543859 shares (rounded down), spends all
    10 USDC, and the maker is paid exactly that; the maker's order is left off the lot grid."""
    eng = engine(emit_events=not fast)
    r1 = eng.place(req("a", "YES", SELL, 570_000, 50 * USDC), 1.0)
    r2 = eng.place(req("b", "YES", BUY, 570_000, 10 * USDC, order_type=OrderType.FOK), 2.0)
    assert r2.success and (r2.making_amount, r2.taking_amount) == (10 * USDC, 17_543_859)
    assert eng.trade(r2.trade_ids[0]).size == 17_543_859
    assert eng.order(r1.order_id).size_matched == 17_543_859
    assert eng.balance("b").tokens["YES"] == 117_543_859 and eng.balance("b").collateral == 890 * USDC
    assert eng.balance("a").collateral == 910 * USDC
    assert eng.book("YES").asks == [(570_000, 50 * USDC - 17_543_859)]
    conserved(eng)
    # the off-lot remainder trades on, to the last unit: 32.456141 shares at 0.57 cost 18.5000004
    r3 = eng.place(req("c", "YES", BUY, 570_000, 20 * USDC, order_type=OrderType.FAK), 3.0)
    assert r3.taking_amount == 32_456_141 and r3.making_amount == 18_500_001  # the maker is paid rounded up
    assert eng.order(r1.order_id).status is OrderStatus.MATCHED
    conserved(eng)
    assert {p.token: p.size for p in eng.positions("b")}["YES"] == 117_543_859


@pytest.mark.parametrize("fast", [False, True])
def test_a_resting_bid_filled_in_off_lot_pieces_by_mints_releases_its_reservation_exactly(fast):
    """Market BUYs of NO fill a resting YES bid in 6-decimal pieces (minting pairs): each pays its
    price rounded down, the taker the other end, and when the bid is gone nothing stays reserved."""
    eng = engine(emit_events=not fast)
    bid = eng.place(req("a", "YES", BUY, 430_000, 20 * USDC), 1.0)
    assert eng.balance("a").collateral_reserved == 8_600_000
    for spend, t in ((3_330_000, 2.0), (2_170_000, 3.0), (9_990_000, 4.0)):
        r = eng.place(req("b", "NO", BUY, 570_000, spend, order_type=OrderType.FAK), t)
        assert r.success and r.taking_amount == min(spend * USDC // 570_000, r.taking_amount)
        conserved(eng)
    assert eng.order(bid.order_id).status is OrderStatus.MATCHED
    assert eng.balance("a").collateral_reserved == 0
    got = eng.balance("a").tokens["YES"] - 100 * USDC
    assert got == 20 * USDC and eng.balance("b").tokens["NO"] == 120 * USDC
    undo = [tid for tid in eng.ledger.accounts["b"].trade_ids]
    snap = eng.balance("a").collateral + eng.balance("b").collateral
    for tid in undo:
        apply_trade(eng.ledger, eng.trades[tid], "fees", -1)
    assert eng.balance("a").collateral + eng.balance("b").collateral == snap + 20 * USDC  # the pairs unminted


def test_a_fok_buy_is_filled_when_it_spends_its_last_unit():
    """A FOK market BUY passes when the book within its price takes every unit it spends, to the
    6-decimal share, and is killed when one unit would be left."""
    eng = engine()
    ask = eng.place(req("a", "YES", SELL, 570_000, 17_550_000), 1.0)
    ok = eng.place(req("b", "YES", BUY, 570_000, 10 * USDC, order_type=OrderType.FOK), 2.0)
    assert ok.success and ok.taking_amount == 17_543_859 and ok.making_amount == 10 * USDC
    eng.cancel(ask.order_id)
    eng.place(req("a", "YES", SELL, 570_000, 17_540_000), 3.0)  # 9.9978 USDC: 2200 units short
    killed = eng.place(req("b", "YES", BUY, 570_000, 10 * USDC, order_type=OrderType.FOK), 4.0)
    assert not killed.success and killed.error_msg == R.FOK_KILLED
    eng.place(req("c", "YES", SELL, 580_000, 1 * USDC), 5.0)  # one more unit's worth within the price
    assert eng.place(req("b", "YES", BUY, 580_000, 10 * USDC, order_type=OrderType.FOK), 6.0).success

"""Book invariants under random order flow: no crossed book, conservation of collateral and
tokens, exact reservations, price-time priority."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.core.markets import MarketInfo
from bot.sim.matching import MatchingConfig, MatchingEngine
from bot.sim.orders import NewOrder
from bot.sim.settlement import SettlementConfig
from bot.venue.enums import OrderType, Side
from bot.venue.units import UNIT

M = MarketInfo("0xprop", ("YES", "NO"), tick=10_000, min_size=1_000_000)
ACCOUNTS = ("a", "b", "c")

op = st.tuples(
    st.sampled_from(["limit", "limit", "limit", "market", "cancel"]),
    st.integers(0, 2),  # account
    st.integers(0, 1),  # token
    st.sampled_from([Side.BUY, Side.SELL]),
    st.integers(38, 62),  # price in cents
    st.integers(1, 30),  # size in shares (USDC for market BUY)
    st.booleans(),  # FOK (else FAK) for market orders
)


def new_engine(fee_bps: int, settlement: SettlementConfig) -> MatchingEngine:
    eng = MatchingEngine(MatchingConfig(seed=1, fee_rate_bps=fee_bps, emit_events=True,
                                      settlement=settlement))
    eng.add_market(M)
    for a in ACCOUNTS:
        eng.fund(a, 500 * UNIT)
        eng.split(a, M.condition_id, 60 * UNIT)
    eng.mint_tokens("c", "YES", 7 * UNIT)
    return eng


def run(eng: MatchingEngine, ops, check_each=None):
    now = 0.0
    for i, (kind, ai, ti, side, cents, size, fok) in enumerate(ops):
        now += 1.0
        acct, token = ACCOUNTS[ai], M.tokens[ti]
        if kind == "cancel":
            open_ = eng.open_orders(acct)
            if open_:
                eng.cancel(open_[size % len(open_)].id, acct, now)
            continue
        if kind == "limit":
            req = NewOrder(f"0x{i:x}", acct, token, side, cents * 10_000, size * UNIT)
        else:
            ot = OrderType.FOK if fok else OrderType.FAK
            req = NewOrder(f"0x{i:x}", acct, token, side, cents * 10_000, size * UNIT, ot)
        before = len(eng.trades)
        res = eng.place(req, now)
        if check_each:
            check_each(eng, req, res, before)
        eng.advance(now)
    return now


def check_book(eng: MatchingEngine) -> None:
    bid, ask = eng.best_bid_ask("YES")
    assert not (bid and ask) or bid < ask, (bid, ask)
    nbid, nask = eng.best_bid_ask("NO")
    assert not (nbid and nask) or nbid < nask
    for token in M.tokens:
        book = eng._books[token]
        assert book.bid_prices == sorted(book.bids)
        assert book.ask_keys == sorted(-p for p in book.asks)
        for levels in (book.bids, book.asks):
            for price, level in levels.items():
                assert level.orders and level.total == sum(o.remaining for o in level.orders)
                assert all(o.price == price and o.remaining > 0 for o in level.orders)
                seqs = [o.seq for o in level.orders]
                assert seqs == sorted(seqs)


def check_conservation(eng: MatchingEngine) -> None:
    led = eng.ledger
    pairs = led.pairs.get(M.condition_id, 0)
    assert sum(a.collateral for a in led.accounts.values()) + pairs == led.funded
    for token in M.tokens:
        total = sum(a.tokens.get(token, 0) for a in led.accounts.values())
        assert total == pairs + led.airdropped.get(token, 0)


def check_reservations(eng: MatchingEngine) -> None:
    for acct in eng.ledger.accounts.values():
        want_c = sum(o.price * o.remaining // UNIT for o in acct.open_orders.values()
                     if o.side is Side.BUY)
        assert acct.reserved == want_c
        for token in M.tokens:
            want_t = sum(o.remaining for o in acct.open_orders.values()
                         if o.side is Side.SELL and o.token == token)
            assert acct.reserved_tokens.get(token, 0) == want_t
            assert 0 <= want_t <= acct.tokens.get(token, 0)
        assert 0 <= acct.reserved <= acct.collateral


def check_priority(eng: MatchingEngine, req: NewOrder, res, before: int) -> None:
    if not res.success:
        return
    trades = [eng.trades[t] for t in res.trade_ids]
    prices = [t.price for t in trades]
    buy = req.side is Side.BUY
    assert prices == sorted(prices, reverse=not buy) and len(set(prices)) == len(prices)
    for t in trades:
        assert t.price <= req.price if buy else t.price >= req.price
        seqs = [eng.orders[m.order_id].seq for m in t.makers]
        assert seqs == sorted(seqs)
        for m in t.makers:
            assert m.price == (t.price if m.token == t.token else UNIT - t.price)
        assert t.size == sum(m.size for m in t.makers)


def check_all(eng, req, res, before):
    check_book(eng)
    check_conservation(eng)
    check_reservations(eng)
    check_priority(eng, req, res, before)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=1, max_size=60), st.sampled_from([0, 150]))
def test_invariants_hold_after_every_order(ops, fee_bps):
    eng = new_engine(fee_bps, SettlementConfig(enabled=False))
    run(eng, ops, check_all)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=1, max_size=60), st.floats(0, 1))
def test_failed_trades_reverse_and_conserve(ops, fail_share):
    cfg = SettlementConfig(fail_share=fail_share, retrying_after=1, failed_after=2,
                           mined_after=1, confirmed_after=1)
    eng = new_engine(0, cfg)
    now = run(eng, ops, lambda e, *a: (check_book(e), check_conservation(e)))
    eng.advance(now + 100)
    check_conservation(eng)
    assert len(eng.settlement) == 0
    # with every trade failed, each account's collateral + value of tokens is as funded
    if fail_share == 1.0:
        for acct in eng.ledger.accounts.values():
            if acct.id in ACCOUNTS:
                assert acct.collateral == 440 * UNIT


@settings(max_examples=40, deadline=None)
@given(st.lists(op, min_size=1, max_size=40))
def test_same_inputs_same_events(ops):
    def events(ops):
        eng = new_engine(0, SettlementConfig(retry_share=0.3, fail_share=0.2))
        out = []
        run(eng, ops, lambda e, *a: out.extend(e.drain()))
        return out + eng.advance(1e9)

    assert events(ops) == events(ops)

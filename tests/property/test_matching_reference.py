"""The matching engine makes exactly the fills of a plain reference book.

The reference keeps every order in YES terms (a NO order at ``p`` is the YES order on the other
side at ``1 - p``) in one list, and matches a taker against the crossing resting orders sorted by
price then arrival: price-time priority with no complement, no balances and no records. Fed the
same limit orders and cancels, the engine must fill the same maker orders, in the same order, for
the same sizes at the same YES prices, and leave the same orders resting with the same remainders.
Both the module as it runs (compiled when the build had a C compiler) and its interpreted source
are checked, so speed work on the compiled engine cannot change what it matches.
"""

from __future__ import annotations


import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.compiled import interpreted
from bot.core.markets import MarketInfo
from bot.sim import matching as active
from bot.sim.orders import NewOrder
from bot.sim.settlement import SettlementConfig
from bot.venue.enums import Side
from bot.venue.units import UNIT


IMPLS = [pytest.param(active, id="active"), pytest.param(interpreted("bot.sim.matching"), id="interpreted")]

M = MarketInfo("0xref", ("YES", "NO"), tick=10_000, min_size=1_000_000)
ACCOUNTS = ("a", "b", "c", "d")
Fill = tuple[str, int, int]  # (maker order id, size, price in YES terms)


class Reference:
    """Resting orders in YES terms: id -> [is_bid, price, seq, remaining]."""

    def __init__(self) -> None:
        self.resting: dict[str, list] = {}
        self.seq = 0

    def place(self, oid: str, buy: bool, price: int, size: int) -> list[Fill]:
        crossing = [(o[1] if buy else -o[1], o[2], k) for k, o in self.resting.items()
                    if o[0] is not buy and (o[1] <= price if buy else o[1] >= price)]
        fills = []
        for _, _, k in sorted(crossing):
            if not size:
                break
            o = self.resting[k]
            x = min(size, o[3])
            fills.append((k, x, o[1]))
            size -= x
            o[3] -= x
            if not o[3]:
                del self.resting[k]
        if size:
            self.seq += 1
            self.resting[oid] = [buy, price, self.seq, size]
        return fills

    def cancel(self, oid: str) -> bool:
        return self.resting.pop(oid, None) is not None


def yes_terms(token: str, side: Side, price: int) -> tuple[bool, int]:
    """(is a BUY, price) of the same order on YES."""
    if token == M.tokens[0]:
        return side is Side.BUY, price
    return side is Side.SELL, UNIT - price


def engine_fills(eng, trade_ids: list[str]) -> list[Fill]:
    yes = M.tokens[0]
    return [(m.order_id, m.size, m.price if m.token == yes else UNIT - m.price)
            for t in trade_ids for m in eng.trades[t].makers]


def resting(eng) -> dict[str, tuple[bool, int, int]]:
    """The engine's open orders in YES terms: id -> (is_bid, price, remaining)."""
    out = {}
    for o in eng.open_orders():
        buy, price = yes_terms(o.asset_id, o.side, o.price)
        out[o.id] = (buy, price, o.original_size - o.size_matched)
    return out


def check_same_as_reference(module, ops, events: bool) -> None:
    eng = module.MatchingEngine(module.MatchingConfig(
        seed=3, emit_events=events, settlement=SettlementConfig(enabled=False)))
    eng.add_market(M)
    for a in ACCOUNTS:
        eng.fund(a, 10**12)
        eng.split(a, M.condition_id, 10**11)
    ref = Reference()
    placed: list[str] = []
    for i, (kind, account, no, side, cents, lots) in enumerate(ops):
        if kind == "cancel":
            if placed:
                oid = placed[lots % len(placed)]
                res = eng.cancel(oid, None, float(i))
                assert (oid in res.canceled) == ref.cancel(oid)
            continue
        token = M.tokens[no]
        price = cents * 10_000
        oid = f"o{i}"
        res = eng.place(NewOrder(oid, ACCOUNTS[account], token, side, price, lots * 10_000), float(i))
        assert res.success, res.error_msg
        placed.append(oid)
        want = ref.place(oid, *yes_terms(token, side, price), lots * 10_000)
        assert engine_fills(eng, res.trade_ids) == want
        assert res.status == ("matched" if want else "live")
        if events:
            eng.drain()
    assert resting(eng) == {k: (o[0], o[1], o[3]) for k, o in ref.resting.items()}


limit = st.tuples(
    st.just("limit"),
    st.integers(0, len(ACCOUNTS) - 1),
    st.integers(0, 1),  # 0: YES, 1: NO
    st.sampled_from([Side.BUY, Side.SELL]),
    st.integers(40, 60),  # price in cents
    st.integers(100, 3000),  # size in lots (0.01 share): 1..30 shares, off whole shares too
)
cancel = st.tuples(st.just("cancel"), st.just(0), st.just(0), st.just(Side.BUY), st.just(0),
                   st.integers(0, 10**6))
wide_mix = st.lists(st.one_of(limit, limit, limit, cancel), min_size=1, max_size=80)

# the bench's mix (bench/bench_matching.py): 80% YES, prices 0.45..0.55, 5..50 whole shares
bench_order = st.tuples(
    st.just("limit"),
    st.integers(0, len(ACCOUNTS) - 1),
    st.sampled_from([0, 0, 0, 0, 1]),
    st.sampled_from([Side.BUY, Side.SELL]),
    st.integers(45, 55),
    st.integers(5, 50).map(lambda shares: shares * 100),
)
bench_mix = st.lists(bench_order, min_size=1, max_size=150)


@pytest.mark.parametrize("module", IMPLS)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=wide_mix, events=st.booleans())
def test_fills_equal_the_reference_books_on_random_orders_and_cancels(module, ops, events):
    check_same_as_reference(module, ops, events)


@pytest.mark.parametrize("module", IMPLS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=bench_mix)
def test_fills_equal_the_reference_books_on_the_benchs_mix(module, ops):
    check_same_as_reference(module, ops, False)

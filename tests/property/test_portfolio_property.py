"""Portfolio properties: positions and PnL match a simple exact reference; fills are idempotent;
a fill then its reversal leaves the portfolio unchanged."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.events import Fill, FillReversal
from bot.portfolio import Portfolio
from bot.venue.enums import Side, TradeStatus
from bot.venue.units import UNIT

TOKENS = ["Y", "N"]


@st.composite
def fills(draw, max_size=25):
    out = []
    for i in range(draw(st.integers(0, max_size))):
        out.append(Fill(
            trade_id=f"t{i}",
            order_id=draw(st.sampled_from(["o1", "o2"])),
            token_id=draw(st.sampled_from(TOKENS)),
            side=draw(st.sampled_from([Side.BUY, Side.SELL])),
            price=draw(st.integers(1, 9_999)) * 100,
            size=draw(st.integers(1, 5_000)) * 10_000,
            fee=draw(st.integers(-1_000, 5_000)),
        ))
    return out


def reference(fs):
    """Average-cost accounting in exact fractions of a USDC."""
    state = {}
    for f in fs:
        pos, avg, realized, fees = state.get(f.token_id, (0, Fraction(0), Fraction(0), 0))
        q = Fraction(f.size, UNIT) * (1 if f.side is Side.BUY else -1)
        px = Fraction(f.price, UNIT)
        if pos == 0 or (pos > 0) == (q > 0):
            avg = (avg * abs(pos) + px * abs(q)) / (abs(pos) + abs(q))
            pos += q
        else:
            closed = min(abs(q), abs(pos))
            realized += closed * (px - avg) * (1 if pos > 0 else -1)
            rest = abs(q) - closed
            pos += closed * (1 if q > 0 else -1)
            if rest:
                pos, avg = rest * (1 if q > 0 else -1), px
            elif pos == 0:
                avg = Fraction(0)
        state[f.token_id] = (pos, avg, realized, fees + f.fee)
    return state


@settings(max_examples=300, deadline=None)
@given(fills())
def test_matches_reference(fs):
    pf = Portfolio()
    for f in fs:
        pf.apply(f)
    ref = reference(fs)
    for t, (pos, avg, realized, fees) in ref.items():
        p = pf.position(t)
        assert Fraction(p.size, UNIT) == pos
        assert p.fees == fees
        # each partial close floors at most one 1e-12 USDC: never more than the fill count
        assert abs(Fraction(p.realized_e12, UNIT * UNIT) - realized) <= Fraction(p.fills, UNIT * UNIT)
        if pos == 0:
            assert p.cost_e12 == 0
        else:
            assert abs(Fraction(p.avg_price, UNIT) - avg) <= Fraction(p.fills, UNIT)
        # conservation: realized minus open cost is exactly the cash that moved
        assert p.realized_e12 - p.cost_e12 == p.cash_e12


@settings(max_examples=200, deadline=None)
@given(fills(), st.data())
def test_fill_then_reversal_leaves_portfolio_unchanged(fs, data):
    pf = Portfolio()
    for f in fs:
        pf.apply(f)
    before = pf.positions()
    extra = data.draw(fills(max_size=1).filter(bool))[0]
    extra = Fill("extra", extra.order_id, extra.token_id, extra.side, extra.price, extra.size, extra.fee)
    pf.apply(extra)
    pf.apply(FillReversal(extra))
    assert pf.positions() == before


@settings(max_examples=200, deadline=None)
@given(fills(), st.data())
def test_reversal_equals_never_seen_and_duplicates_are_ignored(fs, data):
    pf = Portfolio()
    for f in fs + fs:  # every fill delivered twice
        pf.apply(f)
    dropped = data.draw(st.sets(st.sampled_from(fs))) if fs else set()
    for f in dropped:
        pf.apply(FillReversal(f))
        pf.apply(FillReversal(f))
    clean = Portfolio()
    for f in fs:
        if f not in dropped:
            clean.apply(f)
    assert pf.positions() == clean.positions()
    assert pf.realized_pnl == clean.realized_pnl and pf.fees == clean.fees


@settings(max_examples=200, deadline=None)
@given(fills(), st.data())
def test_folding_confirmed_fills_changes_no_figure_and_bounds_what_is_kept(fs, data):
    """Interleaved confirmations, compactions and reversals of fills not confirmed: the same
    positions, PnL and fees as a portfolio that never folds, and no confirmed fill left behind
    an unconfirmed one of its token once compacted."""
    pf, plain = Portfolio(), Portfolio()
    pf.seed("Y", 3 * UNIT, 400_000)
    plain.seed("Y", 3 * UNIT, 400_000)
    confirmed: set[str] = set()
    for f in fs:
        pf.apply(f)
        plain.apply(f)
        for g in data.draw(st.lists(st.sampled_from(fs), max_size=3)):
            if g.trade_id in confirmed or not pf.has_fill(g.key):
                continue
            if data.draw(st.booleans()):
                confirmed.add(g.trade_id)
                pf.settle(g.trade_id, TradeStatus.CONFIRMED)
            else:
                pf.apply(FillReversal(g))
                plain.apply(FillReversal(g))
                pf.settle(g.trade_id, TradeStatus.FAILED)
        if data.draw(st.booleans()):
            pf.compact()
    for f in fs:
        if f.trade_id not in confirmed and pf.has_fill(f.key):
            confirmed.add(f.trade_id)
            pf.settle(f.trade_id, TradeStatus.CONFIRMED)
    pf.compact()
    assert pf.positions() == plain.positions()
    assert (pf.realized_pnl, pf.fees, pf.cash) == (plain.realized_pnl, plain.fees, plain.cash)
    assert not any(pf.has_fill(f.key) for f in fs)  # every fill final: none kept


def test_a_long_run_of_confirmed_fills_keeps_only_the_unsettled_ones():
    pf = Portfolio()
    for i in range(5_000):
        f = Fill(trade_id=f"t{i}", order_id="o", token_id=TOKENS[i % 2], side=(Side.BUY, Side.SELL)[i % 3 == 0],
                 price=500_000, size=UNIT)
        pf.apply(f)
        if i >= 10:  # each trade confirms ten fills later
            pf.settle(f"t{i - 10}", TradeStatus.CONFIRMED)
        if i % 100 == 0:
            pf.compact()
    pf.compact()
    kept = sum(pf.has_fill((f"t{i}", "o")) for i in range(5_000))
    assert kept == 10
    assert pf.size("Y") + pf.size("N") == sum((1, -1)[i % 3 == 0] for i in range(5_000)) * UNIT


# --- fills priced off the 6-decimal grid book the cash they carry ------------------------------
@st.composite
def offgrid_fills(draw, max_size=25):
    """Fills with 6-decimal sizes, some carrying the settled cash of a price off the grid."""
    out = []
    for i in range(draw(st.integers(0, max_size))):
        size = draw(st.integers(1, 5_000_000_000))
        price = draw(st.integers(1, 999_999))
        cash = draw(st.one_of(st.none(), st.integers(0, size)))  # whole micro-USDC, at most 1 a share
        out.append(Fill(
            trade_id=f"t{i}", order_id="o", token_id=draw(st.sampled_from(TOKENS)),
            side=draw(st.sampled_from([Side.BUY, Side.SELL])), price=price, size=size,
            notional_e12=None if cash is None else cash * UNIT,
        ))
    return out


@settings(max_examples=300, deadline=None)
@given(offgrid_fills())
def test_offgrid_fills_book_their_cash_exactly(fs):
    pf = Portfolio()
    for f in fs:
        pf.apply(f)
    for t in TOKENS:
        mine = [f for f in fs if f.token_id == t]
        p = pf.position(t)
        signed = [(1 if f.side is Side.BUY else -1) for f in mine]
        worth = [f.notional_e12 if f.notional_e12 is not None else f.price * f.size for f in mine]
        assert p.size == sum(s * f.size for s, f in zip(signed, mine))
        assert p.cash_e12 == -sum(s * w for s, w in zip(signed, worth))  # to the last 1e-12 USDC
        assert p.realized_e12 - p.cost_e12 == p.cash_e12  # conservation, exactly


@settings(max_examples=200, deadline=None)
@given(fills(), st.data())
def test_a_notional_of_price_times_size_books_as_none(fs, data):
    """Carrying ``price * size`` as the notional changes nothing, reversals included."""
    pf, same = Portfolio(), Portfolio()
    for f in fs:
        pf.apply(f)
        same.apply(Fill(f.trade_id, f.order_id, f.token_id, f.side, f.price, f.size, fee=f.fee,
                        notional_e12=f.price * f.size))
    assert pf.positions() == same.positions()
    if fs:
        gone = data.draw(st.sampled_from(fs))
        pf.apply(FillReversal(gone))
        same.apply(FillReversal(gone))
        assert pf.positions() == same.positions()

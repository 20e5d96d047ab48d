"""Complete-set properties: for any holdings, costs and mids, the portfolio's value is exactly the
sets at their payout plus the remainder at the mids; a share is in at most one set and no group
could take more; a set bought for less than its payout never shows a loss, whatever the mids;
the summed figures agree with the sets they sum."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.events import Fill
from bot.core.markets import MarketInfo
from bot.portfolio import Portfolio, set_groups, totals
from bot.portfolio.sets import held_sets, unrealized_e12
from bot.venue.enums import Side
from bot.venue.units import UNIT

M = MarketInfo("0xm", ("Y", "N"))
EVENT = [MarketInfo(f"0x{i}", (f"Y{i}", f"N{i}"), neg_risk=True, event_id="E") for i in range(3)]
MARKETS = [M, *EVENT]
TOKENS = [t for m in MARKETS for t in m.tokens]
prices = st.integers(1, 99).map(lambda c: c * 10_000)


@st.composite
def portfolios(draw):
    """Seeded holdings (at any average) and fills of either side on every token."""
    pf = Portfolio()
    pf.value_sets(set_groups(MARKETS))
    for t in TOKENS:
        if draw(st.booleans()):
            pf.seed(t, draw(st.integers(0, 40)) * UNIT, draw(prices))
    for i in range(draw(st.integers(0, 30))):
        t = draw(st.sampled_from(TOKENS))
        side = draw(st.sampled_from([Side.BUY, Side.SELL]))
        size = draw(st.integers(1, 2_000)) * 10_000
        if side is Side.SELL:
            size = min(size, max(pf.size(t), 0))
            if not size:
                continue
        pf.apply(Fill(f"t{i}", "o", t, side, draw(prices), size))
    return pf


marks_space = st.dictionaries(st.sampled_from(TOKENS), prices)
full_marks = st.fixed_dictionaries({t: prices for t in TOKENS})


@settings(max_examples=300, deadline=None)
@given(portfolios(), full_marks)
def test_value_is_sets_at_their_payout_plus_the_remainder_at_the_mids(pf, marks):
    positions = pf.positions()
    held = pf.complete_sets()
    in_sets = {t: 0 for t in TOKENS}
    for h in held:
        for t in h.group.tokens:
            in_sets[t] += h.sets
    value_e12 = sum(h.value for h in held) * UNIT + sum((p.size - in_sets.get(t, 0)) * marks[t]
                                                       for t, p in positions.items())
    cost_e12 = sum(p.cost_e12 for p in positions.values())
    sets, rest = unrealized_e12(positions, set_groups(MARKETS), marks)
    assert sets + rest == value_e12 - cost_e12
    assert pf.unrealized_pnl(marks) == (value_e12 - cost_e12) // UNIT
    realized = sum(p.realized_e12 for p in positions.values())
    assert pf.total_pnl(marks) == (realized + value_e12 - cost_e12) // UNIT
    # the sets' part is theirs alone: no mark moves it
    assert sets == sum(h.edge_e12 for h in held)


@settings(max_examples=300, deadline=None)
@given(portfolios(), marks_space, marks_space)
def test_only_the_remainder_moves_with_the_mids(pf, a, b):
    """Marks of tokens whose shares are all in sets change nothing; without sets nothing changes
    from the plain mark-to-mid."""
    positions = pf.positions()
    held = pf.complete_sets()
    in_sets = {}
    for h in held:
        for t in h.group.tokens:
            in_sets[t] = in_sets.get(t, 0) + h.sets
    whole = {t for t, p in positions.items() if p.size and in_sets.get(t, 0) == p.size}
    moved = {**a, **{t: v for t, v in b.items() if t in whole}}
    assert pf.unrealized_pnl(moved) == pf.unrealized_pnl(a)
    assert unrealized_e12(positions, (), a) == (0, sum(p.unrealized_e12(a[t]) for t, p in positions.items()
                                                       if t in a and p.size))


@settings(max_examples=300, deadline=None)
@given(portfolios())
def test_a_share_is_in_one_set_at_most_and_no_group_could_take_more(pf):
    positions = pf.positions()
    groups = set_groups(MARKETS)
    held = held_sets(positions, groups)
    left = {t: max(p.size, 0) for t, p in positions.items()}
    for h in held:
        assert h.sets > 0
        for t in h.group.tokens:
            left[t] -= h.sets
    assert all(v >= 0 for v in left.values())
    for g in groups:
        assert min(left.get(t, 0) for t in g.tokens) <= 0
    t = totals(held)
    assert t.sets == sum(h.sets for h in held) and t.value == sum(h.value for h in held)
    assert t.edge == sum(h.edge_e12 for h in held) // UNIT
    assert t.mergeable == sum(h.sets for h in held if h.group.kind == "pair")
    assert t.mergeable_cost == sum(h.cost_e12 for h in held if h.group.kind == "pair") // UNIT


@settings(max_examples=300, deadline=None)
@given(st.data(), st.sampled_from(["pair", "event"]), st.integers(1, 500), marks_space)
def test_a_set_bought_under_its_payout_never_shows_a_loss(data, kind, shares, marks):
    tokens = list(M.tokens) if kind == "pair" else [m.tokens[0] for m in EVENT]
    asks = data.draw(st.lists(prices, min_size=len(tokens), max_size=len(tokens)).filter(lambda a: sum(a) < UNIT))
    pf = Portfolio()
    pf.value_sets(set_groups(MARKETS))
    size = shares * 10_000
    for i, (t, ask) in enumerate(zip(tokens, asks)):
        pf.apply(Fill(f"t{i}", "o", t, Side.BUY, ask, size))
    edge = (size * UNIT - sum(ask * size for ask in asks)) // UNIT
    assert pf.unrealized_pnl(marks) == pf.total_pnl(marks) == edge > 0

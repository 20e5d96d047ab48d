"""Risk properties: accepted sets never breach a limit, cancels always pass, REDUCING only
reduces, HALTED passes nothing but cancels."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.core.intents import CancelAll, CancelOrder, Quote, QuoteTarget, Take
from bot.core.markets import MarketIndex, MarketInfo
from bot.risk import Projection, RiskLimits, TradingState, Universe, check_intents
from bot.risk.checks import Reason
from bot.venue.enums import Side
from bot.venue.units import UNIT

SH = UNIT
MARKETS = MarketIndex([
    MarketInfo("c1", ("Y1", "N1"), min_size=1 * SH),
    MarketInfo("e1", ("Ya", "Na"), neg_risk=True, event_id="E", min_size=1 * SH),
    MarketInfo("e2", ("Yb", "Nb"), neg_risk=True, event_id="E", min_size=1 * SH),
    MarketInfo("e3", ("Yc", "Nc"), neg_risk=True, event_id="E", min_size=1 * SH),
])
UNI = Universe(MARKETS)
TOKENS = [t for m in MARKETS for t in m.tokens]


class Positions:
    def __init__(self, sizes, costs):
        self.sizes, self.costs = sizes, costs

    def size(self, t):
        return self.sizes.get(t, 0)

    def cost(self, t):
        return self.costs.get(t, 0)


class Book:
    def __init__(self, token_id, bid, ask):
        self.token_id, self.best_bid, self.best_ask, self.tick, self.stale, self.min_size = token_id, bid, ask, 10_000, False, 0
        self.mid = (bid + ask) // 2


BOOKS = {t: Book(t, 450_000, 550_000) for t in TOKENS}

token = st.sampled_from(TOKENS)
side = st.sampled_from([Side.BUY, Side.SELL])
price = st.integers(1, 99).map(lambda p: p * 10_000)
size = st.integers(1, 40).map(lambda s: s * SH)
quote = st.builds(Quote, token, side, price, size)
target = st.builds(lambda t, qs: QuoteTarget(t, tuple(Quote(t, q.side, q.price, q.size) for q in qs)),
                   token, st.lists(quote, max_size=4))
take = st.builds(Take, token, side, price, size)
cancel = st.one_of(st.builds(CancelOrder, st.text(min_size=1, max_size=4)),
                   st.builds(CancelAll, st.none() | token), st.builds(QuoteTarget, token))
intents = st.lists(st.one_of(target, target, take, cancel), max_size=8)
opt = lambda lo, hi: st.none() | st.integers(lo, hi).map(lambda v: v * SH)  # noqa: E731
limits = st.builds(
    RiskLimits,
    max_order_size=opt(5, 80),
    max_position=opt(10, 200),
    max_market_notional=opt(10, 150),
    max_event_notional=opt(20, 300),
    max_net_exposure=opt(10, 200),
    max_event_loss=opt(10, 150),
    max_open_orders=st.none() | st.integers(2, 20),
    max_orders_per_window=st.none() | st.integers(0, 10),
)


@st.composite
def positions(draw):
    sizes, costs = {}, {}
    for t in draw(st.lists(token, max_size=5, unique=True)):
        sizes[t] = draw(st.integers(0, 40)) * SH
        costs[t] = sizes[t] * draw(st.integers(1, 99)) // 100
    return Positions(sizes, costs)


@st.composite
def live_orders(draw, pos):
    """Resting orders that sell at most what is held."""
    out, sold = [], {}
    for q in draw(st.lists(quote, max_size=4)):
        if q.side is Side.SELL:
            if sold.get(q.token_id, 0) + q.size > pos.size(q.token_id):
                continue
            sold[q.token_id] = sold.get(q.token_id, 0) + q.size
        out.append(q)
    return out


def project(pos, orders) -> Projection:
    p = Projection(pos)
    for o in orders:
        p.add(o.token_id, o.side, o.size, o.price * o.size // UNIT)
        p.orders += 1
    return p


def metrics(p: Projection) -> dict:
    out = {}
    for m in MARKETS:
        for t in m.tokens:
            out[("position", t)] = p.position(t)
        out[("market", m.condition_id)] = p.market_notional(m)
        out[("exposure", m.condition_id)] = p.net_exposure(m)
        out[("loss", UNI.group(m)[0].condition_id)] = p.worst_loss(UNI.group(m))
    ev = UNI.event_markets(MARKETS.by_condition("e1"))
    out[("event", "E")] = p.event_notional(ev)
    out[("orders", "")] = p.orders
    return out


def limit_of(lim: RiskLimits, kind: str):
    return {
        "position": lim.max_position, "market": lim.max_market_notional, "event": lim.max_event_notional,
        "exposure": lim.max_net_exposure, "loss": lim.max_event_loss, "orders": lim.max_open_orders,
    }[kind]


def final_orders(live, accepted, books):
    """Resting orders after the router applies the accepted intents (targets replace a token's
    quotes), plus the takes counted as resting at their worst-case share count."""
    resting = {}
    for o in live:
        resting.setdefault(o.token_id, []).append(o)
    takes = []
    for i in accepted:
        if isinstance(i, QuoteTarget):
            resting[i.token_id] = list(i.quotes)
        elif isinstance(i, Take):
            if i.side is Side.BUY:
                ref = min(i.price, books[i.token_id].best_ask)
                takes.append((i.token_id, i.side, i.amount * UNIT // ref, i.amount))
            else:
                takes.append((i.token_id, i.side, i.amount, i.price * i.amount // UNIT))
    return [o for qs in resting.values() for o in qs], takes


def run(state, lim, pos, live, its, budget=None):
    return check_intents(its, state=state, limits=lim, universe=UNI, positions=pos, open_orders=live,
                         books=BOOKS, rate_budget=budget)


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(lim=limits, pos=positions(), data=st.data(), its=intents, budget=st.none() | st.integers(0, 6))
def test_accepted_set_never_breaches_a_limit(lim, pos, data, its, budget):
    live = data.draw(live_orders(pos))
    d = run(TradingState.ACTIVE, lim, pos, live, its, budget)
    before = metrics(project(pos, live))
    rest, takes = final_orders(live, d.accepted, BOOKS)
    after_proj = project(pos, rest)
    for t, s, shares, usdc in takes:
        after_proj.add(t, s, shares, usdc)
    after = metrics(after_proj)
    for key, value in after.items():
        limit = limit_of(lim, key[0])
        if limit is not None:
            assert value <= max(limit, before[key]), (key, value, limit, before[key])
    for t in TOKENS:  # never sells more than held
        tok = after_proj.tok(t)
        assert tok.sell_sz <= max(pos.size(t), 0)
    for o in [q for i in d.accepted if isinstance(i, QuoteTarget) for q in i.quotes]:
        assert o.price % 10_000 == 0 and o.size % 10_000 == 0
        if lim.max_order_size is not None:
            assert o.size <= lim.max_order_size
    if budget is not None:
        assert d.new_orders <= budget


@SETTINGS
@given(state=st.sampled_from(list(TradingState)), lim=limits, pos=positions(), its=intents)
def test_cancels_always_pass(state, lim, pos, its):
    d = run(state, lim, pos, [], its)
    cancels = [i for i in its if isinstance(i, (CancelOrder, CancelAll)) or (isinstance(i, QuoteTarget) and not i.quotes)]
    assert all(c in d.accepted for c in cancels)
    # every intent is answered: accepted, or each refused order has a rejection with a reason
    offered = sum(len(i.quotes) if isinstance(i, QuoteTarget) else isinstance(i, Take) for i in its)
    passed = sum(len(i.quotes) if isinstance(i, QuoteTarget) else isinstance(i, Take) for i in d.accepted)
    assert offered == passed + len(d.rejections)


@SETTINGS
@given(lim=limits, pos=positions(), data=st.data(), its=intents)
def test_halted_passes_nothing_but_cancels(lim, pos, data, its):
    d = run(TradingState.HALTED, lim, pos, data.draw(live_orders(pos)), its)
    for i in d.accepted:
        assert isinstance(i, (CancelOrder, CancelAll)) or (isinstance(i, QuoteTarget) and not i.quotes)
    assert d.new_orders == 0


@SETTINGS
@given(lim=limits, pos=positions(), its=intents)
def test_reducing_passes_only_risk_reducing_orders(lim, pos, its):
    d = run(TradingState.REDUCING, lim, pos, [], its)
    rest, takes = final_orders([], d.accepted, BOOKS)
    p = project(pos, rest)
    for t, s, shares, usdc in takes:
        p.add(t, s, shares, usdc)
    for m in MARKETS:
        y, n = p.tok(m.tokens[0]), p.tok(m.tokens[1])
        e = pos.size(m.tokens[0]) - pos.size(m.tokens[1])
        hi = (y.pos + y.buy_sz) - (n.pos - n.sell_sz)
        lo = (y.pos - y.sell_sz) - (n.pos + n.buy_sz)
        # whatever fills, net exposure only moves toward zero, never past it
        assert min(0, e) <= lo <= hi <= max(0, e)
        for tok, t in ((y, m.tokens[0]), (n, m.tokens[1])):
            assert tok.sell_sz <= pos.size(t)
    # and whatever fills, no neg-risk event can lose more than it can with the positions alone
    held = project(pos, [])
    for group in {UNI.group(m) for m in MARKETS}:
        assert p.worst_loss(group) <= held.worst_loss(group), group


EVENT = UNI.group(MARKETS.by_condition("e1"))
EVENT_TOKENS = [t for m in EVENT for t in m.tokens]


@st.composite
def event_positions(draw):
    """Holdings on the neg-risk event's tokens, NO legs likely (baskets that hedge each other)."""
    sizes, costs = {}, {}
    for t in EVENT_TOKENS:
        if draw(st.booleans()):
            sizes[t] = draw(st.integers(1, 30)) * SH
            costs[t] = sizes[t] * draw(st.integers(1, 99)) // 100
    return Positions(sizes, costs)


event_quote = st.builds(Quote, st.sampled_from(EVENT_TOKENS), side, price, st.integers(1, 30).map(lambda s: s * SH))


@SETTINGS
@given(pos=event_positions(), quotes=st.lists(event_quote, min_size=1, max_size=4))
def test_reducing_never_raises_a_neg_risk_events_worst_case(pos, quotes):
    """A leg that shrinks its own market's exposure may still unhedge the event (a NO basket):
    in REDUCING, whatever fills, the event's worst-case loss stays what the positions make it."""
    its = [QuoteTarget(q.token_id, (q,)) for q in quotes]
    lim = RiskLimits(max_order_size=None, max_position=None, max_market_notional=None, max_event_notional=None,
                     max_net_exposure=None, max_event_loss=None, max_open_orders=None, max_orders_per_window=None)
    d = run(TradingState.REDUCING, lim, pos, [], its)
    rest, _ = final_orders([], d.accepted, BOOKS)
    assert project(pos, rest).worst_loss(EVENT) <= project(pos, []).worst_loss(EVENT)


from bot.venue.units import LOT  # noqa: E402
off_lot = st.integers(1, 40 * SH)  # a 6-decimal number of shares


@st.composite
def off_lot_positions(draw):
    sizes, costs = {}, {}
    for t in draw(st.lists(token, max_size=5, unique=True)):
        sizes[t] = draw(st.integers(0, 40 * SH))
        costs[t] = sizes[t] * draw(st.integers(1, 99)) // 100
    return Positions(sizes, costs)


@st.composite
def off_lot_intents(draw, pos):
    """Intents whose SELLs name 6-decimal sizes, among them the whole of each off-lot holding."""
    out = []
    for t in draw(st.lists(token, max_size=4)):
        held = pos.size(t)
        sells = draw(st.lists(st.builds(Quote, st.just(t), st.just(Side.SELL), price, off_lot | st.just(held)),
                              max_size=2))
        buys = draw(st.lists(st.builds(Quote, st.just(t), st.just(Side.BUY), price, size), max_size=2))
        out.append(QuoteTarget(t, tuple(q for q in sells + buys if q.size > 0)))
        if held and draw(st.booleans()):
            out.append(Take(t, Side.SELL, draw(price), held))
    return out


@SETTINGS
@given(state=st.sampled_from([TradingState.ACTIVE, TradingState.REDUCING]), lim=limits,
       pos=off_lot_positions(), data=st.data())
def test_off_lot_sells_are_checked_and_accepted_as_their_whole_lots(state, lim, pos, data):
    """With 6-decimal holdings and SELL sizes: every accepted order is whole lots, a SELL is cut
    to its whole lots (never more than held), one under a lot is refused as off grid, the accepted
    set breaches no limit, and every order offered is answered."""
    its = data.draw(off_lot_intents(pos))
    d = run(state, lim, pos, [], its)
    offered = [o for i in its for o in (i.quotes if isinstance(i, QuoteTarget) else (i,) if isinstance(i, Take) else ())]
    passed = [o for i in d.accepted for o in (i.quotes if isinstance(i, QuoteTarget) else (i,) if isinstance(i, Take) else ())]
    assert len(offered) == len(passed) + len(d.rejections)
    for o in passed:
        amount = o.size if isinstance(o, Quote) else o.amount
        assert amount > 0 and amount % LOT == 0
    for r in d.rejections:
        amount = r.order.size if isinstance(r.order, Quote) else r.order.amount
        assert (r.reason is Reason.SIZE_OFF_GRID) == (amount < LOT or (r.order.side is Side.BUY and amount % LOT != 0))
    rest, takes = final_orders([], d.accepted, BOOKS)
    proj = project(pos, rest)
    for t, s, shares, usdc in takes:
        proj.add(t, s, shares, usdc)
    for t in TOKENS:
        assert proj.tok(t).sell_sz <= pos.size(t)
    before = metrics(project(pos, []))
    for key, value in metrics(proj).items():
        limit = limit_of(lim, key[0])
        if limit is not None and state is TradingState.ACTIVE:
            assert value <= max(limit, before[key]), (key, value, limit, before[key])


@SETTINGS
@given(held=st.integers(1, 40 * SH), px=price, as_take=st.booleans(),
       state=st.sampled_from([TradingState.ACTIVE, TradingState.REDUCING]))
def test_the_whole_of_an_off_lot_holding_sells_as_its_whole_lots(held, px, as_take, state):
    """A close of a whole 6-decimal holding: accepted as its whole lots, the dust (under one lot)
    left; a holding under one lot has nothing an order can sell (SIZE_OFF_GRID)."""
    pos = Positions({"Y1": held}, {"Y1": held // 2})
    order = Take("Y1", Side.SELL, px, held) if as_take else Quote("Y1", Side.SELL, px, held)
    d = run(state, RiskLimits(), pos, [], [order if as_take else QuoteTarget("Y1", (order,))])
    whole = held - held % LOT
    if not as_take and 0 < whole < SH:  # a resting quote is also held to the market's minimum
        assert [r.reason for r in d.rejections] == [Reason.BELOW_MIN_SIZE]
    elif whole:
        assert not d.rejections
        accepted = d.accepted[0] if as_take else d.accepted[0].quotes[0]
        assert (accepted.amount if as_take else accepted.size) == whole
        assert d.reducing == [True] if as_take else d.reducing == [(True,)]
    else:
        assert [r.reason for r in d.rejections] == [Reason.SIZE_OFF_GRID]

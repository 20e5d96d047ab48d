"""Pre-trade checks, trading state and kill switch: one behaviour per reason code."""

from __future__ import annotations

import pytest

from bot.core.intents import CancelAll, CancelOrder, Quote, QuoteTarget, Take
from bot.core.markets import MarketIndex, MarketInfo
from bot.risk import (
    Connectivity, HaltReason, Reason, RiskGate, RiskLimits, TradingState, VenueAccept, VenueFailure,
    VenueReject,
)
from bot.venue.enums import Side
from bot.venue.units import UNIT

SH = UNIT
MARKETS = MarketIndex([
    MarketInfo("c1", ("Y1", "N1")),
    MarketInfo("e1", ("Ya", "Na"), neg_risk=True, event_id="E"),
    MarketInfo("e2", ("Yb", "Nb"), neg_risk=True, event_id="E"),
])


class Positions:
    def __init__(self, sizes=None, costs=None):
        self.sizes, self.costs = dict(sizes or {}), dict(costs or {})

    def size(self, t):
        return self.sizes.get(t, 0)

    def cost(self, t):
        return self.costs.get(t, 0)


class Book:
    def __init__(self, token_id, bid=480_000, ask=520_000, tick=10_000, stale=False):
        self.token_id, self.best_bid, self.best_ask, self.tick, self.stale = token_id, bid, ask, tick, stale
        self.min_size = 0

    @property
    def mid(self):
        if self.best_bid is None or self.best_ask is None:
            return None
        return (self.best_bid + self.best_ask) // 2


BOOKS = {t: Book(t) for m in MARKETS for t in m.tokens}


class NullLog:
    def __init__(self):
        self.lines = []

    def warning(self, event, **kw):
        self.lines.append((event, kw))

    error = warning


def gate(**limits) -> RiskGate:
    base = dict(max_orders_per_window=None, max_open_orders=None)
    base.update(limits)
    return RiskGate(RiskLimits(**base), MARKETS, log=NullLog())


def q(token="Y1", side=Side.BUY, price=500_000, size=10 * SH):
    return Quote(token, side, price, size)


def check(g, intents, positions=None, open_orders=(), books=BOOKS, now=0.0):
    return g.check(intents, positions=positions or Positions(), open_orders=open_orders, books=books, now=now)


def reasons(decision):
    return [r.reason for r in decision.rejections]


def test_clean_quote_passes():
    d = check(gate(), [QuoteTarget("Y1", (q(),))])
    assert d.accepted == [QuoteTarget("Y1", (q(),))] and d.rejections == [] and d.new_orders == 1


@pytest.mark.parametrize(
    "order, reason",
    [
        (q(price=505_000), Reason.PRICE_OFF_GRID),
        (q(price=0), Reason.PRICE_OUT_OF_RANGE),
        (q(price=UNIT), Reason.PRICE_OUT_OF_RANGE),
        (q(size=10 * SH + 1), Reason.SIZE_OFF_GRID),
        (q(size=4 * SH), Reason.BELOW_MIN_SIZE),
        (q(size=2_000 * SH), Reason.ORDER_SIZE),
        (q(token="ZZ"), Reason.UNKNOWN_MARKET),
        (q(side=Side.SELL), Reason.INSUFFICIENT_POSITION),
    ],
)
def test_static_order_checks(order, reason):
    g = gate(max_order_size=1_000 * SH)
    d = check(g, [QuoteTarget(order.token_id, (order,))])
    assert reasons(d) == [reason]
    assert d.accepted == [QuoteTarget(order.token_id, ())]  # the rejected quote is withdrawn
    assert g.reject_counts == {reason: 1}
    assert g.log.lines[0][0] == "risk_reject" and g.log.lines[0][1]["reason"] == reason.value


def test_price_band_and_reference_price():
    g = gate(price_band_ticks=3)
    assert reasons(check(g, [QuoteTarget("Y1", (q(price=530_000),))])) == []
    assert reasons(check(g, [QuoteTarget("Y1", (q(price=540_000),))])) == [Reason.PRICE_BAND]
    g = gate(price_band_bps=1_000)  # 10% of 0.50 = 0.05
    assert reasons(check(g, [QuoteTarget("Y1", (q(price=450_000),))])) == []
    assert reasons(check(g, [QuoteTarget("Y1", (q(price=440_000),))])) == [Reason.PRICE_BAND]
    # takes: only the adverse side counts
    assert reasons(check(g, [Take("Y1", Side.BUY, 100_000, 5 * SH)])) == []
    assert reasons(check(g, [Take("Y1", Side.BUY, 600_000, 5 * SH)])) == [Reason.PRICE_BAND]
    one_sided = dict(BOOKS, Y1=Book("Y1", bid=None))
    assert reasons(check(g, [QuoteTarget("Y1", (q(),))], books=one_sided)) == [Reason.NO_REFERENCE_PRICE]


def test_stale_book_rejects_new_orders_but_not_cancels():
    stale = dict(BOOKS, Y1=Book("Y1", stale=True))
    d = check(gate(), [QuoteTarget("Y1", (q(),)), CancelOrder("o1"), CancelAll("Y1")], books=stale)
    assert reasons(d) == [Reason.STALE_BOOK]
    assert d.accepted == [QuoteTarget("Y1", ()), CancelOrder("o1"), CancelAll("Y1")]


def test_position_limit_counts_resting_buys():
    g = gate(max_position=30 * SH)
    live = [q(price=480_000, size=15 * SH)]
    d = check(g, [Take("Y1", Side.BUY, 500_000, 5 * SH)], positions=Positions({"Y1": 10 * SH}), open_orders=live)
    # 10 held + 15 resting + 5 USDC at the 0.52 ask (~9.6 shares) > 30
    assert reasons(d) == [Reason.POSITION]
    # a target replaces the live quotes of its token, so the same shares fit
    d = check(g, [QuoteTarget("Y1", (q(size=20 * SH),))], positions=Positions({"Y1": 10 * SH}), open_orders=live)
    assert reasons(d) == []


def test_sell_only_what_is_held():
    pos = Positions({"Y1": 10 * SH})
    d = check(gate(), [QuoteTarget("Y1", (q(side=Side.SELL, size=6 * SH), q(side=Side.SELL, price=510_000, size=5 * SH)))],
              positions=pos)
    assert reasons(d) == [Reason.INSUFFICIENT_POSITION]
    assert d.accepted[0].quotes == (q(side=Side.SELL, size=6 * SH),)
    assert reasons(check(gate(), [Take("Y1", Side.SELL, 400_000, 11 * SH)], positions=pos)) == [
        Reason.INSUFFICIENT_POSITION
    ]


def test_market_and_event_notional():
    g = gate(max_market_notional=10 * SH, max_event_notional=15 * SH)
    pos = Positions(costs={"N1": 6 * SH})
    # 6 cost + 10 shares at 0.50 = 11 USDC > 10
    assert reasons(check(g, [QuoteTarget("Y1", (q(),))], positions=pos)) == [Reason.MARKET_NOTIONAL]
    pos = Positions(costs={"Ya": 9 * SH})
    assert reasons(check(g, [QuoteTarget("Nb", (q("Nb", price=500_000, size=10 * SH),))], positions=pos)) == []
    assert reasons(check(g, [QuoteTarget("Nb", (q("Nb", price=500_000, size=14 * SH),))], positions=pos)) == [
        Reason.EVENT_NOTIONAL
    ]


def test_net_exposure_across_complements():
    g = gate(max_net_exposure=20 * SH)
    pos = Positions({"Y1": 15 * SH})
    assert reasons(check(g, [QuoteTarget("Y1", (q(),))], positions=pos)) == [Reason.NET_EXPOSURE]
    # buying the complement reduces exposure; so does holding it
    assert reasons(check(g, [QuoteTarget("N1", (q("N1"),))], positions=pos)) == []
    pos = Positions({"Y1": 15 * SH, "N1": 10 * SH})
    assert reasons(check(g, [QuoteTarget("Y1", (q(),))], positions=pos)) == []
    # selling NO raises YES-minus-NO exposure
    g = gate(max_net_exposure=12 * SH)
    assert reasons(check(g, [QuoteTarget("N1", (q("N1", Side.SELL, size=10 * SH),))], positions=pos)) == [
        Reason.NET_EXPOSURE
    ]


def test_worst_case_loss_across_neg_risk_event():
    g = gate(max_event_loss=12 * SH, max_market_notional=None, max_event_notional=None)
    # 20 NO of market a bought at 0.50 = 10 USDC at risk if a resolves YES
    pos = Positions({"Na": 20 * SH}, {"Na": 10 * SH})
    # NO of b loses only if b resolves YES, when NO of a pays 20: no extra worst-case loss
    assert reasons(check(g, [QuoteTarget("Nb", (q("Nb", size=20 * SH),))], positions=pos)) == []
    # YES of b loses whenever a resolves YES: 10 + 5 > 12
    assert reasons(check(g, [QuoteTarget("Yb", (q("Yb", size=10 * SH),))], positions=pos)) == [Reason.EVENT_LOSS]


def test_open_order_count_and_rate():
    g = gate(max_open_orders=2)
    live = [q("N1", price=480_000)]
    d = check(g, [QuoteTarget("Y1", (q(price=500_000), q(price=490_000)))], open_orders=live)
    assert reasons(d) == [Reason.OPEN_ORDERS]
    g = gate(max_orders_per_window=2, rate_window_s=1.0)
    d = check(g, [QuoteTarget("Y1", (q(price=500_000), q(price=490_000), q(price=480_000)))], now=10.0)
    assert reasons(d) == [Reason.ORDER_RATE] and d.new_orders == 2
    assert reasons(check(g, [Take("Y1", Side.BUY, 500_000, 5 * SH)], now=10.5)) == [Reason.ORDER_RATE]
    assert reasons(check(g, [Take("Y1", Side.BUY, 500_000, 5 * SH)], now=11.01)) == []
    # a quote already resting is kept, not resent: it does not spend the rate
    live = [q(price=500_000)]
    d = check(g, [QuoteTarget("Y1", (q(price=500_000),))], open_orders=live, now=11.02)
    assert reasons(d) == [] and d.new_orders == 0


def test_halted_passes_only_cancels_and_halting_cancels_all():
    g = gate()
    assert g.halt("operator") == [CancelAll()]
    assert g.halt("again") == []
    assert g.state is TradingState.HALTED
    d = check(g, [QuoteTarget("Y1", (q(),)), Take("Y1", Side.BUY, 500_000, 5 * SH), CancelOrder("x"), QuoteTarget("N1")])
    assert reasons(d) == [Reason.HALTED, Reason.HALTED]
    assert d.accepted == [QuoteTarget("Y1", ()), CancelOrder("x"), QuoteTarget("N1")]
    g.resume()
    assert g.state is TradingState.ACTIVE
    assert reasons(check(g, [QuoteTarget("Y1", (q(),))])) == []


def test_reducing_passes_only_reducing_orders():
    g = gate()
    assert g.reduce_only("drill") == [CancelAll()]
    pos = Positions({"Y1": 20 * SH, "N1": 4 * SH})
    d = check(g, [
        QuoteTarget("Y1", (q(), q(side=Side.SELL, price=520_000, size=5 * SH))),
        QuoteTarget("N1", (q("N1", size=6 * SH), q("N1", price=490_000, size=6 * SH))),
    ], positions=pos)
    assert reasons(d) == [Reason.REDUCE_ONLY, Reason.REDUCE_ONLY]
    assert d.accepted[0].quotes == (q(side=Side.SELL, price=520_000, size=5 * SH),)
    assert d.accepted[1].quotes == (q("N1", size=6 * SH),)  # N1 may rise to what Y1 keeps, no further


def test_reducing_considers_the_whole_neg_risk_event():
    g = gate(max_event_loss=None, max_market_notional=None, max_event_notional=None)
    g.reduce_only("drill")
    buy_ya = QuoteTarget("Ya", (q("Ya", size=10 * SH),))
    # NO of a alone (5 USDC at risk if a resolves YES): buying YES of a hedges it, and in no
    # outcome does the event lose more than the 5 it can lose now
    alone = Positions({"Na": 10 * SH}, {"Na": 5 * SH})
    assert reasons(check(g, [buy_ya], positions=alone)) == []
    # NO of a and NO of b: whichever resolves YES, the other pays 10, so nothing is at risk.
    # Buying YES of a still shrinks market a's exposure, but if b resolves YES the event now
    # loses the 5 paid for it: refused
    basket = Positions({"Na": 10 * SH, "Nb": 10 * SH}, {"Na": 5 * SH, "Nb": 5 * SH})
    assert reasons(check(g, [buy_ya], positions=basket)) == [Reason.REDUCE_ONLY]
    # so is selling one leg of the basket below 1: if the other market resolves YES, the legs
    # that pay are gone
    sell_na = QuoteTarget("Na", (q("Na", Side.SELL, price=500_000, size=10 * SH),))
    assert reasons(check(g, [sell_na], positions=basket)) == [Reason.REDUCE_ONLY]
    assert reasons(check(g, [sell_na], positions=alone)) == []  # selling what is at risk passes
    # a plain binary market has no event to unhedge: the market rule alone decides there
    assert reasons(check(g, [QuoteTarget("N1", (q("N1", size=10 * SH),))],
                         positions=Positions({"Y1": 10 * SH}, {"Y1": 5 * SH}))) == []


def test_kill_switch_loss_limits():
    g = gate(max_daily_loss=50 * SH, max_total_loss=100 * SH)
    assert g.evaluate(0, daily_pnl=-50 * SH, total_pnl=-50 * SH) == []
    assert g.evaluate(1, daily_pnl=-51 * SH) == [CancelAll()]
    assert g.status.reasons[0].reason is HaltReason.DAILY_LOSS
    assert g.evaluate(2, total_pnl=-101 * SH) == []  # already halted: no second CancelAll
    assert g.halt_counts == {HaltReason.DAILY_LOSS: 1, HaltReason.TOTAL_LOSS: 1}


def test_kill_switch_stale_data():
    g = gate(stale_halt_s=30)
    books = [Book("Y1", stale=True), Book("N1")]
    assert g.evaluate(0, books=books) == []
    assert g.evaluate(30, books=books) == []
    books[0].stale = False
    assert g.evaluate(40, books=books) == []  # recovered in time: the clock restarts
    books[0].stale = True
    assert g.evaluate(50, books=books) == []
    assert g.evaluate(80.5, books=books) == [CancelAll()]
    assert g.status.reasons[0].reason is HaltReason.STALE_DATA


def test_kill_switch_errors_rejects_and_connectivity():
    g = gate(max_errors=2, error_window_s=10)
    assert g.on_event(VenueFailure("timeout"), 0) == []
    assert g.on_event(VenueFailure("timeout"), 5) == []
    assert g.on_event(VenueFailure("timeout"), 10.5) == []  # the first one left the window
    assert g.on_event(VenueFailure("timeout"), 11) == [CancelAll()]

    g = gate(max_reject_streak=3)
    for i in range(2):
        g.on_event(VenueReject("not enough balance"), i)
    g.on_event(VenueAccept(), 2)
    for i in range(2):
        assert g.on_event(VenueReject("x"), 3 + i) == []
    assert g.on_event(VenueReject("x"), 6) == [CancelAll()]
    g.resume()
    assert g.kill_switch.reject_streak == 0 and g.evaluate(7) == []

    g = gate(disconnect_halt_s=5)
    assert g.on_event(Connectivity(False, "user_ws"), 100) == []
    assert g.evaluate(104) == []
    assert g.on_event(Connectivity(True, "user_ws"), 104.5) == []
    assert g.on_event(Connectivity(False, "rest"), 200) == []
    assert g.evaluate(205) == [CancelAll()]
    assert g.status.reasons[0].reason is HaltReason.DISCONNECTED


def test_limits_config_is_strict():
    import msgspec

    with pytest.raises(msgspec.ValidationError, match="max_posittion"):
        msgspec.convert({"max_posittion": 1}, RiskLimits)
    with pytest.raises(msgspec.ValidationError, match="negative"):
        msgspec.convert({"max_position": -1}, RiskLimits)
    assert msgspec.convert({"max_position": None}, RiskLimits).max_position is None


# -- the projection's figures against an outcome-by-outcome model ----------------------------------

import random  # noqa: E402

from bot.risk.checks import Projection, Universe, check_intents  # noqa: E402
from bot.risk.limits import RiskLimits as Limits  # noqa: E402


def _rows(p: Projection, m: MarketInfo):
    return p.tok(m.tokens[0]), p.tok(m.tokens[1])


def _loss_by_outcome(p: Projection, group, orders=True) -> int:
    """Worst loss over the group's outcomes (none wins, or one market's YES wins), each market's
    resting buys filled on its losing token and its resting sells on its winning token."""
    def token_loss(t, wins: bool) -> int:
        if wins:  # it pays out what is held; a sell gives up 1 - price per share
            return -t.pos + ((t.sell_sz - t.sell_ntl) if orders else 0)
        return t.buy_ntl if orders else 0  # worthless: a buy is lost
    cost = sum(t.cost for m in group for t in _rows(p, m))
    outcomes = [None, *range(len(group))]
    worst = None
    for winner in outcomes:
        loss = cost
        for i, m in enumerate(group):
            y, n = _rows(p, m)
            loss += token_loss(y, i == winner) + token_loss(n, i != winner)
        worst = loss if worst is None else max(worst, loss)
    return worst


def _random_projection(rng: random.Random, markets) -> Projection:
    small = (-2 * SH, -1, 0, 1, 3 * SH)
    def amount():
        return rng.choice(small) if rng.random() < 0.3 else rng.randrange(0, 20) * SH // 2
    tokens = [t for m in markets for t in m.tokens]
    p = Projection(Positions({t: amount() for t in tokens}, {t: rng.choice(small) if rng.random() < 0.5
                                                              else rng.randrange(-5, 9) * SH // 4 for t in tokens}))
    for t in tokens:
        for side in (Side.BUY, Side.SELL):
            if rng.random() < 0.7:
                shares = rng.randrange(1, 12) * SH
                p.add(t, side, shares, shares * rng.randrange(1, 100) // 100)
    return p


def test_projection_figures_match_the_outcome_model():
    rng = random.Random(13)
    one = MarketInfo("c", ("Y", "N"))
    group = tuple(MarketInfo(f"e{i}", (f"Y{i}", f"N{i}"), neg_risk=True, event_id="E") for i in range(3))
    for _ in range(300):
        p = _random_projection(rng, (one,))
        y, n = _rows(p, one)
        assert p.position("Y") == y.pos + y.buy_sz and p.position("N") == n.pos + n.buy_sz
        assert p.market_notional(one) == max(y.cost, 0) + y.buy_ntl + max(n.cost, 0) + n.buy_ntl
        assert p.event_notional((one, one)) == 2 * p.market_notional(one)
        # every fill combination: YES minus NO shares lies in [lo, hi]; the exposure is the largest |.|
        hi = y.pos + y.buy_sz - (n.pos - n.sell_sz)
        lo = y.pos - y.sell_sz - (n.pos + n.buy_sz)
        assert p.net_exposure(one) == max(abs(hi), abs(lo))
        assert p.worst_loss((one,)) == _loss_by_outcome(p, (one,))
        assert p.worst_loss((one,), orders=False) == _loss_by_outcome(p, (one,), orders=False)
        g = _random_projection(rng, group)
        assert g.worst_loss(group) == _loss_by_outcome(g, group)
        assert g.worst_loss(group, orders=False) == _loss_by_outcome(g, group, orders=False)


def test_projection_counts_costs_of_exactly_one_unit():
    one = MarketInfo("c", ("Y", "N"))
    for cy, cn in ((1, 0), (0, 1), (-1, 1), (1, -1)):
        p = Projection(Positions({}, {"Y": cy, "N": cn}))
        assert p.market_notional(one) == max(cy, 0) + max(cn, 0)


def test_risk_groups_are_neg_risk_events_only():
    a = MarketInfo("a", ("Ya", "Na"), event_id="X")  # an event id without neg risk: not linked
    b = MarketInfo("b", ("Yb", "Nb"), event_id="X")
    c = MarketInfo("c", ("Yc", "Nc"), neg_risk=True, event_id="E")
    d = MarketInfo("d", ("Yd", "Nd"), neg_risk=True, event_id="E")
    e = MarketInfo("e", ("Ye", "Ne"), neg_risk=True, event_id="F")
    f = MarketInfo("f", ("Yf", "Nf"), neg_risk=True, event_id="F")
    u = Universe(MarketIndex([a, b, c, d, e, f]))
    assert u.group(a) == (a,) and u.event_markets(a) == (a, b)
    assert u.group(c) == (c, d) and u.group(f) == (e, f)
    assert u.links(c) == ((c, d), (c, d)) and u.links(c) == u.links(c)
    assert u.scope("Ya") == frozenset({"Ya", "Na", "Yb", "Nb"}) and u.scope("zz") == frozenset({"zz"})


def test_each_accepted_order_says_whether_it_shrinks_the_exposure():
    def flags(positions, intents):
        return check(gate(), intents, positions=Positions(positions)).reducing

    quotes = (q("Y1", Side.SELL, 550_000, 5 * SH), q("Y1", Side.BUY, 450_000, 5 * SH))
    long_yes = {"Y1": 20 * SH}
    assert flags(long_yes, [QuoteTarget("Y1", quotes)]) == [(True, False)]
    assert flags(long_yes, [QuoteTarget("N1", (q("N1", Side.BUY, 450_000, 5 * SH),))]) == [(True,)]
    long_no = {"N1": 20 * SH}
    assert flags(long_no, [QuoteTarget("Y1", (q("Y1", Side.BUY, 450_000, 5 * SH),))]) == [(True,)]
    assert flags(long_no, [QuoteTarget("N1", (q("N1", Side.SELL, 550_000, 5 * SH),
                                              q("N1", Side.BUY, 450_000, 5 * SH)))]) == [(True, False)]
    assert flags({"Y1": 1}, [QuoteTarget("Y1", (q("Y1", Side.BUY, 450_000, 5 * SH),))]) == [(False,)]
    assert flags({"Y1": 5 * SH, "N1": 5 * SH}, [QuoteTarget("Y1", quotes)]) == [(False, False)]  # flat
    assert flags(long_yes, [Take("Y1", Side.SELL, 500_000, 5 * SH), CancelAll(), QuoteTarget("Y1", ())]) == [
        True, False, False]


def test_a_buy_take_counts_the_shares_the_best_ask_gives():
    # 5 USDC at a worst price of 0.60 buy 10 shares when the best ask is 0.50
    take = Take("Y1", Side.BUY, 600_000, 5 * SH)
    books = {"Y1": Book("Y1", bid=480_000, ask=500_000)}
    assert reasons(check(gate(max_position=10 * SH), [take], books=books)) == []
    assert reasons(check(gate(max_position=10 * SH - 1), [take], books=books)) == [Reason.POSITION]
    # without a book (or an ask) the worst price is the reference: 8.33 shares
    assert reasons(check(gate(max_position=8_333_333), [take], books={})) == []
    assert reasons(check(gate(max_position=8_333_332), [take], books={})) == [Reason.POSITION]
    no_ask = {"Y1": Book("Y1", bid=480_000, ask=None)}
    assert reasons(check(gate(max_position=8_333_333), [take], books=no_ask)) == []
    d = check_intents([take], state=TradingState.ACTIVE, limits=Limits(max_position=8_333_333,
                      max_orders_per_window=None), universe=Universe(MARKETS), positions=Positions(),
                      open_orders=(), books=None)
    assert d.rejections == [] and d.accepted == [take]


class Resting:
    def __init__(self, token_id, side, price, size):
        self.token_id, self.side, self.price, self.remaining = token_id, side, price, size


def test_reducing_compares_the_event_loss_with_that_of_the_positions_alone():
    """Resting orders do not raise the bar: with a buy of b resting, buying YES of a would let the
    event lose 10 if a resolves YES, while the positions alone risk 5: refused."""
    g = gate(max_event_loss=None, max_market_notional=None, max_event_notional=None)
    g.reduce_only("drill")
    alone = Positions({"Na": 10 * SH}, {"Na": 5 * SH})
    buy_ya = QuoteTarget("Ya", (q("Ya", size=10 * SH),))
    assert reasons(check(g, [buy_ya], positions=alone)) == []
    resting = [Resting("Yb", Side.BUY, 500_000, 10 * SH)]
    d = check(g, [buy_ya], positions=alone, open_orders=resting)
    assert reasons(d) == [Reason.REDUCE_ONLY]


def _limits(**one) -> Limits:
    none = dict(max_order_size=None, max_position=None, max_market_notional=None, max_event_notional=None,
                max_net_exposure=None, max_event_loss=None, max_open_orders=None, max_orders_per_window=None)
    return Limits(**(none | one))


def test_each_limit_passes_an_order_exactly_at_it_and_refuses_one_unit_over():
    """Against the model's levels (market notional, net exposure, event loss) with random
    positions, resting orders and a new quote: at the level the order passes; a limit one unit
    lower refuses it, unless the order does not make the level worse."""
    rng = random.Random(29)
    market = MARKETS.get("Y1")
    checked = 0
    for _ in range(250):
        sizes = {t: rng.randrange(0, 40) * SH // 2 for t in market.tokens}
        costs = {t: rng.choice((-3 * SH, -1, 0, 1, rng.randrange(0, 20) * SH // 4)) for t in market.tokens}
        positions = Positions(sizes, costs)
        resting = []
        for t in market.tokens:
            for side in (Side.BUY, Side.SELL):
                if rng.random() < 0.5:
                    size = rng.randrange(5, 10) * SH
                    if side is Side.SELL and size > sizes[t]:
                        continue
                    resting.append(Resting(t, side, rng.randrange(1, 99) * 10_000, size))
        token, side = rng.choice(market.tokens), rng.choice((Side.BUY, Side.SELL))
        price, size = rng.randrange(1, 99) * 10_000, rng.randrange(5, 10) * SH
        if side is Side.SELL and size > sizes[token]:
            continue
        new = Quote(token, side, price, size)

        def levels(with_new: bool):
            p = Projection(positions)
            kept = [o for o in resting if o.token_id != token]  # the target replaces its token's orders
            for o in kept + ([Resting(token, side, price, size)] if with_new else []):
                p.add(o.token_id, o.side, o.remaining, o.price * o.remaining // UNIT)
            y, n = _rows(p, market)
            hi = y.pos + y.buy_sz - (n.pos - n.sell_sz)
            lo = y.pos - y.sell_sz - (n.pos + n.buy_sz)
            return {"max_market_notional": max(y.cost, 0) + y.buy_ntl + max(n.cost, 0) + n.buy_ntl,
                    "max_net_exposure": max(abs(hi), abs(lo)),
                    "max_event_loss": _loss_by_outcome(p, (market,))}

        after, before = levels(True), levels(False)
        intents = [QuoteTarget(token, (new,))]
        for name, level in after.items():
            if name == "max_market_notional" and side is Side.SELL or level < 1:
                continue

            def decide(limit):
                return check_intents(intents, state=TradingState.ACTIVE, limits=_limits(**{name: limit}),
                                     universe=Universe(MARKETS), positions=positions, open_orders=resting,
                                     books=BOOKS)

            assert decide(level).rejections == [], (name, level)
            refused = [r.reason.value for r in decide(level - 1).rejections]
            assert refused == ([name.removeprefix("max_")] if level > before[name] else []), (name, level, before)
            checked += 1
    assert checked > 300


def test_live_orders_kept_by_a_target_spend_no_rate_each_once():
    live = [Resting("Y1", Side.BUY, 500_000, 10 * SH)]
    d = check(gate(), [QuoteTarget("Y1", (q(), q()))], open_orders=live)
    assert d.new_orders == 1 and d.rejections == []  # one quote is the live order, the other is new


def test_rejections_say_what_was_refused():
    d = check(gate(), [QuoteTarget("zz", (q("zz"),)), QuoteTarget("Y1", (q(size=5 * SH + 1),))])
    assert [(r.reason, r.detail) for r in d.rejections] == [
        (Reason.UNKNOWN_MARKET, "zz"), (Reason.SIZE_OFF_GRID, f"{5 * SH + 1} not a positive multiple of 10000")]
    big_min = {"Y1": Book("Y1")}
    big_min["Y1"].min_size = 20 * SH  # the book's minimum is above the market's
    d = check(gate(), [QuoteTarget("Y1", (q(size=10 * SH),))], books=big_min)
    assert [(r.reason, r.detail) for r in d.rejections] == [(Reason.BELOW_MIN_SIZE, f"{10 * SH} < {20 * SH}")]


def test_a_new_target_takes_the_place_of_the_orders_and_targets_before_it():
    live = [Resting("Y1", Side.BUY, 500_000, 10 * SH)]
    g = gate(max_position=10 * SH)
    # the live buy of Y1 is replaced, not added to, by a later target for Y1
    d = check(g, [QuoteTarget("N1", ()), QuoteTarget("Y1", (q(size=10 * SH),))], open_orders=live)
    assert d.rejections == []
    # and so is an earlier target of the same call
    d = check(g, [QuoteTarget("Y1", (q(size=10 * SH),)), QuoteTarget("Y1", (q(price=490_000, size=10 * SH),))])
    assert d.rejections == [] and d.new_orders == 2


class Resting:
    """An open order as the order store lists it: what still rests is ``remaining``."""

    def __init__(self, token_id, side=Side.BUY, price=500_000, remaining=10 * SH):
        self.token_id, self.side, self.price, self.remaining = token_id, side, price, remaining


def details(decision):
    return [(r.reason, r.detail) for r in decision.rejections]


def test_every_rejection_names_its_figures_in_whole_micro_units():
    g = gate(max_order_size=1_000 * SH)
    for order, detail in [
        (q(price=505_000), "505000 not a multiple of 10000"),
        (q(price=UNIT), "1000000 outside [10000, 990000]"),
        (q(size=4 * SH), f"{4 * SH} < {5 * SH}"),
        (q(size=2_000 * SH), f"{2_000 * SH} > {1_000 * SH}"),
        (q(token="ZZ"), "ZZ"),
        (q(side=Side.SELL), f"sell {10 * SH} + resting 0 > held 0"),
    ]:
        assert [r.detail for r in check(g, [QuoteTarget(order.token_id, (order,))]).rejections] == [detail]
    stale = dict(BOOKS, Y1=Book("Y1", stale=True))
    assert details(check(gate(), [QuoteTarget("Y1", (q(),))], books=stale)) == [(Reason.STALE_BOOK, "Y1")]
    assert details(check(gate(price_band_ticks=3), [QuoteTarget("Y1", (q(),))], books={})) == [
        (Reason.NO_REFERENCE_PRICE, "Y1")]
    assert details(check(gate(price_band_ticks=3), [QuoteTarget("Y1", (q(price=540_000),))])) == [
        (Reason.PRICE_BAND, "540000 is 40000 from mid 500000 > 30000")]
    assert details(check(gate(price_band_bps=1_000), [QuoteTarget("Y1", (q(price=440_000),))])) == [
        (Reason.PRICE_BAND, "440000 is 60000 from mid 500000 > 50000")]
    assert details(check(gate(max_open_orders=1), [QuoteTarget("Y1", (q(),))], open_orders=[Resting("Ya")])) == [
        (Reason.OPEN_ORDERS, "1 open")]
    # a quote's cost, and that of a resting order, counted in whole micro-units (0.50 x 10 = 5)
    assert details(check(gate(max_market_notional=4 * SH), [QuoteTarget("Y1", (q(),))])) == [
        (Reason.MARKET_NOTIONAL, "5000000 > 4000000")]
    d = check(gate(max_market_notional=6 * SH), [QuoteTarget("N1", (q("N1"),))],
              open_orders=[Resting("Y1", remaining=3 * SH)])
    assert details(d) == [(Reason.MARKET_NOTIONAL, "6500000 > 6000000")]
    g = gate()
    g.reduce_only("drill")
    assert details(check(g, [QuoteTarget("Y1", (q(),))])) == [(Reason.REDUCE_ONLY, "")]


def test_a_later_target_takes_out_what_it_replaces_in_whole_micro_units():
    # a token's live orders, replaced by its target further down the batch
    d = check(gate(max_market_notional=8 * SH),
              [QuoteTarget("Y1", (q(size=5 * SH),)), QuoteTarget("N1", (q("N1", size=12 * SH),))],
              open_orders=[Resting("N1")])
    # 2.50 for Y1, N1's resting 5 out and 6 in
    assert details(d) == [(Reason.MARKET_NOTIONAL, "8500000 > 8000000")]
    # an earlier target of the same token, replaced by a later one
    d = check(gate(max_market_notional=5_500_000),
              [QuoteTarget("Y1", (q(size=10 * SH),)), QuoteTarget("Y1", (q(size=12 * SH),))])
    assert details(d) == [(Reason.MARKET_NOTIONAL, "6000000 > 5500000")]


def test_open_orders_count_what_rests_once_and_nothing_a_target_replaces():
    four = tuple(q(price=100_000 * (i + 1)) for i in range(4))
    # one order of nothing left (not counted), one of N1 and two of Y1, which the target replaces
    live = [Resting("Ya", remaining=0), Resting("N1"), Resting("Y1", price=800_000), Resting("Y1", price=900_000)]
    d = check(gate(max_open_orders=3), [QuoteTarget("Y1", four)], open_orders=live)
    assert d.accepted == [QuoteTarget("Y1", four[:2])] and details(d) == [(Reason.OPEN_ORDERS, "3 open")] * 2
    # the same after a first target: N1's two orders out, its one quote in, Y1's three out
    five = (*four, q(price=500_000))
    live = [Resting("N1", price=400_000), Resting("N1", price=410_000)] + [
        Resting("Y1", price=p) for p in (700_000, 800_000, 900_000)]
    d = check(gate(max_open_orders=6), [QuoteTarget("N1", (q("N1", size=5 * SH), q("N1", size=6 * SH))),
                                        QuoteTarget("Y1", five)], open_orders=live)
    assert d.accepted[1] == QuoteTarget("Y1", five[:4]) and details(d) == [(Reason.OPEN_ORDERS, "6 open")]
    # a target replaced by a later one in the same batch
    d = check(gate(max_open_orders=3), [QuoteTarget("Y1", four[:2]), QuoteTarget("Y1", four)])
    assert d.accepted[1] == QuoteTarget("Y1", four[:3]) and details(d) == [(Reason.OPEN_ORDERS, "3 open")]


def test_live_orders_a_target_keeps_are_not_sent_again_even_when_alike():
    live = [Resting("Y1"), Resting("Y1"), Resting("Y1", price=400_000)]
    d = check(gate(), [QuoteTarget("Y1", (q(), q(), q(price=400_000)))], open_orders=live)
    assert d.rejections == [] and d.new_orders == 0
    d = check(gate(), [QuoteTarget("Y1", (q(), q(), q()))], open_orders=live)
    assert d.new_orders == 1  # two alike rest already: the third is new


def test_resting_orders_of_every_token_a_batch_can_touch_are_projected():
    live = [Resting("Y1")]  # 5 USDC resting in market c1
    lim = gate(max_market_notional=6 * SH)
    to_n1 = QuoteTarget("N1", (q("N1", size=6 * SH),))  # 3 more in c1: over
    to_ya = QuoteTarget("Ya", (q("Ya", size=6 * SH),))
    for batch in ([to_ya, to_n1], [to_n1, to_ya]):
        assert reasons(check(lim, batch, open_orders=live)) == [Reason.MARKET_NOTIONAL]


def test_intents_may_come_from_any_iterable_and_an_unknown_one_is_named():
    d = check(gate(), (i for i in [QuoteTarget("Y1", (q(),))]))
    assert d.accepted == [QuoteTarget("Y1", (q(),))]
    with pytest.raises(TypeError, match="^not an intent: str$"):
        check(gate(), ["Y1"])


def test_a_take_against_the_other_token_of_a_position_shrinks_it():
    d = check(gate(), [Take("N1", Side.BUY, 500_000, 5 * SH)], positions=Positions({"Y1": 20 * SH}))
    assert d.reducing == [True]


def test_a_rejected_order_leaves_the_projection_as_it_was():
    # 5 USDC: over 4, refused; then 3 fits, and 2 more does not
    three, two = q(price=300_000), q(price=200_000)
    d = check(gate(max_market_notional=4 * SH), [QuoteTarget("Y1", (q(), three, two))])
    assert details(d) == [(Reason.MARKET_NOTIONAL, "5000000 > 4000000"), (Reason.MARKET_NOTIONAL, "5000000 > 4000000")]
    assert d.accepted == [QuoteTarget("Y1", (three,))]


def test_limits_at_their_exact_level_pass_and_read_the_right_rows():
    # a position limit reads the token bought, not its market's YES
    d = check(gate(max_position=8 * SH), [QuoteTarget("N1", (q("N1", size=5 * SH),))],
              positions=Positions({"Y1": 10 * SH}))
    assert d.rejections == []
    # an event notional limit binds neg-risk events only, and passes at its exact level
    assert check(gate(max_event_notional=4 * SH), [QuoteTarget("Y1", (q(),))]).rejections == []
    assert check(gate(max_event_notional=5 * SH), [QuoteTarget("Ya", (q("Ya"),))]).rejections == []
    assert check(gate(max_event_notional=4_990_000), [QuoteTarget("Ya", (q("Ya"),))]).rejections != []
    assert check(gate(max_order_size=10 * SH), [QuoteTarget("Y1", (q(),))]).rejections == []
    assert check(gate(), [QuoteTarget("Y1", (q(price=990_000),))]).rejections == []
    assert reasons(check(gate(), [QuoteTarget("Y1", (q(size=0),))])) == [Reason.SIZE_OFF_GRID]


def test_the_books_tick_rules_and_a_token_without_a_book_is_checked_on_its_market():
    fine = dict(BOOKS, Y1=Book("Y1", tick=1_000))
    assert check(gate(), [QuoteTarget("Y1", (q(price=501_000),))], books=fine).rejections == []
    assert check(gate(), [QuoteTarget("Y1", (q(),))], books={}).rejections == []


def test_a_band_in_bps_alone_is_not_widened_to_a_tick_and_a_sell_take_above_mid_is_not_adverse():
    assert reasons(check(gate(price_band_bps=10), [QuoteTarget("Y1", (q(price=510_000),))])) == [Reason.PRICE_BAND]
    d = check(gate(price_band_bps=1_000), [Take("Y1", Side.SELL, 600_000, 5 * SH)], positions=Positions({"Y1": 10 * SH}))
    assert d.rejections == []


def test_reducing_counts_resting_buys_and_never_flips_the_exposure():
    g = gate()
    g.reduce_only("drill")
    # short 10 (NO held): buying YES may bring it to 0, resting buys included, never above
    d = check(g, [QuoteTarget("Y1", (q(price=400_000, size=8 * SH), q(price=410_000, size=5 * SH)))],
              positions=Positions({"N1": 10 * SH}))
    assert reasons(d) == [Reason.REDUCE_ONLY] and d.accepted[0].quotes == (q(price=400_000, size=8 * SH),)
    # a sell of all the NO held, with one micro-share of YES: the exposure would end above 0
    d = check(g, [QuoteTarget("N1", (q("N1", Side.SELL, 500_000, 5 * SH),))],
              positions=Positions({"Y1": 1, "N1": 5 * SH}))
    assert reasons(d) == [Reason.REDUCE_ONLY]


def test_a_reducing_order_in_an_event_is_projected_once():
    g = gate(max_position=15 * SH, max_event_loss=None, max_market_notional=None, max_event_notional=None)
    g.reduce_only("drill")
    d = check(g, [QuoteTarget("Ya", (q("Ya", size=10 * SH),))], positions=Positions({"Na": 10 * SH}, {"Na": 5 * SH}))
    assert d.rejections == []


def test_buys_and_sells_of_a_batch_add_up_in_the_projection():
    # two buys of 5 USDC each: the second takes the market to 10
    d = check(gate(max_market_notional=7 * SH), [QuoteTarget("Y1", (q(), q(price=490_000)))])
    assert details(d) == [(Reason.MARKET_NOTIONAL, "9900000 > 7000000")]
    # 20 YES held (10 paid); if YES pays out, what the sells give up (1 - 0.50 a share) is lost
    # against the 30 NO bought: each sell's proceeds count
    held = Positions({"Y1": 20 * SH}, {"Y1": 10 * SH})
    buy_no = QuoteTarget("N1", (q("N1", size=30 * SH),))
    sells = QuoteTarget("Y1", (q(side=Side.SELL, size=10 * SH), q(side=Side.SELL, size=10 * SH)))
    assert check(gate(max_event_loss=16 * SH), [sells, buy_no], positions=held).rejections == []
    take = Take("Y1", Side.SELL, 500_000, 20 * SH)  # the same for a take, in whole micro-units
    d = check(gate(max_event_loss=14 * SH), [take, buy_no], positions=held)
    assert details(d) == [(Reason.EVENT_LOSS, "15000000 > 14000000")]


def test_a_band_of_zero_ticks_refuses_any_offset_from_the_mid():
    fine = dict(BOOKS, Y1=Book("Y1", bid=999_800, ask=999_900, tick=100))
    d = check(gate(price_band_ticks=0), [QuoteTarget("Y1", (q(price=999_800),))], books=fine)
    assert reasons(d) == [Reason.PRICE_BAND]


def test_sells_of_a_batch_add_up_against_what_is_held():
    sells = QuoteTarget("Y1", tuple(q(side=Side.SELL, price=p, size=10 * SH) for p in (500_000, 510_000, 520_000)))
    d = check(gate(), [sells], positions=Positions({"Y1": 25 * SH}))
    assert details(d) == [(Reason.INSUFFICIENT_POSITION, f"sell {10 * SH} + resting {20 * SH} > held {25 * SH}")]


def test_an_empty_target_then_a_new_one_for_the_token_replace_its_live_orders_once():
    live = [Resting("Y1", price=800_000), Resting("Y1", price=900_000)]
    three = tuple(q(price=100_000 * (i + 1)) for i in range(3))
    d = check(gate(max_open_orders=3), [QuoteTarget("N1", (q("N1"),)), QuoteTarget("Y1"), QuoteTarget("Y1", three)],
              open_orders=live)
    assert d.accepted[2] == QuoteTarget("Y1", three[:2]) and details(d) == [(Reason.OPEN_ORDERS, "3 open")]


def test_reducing_counts_resting_sells_of_the_other_token():
    g = gate()
    g.reduce_only("drill")
    # short 10 (NO held): selling 6 NO brings it to -4; buying 6 YES on top would take it to +2
    d = check(g, [QuoteTarget("N1", (q("N1", Side.SELL, 500_000, 6 * SH),)),
                  QuoteTarget("Y1", (q(size=6 * SH),))], positions=Positions({"N1": 10 * SH}))
    assert reasons(d) == [Reason.REDUCE_ONLY] and d.accepted[0].quotes == (q("N1", Side.SELL, 500_000, 6 * SH),)


def test_a_halted_gate_logs_one_line_per_state_change_and_counts_the_rest():
    """A halted bot's strategy keeps asking for quotes: each refusal is counted, one line is logged
    per trading state (not one per quote), and a new state logs its own line."""
    g = gate()
    g.halt("test")
    for _ in range(50):
        d = check(g, [QuoteTarget("Y1", (q(),)), QuoteTarget("N1", (q(token="N1"),))])
        assert Reason.HALTED in reasons(d)
    refusals = [kw for event, kw in g.log.lines if event == "risk_reject"]
    assert len(refusals) == 1 and refusals[0]["reason"] == "halted" and refusals[0]["state"] == "HALTED"
    assert g.reject_counts[Reason.HALTED] == 100
    g.resume()
    g.reduce_only("test")
    for _ in range(5):
        check(g, [QuoteTarget("Y1", (q(),))])
    g.resume()
    g.halt("again")
    for _ in range(5):
        check(g, [QuoteTarget("Y1", (q(),))])
    refusals = [kw for event, kw in g.log.lines if event == "risk_reject"]
    assert [r["reason"] for r in refusals] == ["halted", "reduce_only", "halted"]


def test_a_sell_of_an_off_lot_holding_is_checked_and_accepted_as_its_whole_lots():
    """Fills have 6 decimals, orders sell whole lots: a SELL quote or take of a 6-decimal holding is
    cut to its whole lots (the rest is dust); whole-lot intents pass as they are, the same object;
    a SELL under one lot and any off-lot BUY are refused as off grid, naming what was asked."""
    pos = Positions({"Y1": 11_371_898, "N1": 6_000})
    sell = q(side=Side.SELL, size=11_371_898)
    whole = q(side=Side.SELL, size=11_370_000)
    buy = q(size=10 * SH)
    d = check(gate(), [QuoteTarget("Y1", (sell, buy))], positions=pos)
    assert d.accepted == [QuoteTarget("Y1", (whole, buy))] and d.rejections == [] and d.new_orders == 2
    assert d.reducing == [(True, False)]
    target = QuoteTarget("Y1", (whole, buy))
    assert check(gate(), [target], positions=pos).accepted[0] is target  # nothing cut: the same target
    d = check(gate(), [Take("Y1", Side.SELL, 480_000, 11_371_898)], positions=pos)
    assert d.accepted == [Take("Y1", Side.SELL, 480_000, 11_370_000)] and d.reducing == [True]
    t = Take("Y1", Side.SELL, 480_000, 11_370_000)
    assert check(gate(), [t], positions=pos).accepted == [t] and check(gate(), [t], positions=pos).accepted[0] is t
    dust = [QuoteTarget("N1", (q("N1", Side.SELL, size=6_000),)), Take("N1", Side.SELL, 480_000, 6_000),
            QuoteTarget("Y1", (q(size=10 * SH + 1),)), Take("Y1", Side.BUY, 520_000, 5 * SH + 1)]
    d = check(gate(), dust, positions=pos)
    assert [(r.order, r.reason) for r in d.rejections] == [
        (dust[0].quotes[0], Reason.SIZE_OFF_GRID), (dust[1], Reason.SIZE_OFF_GRID),
        (dust[2].quotes[0], Reason.SIZE_OFF_GRID), (dust[3], Reason.SIZE_OFF_GRID)]
    # cut to whole lots, a sell is checked as such: within the position limit of what is held
    d = check(gate(), [QuoteTarget("Y1", (q(side=Side.SELL, size=11_379_999),))], positions=Positions({"Y1": 11_370_000}))
    assert d.rejections == [] and d.accepted[0].quotes[0].size == 11_370_000


def test_a_sell_cut_to_its_whole_lots_keeps_every_other_field_of_its_intent():
    """Cut to whole lots, a post-only GTD quote stays post-only and GTD, a FAK take stays FAK."""
    from bot.venue.enums import OrderType

    pos = Positions({"Y1": 11_371_898})
    quote = Quote("Y1", Side.SELL, 500_000, 11_371_898, post_only=True, expiration=1_900_000_000)
    d = check(gate(), [QuoteTarget("Y1", (quote,))], positions=pos)
    assert d.accepted == [QuoteTarget("Y1", (Quote("Y1", Side.SELL, 500_000, 11_370_000, True, 1_900_000_000),))]
    take = Take("Y1", Side.SELL, 480_000, 11_371_898, OrderType.FAK)
    d = check(gate(), [take], positions=pos)
    assert d.accepted == [Take("Y1", Side.SELL, 480_000, 11_370_000, OrderType.FAK)]


def test_an_order_judged_by_its_level_before_stays_counted_for_the_next_one():
    # 100 NO held: net exposure 100 > 50 already; a YES bid does not raise it, so it passes on the
    # level before it, and it must still count when the next bid of the target is judged
    g = gate(max_net_exposure=50 * SH, max_position=15 * SH, max_market_notional=None, max_event_notional=None,
             max_event_loss=None)
    pos = Positions({"N1": 100 * SH})
    d = check(g, [QuoteTarget("Y1", (q(size=10 * SH), q(price=490_000, size=10 * SH)))], positions=pos)
    assert reasons(d) == [Reason.POSITION]
    assert d.accepted == [QuoteTarget("Y1", (q(size=10 * SH),))]


def test_a_pause_of_the_source_counts_towards_no_staleness_or_disconnection_halt():
    from bot.risk.state import KillSwitch

    ks = KillSwitch(RiskLimits(stale_halt_s=30.0, disconnect_halt_s=25.0))
    stale = type("B", (), {"token_id": "Y1", "stale": True})()
    ks.observe_books([stale], 100.0)
    ks.on_event(Connectivity(False, "user_ws"), 100.0)
    assert {t.reason for t in ks.triggers(140.0)} == {HaltReason.STALE_DATA, HaltReason.DISCONNECTED}
    ks.pause(110.0, 10_110.0)  # the source was silent for 10,000 s from 110
    assert ks.triggers(10_120.0) == []  # 20 s of staleness and of disconnection count, not 10,020
    assert {t.reason for t in ks.triggers(10_141.0)} == {HaltReason.STALE_DATA, HaltReason.DISCONNECTED}
    ks.pause(5.0, 1.0)  # nothing for an empty pause
    assert {t.reason for t in ks.triggers(10_141.0)} == {HaltReason.STALE_DATA, HaltReason.DISCONNECTED}


def test_a_take_too_small_to_keep_its_price_within_a_tick_is_refused_and_a_good_one_is_not():
    """0.02 share sold at 0.067 on a 0.001 grid pays 0.0013 USDC, an implied price two ticks under
    the limit: no order can carry it (the venue refuses it; signing cannot build it)."""
    from bot.venue.enums import OrderType

    fine = {t: Book(t, tick=1_000) for t in ("Y1", "N1")}
    held = Positions({"Y1": 100 * SH})
    cases = [(Take("Y1", Side.SELL, 67_000, 20_000, OrderType.FAK), "too small to sell"),
             (Take("Y1", Side.SELL, 67_000, 10 * SH, OrderType.FAK), None),
             (Take("Y1", Side.BUY, 67_000, 10 * SH, OrderType.FAK), None),
             (Take("Y1", Side.BUY, 670_000, 10_000, OrderType.FAK), "too small to buy")]
    for take, why in cases:
        d = check(gate(), [take], positions=held, books=fine)
        if why is None:
            assert d.accepted == [take] and d.rejections == [], take
        else:
            [r] = d.rejections
            assert r.reason is Reason.AMOUNT_TOO_SMALL and why in r.detail and d.accepted == [], take


def test_a_takes_amounts_are_judged_on_its_own_tokens_grid():
    """The same 0.02 share: too small at 0.066 on a 0.001 grid, carried at 0.06 on a 0.01 grid."""
    from bot.venue.enums import OrderType

    books = {"Y1": Book("Y1", tick=1_000), "N1": Book("N1", tick=10_000)}
    held = Positions({"Y1": 100 * SH, "N1": 100 * SH})
    d = check(gate(), [Take("Y1", Side.SELL, 66_000, 20_000, OrderType.FAK),
                       Take("N1", Side.SELL, 60_000, 20_000, OrderType.FAK)], positions=held, books=books)
    assert reasons(d) == [Reason.AMOUNT_TOO_SMALL] and [t.token_id for t in d.accepted] == ["N1"]

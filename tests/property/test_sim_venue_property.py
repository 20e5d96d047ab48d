"""The simulated venue under random book streams and random order flow, with random latencies:
the ledger conserves collateral and tokens, reservations are exact, what the venue reports
accounts for every unit that moved, the reconciler ends where the venue is, and the same inputs
and seed give the same answers."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.execution.protocol import CancelsAnswered, OrderSeen, PlacesAnswered, TradeSeen
from bot.sim.accounts import cost
from bot.sim.latency import LatencyConfig
from bot.sim.trades import maker_cash
from bot.sim.queue import QueueConfig
from bot.sim.settlement import SettlementConfig
from bot.sim.venue import SimVenueConfig
from bot.venue.enums import OrderType, Side
from tests.unit.sim_feed import BUY, C, SELL, S, Shell, book, change, limit, take, tick_change, trade

TOKENS = ("Y", "N")
START_CASH = 300 * S
START_SHARES = 40 * S

cents = st.integers(44, 56)
shares = st.integers(0, 60).map(lambda n: n * S // 2)  # half shares: whole lots
level = st.tuples(cents, shares)

KINDS = {
    "change": st.tuples(st.just("change"), st.integers(0, 1), st.booleans(), level),
    "print": st.tuples(st.just("print"), st.integers(0, 1), st.booleans(), level),
    "book": st.tuples(st.just("book"), st.integers(0, 1), st.lists(level, max_size=4),
                      st.lists(level, max_size=4)),
    "tick": st.tuples(st.just("tick"), st.integers(0, 1)),
    "limit": st.tuples(st.just("limit"), st.integers(0, 1), st.booleans(), cents,
                       st.integers(1, 30), st.booleans(), st.booleans()),
    "take": st.tuples(st.just("take"), st.integers(0, 1), st.booleans(), cents, st.integers(1, 20),
                      st.booleans()),
    "cancel": st.tuples(st.just("cancel"), st.integers(0, 50)),
    "cancel_all": st.tuples(st.just("cancel_all")),
}
# a stream like a live one: mostly level changes and prints, orders now and then
WEIGHTS = ["change"] * 6 + ["print"] * 6 + ["limit"] * 8 + ["take", "cancel", "cancel", "book"]
step = st.one_of(st.sampled_from(WEIGHTS + ["tick", "cancel_all"]).flatmap(KINDS.__getitem__))
setup = st.fixed_dictionaries({
    "fee": st.sampled_from([0, 0, 150]),
    "mode": st.sampled_from(["backtest", "paper"]),
    "queue": st.sampled_from(["risk_averse", "prob"]),
    "sigma": st.sampled_from([0.0, 1.0]),
    "seed": st.integers(0, 3),
})


def make_shell(s: dict, shared_books: bool = False) -> Shell:
    config = SimVenueConfig(
        mode=s["mode"], fee_rate_bps=s["fee"], queue=QueueConfig(kind=s["queue"]),
        latency=LatencyConfig(kind="lognormal", entry=0.05, response=0.05, sigma=s["sigma"],
                              seed=s["seed"]),
        settlement=SettlementConfig(mined_after=0.5, confirmed_after=0.5, retry_share=0.3),
        seed=s["seed"])
    return Shell(config, collateral=START_CASH, tokens={t: START_SHARES for t in TOKENS},
                 shared_books=shared_books)


def drive(s: dict, steps: list, check=None, shared_books: bool = False) -> Shell:
    shell = make_shell(s, shared_books)
    for token in TOKENS:
        shell.market(book({46 * C: 50 * S, 45 * C: 20 * S}, {54 * C: 50 * S, 55 * C: 20 * S},
                          token=token), at=1.0)
    sent: list[str] = []
    t = 1.0
    for i, st_ in enumerate(steps):
        t += 0.037 * (1 + i % 5)
        kind = st_[0]
        if kind == "change":
            _, ti, bid, (c, z) = st_
            shell.market(change((TOKENS[ti], BUY if bid else SELL, c * C, z)), at=t)
        elif kind == "print":
            _, ti, buy, (c, z) = st_
            shell.market(trade(BUY if buy else SELL, c * C, z, token=TOKENS[ti]), at=t)
        elif kind == "book":
            _, ti, bids, asks = st_
            shell.market(book(dict(bids), dict(asks), token=TOKENS[ti]), at=t)
        elif kind == "tick":
            shell.market(tick_change(10_000, 1_000, token=TOKENS[st_[1]]), at=t)
        elif kind == "limit":
            _, ti, buy, c, n, post, gtd = st_
            oid = f"o{i}"
            exp = int(t) + 2 if gtd else 0
            shell.place(limit(oid, BUY if buy else SELL, c * C, n * S, TOKENS[ti],
                              post_only=post, expiration=exp), at=t)
            sent.append(oid)
        elif kind == "take":
            _, ti, buy, c, n, fok = st_
            oid = f"o{i}"
            ot = OrderType.FOK if fok else OrderType.FAK
            shell.place(take(oid, BUY if buy else SELL, c * C, n * S, ot, TOKENS[ti]), at=t)
            sent.append(oid)
        elif kind == "cancel":
            if sent:
                shell.cancel(sent[st_[1] % len(sent)], at=t)
        else:
            shell.cancel_all(at=t)
        if check is not None:
            check(shell)
    shell.settle()
    if check is not None:
        check(shell)
    return shell


def check_ledger(shell: Shell) -> None:
    v = shell.venue
    acct = v.account
    open_ = v.open_orders()
    assert acct.reserved == sum(cost(o.price, o.remaining) for o in open_ if o.side is BUY)
    for t in TOKENS:
        assert acct.reserved_tokens.get(t, 0) == sum(o.remaining for o in open_
                                                     if o.side is SELL and o.token == t)
        assert 0 <= acct.reserved_tokens.get(t, 0) <= acct.tokens.get(t, 0)
    assert 0 <= acct.reserved <= acct.collateral
    assert all(o.remaining > 0 for o in open_)  # a 6-decimal fill may leave it off the lot grid
    ledger = v.ledger
    assert sum(a.collateral for a in ledger.accounts.values()) == ledger.funded == START_CASH
    for t in TOKENS:
        assert sum(a.tokens.get(t, 0) for a in ledger.accounts.values()) == START_SHARES


def first_sight(shell: Shell) -> dict[str, object]:
    seen: dict[str, object] = {}
    for r in shell.trades():
        seen.setdefault(r.trade_id, r)
    return seen


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setup, st.lists(step, min_size=10, max_size=60))
def test_conservation_reservations_and_reported_trades(s, steps):
    shell = drive(s, steps, check_ledger)
    v = shell.venue
    final = {r.trade_id: r for r in shell.trades()}  # last status of each trade
    cash = START_CASH
    held = {t: START_SHARES for t in TOKENS}
    for tid, r in first_sight(shell).items():
        assert r.size > 0
        if final[tid].status.value == "FAILED":
            continue
        ours_taker = r.trader_side == "TAKER"
        side = r.side if ours_taker else r.maker_orders[0].side
        # the maker pays its price rounded down or is paid it rounded up; the taker the same amount
        paid = maker_cash(side.opposite if ours_taker else side, r.price, r.size)
        fee = 0
        if ours_taker and r.fee_rate_bps:
            from bot.venue.fees import BPS, FeeSchedule, taker_fee

            fee = taker_fee(side, r.price, r.size, FeeSchedule(rate=r.fee_rate_bps * BPS))
        if side is Side.BUY:
            cash -= paid
            held[r.token_id] += r.size - fee
        else:
            cash += paid - fee
            held[r.token_id] -= r.size
    assert v.account.collateral == cash
    assert {t: v.account.tokens.get(t, 0) for t in TOKENS} == held


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setup, st.lists(step, min_size=10, max_size=60))
def test_the_reconciler_ends_where_the_venue_is(s, steps):
    shell = drive(s, steps)
    v = shell.venue
    assert shell.venue.next_due() is None
    working = {o.order_id for o in shell.rec.orders.working()}
    assert working == {o.id for o in v.open_orders()}
    matched: dict[str, int] = {}
    for r in first_sight(shell).values():
        oid = r.taker_order_id or r.maker_orders[0].order_id
        matched[oid] = matched.get(oid, 0) + r.size
    for o in shell.rec.orders:
        assert o.filled == matched.get(o.order_id, 0)
        assert o.state.value != "PENDING_SUBMIT" and o.state.value != "PENDING_CANCEL"
    if s["fee"] == 0:  # fees are charged in shares on a BUY at the venue, in USDC in the portfolio
        failed = {r.trade_id for r in shell.trades() if r.status.value == "FAILED"}
        if not failed:
            for t in TOKENS:
                assert shell.portfolio.size(t) == v.account.tokens.get(t, 0)


def _answers(shell: Shell) -> list:
    out = []
    for a in shell.answers:
        if isinstance(a, PlacesAnswered):
            out.append(a.results)
        elif isinstance(a, CancelsAnswered):
            out.append((a.batch.order_ids, a.result))
        elif isinstance(a, (TradeSeen, OrderSeen)):
            out.append(a.record)
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setup, st.lists(step, min_size=10, max_size=40))
def test_same_inputs_and_seed_give_the_same_answers(s, steps):
    assert _answers(drive(s, steps)) == _answers(drive(s, steps))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setup, st.lists(step, min_size=10, max_size=40))
def test_feed_books_shared_with_the_caller_give_the_same_answers(s, steps):
    assert _answers(drive(s, steps, shared_books=True)) == _answers(drive(s, steps))

"""Complement arbitrage: a complete set of outcomes is worth exactly 1, so buy every outcome when
their best asks add up to less than 1 by more than the fees and a margin, and sell every outcome
when their best bids add up to more than 1 likewise.

Sets: a binary market's YES and NO; and, for a neg-risk event (exactly one of its markets resolves
YES), the YES tokens of all its markets. All of an event's markets must be among the strategy's
markets (run it on every market, or list the whole event): a partial set is not a set.

The legs go out as FOK orders marked as one set (``Take.group``): the router sends them in one
POST, when the throttles grant every leg at once, never some now and the rest later; an event of
more outcomes than one POST carries (15) is refused at start, with a log line naming it.
A leg can still fail alone (killed, refused, or filled while the other was not): the strategy
keeps what each token held before the legs were sent, and once none of them is working any more
(and ``settle_s`` has passed, doubling after each repair that did not even the set out) it
compares what each leg got. A broken set is repaired with FAK orders: completed (the missing
legs bought, or the unsold ones sold) while that costs at most ``max_leg_loss`` per share more than
the price the set was planned at, else unwound (the excess sold back, or the sold legs bought back)
within the same bound, and after ``leg_timeout_s`` unwound at any price. Only then is the next
opportunity on that set taken. A set that nothing evens out once ``leg_timeout_s`` has passed (no
order there to send, or ``MAX_REPAIRS`` repairs that did not: a difference too small for any order
to carry at its price, a book that is gone) is left as it is, said in a log line and counted: what
it holds stays held, and the set trades again.

The decisions are pure: ``opportunity`` (the set's touches -> the legs and the edge) and ``repair``
(what each leg got -> the orders that even them out). Amounts are exact: sizes are chosen so that
every BUY leg's USDC amount is a whole number of cents at its price.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import msgspec

from bot.core.intents import CENT, Intent, Take, buy_at_least
from bot.core.markets import MarketInfo
from bot.core.vocabulary import LOT, MAX_BATCH, NO_FEE, UNIT, FeeSchedule, OrderSize, OrderType, Price, Shares, Side, taker_fee
from bot.strategy import Strategy, StrategyContext

_BUY, _SELL = Side.BUY, Side.SELL
MAX_REPAIR_WAIT_S = 60.0  # repairs that keep failing are retried at least this often
MAX_REPAIRS = 10  # past leg_timeout_s, a set this many repairs did not even out is left as it is


class Params(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Complement-arbitrage parameters (in a config, prices per share and sizes in shares as written:
    ``margin = 0.005``, ``max_size = 50``; micro-units inside)."""

    markets: tuple[str, ...] = ()  # condition ids; empty: every market
    binary: bool = True  # YES + NO of each market
    neg_risk: bool = True  # the YES tokens of each neg-risk event
    margin: Price = 5_000  # edge wanted per share beyond the fees (0.005)
    fee_rate_bps: int = 0  # the fee rule of markets that carry none (MarketInfo.fee): rate, exponent
    fee_exponent: int = 1
    max_size: OrderSize = 50_000_000  # shares per set and opportunity
    min_size: Shares = 1_000_000  # smaller opportunities are left alone
    settle_s: float = 1.0  # the legs' results are looked at no earlier than this after sending
    max_leg_loss: Price = 20_000  # per share, accepted to complete or unwind a broken set
    leg_timeout_s: float = 30.0  # then a broken set is unwound at any price

    def __post_init__(self) -> None:
        if self.margin < 0 or self.max_leg_loss < 0:
            raise ValueError("margin and max_leg_loss must not be negative")
        if not 0 <= self.fee_rate_bps <= 10_000:
            raise ValueError("fee_rate_bps must be within 0..10000")
        if not 1 <= self.fee_exponent <= 8:
            raise ValueError("fee_exponent must be within 1..8")
        if not 0 < self.min_size <= self.max_size:
            raise ValueError("need 0 < min_size <= max_size")
        for name in ("settle_s", "leg_timeout_s"):
            v = getattr(self, name)
            if not (math.isfinite(v) and 0 <= v <= 86_400):
                raise ValueError(f"{name} must be within [0, 86400] seconds")


class Top(msgspec.Struct, frozen=True):
    """One outcome token's touch and what we hold of it."""

    token_id: str
    bid: int | None
    bid_size: int
    ask: int | None
    ask_size: int
    held: int = 0
    tick: int = 10_000
    fee: FeeSchedule = NO_FEE  # its market's fee rule (bot.venue.fees)


class Leg(msgspec.Struct, frozen=True):
    token_id: str
    side: Side
    price: int  # the worst price accepted (the touch the set was planned at)
    size: int  # shares

    def take(self, order_type: OrderType = OrderType.FOK, group: str = "") -> Take:
        """The leg as a market order: a BUY spends ``size * price`` USDC, a SELL sells ``size``;
        ``group``: the set it is a leg of (the router sends a set's legs in one POST)."""
        amount = self.size * self.price // UNIT if self.side is _BUY else self.size
        return Take(self.token_id, self.side, self.price, amount, order_type, group)


class Opportunity(msgspec.Struct, frozen=True):
    kind: Literal["buy", "sell"]
    legs: tuple[Leg, ...]
    size: int
    edge: int  # USDC micro-units expected, after fees and the margin


def exact_step(prices: list[int]) -> int:
    """The smallest size (a multiple of the lot) that buys a whole number of cents at each price."""
    step = LOT
    whole = UNIT * CENT
    for p in prices:
        s = whole // math.gcd(p, whole)
        step = step * s // math.gcd(step, s)
    return step


def opportunity(tops: list[Top], params: Params) -> Opportunity | None:
    """The better of buying and selling the whole set ``tops`` now, or ``None`` when neither clears
    the fees and the margin at a size of at least ``min_size``."""
    best: Opportunity | None = None
    for kind in ("buy", "sell"):
        opp = _buy(tops, params) if kind == "buy" else _sell(tops, params)
        if opp is not None and (best is None or opp.edge > best.edge):
            best = opp
    return best


def _buy(tops: list[Top], params: Params) -> Opportunity | None:
    if len(tops) < 2 or any(t.ask is None or t.ask_size <= 0 for t in tops):
        return None
    asks = [t.ask for t in tops]  # type: ignore[misc]
    if sum(asks) >= UNIT:
        return None
    step = exact_step(asks)
    cap = min([params.max_size] + [t.ask_size for t in tops])
    size = cap // step * step
    if size < params.min_size:
        return None
    fee = max(taker_fee(_BUY, a, size, t.fee) for t, a in zip(tops, asks))  # shares kept back
    edge = (size - fee) - sum(size * a // UNIT for a in asks) - params.margin * size // UNIT
    if edge <= 0:
        return None
    return Opportunity("buy", tuple(Leg(t.token_id, _BUY, a, size) for t, a in zip(tops, asks)), size, edge)


def _sell(tops: list[Top], params: Params) -> Opportunity | None:
    if len(tops) < 2 or any(t.bid is None or t.bid_size <= 0 for t in tops):
        return None
    bids = [t.bid for t in tops]  # type: ignore[misc]
    if sum(bids) <= UNIT:
        return None
    cap = min([params.max_size] + [t.bid_size for t in tops] + [t.held for t in tops])
    size = cap // LOT * LOT
    if size < params.min_size:
        return None
    receipts = sum(size * b // UNIT - taker_fee(_SELL, b, size, t.fee) for t, b in zip(tops, bids))
    edge = receipts - size - params.margin * size // UNIT
    if edge <= 0:
        return None
    return Opportunity("sell", tuple(Leg(t.token_id, _SELL, b, size) for t, b in zip(tops, bids)), size, edge)


def repair(got: dict[str, int], planned: tuple[Leg, ...], tops: dict[str, Top], params: Params,
           timed_out: bool, tolerance: int) -> tuple[list[Take], bool]:
    """What evens out a set whose legs got ``got`` (token -> shares gained, negative when sold):
    ``(orders, balanced)``. Balanced when the legs differ by at most ``tolerance``. Otherwise the
    orders complete the set (a bought set: the missing legs bought; a sold set: the unsold legs
    sold) within ``max_leg_loss`` per share of the planned prices, or else unwind it (the excess
    sold back; the sold legs bought back) within the same bound, or, ``timed_out``, bring every
    token down to the least gained at any price. None when no book allows either yet."""
    hi, lo = max(got.values()), min(got.values())
    if hi - lo <= tolerance:
        return [], True
    price_of = {leg.token_id: leg.price for leg in planned}
    if timed_out:
        return _down(got, lo, tops, price_of, None), False
    up = _up(got, hi, tops, price_of, params.max_leg_loss)
    down = _down(got, lo, tops, price_of, params.max_leg_loss)
    bought = bool(planned) and planned[0].side is _BUY
    for choice in ((up, down) if bought else (down, up)):
        if choice:
            return choice, False
    return [], False


def _up(got: dict[str, int], hi: int, tops: dict[str, Top], price_of: dict[str, int], loss: int) -> list[Take]:
    """Buy every token up to ``hi`` at most ``loss`` above its planned price; [] when a book can't."""
    out: list[Take] = []
    for token, g in got.items():
        need = -(-(hi - g) // LOT) * LOT
        if need <= 0:
            continue
        top = tops.get(token)
        if top is None or top.ask is None or top.ask > min(UNIT - top.tick, price_of[token] + loss) \
                or top.ask_size < need:
            return []
        out.append(buy_at_least(token, top.ask, need))
    return out


def _down(got: dict[str, int], lo: int, tops: dict[str, Top], price_of: dict[str, int],
          loss: int | None) -> list[Take]:
    """Sell every token down to ``lo`` (what is held of it at most), at least ``loss`` under its
    planned price, or at any price when ``loss`` is None; [] when a book can't."""
    out: list[Take] = []
    for token, g in got.items():
        top = tops.get(token)
        excess = min(g - lo, top.held if top is not None else 0) // LOT * LOT
        if excess <= 0:
            continue
        if top is None:
            continue
        if loss is None:
            out.append(Take(token, _SELL, top.tick, excess, OrderType.FAK))  # any price: the lowest there is
            continue
        if top.bid is None or top.bid < max(top.tick, price_of[token] - loss):
            return []
        out.append(Take(token, _SELL, top.bid, excess, OrderType.FAK))
    return out


class Pending(msgspec.Struct):
    """A set whose legs were sent: what each token held before, the plan, when it was sent."""

    baseline: dict[str, int]
    legs: tuple[Leg, ...]
    first_sent: float
    sent_at: float
    tolerance: int
    repairs: int = 0


class Group(msgspec.Struct, frozen=True):
    key: str  # a condition id, or "event:" + the event id
    tokens: tuple[str, ...]


def events(markets: list[MarketInfo]) -> dict[str, list[MarketInfo]]:
    """The markets of each neg-risk event, by event id, in order of the ids."""
    out: dict[str, list[MarketInfo]] = {}
    for m in markets:
        if m.neg_risk and m.event_id:
            out.setdefault(m.event_id, []).append(m)
    return dict(sorted(out.items()))


def groups(markets: list[MarketInfo], params: Params) -> list[Group]:
    """The sets to watch: each market's YES+NO, and each neg-risk event's YES tokens (an event
    of more than ``MAX_BATCH`` outcomes is no set to trade: its legs cannot go in one POST;
    ``too_large`` names them)."""
    out = [Group(m.condition_id, m.tokens) for m in markets] if params.binary else []
    if params.neg_risk:
        out += [Group("event:" + event_id, tuple(m.tokens[0] for m in ms))
                for event_id, ms in events(markets).items() if 2 <= len(ms) <= MAX_BATCH]
    return out


def too_large(markets: list[MarketInfo]) -> list[tuple[str, int]]:
    """The neg-risk events of more outcomes than one POST carries: (event id, outcomes)."""
    return [(e, len(ms)) for e, ms in events(markets).items() if len(ms) > MAX_BATCH]


class ComplementArbitrage(Strategy):
    """Watches each set's touches and trades it when it is mispriced; see the module docstring."""

    Params = Params
    reads = "top"

    @property
    def whole_events(self) -> bool:
        """Each neg-risk event's markets here are all of its markets (the sets it trades say so):
        the portfolio values the event's complete sets at their payout (``bot.portfolio.sets``)."""
        return self.params.neg_risk

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        self._groups: list[Group] = []
        self._by_token: dict[str, list[Group]] = {}
        self._pending: dict[str, Pending] = {}
        self._stats: dict[str, dict[str, float]] = {}
        self._published: dict[str, dict[str, float]] = {}
        self._default_fee = FeeSchedule.from_bps(self.params.fee_rate_bps, self.params.fee_exponent)

    def _tops(self, ctx: StrategyContext, tokens: tuple[str, ...]) -> list[Top]:
        out = []
        for t in tokens:
            b = ctx.books.get(t)
            held = max(0, ctx.portfolio.size(t))
            m = ctx.markets.get(t)
            tick = (b.tick if b is not None and b.tick else 0) or (m.tick if m is not None else 10_000)
            fee = m.fee.or_default(self._default_fee) if m is not None else self._default_fee
            if b is None or b.stale:
                out.append(Top(t, None, 0, None, 0, held, tick, fee))
            else:
                out.append(Top(t, b.best_bid, b.best_bid_size, b.best_ask, b.best_ask_size, held, tick, fee))
        return out

    def check(self, ctx: StrategyContext, g: Group) -> list[Intent]:
        """Resolve the set's pending legs, or take a new opportunity on it."""
        if g.key in self._pending:
            return self._resolve(ctx, g)
        tops = self._tops(ctx, g.tokens)
        opp = opportunity(tops, self.params)
        if opp is None:
            return []
        now = ctx.now()
        fees = {t.token_id: t.fee for t in tops}
        fee = max((taker_fee(_BUY, leg.price, leg.size, fees[leg.token_id]) for leg in opp.legs), default=0)
        self._pending[g.key] = Pending({t: ctx.portfolio.size(t) for t in g.tokens}, opp.legs, now, now,
                                       tolerance=fee + LOT)
        s = self._stats.setdefault(g.key, {"sets": 0.0, "edge_usdc": 0.0, "repairs": 0.0, "broken": 0.0,
                                           "uneven": 0.0})
        s["sets"] += 1
        s["edge_usdc"] += opp.edge / UNIT
        ctx.log.info("complement_arbitrage", set=g.key[:18], kind=opp.kind, size=opp.size, edge=opp.edge)
        return [leg.take(group=f"{g.key}#{int(s['sets'])}") for leg in opp.legs]

    def _resolve(self, ctx: StrategyContext, g: Group) -> list[Intent]:
        p = self._pending[g.key]
        now = ctx.now()
        wait = min(self.params.settle_s * 2 ** min(p.repairs, 6), MAX_REPAIR_WAIT_S)  # a failing repair backs off
        if now - p.sent_at < wait or any(t in ctx.open_orders for t in g.tokens):
            return []
        got = {t: ctx.portfolio.size(t) - p.baseline[t] for t in g.tokens}
        tops = {t.token_id: t for t in self._tops(ctx, g.tokens)}
        timed_out = now - p.first_sent >= self.params.leg_timeout_s
        takes, balanced = repair(got, p.legs, tops, self.params, timed_out, p.tolerance)
        if balanced:
            del self._pending[g.key]
            return []
        if timed_out and (not takes or p.repairs >= MAX_REPAIRS):  # nothing evens it out: left as it is
            del self._pending[g.key]
            self._stats[g.key]["uneven"] += 1
            ctx.log.warning("complement_set_left_uneven", set=g.key[:18], repairs=p.repairs, got=got)
            return []
        if takes:
            if p.repairs == 0:
                self._stats[g.key]["broken"] += 1
            p.repairs += 1
            p.sent_at = now
            self._stats[g.key]["repairs"] += 1
            ctx.log.warning("complement_leg_repair", set=g.key[:18], orders=len(takes), got=got)
        return list(takes)

    def publish(self) -> None:
        out: dict[str, dict[str, float]] = {}
        for g in self._groups:
            s = self._stats.get(g.key)
            if s is not None:
                out[g.tokens[0]] = dict(s, pending=float(g.key in self._pending))
        self._published = out

    def estimates(self) -> dict[str, dict[str, float]]:
        return self._published

    # --- hooks --------------------------------------------------------------------------------
    def on_start(self, ctx: StrategyContext) -> list[Intent]:
        wanted = self.params.markets
        markets = [m for m in ctx.markets if not wanted or m.condition_id in wanted]
        self._groups = groups(markets, self.params)
        if self.params.neg_risk:
            for event_id, n in too_large(markets):
                ctx.log.warning("complement_set_refused", event=event_id, outcomes=n,
                                reason=f"more legs than one POST carries ({MAX_BATCH}): a set goes whole or not at all")
        self._by_token = {}
        for g in self._groups:
            for t in g.tokens:
                self._by_token.setdefault(t, []).append(g)
        out: list[Intent] = []
        for g in self._groups:
            out += self.check(ctx, g)
        return out

    def on_book(self, ctx: StrategyContext, token_id: str) -> list[Intent]:
        out: list[Intent] = []
        for g in self._by_token.get(token_id, ()):
            out += self.check(ctx, g)
        return out

    def on_timer(self, ctx: StrategyContext) -> list[Intent]:
        out: list[Intent] = []
        for g in self._groups:
            out += self.check(ctx, g)
        self.publish()
        return out

    def on_stop(self, ctx: StrategyContext) -> list[Intent]:
        self.publish()
        return []

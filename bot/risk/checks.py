"""Pre-trade checks: intents and the current state in, accepted intents and rejections out.

Invariants:
- Cancels (``CancelOrder``, ``CancelAll``, an empty ``QuoteTarget``) always pass.
- Every projected limit is evaluated as if every resting order and every accepted new order
  filled in full, adversarially for the loss limit. An order passes a limit when the projection
  stays within it, or when it does not make an existing breach worse; so starting inside the
  limits, no accepted set can breach them.
- A ``QuoteTarget`` replaces the token's resting quotes: its rejected quotes are dropped from the
  target (and so withdrawn), never left resting. In HALTED every target is emptied.
- REDUCING passes only orders after which every fill combination keeps the market's net
  exposure (YES minus NO shares) between zero and its current value: sells of the long side and
  buys of its complement, never growing or flipping it (and sells stay within held shares).
"""

from __future__ import annotations

import enum
from typing import Any, Iterable, Mapping, Protocol

import msgspec

from bot.core.intents import CancelAll, CancelOrder, Intent, Quote, QuoteTarget, Take
from bot.core.markets import MarketIndex, MarketInfo
from bot.venue.enums import Side
from bot.venue.units import UNIT

from .limits import RiskLimits
from .state import TradingState

SIZE_LOT = 10_000  # sizes travel with two decimals (0.01 share)
BPS = 10_000


class Reason(str, enum.Enum):
    HALTED = "halted"
    REDUCE_ONLY = "reduce_only"
    UNKNOWN_MARKET = "unknown_market"
    PRICE_OFF_GRID = "price_off_grid"
    PRICE_OUT_OF_RANGE = "price_out_of_range"
    SIZE_OFF_GRID = "size_off_grid"
    BELOW_MIN_SIZE = "below_min_size"
    ORDER_SIZE = "order_size"
    STALE_BOOK = "stale_book"
    NO_REFERENCE_PRICE = "no_reference_price"
    PRICE_BAND = "price_band"
    OPEN_ORDERS = "open_orders"
    ORDER_RATE = "order_rate"
    POSITION = "position"
    INSUFFICIENT_POSITION = "insufficient_position"
    MARKET_NOTIONAL = "market_notional"
    EVENT_NOTIONAL = "event_notional"
    NET_EXPOSURE = "net_exposure"
    EVENT_LOSS = "event_loss"


class BookLike(Protocol):
    @property
    def best_bid(self) -> int | None: ...
    @property
    def best_ask(self) -> int | None: ...
    @property
    def mid(self) -> int | None: ...
    @property
    def stale(self) -> bool: ...
    @property
    def tick(self) -> int: ...


class PositionsLike(Protocol):
    def size(self, token_id: str) -> int: ...
    def cost(self, token_id: str) -> int: ...


class Rejection(msgspec.Struct, frozen=True):
    """``order`` (a ``Quote`` or ``Take``) was refused for ``reason``."""

    order: Quote | Take
    reason: Reason
    detail: str = ""


class RiskDecision(msgspec.Struct, frozen=True):
    accepted: list[Intent]
    rejections: list[Rejection]
    new_orders: int = 0  # orders that will be sent (not kept resting); spent from the rate


class Universe:
    """The markets and their risk groups (a neg-risk event, or a market alone), built once."""

    __slots__ = ("markets", "_groups", "_event_of")

    def __init__(self, markets: MarketIndex) -> None:
        self.markets = markets
        self._groups: dict[str, tuple[MarketInfo, ...]] = {}
        self._event_of: dict[str, str] = {}
        by_event: dict[str, list[MarketInfo]] = {}
        for m in markets:
            if m.neg_risk and m.event_id:
                by_event.setdefault(m.event_id, []).append(m)
        for eid, ms in by_event.items():
            group = tuple(sorted(ms, key=lambda m: m.condition_id))
            for m in group:
                self._groups[m.condition_id] = group
        for m in markets:
            if m.event_id:
                self._event_of[m.condition_id] = m.event_id

    def group(self, market: MarketInfo) -> tuple[MarketInfo, ...]:
        """The markets whose outcomes are linked to ``market``'s (at most one resolves YES)."""
        return self._groups.get(market.condition_id, (market,))

    def event_markets(self, market: MarketInfo) -> tuple[MarketInfo, ...]:
        """Markets sharing ``market``'s event id (itself alone when it has none)."""
        eid = self._event_of.get(market.condition_id)
        if not eid:
            return (market,)
        return tuple(m for m in self.markets if m.event_id == eid)


class _Tok:
    __slots__ = ("pos", "cost", "buy_sz", "buy_ntl", "sell_sz", "sell_ntl")

    def __init__(self, pos: int, cost: int) -> None:
        self.pos, self.cost = pos, cost
        self.buy_sz = self.buy_ntl = self.sell_sz = self.sell_ntl = 0


class Projection:
    """Positions plus every order counted as filled in full; orders can be added and removed."""

    __slots__ = ("_positions", "_toks", "orders")

    def __init__(self, positions: PositionsLike) -> None:
        self._positions = positions
        self._toks: dict[str, _Tok] = {}
        self.orders = 0  # resting orders counted

    def tok(self, token_id: str) -> _Tok:
        try:
            return self._toks[token_id]
        except KeyError:  # first touch: read the position once
            t = self._toks[token_id] = _Tok(self._positions.size(token_id), self._positions.cost(token_id))
            return t

    def add(self, token_id: str, side: Side, shares: int, usdc: int, sign: int = 1) -> None:
        t = self.tok(token_id)
        if side is Side.BUY:
            t.buy_sz += sign * shares
            t.buy_ntl += sign * usdc
        else:
            t.sell_sz += sign * shares
            t.sell_ntl += sign * usdc

    # -- metrics (all in micro-units) -----------------------------------------------------

    def position(self, token_id: str) -> int:
        t = self.tok(token_id)
        return t.pos + t.buy_sz

    def market_notional(self, m: MarketInfo) -> int:
        total = 0
        tok = self.tok
        for tid in m.tokens:
            t = tok(tid)
            c = t.cost
            total += (c if c > 0 else 0) + t.buy_ntl
        return total

    def event_notional(self, ms: Iterable[MarketInfo]) -> int:
        return sum(self.market_notional(m) for m in ms)

    def net_exposure(self, m: MarketInfo) -> int:
        y, n = self.tok(m.tokens[0]), self.tok(m.tokens[1])
        hi = (y.pos + y.buy_sz) - (n.pos - n.sell_sz)
        lo = (y.pos - y.sell_sz) - (n.pos + n.buy_sz)
        return max(hi, -lo)

    def worst_loss(self, group: tuple[MarketInfo, ...]) -> int:
        """Largest loss over the group's outcomes when resting buys fill on losers and resting
        sells fill on winners: entry cost + losing buys + (1 - price) of winning sells - payoff."""
        tok = self.tok
        if len(group) == 1:
            m = group[0]
            y, n = tok(m.tokens[0]), tok(m.tokens[1])
            # win(t) = -t.pos + (t.sell_sz - t.sell_ntl): the token pays out, holdings pay, sells
            # give up 1 - price; lose(t) = t.buy_ntl: the token is worthless, buys are lost
            return y.cost + n.cost + max(
                -y.pos + (y.sell_sz - y.sell_ntl) + n.buy_ntl,
                y.buy_ntl + (-n.pos + (n.sell_sz - n.sell_ntl)),
            )
        toks = [(tok(m.tokens[0]), tok(m.tokens[1])) for m in group]
        cost = sum(y.cost + n.cost for y, n in toks)

        def win(t: _Tok) -> int:  # token pays out: holdings pay, sells give up 1 - price
            return -t.pos + (t.sell_sz - t.sell_ntl)

        def lose(t: _Tok) -> int:  # token worthless: buys are lost
            return t.buy_ntl

        all_no = sum(lose(y) + win(n) for y, n in toks)
        worst = all_no
        for y, n in toks:
            worst = max(worst, all_no - lose(y) - win(n) + win(y) + lose(n))
        return cost + worst


def _rest(o: Any) -> tuple[str, Side, int, int]:
    """(token, side, price, remaining size) of a resting order (``remaining`` or ``size``)."""
    size = getattr(o, "remaining", None)
    if size is None:
        size = o.size
    return o.token_id, o.side, o.price, size


def _is_cancel(intent: Intent) -> bool:
    return isinstance(intent, (CancelOrder, CancelAll)) or (
        isinstance(intent, QuoteTarget) and not intent.quotes
    )


def check_intents(
    intents: Iterable[Intent],
    *,
    state: TradingState,
    limits: RiskLimits,
    universe: Universe,
    positions: PositionsLike,
    open_orders: Iterable[Any],
    books: Mapping[str, BookLike] | Any,
    rate_budget: int | None = None,
) -> RiskDecision:
    """Decide every intent in order; later intents are checked on top of those accepted before.

    ``open_orders`` are the live orders (``token_id``, ``side``, ``price``, ``size`` or
    ``remaining``); ``books`` maps token id to a book (``.get``); ``rate_budget`` is how many new
    orders the sliding rate window still allows (None: unlimited).
    """
    proj = Projection(positions)
    live: dict[str, list[tuple[Side, int, int]]] = {}
    for o in open_orders:
        token, side, price, size = _rest(o)
        if size <= 0:
            continue
        live.setdefault(token, []).append((side, price, size))
        proj.add(token, side, size, price * size // UNIT)
        proj.orders += 1
    checker = _Checker(state, limits, universe, proj, books, rate_budget)
    accepted: list[Intent] = []
    targets: dict[str, list[Quote]] = {}  # token -> quotes accepted for it so far
    for intent in intents:
        if _is_cancel(intent):
            if isinstance(intent, QuoteTarget):
                checker.replace_token(intent.token_id, live, targets)
                targets[intent.token_id] = []
            accepted.append(intent)
        elif isinstance(intent, QuoteTarget):
            checker.replace_token(intent.token_id, live, targets)
            kept_live: dict[tuple[Side, int, int], int] = {}
            for key in live.get(intent.token_id, ()):
                kept_live[key] = kept_live.get(key, 0) + 1
            ok: list[Quote] = []
            for q in intent.quotes:
                key = (q.side, q.price, q.size)
                fresh = kept_live.get(key, 0) <= 0
                if checker.quote(q, fresh):
                    ok.append(q)
                    if not fresh:
                        kept_live[key] -= 1
            targets[intent.token_id] = ok
            accepted.append(QuoteTarget(intent.token_id, tuple(ok)))
        elif isinstance(intent, Take):
            if checker.take(intent):
                accepted.append(intent)
        else:
            raise TypeError(f"not an intent: {type(intent).__name__}")
    return RiskDecision(accepted, checker.rejections, checker.new_orders)


class _Checker:
    __slots__ = ("state", "lim", "uni", "proj", "books", "budget", "rejections", "new_orders")

    def __init__(self, state, limits, universe, proj, books, rate_budget) -> None:
        self.state: TradingState = state
        self.lim: RiskLimits = limits
        self.uni: Universe = universe
        self.proj: Projection = proj
        self.books = books
        self.budget: int | None = rate_budget
        self.rejections: list[Rejection] = []
        self.new_orders = 0

    def replace_token(self, token: str, live: dict, targets: dict[str, list[Quote]]) -> None:
        """A new target for ``token`` supersedes its live orders or an earlier target."""
        prev = targets.get(token)
        if prev is None:
            for side, price, size in live.get(token, ()):
                self.proj.add(token, side, size, price * size // UNIT, -1)
                self.proj.orders -= 1
        else:
            for q in prev:
                self.proj.add(token, q.side, q.size, q.price * q.size // UNIT, -1)
                self.proj.orders -= 1

    def _reject(self, order: Quote | Take, reason: Reason, detail: str = "") -> bool:
        self.rejections.append(Rejection(order, reason, detail))
        return False

    # -- per order ------------------------------------------------------------------------

    def quote(self, q: Quote, fresh: bool) -> bool:
        usdc = q.price * q.size // UNIT
        return self._order(q, q.token_id, q.side, q.price, q.size, usdc, resting=True, fresh=fresh)

    def take(self, t: Take) -> bool:
        if t.side is Side.BUY:
            book = self.books.get(t.token_id) if self.books is not None else None
            ask = book.best_ask if book is not None else None
            ref = min(t.price, ask) if ask else t.price
            shares = t.amount * UNIT // ref if ref > 0 else 0
            usdc = t.amount
        else:
            shares = t.amount
            usdc = t.price * t.amount // UNIT
        return self._order(t, t.token_id, t.side, t.price, shares, usdc, resting=False, fresh=True)

    def _order(self, order, token, side, price, shares, usdc, *, resting, fresh) -> bool:
        lim, proj = self.lim, self.proj
        if self.state is TradingState.HALTED:
            return self._reject(order, Reason.HALTED)
        market = self.uni.markets.get(token)
        if market is None:
            return self._reject(order, Reason.UNKNOWN_MARKET, token)
        book = self.books.get(token) if self.books is not None else None
        tick = book.tick if book is not None and book.tick else market.tick  # the live tick rules
        if price % tick:
            return self._reject(order, Reason.PRICE_OFF_GRID, f"{price} not a multiple of {tick}")
        if not tick <= price <= UNIT - tick:
            return self._reject(order, Reason.PRICE_OUT_OF_RANGE, f"{price} outside [{tick}, {UNIT - tick}]")
        amount = shares if resting else order.amount
        if amount <= 0 or amount % SIZE_LOT:
            return self._reject(order, Reason.SIZE_OFF_GRID, f"{amount} not a positive multiple of {SIZE_LOT}")
        if resting:
            min_size = max(market.min_size, getattr(book, "min_size", 0) or 0)
            if shares < min_size:
                return self._reject(order, Reason.BELOW_MIN_SIZE, f"{shares} < {min_size}")
        if lim.max_order_size is not None and shares > lim.max_order_size:
            return self._reject(order, Reason.ORDER_SIZE, f"{shares} > {lim.max_order_size}")
        if book is not None and book.stale:
            return self._reject(order, Reason.STALE_BOOK, token)
        if lim.price_band_ticks is not None or lim.price_band_bps is not None:
            mid = book.mid if book is not None else None
            if mid is None:
                return self._reject(order, Reason.NO_REFERENCE_PRICE, token)
            band = max(
                (lim.price_band_ticks or 0) * tick,
                (lim.price_band_bps or 0) * mid // BPS,
            )
            if resting:
                off = abs(price - mid)
            else:  # a take's price is its worst acceptable price: only the adverse side counts
                off = price - mid if side is Side.BUY else mid - price
            if off > band:
                return self._reject(order, Reason.PRICE_BAND, f"{price} is {off} from mid {mid} > {band}")
        if self.state is TradingState.REDUCING and not self._reduces(market, token, side, shares):
            return self._reject(order, Reason.REDUCE_ONLY)
        if resting and lim.max_open_orders is not None and proj.orders + 1 > lim.max_open_orders:
            return self._reject(order, Reason.OPEN_ORDERS, f"{proj.orders} open")
        if fresh and self.budget is not None and self.new_orders >= self.budget:
            return self._reject(order, Reason.ORDER_RATE)
        if side is Side.SELL:
            t = proj.tok(token)
            if t.sell_sz + shares > max(t.pos, 0):
                return self._reject(
                    order, Reason.INSUFFICIENT_POSITION, f"sell {shares} + resting {t.sell_sz} > held {t.pos}"
                )
        reason = self._projected(market, token, side, shares, usdc)
        if reason is not None:
            return self._reject(order, *reason)
        if resting:
            proj.orders += 1
        if fresh:
            self.new_orders += 1
        return True

    def _reduces(self, market: MarketInfo, token: str, side: Side, shares: int) -> bool:
        """With this order, the market's projected net exposure stays between 0 and its
        current value ``yes - no`` (it may shrink, never grow or flip)."""
        y, n = self.proj.tok(market.tokens[0]), self.proj.tok(market.tokens[1])
        hi = (y.pos + y.buy_sz) - (n.pos - n.sell_sz)
        lo = (y.pos - y.sell_sz) - (n.pos + n.buy_sz)
        is_yes = token == market.tokens[0]
        if (side is Side.BUY) == is_yes:
            hi += shares
        else:
            lo -= shares
        e = y.pos - n.pos
        return min(0, e) <= lo and hi <= max(0, e)

    def _projected(self, market, token, side, shares, usdc) -> tuple[Reason, str] | None:
        """Add the order to the projection; undo and name the limit if it breaches one."""
        lim, proj, uni = self.lim, self.proj, self.uni
        group = uni.group(market)
        event = uni.event_markets(market)
        # the limits in the order they are reported; None: not checked
        max_pos = lim.max_position
        max_mkt = lim.max_market_notional
        max_evt = lim.max_event_notional if len(event) > 1 else None
        max_net = lim.max_net_exposure
        max_loss = lim.max_event_loss
        # The metrics below are ``Projection.position`` / ``market_notional`` / ``net_exposure`` /
        # ``worst_loss`` evaluated on token rows fetched once (the rows are live: ``add`` updates
        # them in place); a linked group of several markets goes through ``worst_loss`` itself.
        tok = proj.tok
        t = tok(token)
        mts = [tok(x) for x in market.tokens]
        single = len(group) == 1 and group[0] is market

        def levels() -> tuple[int, int, int, int, int]:
            pos = t.pos + t.buy_sz if max_pos is not None else 0
            mkt = 0
            if max_mkt is not None:
                for r in mts:
                    c = r.cost
                    mkt += (c if c > 0 else 0) + r.buy_ntl
            evt = proj.event_notional(event) if max_evt is not None else 0
            net = loss = 0
            if max_net is not None or (max_loss is not None and single):
                y, n = mts[0], mts[1]
                if max_net is not None:
                    hi = (y.pos + y.buy_sz) - (n.pos - n.sell_sz)
                    lo = (y.pos - y.sell_sz) - (n.pos + n.buy_sz)
                    net = hi if hi > -lo else -lo
                if max_loss is not None and single:
                    a = -y.pos + (y.sell_sz - y.sell_ntl) + n.buy_ntl
                    b = y.buy_ntl + (-n.pos + (n.sell_sz - n.sell_ntl))
                    loss = y.cost + n.cost + (a if a > b else b)
            if max_loss is not None and not single:
                loss = proj.worst_loss(group)
            return pos, mkt, evt, net, loss

        b_pos, b_mkt, b_evt, b_net, b_loss = levels()
        proj.add(token, side, shares, usdc)
        a_pos, a_mkt, a_evt, a_net, a_loss = levels()
        breach: tuple[Reason, str] | None = None
        if max_pos is not None and a_pos > max_pos and a_pos > b_pos:
            breach = Reason.POSITION, f"{a_pos} > {max_pos}"
        elif max_mkt is not None and a_mkt > max_mkt and a_mkt > b_mkt:
            breach = Reason.MARKET_NOTIONAL, f"{a_mkt} > {max_mkt}"
        elif max_evt is not None and a_evt > max_evt and a_evt > b_evt:
            breach = Reason.EVENT_NOTIONAL, f"{a_evt} > {max_evt}"
        elif max_net is not None and a_net > max_net and a_net > b_net:
            breach = Reason.NET_EXPOSURE, f"{a_net} > {max_net}"
        elif max_loss is not None and a_loss > max_loss and a_loss > b_loss:
            breach = Reason.EVENT_LOSS, f"{a_loss} > {max_loss}"
        if breach is not None:
            proj.add(token, side, shares, usdc, -1)
        return breach

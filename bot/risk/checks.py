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
  buys of its complement, never growing or flipping it (and sells stay within held shares). In a
  neg-risk event it also keeps the event's worst-case loss (``Projection.worst_loss`` over the
  linked markets) at most its current value, that of the positions alone: a leg that shrinks
  its own market's exposure but unhedges the event does not pass.
- A SELL may name a 6-decimal number of shares (the whole of an off-lot holding, say): what it
  is checked as, projected as and accepted as is its whole lots (``bot.core.intents.whole_lots``), the most the
  venue lets an order sell; one under a lot is refused as SIZE_OFF_GRID. Every other size
  (a BUY's shares or USDC amount) must already be whole lots.
- Only the projection of tokens the intents can read (their markets, neg-risk groups and
  events) is built; every resting order still counts towards the open-order limit.
"""

from __future__ import annotations

import enum
from typing import Any, Iterable, Mapping, Protocol

import msgspec

from bot.core.intents import CancelAll, CancelOrder, Intent, Quote, QuoteTarget, Take, unsendable, whole_lots
from bot.core.markets import MarketIndex, MarketInfo
from bot.venue.enums import Side
from bot.venue.units import LOT, UNIT

from .limits import RiskLimits
from .state import TradingState

BPS = 10_000


class Reason(str, enum.Enum):
    HALTED = "halted"
    REDUCE_ONLY = "reduce_only"
    UNKNOWN_MARKET = "unknown_market"
    PRICE_OFF_GRID = "price_off_grid"
    PRICE_OUT_OF_RANGE = "price_out_of_range"
    SIZE_OFF_GRID = "size_off_grid"
    AMOUNT_TOO_SMALL = "amount_too_small"
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
    # per accepted intent, whether it shrinks the market's net exposure (a tuple per quote of a
    # target, one flag for a take, False for cancels): the router sends those first under pressure
    reducing: list[Any] = []


class Universe:
    """The markets and their risk groups (a neg-risk event, or a market alone), built once."""

    __slots__ = ("markets", "_groups", "_events", "_scopes", "_links")

    def __init__(self, markets: MarketIndex) -> None:
        self.markets = markets
        self._groups: dict[str, tuple[MarketInfo, ...]] = {}
        self._events: dict[str, tuple[MarketInfo, ...]] = {}
        self._scopes: dict[str, frozenset[str]] = {}
        self._links: dict[str, tuple[tuple[MarketInfo, ...], tuple[MarketInfo, ...]]] = {}
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
                self._events[m.condition_id] = tuple(x for x in markets if x.event_id == m.event_id)

    def group(self, market: MarketInfo) -> tuple[MarketInfo, ...]:
        """The markets whose outcomes are linked to ``market``'s (at most one resolves YES)."""
        return self._groups.get(market.condition_id, (market,))

    def event_markets(self, market: MarketInfo) -> tuple[MarketInfo, ...]:
        """Markets sharing ``market``'s event id (itself alone when it has none)."""
        return self._events.get(market.condition_id) or (market,)

    def links(self, market: MarketInfo) -> tuple[tuple[MarketInfo, ...], tuple[MarketInfo, ...]]:
        """``(group(market), event_markets(market))`` in one lookup."""
        links = self._links.get(market.condition_id)
        if links is None:
            links = self._links[market.condition_id] = (self.group(market), self.event_markets(market))
        return links

    def scope(self, token_id: str) -> frozenset[str]:
        """Every token whose projection a check of an order on ``token_id`` reads: those of its
        market, its neg-risk group and its event (the token alone if its market is unknown)."""
        sc = self._scopes.get(token_id)
        if sc is None:
            m = self.markets.get(token_id)
            if m is None:
                sc = frozenset((token_id,))
            else:
                sc = frozenset(t for x in (m, *self.group(m), *self.event_markets(m)) for t in x.tokens)
            self._scopes[token_id] = sc
        return sc


class _Tok:
    __slots__ = ("pos", "cost", "buy_sz", "buy_ntl", "sell_sz", "sell_ntl")

    def __init__(self, pos: int, cost: int) -> None:
        self.pos, self.cost = pos, cost
        self.buy_sz = self.buy_ntl = self.sell_sz = self.sell_ntl = 0


_BUY, _SELL = Side.BUY, Side.SELL
_HALTED, _REDUCING = TradingState.HALTED, TradingState.REDUCING


class Projection:
    """Positions plus every order counted as filled in full; orders can be added and removed."""

    __slots__ = ("_positions", "_toks", "orders")

    def __init__(self, positions: PositionsLike) -> None:
        self._positions = positions
        self._toks: dict[str, _Tok] = {}
        self.orders = 0  # resting orders counted

    def tok(self, token_id: str) -> _Tok:
        """The row of ``token_id``: its position is read once, on its first lookup."""
        t = self._toks.get(token_id)
        if t is None:
            pos = self._positions
            t = self._toks[token_id] = _Tok(pos.size(token_id), pos.cost(token_id))
        return t

    def add(self, token_id: str, side: Side, shares: int, usdc: int, sign: int = 1) -> None:
        t = self.tok(token_id)
        if side is _BUY:
            t.buy_sz += sign * shares
            t.buy_ntl += sign * usdc
        else:
            t.sell_sz += sign * shares
            t.sell_ntl += sign * usdc

    def without(self, token_id: str, side: Side, shares: int, usdc: int, metric: Any, *args: Any) -> int:
        """``metric(*args)`` with one order taken out of the projection (the level before it);
        the projection is left as it was."""
        self.add(token_id, side, shares, usdc, -1)
        try:
            return metric(*args)
        finally:
            self.add(token_id, side, shares, usdc)

    # -- metrics (all in micro-units) -----------------------------------------------------

    def position(self, token_id: str) -> int:
        t = self.tok(token_id)
        return t.pos + t.buy_sz

    def market_notional(self, m: MarketInfo) -> int:
        y, n = self.tok(m.tokens[0]), self.tok(m.tokens[1])
        cy, cn = y.cost, n.cost
        return (cy if cy > 0 else 0) + y.buy_ntl + (cn if cn > 0 else 0) + n.buy_ntl

    def event_notional(self, ms: Iterable[MarketInfo]) -> int:
        return sum(self.market_notional(m) for m in ms)

    def net_exposure(self, m: MarketInfo) -> int:
        y, n = self.tok(m.tokens[0]), self.tok(m.tokens[1])
        hi = (y.pos + y.buy_sz) - (n.pos - n.sell_sz)
        lo = (y.pos - y.sell_sz) - (n.pos + n.buy_sz)
        return hi if hi > -lo else -lo

    def worst_loss(self, group: tuple[MarketInfo, ...], *, orders: bool = True) -> int:
        """Largest loss over the group's outcomes when resting buys fill on losers and resting
        sells fill on winners: entry cost + losing buys + (1 - price) of winning sells - payoff.
        ``orders=False``: the positions alone, no order filled (never more than with orders)."""
        tok = self.tok
        if not orders:
            toks = [(tok(m.tokens[0]), tok(m.tokens[1])) for m in group]
            all_no = -sum(n.pos for _, n in toks)  # no market resolves YES: every NO pays out
            worst = max(all_no, max(all_no + n.pos - y.pos for y, n in toks))  # or one does
            return sum(y.cost + n.cost for y, n in toks) + worst
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
    return _decide(intents if isinstance(intents, list) else list(intents), state, limits, universe, positions,
                   open_orders, books, rate_budget)


def _decide(intents: list[Intent], state: TradingState, limits: RiskLimits, universe: Universe,
            positions: PositionsLike, open_orders: Iterable[Any], books: Any, rate_budget: int | None) -> RiskDecision:
    """``check_intents`` with its arguments in order (compiled, a direct call with typed locals)."""
    # the tokens whose projection any check below can read (``Universe.scope``); resting orders
    # elsewhere only count towards the open-order limit
    scope: set[str] | frozenset[str]
    if len(intents) == 1 and isinstance(intents[0], (QuoteTarget, Take)):
        scope = universe.scope(intents[0].token_id)
    else:
        scope = set()
        for i in intents:
            if isinstance(i, (QuoteTarget, Take)):
                scope |= universe.scope(i.token_id)
    # a target first in line replaces its token's live orders before anything reads them: they
    # are counted, but never added to the projection only to be taken out again
    first = intents[0] if intents else None
    superseded = first.token_id if isinstance(first, QuoteTarget) else None
    proj = Projection(positions)
    live: dict[str, list[tuple[Side, int, int]]] = {}
    resting = 0
    for o in open_orders:
        size = getattr(o, "remaining", None)  # what still rests: ``remaining``, else ``size``
        if size is None:
            size = o.size
        if size <= 0:
            continue
        token, side, price = o.token_id, o.side, o.price
        resting += 1
        if token in scope:
            lv = live.get(token)
            if lv is None:
                live[token] = [(side, price, size)]
            else:
                lv.append((side, price, size))
            if token != superseded:
                proj.add(token, side, size, price * size // UNIT)
    proj.orders = resting
    checker = _Checker(state, limits, universe, proj, books, rate_budget)
    accepted: list[Intent] = []
    reducing: list[Any] = []
    targets: dict[str, list[Quote]] = {}  # token -> quotes accepted for it so far
    if superseded is not None:
        proj.orders -= len(live.get(superseded, ()))
        targets[superseded] = []  # its live orders are out of the projection already
    for intent in intents:
        if isinstance(intent, QuoteTarget):
            token = intent.token_id
            checker.replace_token(token, live, targets)
            if not intent.quotes:  # an empty target is a cancel: it always passes
                targets[token] = []
                accepted.append(intent)
                reducing.append(False)
                continue
            kept_live: dict[tuple[Side, int, int], int] = {}
            for key in live.get(token, ()):
                kept_live[key] = kept_live.get(key, 0) + 1
            ok: list[Quote] = []
            floored = False  # a SELL quote was cut to its whole lots
            for q in intent.quotes:
                if q.side is _SELL and q.size % LOT and q.size >= LOT:
                    q = whole_lots(q)
                    floored = True
                side, price, size = q.side, q.price, q.size
                key = (side, price, size)
                fresh = kept_live.get(key, 0) <= 0
                if checker.order(q, token, side, price, size, price * size // UNIT, True, fresh):
                    ok.append(q)
                    if not fresh:
                        kept_live[key] -= 1
            targets[token] = ok
            # every quote passed: the target is accepted as it is
            accepted.append(intent if len(ok) == len(intent.quotes) and not floored else QuoteTarget(token, tuple(ok)))
            reducing.append(tuple([checker.shrinks(token, q.side) for q in ok]))
        elif isinstance(intent, Take):
            if intent.side is _SELL and intent.amount % LOT and intent.amount >= LOT:
                intent = whole_lots(intent)
            if checker.take(intent):
                accepted.append(intent)
                reducing.append(checker.shrinks(intent.token_id, intent.side))
        elif isinstance(intent, (CancelOrder, CancelAll)):
            accepted.append(intent)
            reducing.append(False)
        else:
            raise TypeError(f"not an intent: {type(intent).__name__}")
    return RiskDecision(accepted, checker.rejections, checker.new_orders, reducing)


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
        return self.order(t, t.token_id, t.side, t.price, shares, usdc, False, True)

    def order(self, order, token, side, price, shares, usdc, resting: bool, fresh: bool) -> bool:
        """Check one order (a quote, ``resting``, or a take) and add it to the projection if it
        passes; ``fresh``: it will be sent (not kept resting), so it spends the rate."""
        lim, proj = self.lim, self.proj
        if self.state is _HALTED:
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
        if amount <= 0 or amount % LOT:
            return self._reject(order, Reason.SIZE_OFF_GRID, f"{amount} not a positive multiple of {LOT}")
        if not resting:  # a take's amounts must keep its price within a tick of its limit (venue.md 3.5)
            why = unsendable(order, tick)
            if why is not None:
                return self._reject(order, Reason.AMOUNT_TOO_SMALL, why)
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
        if self.state is _REDUCING and not self._reduces(market, token, side, shares, usdc):
            return self._reject(order, Reason.REDUCE_ONLY)
        if resting and lim.max_open_orders is not None and proj.orders + 1 > lim.max_open_orders:
            return self._reject(order, Reason.OPEN_ORDERS, f"{proj.orders} open")
        if fresh and self.budget is not None and self.new_orders >= self.budget:
            return self._reject(order, Reason.ORDER_RATE)
        if side is _SELL:
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

    def shrinks(self, token: str, side: Side) -> bool:
        """A fill of this order moves its market's net exposure (positions only, ``yes - no``)
        towards zero: selling or buying against what is held."""
        market = self.uni.markets.get(token)
        if market is None:
            return False
        proj = self.proj
        e = proj.tok(market.tokens[0]).pos - proj.tok(market.tokens[1]).pos
        if e == 0:
            return False
        up = (side is _BUY) == (token == market.tokens[0])  # buying YES or selling NO raises it
        return (e > 0) != up

    def _reduces(self, market: MarketInfo, token: str, side: Side, shares: int, usdc: int) -> bool:
        """With this order, the market's projected net exposure stays between 0 and its
        current value ``yes - no`` (it may shrink, never grow or flip); and in a neg-risk event,
        the event's projected worst-case loss stays at most that of the positions alone."""
        proj = self.proj
        y, n = proj.tok(market.tokens[0]), proj.tok(market.tokens[1])
        hi = (y.pos + y.buy_sz) - (n.pos - n.sell_sz)
        lo = (y.pos - y.sell_sz) - (n.pos + n.buy_sz)
        is_yes = token == market.tokens[0]
        if (side is Side.BUY) == is_yes:
            hi += shares
        else:
            lo -= shares
        e = y.pos - n.pos
        if not (min(0, e) <= lo and hi <= max(0, e)):
            return False
        group = self.uni.group(market)
        if len(group) == 1:
            return True  # one binary market: the net-exposure bound already caps its worst case
        proj.add(token, side, shares, usdc)
        loss = proj.worst_loss(group)
        proj.add(token, side, shares, usdc, -1)
        return loss <= proj.worst_loss(group, orders=False)

    def _projected(self, market, token, side, shares, usdc) -> tuple[Reason, str] | None:
        """Add the order to the projection; undo and name the limit if it breaches one.

        A limit is breached when its level after the order exceeds it and exceeds the level
        before. Levels after the order are computed first, on the market's two rows (the
        formulas of ``Projection.position`` / ``market_notional`` / ``net_exposure`` /
        ``worst_loss``); the level before is needed only when the one after is over the limit.
        A SELL moves neither position nor notional, and a BUY raises them by exactly ``shares``
        and ``usdc``.
        """
        lim, proj = self.lim, self.proj
        group, event = self.uni.links(market)
        proj.add(token, side, shares, usdc)
        y, n = proj.tok(market.tokens[0]), proj.tok(market.tokens[1])
        breach: tuple[Reason, str] | None = None
        # the limits in the order they are reported
        if side is _BUY:
            max_pos = lim.max_position
            if max_pos is not None:
                t = y if token == market.tokens[0] else n
                a = t.pos + t.buy_sz
                if a > max_pos and a > a - shares:  # the level before is ``a - shares``
                    breach = Reason.POSITION, f"{a} > {max_pos}"
            max_mkt = lim.max_market_notional
            if breach is None and max_mkt is not None:
                cy, cn = y.cost, n.cost
                a = (cy if cy > 0 else 0) + y.buy_ntl + (cn if cn > 0 else 0) + n.buy_ntl
                if a > max_mkt and a > a - usdc:  # the level before is ``a - usdc``
                    breach = Reason.MARKET_NOTIONAL, f"{a} > {max_mkt}"
            max_evt = lim.max_event_notional
            if breach is None and max_evt is not None:
                if len(event) > 1:
                    a = proj.event_notional(event)
                    if a > max_evt and a > a - usdc:  # the level before is ``a - usdc``
                        breach = Reason.EVENT_NOTIONAL, f"{a} > {max_evt}"
        max_net = lim.max_net_exposure
        if breach is None and max_net is not None:
            hi = (y.pos + y.buy_sz) - (n.pos - n.sell_sz)
            lo = (y.pos - y.sell_sz) - (n.pos + n.buy_sz)
            a = hi if hi > -lo else -lo
            if a > max_net:
                b = proj.without(token, side, shares, usdc, proj.net_exposure, market)
                if a > b:
                    breach = Reason.NET_EXPOSURE, f"{a} > {max_net}"
        max_loss = lim.max_event_loss
        if breach is None and max_loss is not None:
            if len(group) == 1:
                w = -y.pos + (y.sell_sz - y.sell_ntl) + n.buy_ntl  # YES pays out
                v = y.buy_ntl + (-n.pos + (n.sell_sz - n.sell_ntl))  # NO pays out
                a = y.cost + n.cost + (w if w > v else v)
            else:
                a = proj.worst_loss(group)
            if a > max_loss:
                b = proj.without(token, side, shares, usdc, proj.worst_loss, group)
                if a > b:
                    breach = Reason.EVENT_LOSS, f"{a} > {max_loss}"
        if breach is not None:
            proj.add(token, side, shares, usdc, -1)
        return breach

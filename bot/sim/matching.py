"""The matching engine: one book per outcome token, price-time priority, integer units.

Invariants after every command:

* No crossed book across a binary market: for a token ``T`` with complement ``C``, the best
  effective bid of ``T`` (own bids, and ``1 - a`` for every ask ``a`` of ``C``) is below its best
  effective ask (own asks, and ``1 - b`` for every bid ``b`` of ``C``). A BUY of ``T`` takes, best
  price first and oldest first at equal prices, both ``T`` asks and ``C`` bids (minting a pair,
  each side paying its own price); a SELL of ``T`` takes ``T`` bids and ``C`` asks (merging a
  pair into 1 USDC split by price).
* Fill sizes have 6 decimals, as on the venue: a market BUY spends USDC and receives, at each
  maker order it meets, ``spent / price`` shares rounded down to the unit; orders placed in
  shares stay in lots (0.01 share) but may fill against a maker's off-lot remainder. Collateral
  stays exact: a maker pays its price rounded down and is paid it rounded up (``maker_cash``),
  the taker gives or gets the other end of that amount, and a resting BUY's reservation is
  released as ``price * remaining`` (rounded down) shrinks, so it returns to zero exactly.
* Resting BUY orders reserve ``price * remaining`` collateral and resting SELL orders reserve
  ``remaining`` tokens; nothing is placed beyond the free balance.
* Neg-risk markets are matched as independent binary markets; conversions between the markets of
  a neg-risk event are not simulated.
* Self-trades are allowed (no self-trade prevention).

Time is a parameter: ``now`` is unix seconds (float) on every command; GTD ``expiration`` is unix
seconds. Commands return results; events go to an outbox read with ``drain()``.
``advance(now)`` expires GTD orders and moves settlement forward, and returns ``drain()``.
With ``MatchingConfig.emit_events = False`` no event or level-change bookkeeping is done (the
benchmark's mode); results and queries are unaffected.
"""

from __future__ import annotations

import heapq
import random
from bisect import insort

import msgspec
from msgspec.structs import astuple

from bot.core.markets import MarketInfo
from bot.sim import results as R
from bot.sim.accounts import Ledger
from bot.sim.book import Book, Level
from bot.sim.events import (
    BookLevelChanged,
    BookSnapshot,
    OrderEvent,
    OrderView,
    TickSizeChanged,
    TradeEvent,
    TradePrint,
    TradeView,
)
from bot.sim.orders import LOT, NewOrder, Order
from bot.sim.positions import AccountPosition, PositionFill, positions_from_fills
from bot.sim.results import CancelResult, OrderResult, rejected
from bot.sim.settlement import Settlement, SettlementConfig
from bot.sim.ticks import TickConfig, next_tick
from bot.sim.trades import MakerFill, Trade, apply_trade, maker_cash, taker_cash, trade_id_prefix
from bot.venue.fees import FeeSchedule, maker_rebate, taker_fee
from bot.venue.enums import OrderStatus, OrderType, Side, TradeStatus
from bot.venue.units import UNIT

BUY = Side.BUY
SELL = Side.SELL
GTC = OrderType.GTC
GTD = OrderType.GTD
FOK = OrderType.FOK
LIVE = OrderStatus.LIVE
MATCHED = OrderStatus.MATCHED
FAILED = TradeStatus.FAILED
_NONE = 1 << 62  # "no level" sentinel, above any price
_NO_STOP = 1 << 62  # above any order sequence number: no stop
_SPARE_LEVELS = 64  # emptied levels kept for reuse (a new level costs a deque)


class MatchingConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    seed: int = 0
    # the fee rule (bot.venue.fees) of markets whose info carries none: rate in bps, exponent
    fee_rate_bps: int = 0
    fee_exponent: int = 1
    fee_account: str = "fees"  # receives taker fees, pays maker rebates
    emit_events: bool = True
    mirror_books: bool = True  # views and level events include the complement's orders at 1-p
    enforce_min_size: bool = True  # limit orders below the market's min_size are rejected
    settlement: SettlementConfig = SettlementConfig()
    ticks: TickConfig = TickConfig()


class Balance(msgspec.Struct, frozen=True):
    account: str
    collateral: int
    collateral_reserved: int
    tokens: dict[str, int]
    tokens_reserved: dict[str, int]


class MarketState:
    """A market's mutable part: its current tick and its two books. Its fee rule is fixed
    (``fee_bps`` and ``fee_rate`` are read from it once, for the matching loop)."""

    __slots__ = ("info", "tick", "yes", "no", "accepting", "min_size", "fee", "fee_bps", "fee_rate")

    def __init__(self, info: MarketInfo, enforce_min_size: bool = True,
                 default_fee: FeeSchedule | None = None) -> None:
        self.info = info
        self.fee = info.fee.or_default(default_fee)
        self.fee_bps = self.fee.bps
        self.fee_rate = self.fee.rate
        self.tick = info.tick
        self.min_size = info.min_size if enforce_min_size else 0
        self.yes = Book(info.tokens[0], info.condition_id, info.outcomes[0])
        self.no = Book(info.tokens[1], info.condition_id, info.outcomes[1])
        self.yes.comp, self.no.comp = self.no, self.yes
        self.yes.state = self.no.state = self
        self.accepting = True


class MatchingEngine:
    """Commands: add_market, fund, mint_tokens, split, merge, place, cancel, cancel_orders,
    cancel_all, cancel_market, expire, advance. Queries: book, best_bid_ask, open_orders, order,
    trades_of, trade, balance, positions, holders, take_level_changes."""

    def __init__(self, config: MatchingConfig | None = None) -> None:
        self.config = cfg = config or MatchingConfig()
        self.rng = random.Random(cfg.seed)
        self.ledger = Ledger()
        self._accounts = self.ledger.accounts  # the same dict, bound for the hot path
        self.settlement = Settlement(cfg.settlement, self.rng)
        self.markets: dict[str, MarketState] = {}
        self._state: dict[str, MarketState] = {}  # token -> market state
        self._books: dict[str, Book] = {}
        self._comp: dict[str, Book] = {}  # token -> complement's book
        self._outcome: dict[str, str] = {}
        self.orders: dict[str, Order] = {}
        self.trades: dict[str, Trade] = {}
        self._expiry: list[tuple[int, int, Order]] = []
        self._seq = 0
        self._events = cfg.emit_events
        self._mirror = cfg.mirror_books
        self._outbox: list = []
        self._spare: list[Level] = []  # levels emptied by matching, for new levels to reuse
        self._dirty: set[tuple[Book, bool, int]] = set()  # own levels touched by this command
        self._level_changes: dict[tuple[str, Side, int], tuple[str, int]] = {}
        self._external: dict[str, list[tuple[int, PositionFill]]] = {}
        self.post_only_mode = False
        self.now = 0.0
        # prices inside [calm_lo, calm_hi] can never trigger a tick change when resting (taking
        # liquidity only moves best prices inward); with ``revert`` every command is checked
        tc = cfg.ticks
        if not tc.enabled:
            self._calm_lo, self._calm_hi = 0, UNIT
        elif tc.revert:
            self._calm_lo, self._calm_hi = UNIT, 0
        else:
            self._calm_lo = max(tc.low, UNIT - tc.high)
            self._calm_hi = min(tc.high, UNIT - tc.low)
        self._id_prefix = trade_id_prefix(self.rng)
        self._trade_count = 0  # trade ids: UUID-shaped, seeded prefix + 12-hex-digit counter
        self._settle = cfg.settlement.enabled
        self._fee_account = cfg.fee_account
        self._default_fee = FeeSchedule.from_bps(cfg.fee_rate_bps, cfg.fee_exponent)

    # setup -------------------------------------------------------------------------------
    def add_market(self, info: MarketInfo) -> MarketState:
        if info.condition_id in self.markets:
            return self.markets[info.condition_id]
        ms = MarketState(info, self.config.enforce_min_size, self._default_fee)
        self.markets[info.condition_id] = ms
        yes, no = ms.yes, ms.no
        for book, comp, outcome in ((yes, no, info.outcomes[0]), (no, yes, info.outcomes[1])):
            self._state[book.token] = ms
            self._books[book.token] = book
            self._comp[book.token] = comp
            self._outcome[book.token] = outcome
        return ms

    def market_of(self, token: str) -> MarketInfo:
        return self._state[token].info

    def fee(self, token: str) -> FeeSchedule:
        """The fee rule trades in ``token`` are settled with (its market's, else the engine's)."""
        return self._state[token].fee

    def fund(self, account: str, collateral: int) -> None:
        self.ledger.fund(account, collateral)

    def mint_tokens(self, account: str, token: str, size: int) -> None:
        """Airdrop tokens (demo accounts); they enter positions at zero cost."""
        self._state[token]  # KeyError on unknown token
        self.ledger.mint_tokens(account, token, size)
        self._note_external(account, token, BUY, size, 0)

    def split(self, account: str, market: str, size: int) -> None:
        """Collateral -> YES + NO pairs (each enters positions at 0.5)."""
        info = self.markets[market].info
        self.ledger.split(account, market, info.tokens, size)
        for t in info.tokens:
            self._note_external(account, t, BUY, size, size // 2)

    def merge(self, account: str, market: str, size: int) -> None:
        """YES + NO pairs -> collateral (each leaves positions at 0.5)."""
        info = self.markets[market].info
        self.ledger.merge(account, market, info.tokens, size)
        for t in info.tokens:
            self._note_external(account, t, SELL, size, size // 2)

    def _note_external(self, account: str, token: str, side: Side, size: int, cash: int) -> None:
        acct = self.ledger.get(account)
        self._external.setdefault(account, []).append(
            (len(acct.trade_ids), PositionFill(token, side, size, cash))
        )

    # placing -----------------------------------------------------------------------------
    def place(self, req: NewOrder, now: float) -> OrderResult:
        """Validate, match and rest one order; see the module docstring for the rules."""
        self.now = now
        expiry = self._expiry
        if expiry and expiry[0][0] <= now:
            self.expire(now)
        # NewOrder's fields in one call (cheaper than reading them one by one when compiled)
        oid, account, token, side, price, size, ot, post_only, exp, owner = astuple(req)
        orders = self.orders
        if not oid or oid in orders:
            return rejected(oid, R.DUPLICATED)
        try:  # a subscript is cheaper than ``.get`` on the hot path
            book = self._books[token]
        except KeyError:
            return rejected(oid, R.UNKNOWN_TOKEN)
        ms = book.state
        if not ms.accepting:
            return rejected(oid, R.NOT_READY)
        try:
            acct = self._accounts[account]
        except KeyError:
            acct = self.ledger.get(account)
        if ot is GTC or ot is GTD:
            if self.post_only_mode and not post_only:
                return rejected(oid, R.POST_ONLY_MODE)
            if (exp if ot is GTC else exp <= now):  # GTC: none allowed; GTD: must be ahead
                return rejected(oid, R.INVALID_EXPIRATION)
            tick = ms.tick
            if price % tick or price < tick or price > UNIT - tick:
                return rejected(oid, R.invalid_tick(price, tick))
            if size <= 0 or size % LOT:
                return rejected(oid, R.invalid_lot(size))
            if size < ms.min_size:
                return rejected(oid, R.invalid_size(size, ms.min_size))
            px = price  # a valid price from here on (a C integer when compiled)
            unit = UNIT
            comp = book.comp
            crosses = False
            if side is BUY:
                if acct.collateral - acct.reserved < price * size // UNIT:
                    return rejected(oid, R.NOT_ENOUGH_BALANCE)
                ak = book.ask_keys
                if ak:
                    key = ak[-1]
                    crosses = -key <= px
                if not crosses:
                    cb = comp.bid_prices
                    if cb:
                        key = cb[-1]
                        crosses = unit - key <= px
            else:
                if acct.tokens.get(token, 0) - acct.reserved_tokens.get(token, 0) < size:
                    return rejected(oid, R.NOT_ENOUGH_BALANCE)
                bp = book.bid_prices
                if bp:
                    key = bp[-1]
                    crosses = key >= px
                if not crosses:
                    ck = comp.ask_keys
                    if ck:
                        key = ck[-1]
                        crosses = unit + key >= px
            if crosses and post_only:
                return rejected(oid, R.POST_ONLY_CROSSES)
            order = Order(oid, account, owner or account, token, book.market, side,
                          price, size, size, ot, post_only, exp, now, book.outcome)
            orders[oid] = order
            if crosses:
                ntrades = self._match(order, book, comp, px, -1, now)
                rem = order.remaining
            else:
                ntrades = 0
                rem = size
            events = self._events
            if rem:  # rest (inlined Book.add: this is the hot path)
                self._seq = seq = self._seq + 1
                order.seq = seq
                if side is BUY:
                    acct.reserved += price * rem // UNIT
                    levels = book.bids
                    keys = book.bid_prices
                    key = px
                else:
                    rt = acct.reserved_tokens
                    rt[token] = rt.get(token, 0) + rem
                    levels = book.asks
                    keys = book.ask_keys
                    key = -px
                acct.open_orders[oid] = order
                level = levels.get(price)
                if level is None:
                    spare = self._spare
                    if spare:  # a level emptied by matching, reused (empty, total 0)
                        level = spare.pop()
                        level.price = price
                    else:
                        level = Level(price)
                    levels[price] = level
                    if not keys or key > keys[-1]:
                        keys.append(key)
                    else:
                        insort(keys, key)
                level.orders.append(order)
                level.total += rem
                if ot is GTD:
                    heapq.heappush(expiry, (exp, seq, order))
                if events:
                    self._dirty.add((book, side is BUY, price))
            else:
                order.status = MATCHED
            if events:
                self._outbox.append(OrderEvent(self._view(order), "PLACEMENT", now))
                self._flush(ms, now)
            elif not self._calm_lo <= px <= self._calm_hi:
                self._check_tick(ms, now)
            if ntrades:  # the order's trade ids are exactly its trades' ids, in order
                return OrderResult(True, "", oid, "matched", order.making, order.taking,
                                   order.trade_ids.copy())
            return OrderResult(True, "", oid, "live")
        # FOK / FAK: BUY size is USDC to spend, SELL size is shares; price is the worst price
        if post_only:
            return rejected(oid, R.POST_ONLY_MARKET)
        if self.post_only_mode:
            return rejected(oid, R.POST_ONLY_MODE)
        if exp:
            return rejected(oid, R.INVALID_EXPIRATION)
        if size <= 0 or size % LOT or not 0 < price < UNIT:
            return rejected(oid, R.INVALID_AMOUNTS)
        if side is BUY:
            if acct.collateral - acct.reserved < size:
                return rejected(oid, R.NOT_ENOUGH_BALANCE)
        elif acct.tokens.get(token, 0) - acct.reserved_tokens.get(token, 0) < size:
            return rejected(oid, R.NOT_ENOUGH_BALANCE)
        comp = book.comp
        if ot is FOK and not self._fillable(book, comp, side, price, size):
            return rejected(oid, R.FOK_KILLED)
        # a market BUY counts shares in ``matched`` as they fill; ``remaining`` stays 0
        order = Order(oid, account, owner or account, token, book.market, side,
                      price, size, 0 if side is BUY else size, ot, False, 0, now, book.outcome)
        budget = size if side is BUY else -1
        if not self._match(order, book, comp, price, budget, now):
            return rejected(oid, R.FAK_KILLED)
        self.orders[oid] = order
        order.size = order.matched
        order.remaining = 0
        order.status = MATCHED
        if self._events:
            self._flush(ms, now)
        elif self._calm_lo > self._calm_hi:
            self._check_tick(ms, now)
        return self._result(order)

    @staticmethod
    def _result(order: Order) -> OrderResult:
        """A matched order's answer; a taker's ``trade_ids`` are exactly its trades' ids."""
        return OrderResult(True, "", order.id, "matched", order.making, order.taking,
                           order.trade_ids.copy())

    def _fillable(self, book: Book, comp: Book, side: Side, limit: int, amount: int) -> bool:
        """Dry run of a FOK: can ``amount`` (USDC for BUY, shares for SELL) be filled at prices
        no worse than ``limit``? Walks the makers of both books, best price first and oldest
        first, with ``_match``'s arithmetic: a BUY is filled when it spends its last unit."""
        if side is BUY:
            own = [(-k, book.asks[-k].orders) for k in reversed(book.ask_keys) if -k <= limit]
            mirror = [(UNIT - p, comp.bids[p].orders) for p in reversed(comp.bid_prices)
                      if UNIT - p <= limit]
        else:
            own = [(p, book.bids[p].orders) for p in reversed(book.bid_prices) if p >= limit]
            mirror = [(UNIT + k, comp.asks[-k].orders) for k in reversed(comp.ask_keys)
                      if UNIT + k >= limit]
        makers = sorted(((px, o.seq, o.remaining) for px, q in own + mirror for o in q),
                        key=lambda m: (-m[0] if side is SELL else m[0], m[1]))
        left = amount
        for px, _, r in makers:
            if side is BUY:
                x = min(r, left * UNIT // px)
                left -= -(-px * x // UNIT)  # a taker BUY pays its price rounded up
            else:
                left -= min(r, left)
            if not left:
                return True
        return False

    def _match(self, order: Order, book: Book, comp: Book, limit: int, budget: int,
               now: float) -> int:
        """Take liquidity for ``order`` up to ``limit`` (best price first, oldest first).

        ``budget`` >= 0 means a market BUY spending that many USDC units (shares bought are
        added to ``order.matched``); otherwise ``order.remaining`` shares are matched.
        Makes one trade per effective price (their ids go to ``order.trade_ids``) and returns
        how many. Maker balances move fill by fill and the taker's once per trade (once per
        match on the fast path below); the arithmetic is ``trades.apply_trade``'s, inlined for
        speed (a unit test holds the two equal).

        Fast path (no events, no fee, no settlement): a trade is registered (``self.trades``,
        trade ids) when it opens rather than when it closes, and the taker's balances, amounts
        and the pair counter move once for the whole match; the end state is the same as
        booking each trade with ``_close`` (sums of exact integers, and the trade-id lists see
        the same ids in the same order).
        """
        buy = order.side is BUY
        accounts = self._accounts
        events = self._events
        ms = book.state
        fee_bps = ms.fee_bps
        slow = events or self._settle or ms.fee_rate != 0  # book each trade with ``_close``
        unit = UNIT
        token = book.token
        market = book.market
        outcome = book.outcome
        oid = order.id
        oside = order.side
        oaccount = order.account
        oowner = order.owner
        spend = budget >= 0  # a market BUY: ``budget`` counts down, ``left`` is unused
        left = 0 if spend else order.remaining  # shares still to match (written back at the end)
        filled = 0
        prefix = self._id_prefix
        spare = self._spare
        ntrades = 0
        trade = None
        makers = None
        tid = ""
        tpx = -1  # the open trade's price (``tid`` and ``makers`` are set with it)
        cash = shares = pairs = 0  # the open (or, fast path, whole) taker collateral change etc.
        if not slow:
            all_trades = self.trades
            otids = order.trade_ids
            ttids = accounts[oaccount].trade_ids
        if buy:
            own_keys = book.ask_keys
            own_levels = book.asks
            comp_keys = comp.bid_prices
            comp_levels = comp.bids
        else:
            own_keys = book.bid_prices
            own_levels = book.bids
            comp_keys = comp.ask_keys
            comp_levels = comp.asks
        while True:
            # effective price of each book's best level, in this token's terms
            if buy:
                if own_keys:
                    a = own_keys[-1]
                    a = -a
                else:
                    a = _NONE
                if comp_keys:
                    e = comp_keys[-1]
                    e = unit - e
                else:
                    e = _NONE
                take_own = a < e or (a == e != _NONE and own_levels[a].orders[0].seq
                                      < comp_levels[unit - a].orders[0].seq)
                px = a if take_own else e
                if px > limit:
                    break
            else:
                if own_keys:
                    a = own_keys[-1]
                else:
                    a = -_NONE
                if comp_keys:
                    e = comp_keys[-1]
                    e = unit + e
                else:
                    e = -_NONE
                take_own = a > e or (a == e != -_NONE and own_levels[a].orders[0].seq
                                      < comp_levels[unit - a].orders[0].seq)
                px = a if take_own else e
                if px < limit:
                    break
            if spend:  # shares the budget buys here, to the unit (rounded down)
                want = budget * UNIT // px
            else:
                want = left
            if not want:
                break
            if take_own:
                mbook = book
                mprice = px
                level = own_levels[mprice]
            else:
                mbook = comp
                mprice = unit - px
                level = comp_levels[mprice]
            # both books at the same price: take this level only up to the other level's first
            # order (time priority across the pair), then decide again
            if a == e:
                other = comp_levels[unit - a] if take_own else own_levels[a]
                stop_seq = other.orders[0].seq
            else:
                stop_seq = _NO_STOP
            if px != tpx:
                if trade is not None and slow:
                    self._close(trade, order, cash, shares, pairs, now)
                    cash = shares = pairs = 0
                self._trade_count = n = self._trade_count + 1
                tid = f"{prefix}{n:012x}"
                trade = Trade(tid, market, token, oside, px, oid, oaccount, oowner, fee_bps, now,
                              ntrades, outcome)
                ntrades += 1
                tpx = px
                makers = trade.makers
                if not slow:
                    all_trades[tid] = trade
                    otids.append(tid)
                    ttids.append(tid)  # a new id: the taker's list cannot end with it yet
            q = level.orders
            mtok = mbook.token
            maker_buys = buy != take_own
            mside = BUY if maker_buys else SELL
            moutcome = mbook.outcome
            mp = level.price  # ``mprice`` as an integer object, for the amounts below
            got = 0
            tc = 0  # the taker's collateral at this level: paid on a BUY, received on a SELL
            while q:
                mo = q[0]
                mseq = mo.seq
                if mseq > stop_seq:
                    break
                r = mo.remaining
                moid = mo.id
                maccount = mo.account
                macct = accounts[maccount]
                if r <= want:
                    x = r
                    q.popleft()
                    mo.remaining = 0
                    mo.status = MATCHED
                    del macct.open_orders[moid]
                else:
                    x = want
                    mo.remaining = r - want
                mo.matched += x
                got += x
                mt = macct.tokens
                if maker_buys:  # pays its price rounded down, gets tokens (own or complement book)
                    c = mp * x // UNIT
                    macct.reserved -= mp * r // UNIT - mp * (r - x) // UNIT
                    macct.collateral -= c
                    mt[mtok] = mt.get(mtok, 0) + x
                else:  # gives tokens, gets its price rounded up
                    c = -(-mp * x // UNIT)
                    macct.reserved_tokens[mtok] -= x
                    macct.collateral += c
                    mt[mtok] -= x
                if not take_own:  # a mint or merge: the pair's other end
                    c = x - c
                tc += c
                if spend:
                    budget -= c
                    want = budget * UNIT // px
                else:
                    want -= x
                makers.append(MakerFill(moid, maccount, mo.owner, mtok, mside, mp, x, moutcome))
                # a maker order fills at most once per trade: its list cannot end with ``tid``
                mo.trade_ids.append(tid)
                ids = macct.trade_ids
                if not ids or ids[-1] != tid:
                    ids.append(tid)
                if events:
                    self._outbox.append(OrderEvent(self._view(mo), "UPDATE", now))
                if not want:
                    break
            level.total -= got
            trade.size += got
            shares += got
            if buy:
                cash -= tc
                if not take_own:
                    pairs += got
            else:
                cash += tc
                if not take_own:
                    pairs -= got
            if not spend:
                left -= got
            filled += got
            if not q:  # the emptied level was its book's best: its key is the last one
                if take_own:
                    del own_levels[mp]
                    own_keys.pop()
                else:
                    del comp_levels[mp]
                    comp_keys.pop()
                if len(spare) < _SPARE_LEVELS:
                    spare.append(level)
            if events:
                self._dirty.add((mbook, maker_buys, mp))
            if not want and not spend:  # the order is filled: skip pricing the next level
                break
        if filled:
            order.matched += filled
            if not spend:
                order.remaining = left
        if trade is not None:
            if slow:
                self._close(trade, order, cash, shares, pairs, now)
            else:  # the taker's side of every trade at once (no fee on this path)
                taker = accounts[oaccount]
                tt = taker.tokens
                taker.collateral += cash
                if buy:
                    tt[token] = tt.get(token, 0) + shares
                    order.making -= cash
                    order.taking += shares
                else:
                    tt[token] -= shares
                    order.making += shares
                    order.taking += cash
                if pairs:
                    pairs_of = self.ledger.pairs
                    pairs_of[market] = pairs_of.get(market, 0) + pairs
            book.last_trade_price = tpx
            comp.last_trade_price = unit - tpx
            book.last_trade_side = oside
            comp.last_trade_side = SELL if oside is BUY else BUY
        return ntrades

    def _close(self, trade: Trade, order: Order, cash: int, shares: int, pairs: int,
               now: float) -> None:
        """Book a completed trade: the taker's balances, fee, makers' rebates, indexes,
        settlement, events."""
        accounts = self.ledger.accounts
        taker = accounts[order.account]
        tt = taker.tokens
        tok = trade.token
        fee = rebates = 0
        sched = self._state[tok].fee
        if sched.rate:
            trade.fee = fee = taker_fee(trade.side, trade.price, trade.size, sched)
            if sched.rebate:
                for m in trade.makers:
                    m.rebate = r = maker_rebate(m.price, m.size, sched)
                    accounts[m.account].collateral += r
                    rebates += r
        if order.side is BUY:
            tt[tok] = tt.get(tok, 0) + shares - fee
            taker.collateral += cash
            order.making -= cash
            order.taking += shares - fee
        else:
            tt[tok] -= shares
            taker.collateral += cash - fee
            order.making += shares
            order.taking += cash - fee
        if pairs:
            p = self.ledger.pairs
            p[trade.market] = p.get(trade.market, 0) + pairs
        if fee or rebates:
            house = self.ledger.get(self._fee_account)
            house.collateral -= rebates
            if order.side is BUY:
                house.tokens[tok] = house.tokens.get(tok, 0) + fee
            else:
                house.collateral += fee
        tid = trade.id
        self.trades[tid] = trade
        order.trade_ids.append(tid)
        ids = taker.trade_ids
        if not ids or ids[-1] != tid:
            ids.append(tid)
        if self._settle:
            self.settlement.schedule(trade)
        if self._events:
            out = self._outbox
            out.append(TradeEvent(trade.view(), now))
            out.append(TradePrint(trade.token, trade.market, trade.price, trade.size, trade.side,
                                  trade.fee_rate_bps, now))
            if self._mirror:
                out.append(TradePrint(self._comp[trade.token].token, trade.market,
                                      UNIT - trade.price, trade.size, trade.side.opposite,
                                      trade.fee_rate_bps, now))

    # cancelling --------------------------------------------------------------------------
    def cancel(self, order_id: str, by: str | None = None, now: float | None = None) -> CancelResult:
        """Cancel one order. ``by`` (an account or owner) must own it when given."""
        return self.cancel_orders([order_id], by, now)

    def cancel_orders(self, order_ids, by: str | None = None,
                      now: float | None = None) -> CancelResult:
        now = self.now if now is None else now
        res = CancelResult([], {})
        touched = set()
        for oid in order_ids:
            order = self.orders.get(oid)
            if order is None or (by is not None and by != order.account and by != order.owner):
                res.not_canceled[oid] = R.CANCEL_NOT_FOUND
            elif order.status is not LIVE or not order.remaining:
                res.not_canceled[oid] = R.CANCEL_NOT_OPEN
            else:
                self._cancel(order, OrderStatus.CANCELED, now)
                res.canceled.append(oid)
                touched.add(self._state[order.token])
        for ms in touched:
            self._flush(ms, now) if self._events else self._check_tick(ms, now)
        return res

    def cancel_all(self, by: str, now: float | None = None) -> CancelResult:
        """Cancel every open order whose account or owner is ``by``."""
        return self.cancel_orders([o.id for o in self._open(by)], by, now)

    def cancel_market(self, by: str, market: str | None = None, token: str | None = None,
                      now: float | None = None) -> CancelResult:
        ids = [o.id for o in self._open(by)
               if (market is None or o.market == market) and (token is None or o.token == token)]
        return self.cancel_orders(ids, by, now)

    def _cancel(self, order: Order, status: OrderStatus, now: float) -> None:
        book = self._books[order.token]
        book.remove(order)
        acct = self.ledger.accounts[order.account]
        if order.side is BUY:
            acct.reserved -= order.price * order.remaining // UNIT
        else:
            acct.reserved_tokens[order.token] -= order.remaining
        del acct.open_orders[order.id]
        order.status = status
        if self._events:
            self._dirty.add((book, order.side is BUY, order.price))
            self._outbox.append(OrderEvent(self._view(order), "CANCELLATION", now))

    def expire(self, now: float) -> int:
        """Cancel GTD orders whose expiration is at or before ``now`` (CANCELED_EXPIRED_ORDER)."""
        heap = self._expiry
        n = 0
        touched = set()
        while heap and heap[0][0] <= now:
            _, _, order = heapq.heappop(heap)
            if order.status is LIVE and order.remaining:
                self._cancel(order, OrderStatus.CANCELED_EXPIRED_ORDER, now)
                touched.add(self._state[order.token])
                n += 1
        for ms in touched:
            self._flush(ms, now) if self._events else self._check_tick(ms, now)
        return n

    # time --------------------------------------------------------------------------------
    def advance(self, now: float) -> list:
        """Expire orders and move settlement to ``now``; FAILED trades are reversed exactly.
        Returns ``drain()``."""
        self.now = max(self.now, now)
        self.expire(now)
        for trade, status, when in self.settlement.advance(now):
            if status is FAILED:
                apply_trade(self.ledger, trade, self._fee_account, -1)
            if self._events:
                self._outbox.append(TradeEvent(trade.view(status, when), when))
        return self.drain()

    def drain(self) -> list:
        """Events emitted since the last drain, in order."""
        out = self._outbox
        self._outbox = []
        return out

    # market data bookkeeping -------------------------------------------------------------
    def _flush(self, ms: MarketState, now: float) -> None:
        """Turn this command's touched levels into BookLevelChanged events (new totals)."""
        dirty = self._dirty
        if dirty:
            out = self._outbox
            changes = self._level_changes
            mirror = self._mirror
            seen = set()
            for book, is_bid, price in sorted(dirty, key=lambda d: (d[0].token, not d[1], d[2])):
                side = BUY if is_bid else SELL
                keys = [(book.token, side, price)]
                if mirror:
                    keys.append((self._comp[book.token].token, side.opposite, UNIT - price))
                for key in keys:
                    if key in seen:
                        continue
                    seen.add(key)
                    size = self._view_total(*key)
                    out.append(BookLevelChanged(key[0], book.market, key[1], key[2], size))
                    changes[key] = (book.market, size)
            dirty.clear()
        self._check_tick(ms, now)

    def _view_total(self, token: str, side: Side, price: int) -> int:
        total = self._books[token].level_total(side, price)
        if self._mirror:
            total += self._comp[token].level_total(side.opposite, UNIT - price)
        return total

    def take_level_changes(self) -> list[BookLevelChanged]:
        """Levels changed since the last call, with their current totals (0 = removed)."""
        changes = self._level_changes
        self._level_changes = {}
        return [BookLevelChanged(t, m, s, p, size) for (t, s, p), (m, size) in changes.items()]

    def _check_tick(self, ms: MarketState, now: float) -> None:
        tc = self.config.ticks
        if not tc.enabled or (ms.tick == tc.fine and not tc.revert):
            return
        bid, ask = self._best(ms.yes, ms.no)
        new = next_tick(tc, ms.info.tick, ms.tick, bid, ask)
        if new != ms.tick:
            old, ms.tick = ms.tick, new
            if self._events:
                for t in ms.info.tokens:
                    self._outbox.append(TickSizeChanged(t, ms.info.condition_id, old, new, now))

    @staticmethod
    def _best(book: Book, comp: Book) -> tuple[int, int]:
        """Effective best bid and ask of ``book`` including the complement (0 = none)."""
        bid = book.best_bid()
        ca = comp.best_ask()
        if ca and UNIT - ca > bid:
            bid = UNIT - ca
        ask = book.best_ask()
        cb = comp.best_bid()
        if cb and (not ask or UNIT - cb < ask):
            ask = UNIT - cb
        return bid, ask

    # queries -----------------------------------------------------------------------------
    def tick_size(self, token: str) -> int:
        return self._state[token].tick

    def best_bid_ask(self, token: str) -> tuple[int, int]:
        """Best bid and ask as matched (complement included); 0 when a side is empty."""
        return self._best(self._books[token], self._comp[token])

    def midpoint(self, token: str) -> int | None:
        bid, ask = self.best_bid_ask(token)
        return (bid + ask) // 2 if bid and ask else None

    def last_trade_price(self, token: str) -> int:
        return self._books[token].last_trade_price

    def last_trade(self, token: str) -> tuple[int, Side | None]:
        """The price of the last trade in ``token`` and its taker's side there ((0, None) before one);
        a trade in the complement counts, at ``1 - p`` and the other side."""
        book = self._books[token]
        return book.last_trade_price, book.last_trade_side

    def book(self, token: str) -> BookSnapshot:
        """The token's book, bids ascending and asks descending (best last). With
        ``mirror_books`` the complement's orders are included at ``1 - p``."""
        book = self._books[token]
        ms = self._state[token]
        bids: dict[int, int] = dict(book.bid_levels())
        asks: dict[int, int] = dict(book.ask_levels())
        if self._mirror:
            comp = self._comp[token]
            for p, total in comp.ask_levels():
                bids[UNIT - p] = bids.get(UNIT - p, 0) + total
            for p, total in comp.bid_levels():
                asks[UNIT - p] = asks.get(UNIT - p, 0) + total
        return BookSnapshot(token, book.market, sorted(bids.items()),
                            sorted(asks.items(), reverse=True), ms.tick, ms.info.min_size,
                            ms.info.neg_risk, book.last_trade_price)

    def _open(self, by: str | None):
        if by is not None:
            acct = self.ledger.accounts.get(by)
            if acct is not None:
                yield from list(acct.open_orders.values())
                return
        for acct in list(self.ledger.accounts.values()):
            for o in list(acct.open_orders.values()):
                if by is None or o.owner == by:
                    yield o

    def open_orders(self, by: str | None = None, market: str | None = None,
                    token: str | None = None, order_id: str | None = None) -> list[OrderView]:
        """Open orders of an account or owner (all when ``by`` is None), oldest first."""
        orders = [o for o in self._open(by)
                  if (market is None or o.market == market) and (token is None or o.token == token)
                  and (order_id is None or o.id == order_id)]
        orders.sort(key=lambda o: o.seq)
        return [self._view(o) for o in orders]

    def order(self, order_id: str) -> OrderView | None:
        o = self.orders.get(order_id)
        return self._view(o) if o is not None else None

    @staticmethod
    def _view(o: Order) -> OrderView:
        return OrderView(o.id, o.owner, o.account, o.market, o.token, o.side, o.price, o.size,
                         o.matched, o.outcome, o.order_type, o.status, o.expiration, o.created_at,
                         tuple(o.trade_ids), o.post_only)

    def trade(self, trade_id: str) -> TradeView | None:
        t = self.trades.get(trade_id)
        return t.view() if t is not None else None

    def trades_of(self, account: str, market: str | None = None, token: str | None = None,
                  trade_id: str | None = None, before: float | None = None,
                  after: float | None = None) -> list[TradeView]:
        """Trades the account took part in (as taker or maker), oldest first. ``token`` matches
        the taker's token or any of the account's maker fills' tokens."""
        acct = self.ledger.accounts.get(account)
        if acct is None:
            return []
        out = []
        seen = set()
        for tid in acct.trade_ids:
            if tid in seen or (trade_id is not None and tid != trade_id):
                continue
            seen.add(tid)
            t = self.trades[tid]
            if market is not None and t.market != market:
                continue
            if token is not None and t.token != token and not any(
                m.token == token and m.account == account for m in t.makers
            ):
                continue
            if before is not None and not t.match_time < before:
                continue
            if after is not None and not t.match_time > after:
                continue
            out.append(t.view())
        return out

    def balance(self, account: str) -> Balance:
        acct = self.ledger.get(account)
        return Balance(account, acct.collateral, acct.reserved, dict(acct.tokens),
                       {t: v for t, v in acct.reserved_tokens.items() if v})

    def positions(self, account: str) -> list[AccountPosition]:
        """Per-token size, average price and realized PnL from the account's own fills."""
        acct = self.ledger.accounts.get(account)
        if acct is None:
            return []
        external = self._external.get(account, [])
        fills: list[PositionFill] = []
        ei = 0
        seen = set()
        for i, tid in enumerate(acct.trade_ids):
            while ei < len(external) and external[ei][0] <= i:
                fills.append(external[ei][1])
                ei += 1
            if tid in seen:
                continue
            seen.add(tid)
            t = self.trades[tid]
            if t.status is FAILED:
                continue
            if t.taker_account == account:
                c = taker_cash(t)
                if t.side is BUY:
                    fills.append(PositionFill(t.token, BUY, t.size - t.fee, c))
                else:
                    fills.append(PositionFill(t.token, SELL, t.size, c - t.fee))
            for m in t.makers:
                if m.account == account:
                    fills.append(PositionFill(m.token, m.side, m.size, maker_cash(m.side, m.price, m.size)))
        fills.extend(f for _, f in external[ei:])
        names = {tok: (self._state[tok].info.condition_id, self._outcome[tok])
                 for tok in self._books}
        return positions_from_fills(fills, names)

    def holders(self, token: str, limit: int = 100, min_balance: int = 1) -> list[tuple[str, int]]:
        """Accounts holding ``token``, largest balance first (ties by account id)."""
        rows = [(a.id, a.tokens.get(token, 0)) for a in self.ledger.accounts.values()]
        rows = [r for r in rows if r[1] >= min_balance and r[1] > 0]
        rows.sort(key=lambda r: (-r[1], r[0]))
        return rows[:limit]

    def tokens(self) -> list[str]:
        return list(self._books)

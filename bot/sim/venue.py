"""The simulated venue of paper trading and backtests: it executes the engine's places and cancels
against the external L2 book (a replayed recording, or the live feed) and answers with the typed
results the live shell builds from the real venue's answers (``bot.execution.protocol``).

Time is a parameter, never read: every method takes ``now`` (unix seconds). An order reaches the
matching logic ``entry`` latency after it was sent and its answer leaves ``response`` latency after
it was processed (``bot.sim.latency``); ``next_due`` says when the next arrival, expiry,
settlement step or answer is due and ``due(now)`` runs everything up to ``now`` and returns the
answers in time order. The caller feeds market events in time order (``on_market``) and calls
``due`` between them, so an order is matched against the book as it is when it arrives, not as
the strategy saw it.

Rules (the local exchange's, ``bot.sim.matching``, with the same error messages):

- validation: duplicate ids, unknown tokens, the tick grid in force (``tick_size_change`` and
  snapshots move it), whole lots for sizes and market amounts, the market's minimum size, GTD expiration ahead of arrival and
  none on other types, post-only never crossing, balance and allowance (collateral for a BUY,
  tokens for a SELL, net of what resting orders reserve, ``bot.sim.accounts``);
- an order that crosses takes the visible levels best first at their prices (one trade per
  price); a market BUY gets ``spent / price`` shares to the unit at each level, as the venue
  fills, and removes what it took from the venue's view until the feed next updates
  that level (``bot.sim.depth``); FOK is filled whole or killed, FAK keeps what it got; the taker
  pays the market's fee (``bot.venue.fees.taker_fee``) and our resting orders earn the market's
  maker rebate where it pays one (``bot.venue.fees.maker_rebate``);
- the rest of a limit order joins the back of its level and waits for the queue ahead of it to
  trade away (``bot.sim.resting``, with the pluggable ``bot.sim.queue`` model): a touch is not a
  fill;
- GTD orders expire at their expiration (an ``OrderSeen`` with ``CANCELED_EXPIRED_ORDER``), and
  a ``market_resolved`` event closes our orders in that market (``CANCELED_MARKET_RESOLVED``);
- trades are ``CONFIRMED`` at once in a backtest; in paper trading they are ``MATCHED`` and move
  through the settlement schedule (``bot.sim.settlement``), a ``FAILED`` one reversed exactly.

Invariants: money is integer micro-units; fills have 6 decimals and each moves ``maker_cash``
(``bot.sim.trades``) whole units, so every amount is exact;
for our account ``0 <= reserved <= collateral`` and ``0 <= reserved_tokens[t] <= tokens[t]``, and
the ledger conserves collateral and tokens (the external book is one account, ``EXTERNAL``).
Deterministic: the same markets, config, seed and calls give the same answers. Cheap when idle:
a market event for a token where we have no resting order and removed nothing costs one set
lookup per level on top of the feed book's own update.
"""

from __future__ import annotations

import heapq
import random
from collections import OrderedDict
from typing import Any, Iterable

import msgspec

from bot.core.book import BookError, Books, event_type, parse_levels, price_units, size_units
from bot.core.levels import PriceLevels
from bot.core.markets import MarketInfo
from bot.core.quantities import Shares, Usdc
from bot.execution.protocol import (
    CancelsAnswered, OrderSeen, PlacesAnswered, Result, SendCancels, SendPlaces, TradeSeen, VenueCancelAll,
)
from bot.execution.orders import OwnOrder
from bot.execution.records import CancelResult, MakerLeg, OrderRecord, OrderResult, TradeRecord
from bot.execution.router import CancelBatch, PlaceBatch
from bot.sim import results as R
from bot.sim.accounts import Ledger, cost, release
from bot.sim.depth import Depth, book_state_equal, copy_book_state
from bot.sim.latency import LatencyConfig, LatencyModel, latency_model
from bot.sim.matching import Balance
from bot.sim.orders import LOT
from bot.sim.queue import QueueConfig, QueueModel, queue_model
from bot.sim.resting import Fills, OwnBook, QueuedOrder, on_depth, on_trade, sweep
from bot.sim.settlement import Settlement, SettlementConfig
from bot.sim.trades import MakerFill, Trade, apply_trade, maker_cash, trade_id_prefix
from bot.venue.amounts import TICK_RULES
from bot.venue.enums import OrderStatus, OrderType, Side, TradeStatus
from bot.venue.fees import MAX_EXPONENT, FeeSchedule, maker_rebate, taker_fee
from bot.venue.models.ws import BookEvent, LastTradePriceEvent, PriceChangeEvent
from bot.venue.units import UNIT

import cython  # noqa: E402 - after bot.core.book, which stands in for it when Cython is absent

if not cython.compiled:  # compiled, the one reader of packed levels is cimported (venue.pxd)
    from bot.core.book import level_cells

BUY = Side.BUY
SELL = Side.SELL
GTC = OrderType.GTC
GTD = OrderType.GTD
FOK = OrderType.FOK
EXTERNAL = "book"  # the ledger account of everyone in the external book
_INF = float("inf")
_PLACE, _CANCEL, _CANCEL_ALL, _EXPIRE = 0, 1, 2, 3
_NO_CANCELS = CancelBatch(())
_PRICE_CHANGE, _PRINT, _BOOK = "price_change", "last_trade_price", "book"


class SimVenueConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How the simulated venue fills and answers.

    ``mode``: ``backtest`` (trades CONFIRMED at once) or ``paper`` (trades settle per
    ``settlement``). ``fill_on_cross``: new opposite volume strictly crossing a resting order fills
    it (a touch never does). ``mirror_depletion``: a take also removes what it took from the
    complement token's mirrored level (the feed shows both books of a market). ``pair_window``:
    seconds a trade print and a level decrease at our price wait to be paired. ``closed_memory``:
    how many closed order ids are remembered (a cancel of one is "not open", not "not found").
    """

    mode: str = "backtest"
    account: str = "sim"  # our funds in the ledger (the maker address)
    owner: str = ""  # our API key, shown on our maker legs
    latency: LatencyConfig = LatencyConfig()
    queue: QueueConfig = QueueConfig()
    # the fee rule (bot.venue.fees) of markets whose info carries none: rate in bps, exponent
    fee_rate_bps: int = 0
    fee_exponent: int = 1
    fee_account: str = "fees"
    settlement: SettlementConfig = SettlementConfig()
    fill_on_cross: bool = True
    mirror_depletion: bool = True
    enforce_min_size: bool = True
    pair_window: float = 1.0
    closed_memory: int = 100_000
    seed: int = 0
    collateral: Usdc = 10_000_000_000  # what our account starts with (10,000 USDC)
    holdings: Shares = 0  # shares of every outcome token our account starts with

    def __post_init__(self) -> None:
        if self.mode not in ("backtest", "paper"):
            raise ValueError(f"mode must be backtest or paper, not {self.mode!r}")
        if not 0 <= self.fee_rate_bps <= 10_000:
            raise ValueError(f"fee_rate_bps must be within 0..10000, got {self.fee_rate_bps}")
        if not 1 <= self.fee_exponent <= MAX_EXPONENT:
            raise ValueError(f"fee_exponent must be within 1..{MAX_EXPONENT}, got {self.fee_exponent}")
        if not self.account or len({self.account, self.fee_account, EXTERNAL}) != 3:
            raise ValueError(f"account and fee_account must be distinct, non-empty and not {EXTERNAL!r}")
        if not self.pair_window >= 0:
            raise ValueError("pair_window must be >= 0")
        if self.closed_memory < 0:
            raise ValueError("closed_memory must be >= 0")
        if self.collateral < 0 or self.holdings < 0:
            raise ValueError("collateral and holdings must be >= 0")

    @property
    def fee(self) -> FeeSchedule:
        """The fee rule of markets whose info carries none (``fee_rate_bps``, ``fee_exponent``)."""
        return FeeSchedule.from_bps(self.fee_rate_bps, self.fee_exponent)


class _Token:
    """What the venue keeps for one token: the feed view, our resting orders, its market."""

    __slots__ = ("token", "depth", "own", "info", "outcome", "fee")

    def __init__(self, token: str, depth: Depth, info: MarketInfo, outcome: str,
                 fee: FeeSchedule | None = None) -> None:
        self.token = token
        self.depth = depth
        self.own = OwnBook()
        self.info = info
        self.outcome = outcome
        self.fee = info.fee.or_default(fee)


def market_amount(order: OwnOrder) -> int:
    """A FOK/FAK order's amount: USDC units to spend on a BUY, shares to sell on a SELL.

    The signed order's ``maker_amount`` when it is signed; unsigned (a backtest may skip signing),
    a SELL's ``size`` is its amount and a BUY's is recovered exactly from the share estimate the
    router made of it (``size = amount * UNIT // price``, so ``amount = ceil(size * price / UNIT)``).
    """
    signed = order.signed
    if signed is not None:
        amount = getattr(signed, "maker_amount", None)
        if type(amount) is int:
            return amount
    if order.side is SELL:
        return order.size
    return -(-order.size * order.price // UNIT)


class SimVenue:
    """One account trading against external books; see the module docstring."""

    def __init__(self, markets: Iterable[MarketInfo], config: SimVenueConfig | None = None, *,
                 latency: LatencyModel | None = None, queue: QueueModel | None = None,
                 books: Books | None = None) -> None:
        """``latency`` and ``queue`` replace the configured models. ``books``: feed books shared
        with the caller, who applies every market event to them right *after* passing it to
        ``on_market`` (paper trading, or a backtest whose strategy sees the feed when the venue
        does); by default the venue keeps and updates its own."""
        self.config = cfg = config or SimVenueConfig()
        self._latency = latency if latency is not None else latency_model(cfg.latency, cfg.seed)
        self._queue = queue if queue is not None else queue_model(cfg.queue)
        self._apply = books is None
        self.books = Books() if books is None else books  # the feed's books, as orders meet them
        self._tokens: dict[str, _Token] = {}
        default_fee = cfg.fee
        for m in markets:
            if m.tick not in TICK_RULES:
                raise ValueError(f"market {m.condition_id}: unsupported tick {m.tick} units")
            pair = []
            for token, outcome in zip(m.tokens, m.outcomes):
                book = self.books.add(token, tick=m.tick, market=m.condition_id)
                tok = self._tokens[token] = _Token(token, Depth(book), m, outcome, default_fee)
                pair.append(tok.depth)
            if cfg.mirror_depletion:
                pair[0].comp, pair[1].comp = pair[1], pair[0]
        self.ledger = Ledger()
        self.account = self.ledger.get(cfg.account)
        self.ledger.get(EXTERNAL)
        self._acct_id = cfg.account
        self._owner = cfg.owner
        self._fee_account = cfg.fee_account
        self._paper = cfg.mode == "paper"
        self._cross = cfg.fill_on_cross
        self._window = cfg.pair_window
        self.rng = random.Random(cfg.seed)
        self._prefix = trade_id_prefix(self.rng)
        self._ntrades = 0
        self.settlement = Settlement(cfg.settlement, self.rng)
        self._records: dict[str, TradeRecord] = {}  # paper: trades still settling
        self._hot: dict[str, _Token] = {}  # tokens with resting orders or depleted levels
        self._orders: dict[str, QueuedOrder] = {}  # resting orders, oldest first
        self._closed: OrderedDict[str, None] = OrderedDict()
        self._work: list[tuple[float, int, int, Any]] = []  # arrivals and expiries
        self._out: list[tuple[float, int, Result]] = []  # answers on their way back
        self._seq = 0
        self._oseq = 0
        self.now = 0.0
        if cfg.collateral:
            self.fund(cfg.collateral)
        if cfg.holdings:
            for token in self._tokens:
                self.grant(token, cfg.holdings)

    # --- funds -----------------------------------------------------------------------------
    def fund(self, collateral: int) -> None:
        """Deposit collateral units into our account (negative withdraws from the free part)."""
        self.ledger.fund(self._acct_id, collateral)

    def grant(self, token: str, size: int) -> None:
        """Give our account ``size`` units of ``token`` (a starting inventory)."""
        if token not in self._tokens:
            raise KeyError(f"unknown token {token}")
        self.ledger.mint_tokens(self._acct_id, token, size)

    def balance(self) -> Balance:
        a = self.account
        return Balance(a.id, a.collateral, a.reserved, dict(a.tokens),
                       {t: v for t, v in a.reserved_tokens.items() if v})

    def visible(self, token: str, side: Side, price: int) -> int:
        """What the venue sees at a level of the feed book (BUY: a bid level): the feed's total
        less what our takes removed there since the feed last updated it."""
        return self._tokens[token].depth.visible(side is BUY, price)

    def open_orders(self, token: str | None = None) -> list[QueuedOrder]:
        """Our resting orders (on one token), oldest first. Read only."""
        return [o for o in self._orders.values() if token is None or o.token == token]

    # --- the feed books ----------------------------------------------------------------------
    def share_books(self, books: Books) -> bool:
        """Meet the market in ``books`` from now on instead of the venue's own feed books, when
        every token's book there holds the same state as the venue's; returns whether they are
        shared now. The caller then applies every market event to ``books`` right *after*
        passing it to ``on_market`` (as with ``books`` given at construction)."""
        if books is self.books:
            return True
        if not self._apply:
            return False  # already meeting someone else's books
        own = self.books
        for token in self._tokens:
            theirs = books.get(token)
            if theirs is None or not book_state_equal(own[token], theirs):
                return False
        for token, tok in self._tokens.items():
            tok.depth.book = books[token]
        self.books = books
        self._apply = False
        return True

    def own_books(self) -> None:
        """Stop meeting shared books: the venue goes on with its own copy of their state and
        applies market events to it itself."""
        if self._apply:
            return
        own = Books()
        for token, tok in self._tokens.items():
            shared = tok.depth.book
            book = own.add(token, tick=shared.tick, market=shared.market)
            copy_book_state(shared, book)
            tok.depth.book = book
        self.books = own
        self._apply = True

    # --- what the engine sends -------------------------------------------------------------
    def execute(self, actions: list, now: float) -> None:
        """The engine's actions sent at ``now`` (``bot.execution.executor``): places, cancels and
        the venue-wide cancel; listings, lookups, trade pages and positions checks are not needed
        (every change of our orders and trades is told as it happens)."""
        for a in actions:
            ta = type(a)
            if ta is SendPlaces:
                self.place(a.batch, now)
            elif ta is SendCancels:
                self.cancel(a.batch, now)
            elif ta is VenueCancelAll:
                self.cancel_all(now)

    def place(self, batch: PlaceBatch, now: float) -> None:
        """A ``POST /orders`` sent at ``now``: it reaches the matching logic after the entry
        latency and is answered with one ``PlacesAnswered`` (and a ``TradeSeen`` per trade)."""
        self._push_work(now + self._latency.entry(now), _PLACE, batch)

    def cancel(self, batch: CancelBatch, now: float) -> None:
        """A ``DELETE /orders`` sent at ``now``; answered with one ``CancelsAnswered``."""
        self._push_work(now + self._latency.entry(now), _CANCEL, batch)

    def cancel_all(self, now: float) -> None:
        """A ``DELETE /cancel-all`` sent at ``now``: every order resting when it arrives."""
        self._push_work(now + self._latency.entry(now), _CANCEL_ALL, None)

    # --- time ------------------------------------------------------------------------------
    def next_due(self) -> float | None:
        """The earliest time something is due (an arrival, expiry, settlement step or answer)."""
        t = self._work[0][0] if self._work else _INF
        if self._out and self._out[0][0] < t:
            t = self._out[0][0]
        if self._paper:
            s = self.settlement.next_due()
            if s is not None and s < t:
                t = s
        return None if t == _INF else t

    def due(self, now: float) -> list[Result]:
        """Run everything due by ``now``; return the answers due by then, in time order."""
        self._run(now)
        out = self._out
        results: list[Result] = []
        while out and out[0][0] <= now:
            results.append(heapq.heappop(out)[2])
        return results

    # --- a live loop's executor (paper trading) ----------------------------------------------
    def open(self, tasks: Any, writes: Any, post: Any) -> None:
        """Nothing to start: answers come back through ``due``."""

    def in_flight(self) -> int:
        """No answer is posted: every one is scheduled (``due``)."""
        return 0

    def withdraw(self) -> list:
        """No write is ever held back."""
        return []

    async def stop(self, actions: list, now: float, deliver: Any) -> bool:
        """The stop's ``actions`` sent at ``now``, then everything still on its way answered and
        each answer delivered (what the engine asks in return is sent too): nothing of ours is left
        unanswered, and the venue always answers."""
        self.execute(actions, now)
        follow: list = []
        for result in self.due(_INF):
            follow += deliver(result)
        self.execute(follow, now)
        return True

    async def final_reads(self, deliver: Any) -> None:
        """Nothing to read: every trade was told as it happened."""

    def _run(self, now: float) -> None:
        work = self._work
        paper = self._paper
        settlement = self.settlement
        while True:
            tw = work[0][0] if work else _INF
            ts = settlement.next_due() if paper else None
            if ts is not None and ts < tw:
                if ts > now:
                    return
                self._settle(ts)
                continue
            if not work or tw > now:
                return
            t, _, kind, payload = heapq.heappop(work)
            if t > self.now:
                self.now = t
            if kind == _PLACE:
                self._arrive_places(payload, t)
            elif kind == _CANCEL:
                self._arrive_cancels(payload, t)
            elif kind == _CANCEL_ALL:
                self._arrive_cancel_all(t)
            else:
                self._expire(payload, t)

    def _push_work(self, t: float, kind: int, payload: Any) -> None:
        self._seq += 1
        heapq.heappush(self._work, (t, self._seq, kind, payload))

    def _answer(self, t: float, result: Result) -> None:
        self._seq += 1
        heapq.heappush(self._out, (t, self._seq, result))

    # --- market data -----------------------------------------------------------------------
    def on_market(self, event: Any, now: float) -> None:
        """One decoded market event (``decode_market_frame``) that happened at ``now``: runs what
        was due before it, updates the feed book and moves our resting orders (queue, fills).
        Fills it causes are answered after the response latency (collect them with ``due``)."""
        work = self._work
        if work and work[0][0] <= now:
            self._run(now)
        elif self._paper:
            s = self.settlement.next_due()
            if s is not None and s <= now:
                self._run(now)
        if now > self.now:
            self.now = now
        if not self._hot:
            if self._apply:
                self.books.apply_event(event)
            return
        cls = type(event)
        if cls is PriceLevels or cls is PriceChangeEvent:
            self._price_change(event, now)
            return
        et = (_PRINT if cls is LastTradePriceEvent else _BOOK if cls is BookEvent
              else event_type(event))
        if et == _PRICE_CHANGE:
            self._price_change(event, now)
        elif et == _PRINT:
            if self._apply:
                self.books.apply_event(event)
            tok = self._hot.get(event.asset_id)
            if tok is not None and tok.own:
                self._print(tok, event, now)
        elif et == _BOOK and event.asset_id in self._hot:
            self._snapshot(event, now)
        elif et == "market_resolved":
            self._resolved(event.market, now)
        elif self._apply:
            self.books.apply_event(event)

    def _resolved(self, market: str, now: float) -> None:
        """The market resolved: the venue cancels our orders resting there
        (``CANCELED_MARKET_RESOLVED``)."""
        gone = [o for o in self._orders.values() if o.market == market]
        at = now + self._latency.response(now)
        for order in gone:
            self._remove(order, OrderStatus.CANCELED_MARKET_RESOLVED)
            self._answer(at, OrderSeen(_closed_record(order, self._owner)))

    def _price_change(self, event: Any, now: float) -> None:
        """Level changes; only those at our prices, crossing our orders or where we removed
        liquidity are looked at (their totals read before the feed book applies them). Levels
        already in micro-units (``PriceLevels``) are read as they are, never parsed again."""
        hot = self._hot
        captured: dict[tuple[str, bool, int], tuple[int, int, int]] | None = None
        if type(event) is PriceLevels:
            n = 0
            try:
                cols = level_cells(event)
                tokens = event.tokens
                n = len(event.levels) // 8
            except BookError:  # the feed book refuses the whole event: nothing moved, none read
                pass
            i = 0
            while i < n:
                tok = hot.get(tokens[cols[i]])
                if tok is not None:
                    is_bid = cols[i + 1] != 0
                    px = cols[i + 2]
                    if self._wanted(tok, is_bid, px):
                        captured = _capture(captured, tok, is_bid, px, cols[i + 3])
                i += 4  # FIELDS_PER_LEVEL
        else:
            for ch in event.price_changes:
                tok = hot.get(ch.asset_id)
                if tok is None:
                    continue
                try:
                    price = price_units(ch.price)
                except (BookError, TypeError):
                    continue  # the feed book counts the error
                side = ch.side
                if side == "BUY":
                    is_bid = True
                elif side == "SELL":
                    is_bid = False
                else:
                    continue  # not a side: the feed book refuses it
                if not self._wanted(tok, is_bid, price):
                    continue
                try:
                    size = size_units(ch.size)
                except (BookError, TypeError):
                    continue
                captured = _capture(captured, tok, is_bid, price, size)
        if self._apply:
            self.books.apply_event(event)
        if captured:
            for (token, is_bid, price), (old_visible, old_feed, new) in captured.items():
                self._level_moved(self._tokens[token], is_bid, price, old_visible, old_feed, new,
                                  now)
            for token in dict.fromkeys([k[0] for k in captured]):
                self._recheck(token)

    def _wanted(self, tok: _Token, is_bid: bool, price: int) -> bool:
        """A level change worth a look: at a price where we rest, crossing our orders, or where
        our takes removed liquidity."""
        own = tok.own
        if is_bid:
            if price in own.bids or (self._cross and price > own.top_ask):
                return True
        elif price in own.asks or (self._cross and price < own.top_bid):
            return True
        gone = tok.depth.gone
        return bool(gone) and (is_bid, price) in gone

    def _level_moved(self, tok: _Token, is_bid: bool, price: int, old_visible: int, old_feed: int,
                     new: int, now: float) -> None:
        """The feed set a level we care about to ``new``: forget our depletion there, move the
        queue of our orders at that price, fill ours that new opposite volume strictly crosses."""
        tok.depth.refresh(is_bid, price)
        level = tok.own.level(is_bid, price)
        if level is not None:
            on_depth(level, old_visible, new, self._queue, now, self._window)
        if self._cross and new > old_feed:
            self._cross_fill(tok, is_bid, price, new - old_feed, now)

    def _cross_fill(self, tok: _Token, is_bid: bool, price: int, volume: int, now: float) -> None:
        """``volume`` new units at a feed level strictly crossing our orders: in our world they
        traded with ours (best first, at our prices); the level shows what they left."""
        left = volume
        fills: Fills = []
        for level in tok.own.crossed_by(is_bid, price):
            got = sweep(level.orders, left)
            for _, f in got:
                left -= f
            fills += got
            if not left:
                break
        if fills:
            tok.depth.deplete(is_bid, price, volume - left)
            self._mark_hot(tok)
            self._maker_fills(tok, fills, SELL if not is_bid else BUY, now)

    def _print(self, tok: _Token, event: Any, now: float) -> None:
        """A trade print on a token where we rest orders: through our better prices first, then
        the queue at its price. A print that cannot reach our prices is not parsed further."""
        own = tok.own
        try:
            if event.side == "SELL":  # a seller hit bids: ours at or above its price
                if own.top_bid < 0 or price_units(event.price) > own.top_bid:
                    return
                taker = SELL
            elif event.side == "BUY":
                if own.top_ask > UNIT or price_units(event.price) < own.top_ask:
                    return
                taker = BUY
            else:
                return
            price = price_units(event.price)
            size = size_units(event.size)
        except (BookError, TypeError):
            return
        better, at = own.through(taker, price)
        left = size
        fills: Fills = []
        for level in better:
            got = sweep(level.orders, left)
            for _, f in got:
                left -= f
            fills += got
        if at is not None:
            total = tok.depth.visible(taker is SELL, price)
            fills += on_trade(at, size, left, total, now, self._window)
        if fills:
            self._maker_fills(tok, fills, taker, now)

    def _snapshot(self, event: Any, now: float) -> None:
        token = event.asset_id
        tok = self._tokens[token]
        depth = tok.depth
        book = depth.book
        old_bids, old_asks, old_gone = book.bids, book.asks, depth.gone
        try:
            bids = {p: z for p, z in parse_levels(event.bids or ()) if z > 0}
            asks = {p: z for p, z in parse_levels(event.asks or ()) if z > 0}
        except (BookError, TypeError, AttributeError):
            bids = asks = None
        if self._apply:
            self.books.apply_event(event)
            if book.bids is old_bids and book.asks is old_asks:
                return  # refused (older than the book, or malformed): nothing changed
        if bids is None or asks is None:
            return
        depth.gone = {}
        own = tok.own
        if own:
            for is_bid, levels, old, new in ((True, own.bids, old_bids, bids),
                                             (False, own.asks, old_asks, asks)):
                for price, level in list(levels.items()):
                    before = old.get(price, 0) - old_gone.get((is_bid, price), 0)
                    on_depth(level, max(0, before), new.get(price, 0), self._queue, now,
                             self._window)
            if self._cross:
                for is_bid, new, old in ((False, asks, old_asks), (True, bids, old_bids)):
                    top = own.top_bid if not is_bid else own.top_ask
                    crossing = sorted((p for p in new if p < top) if not is_bid
                                      else (p for p in new if p > top), reverse=is_bid)
                    for p in crossing:
                        inc = new[p] - old.get(p, 0)
                        if inc > 0:
                            self._cross_fill(tok, is_bid, p, inc, now)
        self._recheck(token)

    def _mark_hot(self, tok: _Token) -> None:
        self._hot[tok.token] = tok
        comp = tok.depth.comp
        if comp is not None and comp.gone:
            token = comp.book.token_id
            self._hot[token] = self._tokens[token]

    def _recheck(self, token: str) -> None:
        """A token stops being looked at once we rest nothing there and removed nothing."""
        tok = self._tokens[token]
        if not tok.own and not tok.depth.gone:
            self._hot.pop(token, None)

    # --- arrivals --------------------------------------------------------------------------
    def _arrive_places(self, batch: PlaceBatch, t: float) -> None:
        trades: list[TradeRecord] = []
        results = tuple([self._arrive(o, t, trades) for o in batch.orders])
        at = t + self._latency.response(t)
        self._answer(at, PlacesAnswered(batch, results))
        for rec in trades:
            self._answer(at, TradeSeen(rec))

    def _arrive(self, o: OwnOrder, t: float, trades: list[TradeRecord]) -> OrderResult:
        """Validate, match and rest one order that reached the venue at ``t``."""
        oid = o.order_id
        if not oid or oid in self._orders or oid in self._closed:
            return _rejected(oid, R.DUPLICATED)
        tok = self._tokens.get(o.token_id)
        if tok is None:
            return _rejected(oid, R.UNKNOWN_TOKEN)
        token = tok.token
        depth = tok.depth
        acct = self.account
        side = o.side
        price = o.price
        ot = o.order_type
        if not ot.is_market:
            size = o.size
            exp = o.expiration
            if (exp if ot is GTC else exp <= t):  # GTC: none allowed; GTD: ahead of arrival
                return _rejected(oid, R.INVALID_EXPIRATION)
            tick = depth.book.tick
            if tick not in TICK_RULES:  # a tick the venue does not support: the market's holds
                tick = tok.info.tick
            if price % tick or price < tick or price > UNIT - tick:
                return _rejected(oid, R.invalid_tick(price, tick))
            if size <= 0 or size % LOT:
                return _rejected(oid, R.invalid_lot(size))
            minimum = self._min_size(tok)
            if size < minimum:
                return _rejected(oid, R.invalid_size(size, minimum))
            if side is BUY:
                if acct.collateral - acct.reserved < cost(price, size):
                    return _rejected(oid, R.NOT_ENOUGH_BALANCE)
                best = depth.best(False)
                crosses = best is not None and best <= price
            else:
                if acct.tokens.get(token, 0) - acct.reserved_tokens.get(token, 0) < size:
                    return _rejected(oid, R.NOT_ENOUGH_BALANCE)
                best = depth.best(True)
                crosses = best is not None and best >= price
            if crosses and o.post_only:
                return _rejected(oid, R.POST_ONLY_CROSSES)
            order = self._order(o, tok, t, size)
            ids: list[str] = []
            making = taking = 0
            if crosses:
                plan, _ = _plan(depth, side is BUY, price, size, -1)
                making, taking = self._take(order, tok, plan, t, trades)
                ids = order.trade_ids
            if order.remaining:
                self._rest(order, tok, t)
            else:
                order.status = OrderStatus.MATCHED
                self._remember_closed(oid)
            if ids:
                return OrderResult(True, "", oid, "matched", making, taking, oid, tuple(ids))
            return OrderResult(True, "", oid, "live", order_hash=oid)
        # FOK / FAK: BUY spends ``amount`` USDC, SELL sells ``amount`` shares; price is the worst
        if o.post_only:
            return _rejected(oid, R.POST_ONLY_MARKET)
        if o.expiration:
            return _rejected(oid, R.INVALID_EXPIRATION)
        amount = market_amount(o)
        if amount <= 0 or amount % LOT or not 0 < price < UNIT:
            return _rejected(oid, R.INVALID_AMOUNTS)
        if side is BUY:
            if acct.collateral - acct.reserved < amount:
                return _rejected(oid, R.NOT_ENOUGH_BALANCE)
            plan, left = _plan(depth, True, price, -1, amount)
            full = not left  # every unit spent
        else:
            if acct.tokens.get(token, 0) - acct.reserved_tokens.get(token, 0) < amount:
                return _rejected(oid, R.NOT_ENOUGH_BALANCE)
            plan, left = _plan(depth, False, price, amount, -1)
            full = not left
        if ot is FOK and not full:
            return _rejected(oid, R.FOK_KILLED)
        if not plan:
            return _rejected(oid, R.FAK_KILLED)
        order = self._order(o, tok, t, 0)
        making, taking = self._take(order, tok, plan, t, trades)
        order.size = order.matched
        order.status = OrderStatus.MATCHED
        self._remember_closed(oid)
        return OrderResult(True, "", oid, "matched", making, taking, oid, tuple(order.trade_ids))

    def _min_size(self, tok: _Token) -> int:
        if not self.config.enforce_min_size:
            return 0
        return tok.depth.book.min_size or tok.info.min_size

    def _order(self, o: OwnOrder, tok: _Token, t: float, size: int) -> QueuedOrder:
        self._oseq += 1
        return QueuedOrder(o.order_id, self._acct_id, self._owner, tok.token,
                           tok.info.condition_id, o.side, o.price, size, size, o.order_type,
                           o.post_only, o.expiration, t, tok.outcome, seq=self._oseq,
                           trade_ids=[])

    def _take(self, order: QueuedOrder, tok: _Token, plan: list[tuple[int, int]], t: float,
              trades: list[TradeRecord]) -> tuple[int, int]:
        """Trade ``order`` against the planned levels (one trade per price); returns the
        order's making and taking amounts (taker fee deducted from what it receives)."""
        buy = order.side is BUY
        market = order.order_type.is_market  # a market order counts only what it matched
        making = taking = 0
        token = order.token
        depth = tok.depth
        maker_side = SELL if buy else BUY
        for bucket, (px, x) in enumerate(plan):
            depth.deplete(not buy, px, x)
            trade = self._trade(tok, order.side, px, order.id, self._acct_id, self._owner, t,
                                bucket, x, tok.fee)
            trade.makers = [MakerFill("", EXTERNAL, "", token, maker_side, px, x, order.outcome)]
            apply_trade(self.ledger, trade, self._fee_account)
            order.matched += x
            if not market:
                order.remaining -= x
            order.trade_ids.append(trade.id)
            c = maker_cash(maker_side, px, x)  # the taker gives or gets the maker's end
            if buy:
                making += c
                taking += x - trade.fee
            else:
                making += x
                taking += c - trade.fee
            trades.append(self._settling(trade, TradeRecord(
                trade.id, trade.status, order.id, token, order.market, order.side, x, px,
                tok.fee.bps, self._owner, "TAKER", (), t)))
        if plan:
            self._mark_hot(tok)
        return making, taking

    def _rest(self, order: QueuedOrder, tok: _Token, t: float) -> None:
        acct = self.account
        rem = order.remaining
        if order.side is BUY:
            acct.reserved += cost(order.price, rem)
        else:
            rt = acct.reserved_tokens
            rt[order.token] = rt.get(order.token, 0) + rem
        acct.open_orders[order.id] = order
        self._orders[order.id] = order
        tok.own.add(order, tok.depth.visible(order.side is BUY, order.price))
        self._hot[tok.token] = tok
        if order.order_type is GTD:
            self._push_work(float(order.expiration), _EXPIRE, order)

    def _arrive_cancels(self, batch: CancelBatch, t: float) -> None:
        canceled: list[str] = []
        refused: dict[str, str] = {}
        for oid in batch.order_ids:
            order = self._orders.get(oid)
            if order is None:
                refused[oid] = R.CANCEL_NOT_OPEN if oid in self._closed else R.CANCEL_NOT_FOUND
            else:
                self._remove(order, OrderStatus.CANCELED)
                canceled.append(oid)
        self._answer(t + self._latency.response(t),
                     CancelsAnswered(batch, CancelResult(tuple(canceled), refused)))

    def _arrive_cancel_all(self, t: float) -> None:
        ids = list(self._orders)
        for oid in ids:
            self._remove(self._orders[oid], OrderStatus.CANCELED)
        self._answer(t + self._latency.response(t),
                     CancelsAnswered(_NO_CANCELS, CancelResult(tuple(ids), {})))

    def _expire(self, order: QueuedOrder, t: float) -> None:
        if self._orders.get(order.id) is not order:
            return  # filled or canceled before its expiration
        self._remove(order, OrderStatus.CANCELED_EXPIRED_ORDER)
        self._answer(t + self._latency.response(t), OrderSeen(_closed_record(order, self._owner)))

    def _remove(self, order: QueuedOrder, status: OrderStatus) -> None:
        """Take a resting order off the book: its reservation is released."""
        acct = self.account
        if order.side is BUY:
            acct.reserved -= cost(order.price, order.remaining)
        else:
            acct.reserved_tokens[order.token] -= order.remaining
        del acct.open_orders[order.id]
        del self._orders[order.id]
        self._tokens[order.token].own.remove(order)
        order.status = status
        self._remember_closed(order.id)
        self._recheck(order.token)

    def _remember_closed(self, oid: str) -> None:
        closed = self._closed
        closed[oid] = None
        if len(closed) > self.config.closed_memory:
            closed.popitem(last=False)

    # --- fills -----------------------------------------------------------------------------
    def _maker_fills(self, tok: _Token, fills: Fills, taker: Side, now: float) -> None:
        """Book fills of our resting orders by someone in the external book (the taker)."""
        acct = self.account
        token = tok.token
        at = now + self._latency.response(now)
        for order, f in fills:
            trade = self._trade(tok, taker, order.price, "", EXTERNAL, "", now, 0, f, None)
            trade.makers = [MakerFill(order.id, self._acct_id, self._owner, token, order.side,
                                      order.price, f, order.outcome,
                                      maker_rebate(order.price, f, tok.fee))]
            if order.side is BUY:
                acct.reserved -= release(order.price, order.remaining, f)
            else:
                acct.reserved_tokens[token] -= f
            apply_trade(self.ledger, trade, self._fee_account)
            order.remaining -= f
            order.matched += f
            order.trade_ids.append(trade.id)
            if not order.remaining:
                order.status = OrderStatus.MATCHED
                del acct.open_orders[order.id]
                del self._orders[order.id]
                tok.own.remove(order)
                self._remember_closed(order.id)
            leg = MakerLeg(order.id, f, order.price, order.side, token, self._owner, tok.fee.bps)
            rec = TradeRecord(trade.id, trade.status, "", token, order.market, taker, f,
                              order.price, tok.fee.bps, self._owner, "MAKER", (leg,), now)
            self._answer(at, TradeSeen(self._settling(trade, rec)))
        self._recheck(token)

    def _trade(self, tok: _Token, side: Side, price: int, taker_order: str, taker_account: str,
               taker_owner: str, t: float, bucket: int, size: int, fee_rule: Any) -> Trade:
        """A new trade of ours; ``fee_rule`` is the taker's fee schedule when we take, ``None``
        when we make (what others pay is not our business; the trade shows the market's rate)."""
        self._ntrades += 1
        status = TradeStatus.MATCHED if self._paper else TradeStatus.CONFIRMED
        fee = taker_fee(side, price, size, fee_rule) if fee_rule is not None else 0
        return Trade(f"{self._prefix}{self._ntrades:012x}", tok.info.condition_id, tok.token,
                     side, price, taker_order, taker_account, taker_owner, tok.fee.bps, t, bucket,
                     tok.outcome, size, fee, status, t)

    def _settling(self, trade: Trade, rec: TradeRecord) -> TradeRecord:
        """Paper trading: the trade starts its settlement path (``MATCHED`` first)."""
        if self._paper and self.settlement.config.enabled:
            self.settlement.schedule(trade)
            self._records[trade.id] = rec
        return rec

    def _settle(self, now: float) -> None:
        for trade, status, when in self.settlement.advance(now):
            if status is TradeStatus.FAILED:
                apply_trade(self.ledger, trade, self._fee_account, -1)
            rec = self._records[trade.id]
            if status.terminal:
                del self._records[trade.id]
            self._answer(when + self._latency.response(when),
                         TradeSeen(msgspec.structs.replace(rec, status=status)))


def _closed_record(order: QueuedOrder, owner: str) -> OrderRecord:
    """The user-channel ``CANCELLATION`` of an order the venue closed on its own."""
    return OrderRecord(order.id, order.status.value, order.token, order.market, order.side,
                       order.price, order.size, order.matched, tuple(order.trade_ids),
                       "CANCELLATION", order.order_type.value, owner)


def _capture(captured: dict | None, tok: _Token, is_bid: bool, price: int, size: int) -> dict:
    """Note a level's totals before the feed book applies ``size`` there (the same level twice
    in one event: from its total before to the last size)."""
    if captured is None:
        captured = {}
    key = (tok.token, is_bid, price)
    seen = captured.get(key)
    if seen is None:
        depth = tok.depth
        captured[key] = (depth.visible(is_bid, price), depth.feed(is_bid, price), size)
    else:
        captured[key] = (seen[0], seen[1], size)
    return captured


def _rejected(order_id: str, message: str) -> OrderResult:
    return OrderResult(False, message, order_id, "unmatched")


def _plan(depth: Depth, buy: bool, limit: int, want: int, budget: int
          ) -> tuple[list[tuple[int, int]], int]:
    """What a taker gets from the visible levels at prices up to ``limit``, best first: ``want``
    shares, or (``budget >= 0``, a market BUY) the shares ``budget`` USDC units buy, to the unit
    (``spent / price`` rounded down at each level, each level paid at its price rounded up, as
    the venue fills). Returns ``[(price, shares)]`` and what is left (shares, or USDC units)."""
    plan: list[tuple[int, int]] = []
    if budget >= 0:
        left = budget
        for px, avail in depth.walk(True, limit):
            x = min(avail, left * UNIT // px)
            if x:
                plan.append((px, x))
                left -= maker_cash(SELL, px, x)
            if not left:
                break
        return plan, left
    left = want
    for px, avail in depth.walk(buy, limit):
        x = min(avail, left)
        if x:
            plan.append((px, x))
            left -= x
            if not left:
                break
    return plan, left

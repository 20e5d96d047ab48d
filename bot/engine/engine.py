"""The synchronous core: events in, actions out.

Invariants:

- single-threaded and deterministic: given the same events, clock readings and signer, the
  engine returns the same actions; it never does I/O, never sleeps and reads time only from its
  ``Clock`` (the optional ``perf`` counter only feeds the tick-to-order latency figures and the
  shedding of stale books; ``None``: no stamps are taken, as in a backtest, whose wall-clock
  stage times mean nothing);
- market data has one entry, ``on_market``, for live, paper and a backtest alike: a backtest
  hands it one event at a time, the live shell what its buffer holds;
- the pipeline is always books -> strategy hooks -> intents -> risk -> router -> batches; every
  handler ends with one router ``poll`` so work is emitted as soon as the throttles grant it;
- every batch handed to the shell has already been given to the reconciler (``on_places_sent``
  / ``on_cancels_sent``), so an order is journaled PENDING_SUBMIT before its request leaves;
- the reconciler is the only writer of order state; its fills and reversals go to the
  portfolio, then to the strategy, then to the metrics;
- a halt (kill switch or manual) cancels every own order through the router and asks the shell
  for a venue-wide cancel-all; while halted only cancels leave.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any, Callable, Iterable

import msgspec

from bot.core.book import Books, event_type
from bot.core.clock import Clock
from bot.core.events import Fill, FillReversal, SettlementUpdate
from bot.core.feed import Feed
from bot.core.intents import CancelAll, CancelOrder, Intent, QuoteTarget, Take
from bot.core.levels import PriceLevels
from bot.core.markets import MarketIndex
from bot.core.touch import Touch, net_touch, own_levels
from bot.execution.orders import OrderState
from bot.execution.protocol import (
    WITHDRAWN, Action, CancelsAnswered, CancelsFailed, CheckPositions, FetchTrades, LookupOrder, OpenOrders, OrderLookup,
    OrderSeen, PlacesAnswered, PlacesFailed, RequestFailed, ResendOrder, Result, SendCancels, SendPlaces, SyncOrders,
    TradeBooked, TradeSeen, TradeUnbooked, TradesPage, VenueCancelAll,
)
from bot.execution.reconciler import OrderUpdate, Reconciler
from bot.execution.restart import restore
from bot.execution.router import PlaceBatch, Router
from bot.portfolio import DailyPnl, Portfolio, marks_from_books, set_groups
from bot.risk import Connectivity, HaltReason, RiskGate, TradingState, VenueAccept, VenueFailure, VenueReject
from bot.strategy import Strategy, StrategyContext, intents_of, overrides
from bot.venue.enums import TradeStatus
from bot.venue.errors import RejectReason, classify_rejection

_STATE_GAUGE = {TradingState.ACTIVE: 0, TradingState.REDUCING: 1, TradingState.HALTED: 2}
_ACCEPT = VenueAccept()  # the kill switch's accept event (no fields: one serves every ack)


MAX_VERIFY_CHECKS = 30  # positions reads after a reconnect before an unconfirmed position halts
VERIFY_EVERY_S = 1.0
SETTLEMENTS_KEPT = 4096  # trade statuses the engine remembers (``Engine.settlement``)
CONFIRM_DRIFT_S = 10.0  # a difference from the venue's holdings lasting this long ...
CONFIRM_TRADES_READS = 2  # ... through this many trades reads is confirmed


class EngineStats:
    """Counters for the summary (plain ints; the Prometheus metrics mirror them)."""

    __slots__ = ("orders_sent", "orders_accepted", "orders_rejected", "cancels_sent", "canceled",
                 "fills", "reversals", "volume", "notional", "rate_limited", "send_errors",
                 "risk_rejections", "book_events", "halts", "reconnects", "orphans",
                 "book_runs", "requotes_shed", "unbooked")

    def __init__(self) -> None:
        for name in self.__slots__:
            setattr(self, name, 0)

    def as_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in self.__slots__}


class EngineConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Core settings; ``latency_samples`` bounds the tick-to-order sample buffer; orders closed
    for ``forget_closed_after_s`` are dropped from memory on the timer (working-order scans stay
    proportional to what is live)."""

    latency_samples: int = 10_000
    recent_fills: int = 20
    forget_closed_after_s: float = 120.0  # closed orders leave memory (the journal keeps them)
    max_book_age_s: float = 0.5  # a batch's token updated longer ago than this is not quoted from

    def __post_init__(self) -> None:
        if not self.max_book_age_s > 0:
            raise ValueError("max_book_age_s must be positive")


class Engine:
    """Owns books, feed, strategy, risk, router, reconciler and portfolio for one run."""

    def __init__(
        self,
        *,
        strategy: Strategy,
        markets: MarketIndex,
        clock: Clock,
        router: Router,
        reconciler: Reconciler,
        risk: RiskGate,
        books: Books | None = None,
        feed: Feed | None = None,
        portfolio: Portfolio | None = None,
        metrics: Any = None,
        config: EngineConfig | None = None,
        perf: Callable[[], float] | None = time.perf_counter,
        log: Any = None,
    ) -> None:
        self.config = config or EngineConfig()
        self.strategy = strategy
        self.markets = markets
        self.clock = clock
        self.router = router
        self.reconciler = reconciler
        self.risk = risk
        tokens = [t for m in markets for t in m.tokens]
        if books is None:
            books = Books()
            for m in markets:
                for t in m.tokens:
                    books.add(t, tick=m.tick, market=m.condition_id)
        self.books = books
        self.feed = feed if feed is not None else Feed(token_ids=tokens, now=clock.now())
        self.portfolio = portfolio if portfolio is not None else Portfolio()
        # complete sets are worth their payout, not their legs' mids: every market's YES+NO, and a
        # neg-risk event's sets when the strategy takes each event's markets as all of them
        self.portfolio.value_sets(set_groups(markets, events=bool(getattr(strategy, "whole_events", False))))
        self.metrics = metrics
        self.perf = perf
        self.daily = DailyPnl()
        # token -> price units the portfolio was valued at before trading (the venue's mids when
        # a live run seeds its positions): start() judges the loss limits at them
        self.opening_marks: dict[str, int] | None = None
        self.stats = EngineStats()
        self.latencies: deque[float] = deque(maxlen=self.config.latency_samples)
        self.recent_fills: deque[Fill] = deque(maxlen=self.config.recent_fills)
        # trade id -> last status of our fills, for the recent ones (``SETTLEMENTS_KEPT``)
        self.settlement: dict[str, TradeStatus] = {}
        self.stopped = False
        # token -> perf-counter receipt of its newest change, while market events are handled
        self._ticks: dict[str, float] = {}
        # the shell observes tick-to-order when the request is written (else it is observed here)
        self.stamp_sends = False
        # whether the books show our working orders (live: the venue's books do; paper and a backtest
        # of books recorded without us: they do not, so the touch is quoted from as it is)
        self.own_orders_shown = True
        self.drifts: list[Any] = []  # the last positions check's differences (``reconcile_positions``)
        self._drift_shown: list[str] = []  # tokens the drift gauge shows a difference for
        # token -> (booked, venue, first seen, trades reads then) of each difference still seen
        self._drifts_before: dict[str, tuple[int, int, float, int]] = {}
        self.verifying = 0  # positions checks since the user channel came back (0: not verifying)
        self._trades_pages = 0  # trades pages read, all told
        self._orphans_seen = (reconciler.orphans_unknown, reconciler.orphans_closed)
        # tokens not quoted while a trade record that may hold a fill of ours there is unbooked
        self.blocked: frozenset[str] = frozenset()
        # token -> the touch last shown to a strategy that reads only the touch (None: it reads depth)
        self._tops: dict[str, tuple] | None = {} if getattr(strategy, "reads", "depth") == "top" else None
        self._marks: dict[str, int] = {}  # token -> its book's touch mark when ``_tops`` was last checked
        # the tokens whose books the strategy reads (None: all of them), asked once
        book_tokens = getattr(strategy, "book_tokens", None)
        watched = book_tokens() if book_tokens is not None else None
        self._watched: frozenset[str] | None = frozenset(watched) if watched is not None else None
        # whether the strategy has a trade-print hook of its own (the base one returns nothing)
        self._prints = overrides(strategy, "on_trade_print")
        # order updates are made only for a strategy that reads them
        reconciler.updates = overrides(strategy, "on_order_update")
        self._handlers: dict[type, Callable[[Any], list[Action]]] = {
            PlacesAnswered: self._places_answered, PlacesFailed: self._places_failed,
            CancelsAnswered: self._cancels_answered, CancelsFailed: self._cancels_failed,
            OrderSeen: self._order_seen, TradeSeen: self._trade_seen, TradesPage: self._trades_page,
            OpenOrders: self._open_orders, OrderLookup: self._order_lookup, RequestFailed: self._request_failed,
        }
        self.warnings: tuple[str, ...] = ()  # what the run should know from the start (``start``)
        self.ctx = StrategyContext(
            books=self.books, portfolio=self.portfolio, clock=clock, markets=markets,
            open_orders=_OpenOrders(reconciler), params=getattr(strategy, "params", None),
            log=log, name=getattr(strategy, "name", "strategy"), touch=self.net_touch,
        )

    # --- reads ---------------------------------------------------------------------------------
    @property
    def orders(self):
        return self.reconciler.orders

    @property
    def state(self) -> TradingState:
        return self.risk.state

    def marks(self) -> dict[str, int]:
        return marks_from_books(b for b in self.books if not b.stale)

    def working_orders(self, token_id: str | None = None) -> list[Any]:
        return self.reconciler.orders.working(token_id)

    def net_touch(self, token_id: str) -> Touch | None:
        """``token_id``'s touch without our working orders, its own and its complement's mirrored
        (``bot.core.touch``): what a strategy quotes around, so it never chases its own quotes.
        When the books do not show our orders (``own_orders_shown`` false), nothing is taken out."""
        orders = self.reconciler.orders
        market = self.markets.get(token_id)
        comp = orders.working(market.complement(token_id)) if market is not None else ()
        return net_touch(self.books._books.get(token_id), own_levels(orders.working(token_id), comp),
                         self.own_orders_shown)

    def next_wakeup(self) -> float | None:
        """Clock time when the router could next send, or a cancel it paces comes due (``None``:
        nothing waiting)."""
        return self.router.wakeup(self.clock.now())

    # --- lifecycle -----------------------------------------------------------------------------
    def start(self) -> list[Action]:
        """The strategy's start hook, after the loss limits are judged at ``opening_marks`` (when
        set): a run that starts already past its daily or total loss halts before any order. An
        order size below some market's minimum is logged once and kept in ``warnings``."""
        out: list[Action] = []
        if self.opening_marks is not None:
            out = self._judge_losses(self.clock.now(), self.opening_marks)
        self.warnings = tuple(self.strategy.undersized(self.markets))
        for line in self.warnings:  # a size no market takes sends nothing: never left unsaid
            self.ctx.log.warning("size_below_minimum", detail=line)
        return out + self._run(self.strategy.on_start(self.ctx))

    def stop(self) -> list[Action]:
        """Strategy stop hook, then cancel everything we know and everything at the venue."""
        self.verifying = 0
        out = self._run(self.strategy.on_stop(self.ctx))
        self.stopped = True
        self.router.cancel_all()
        out += self._poll()
        out.append(VenueCancelAll("stop"))
        return out

    def halt(self, detail: str = "manual") -> list[Action]:
        return self._apply_halt(self.risk.halt(detail), detail)

    def reduce_only(self, detail: str = "manual") -> list[Action]:
        """ACTIVE -> REDUCING (an operator's call): everything is cancelled, then only orders
        that shrink exposure pass risk. A halt is never softened to REDUCING."""
        return self._apply_halt(self.risk.reduce_only(detail), detail)

    def resume(self) -> list[Action]:
        """Back to ACTIVE (an operator's call, after a halt or REDUCING): the kill switch's
        counters start afresh and the strategy starts again (``on_start``) from what it sees now;
        a condition that still holds (a loss past its limit, a stale feed) halts again at once."""
        self.risk.resume()
        if self.metrics is not None:
            self.metrics.trading_state.set(_STATE_GAUGE[self.risk.state])
        return self._judge_losses(self.clock.now(), self.marks(), self.books) + self._run(
            self.strategy.on_start(self.ctx))

    # --- market data ---------------------------------------------------------------------------
    def on_market(self, events: list, received: list | None = None) -> list[Action]:
        """Market events received together, oldest first (live and paper: the buffer as it stands;
        a backtest: one at a time), with their perf-counter receipt times (``received``; ``None``:
        received now; an entry ``None``: unknown). Every event is applied to the books in order (no
        update is lost), then the strategy runs once per changed token, on its newest state, and
        risk and the router take all the intents at once (trade prints' first, in order): under
        load, updates coalesce instead of queueing, and one event is a batch of one.

        A token whose newest update was received more than ``max_book_age_s`` ago is not quoted
        from (``requotes_shed``). Tick-to-order runs from the receipt of the newest change of the
        token an order is sent for (the book it was quoted from, or the print it answered) to that
        order's batch, for the orders these events cause. Without ``perf`` (a backtest) nothing is
        stamped and nothing is shed."""
        now = self.clock.now()
        perf = self.perf
        books = self.books
        tracked = books._books
        feed = self.feed
        ticks = self._ticks  # token -> receipt of its newest change here (empty between calls)
        changed: list[str] = []  # tokens whose books changed, in order (one event lists a token once in a row)
        intents: list[Intent] = []
        publish = False
        n = len(events)
        self.stats.book_events += n
        at = perf() if received is None and perf is not None else None
        for i in range(n):
            ev = events[i]
            if received is not None:
                at = received[i]
            et = event_type(ev)
            if et == "price_change":
                tokens = ev.tokens if type(ev) is PriceLevels else [ch.asset_id for ch in ev.price_changes]
                books.apply_event(ev)
                last = ""  # no token id is empty
                for t in tokens:
                    if t != last and t in tracked:
                        last = t
                        feed.on_update(t, now)
                        changed.append(t)
                        if at is not None:
                            ticks[t] = at
            elif et == "book" or et == "tick_size_change":
                if books.apply_event(ev) is None:
                    continue
                t = ev.asset_id
                if et == "book":
                    feed.on_snapshot(t, now)
                    publish = True
                else:
                    feed.on_update(t, now)
                    self.router.invalidate()  # quotes and orders now sit on another grid
                changed.append(t)
                if at is not None:
                    ticks[t] = at
            elif et == "last_trade_price":
                books.apply_event(ev)
                feed.on_update(ev.asset_id, now)
                if self._prints:
                    intents += intents_of(self.strategy.on_trade_print(self.ctx, ev))
                    if at is not None:
                        ticks[ev.asset_id] = at
        if publish:
            self._publish(now)
        if n > 1 or len(changed) > 2:  # one event's two tokens, never the same twice in a row, are distinct
            changed = list(dict.fromkeys(changed))
        refusing = self.router.refusing
        if refusing:  # quotes refused for crossing go again once their book has moved off them
            for t in changed:
                if t in refusing:
                    self.router.recheck(t, tracked[t])
        oldest = perf() - self.config.max_book_age_s if perf is not None and ticks else None
        runs = 0
        for t in changed:
            if oldest is not None:
                at = ticks.get(t)
                if at is not None and at < oldest:
                    self.stats.requotes_shed += 1
                    del ticks[t]
                    if self.metrics is not None:
                        self.metrics.requotes_shed.inc()
                    continue
            runs += 1
            got = self._on_book(t)
            if got:
                intents += got
            elif ticks:
                ticks.pop(t, None)  # nothing to requote: no order answers this change
        self.stats.book_runs += runs
        out = self._run(intents, checked=True) if intents else self._poll()
        if ticks:
            ticks.clear()  # orders sent later (paced, or after a fill or a timer) were not caused by these
        return out

    def _on_book(self, token_id: str) -> list[Intent] | None:
        """The strategy's ``on_book`` for a changed book (``None``: not called). A strategy is
        called only for the tokens it reads (``book_tokens``), and one that reads only the touch
        only when the touch moved since it last saw it."""
        watched = self._watched
        if watched is not None and token_id not in watched:
            return None
        tops = self._tops
        if tops is not None:
            book = self.books._books[token_id]
            # the touch is unchanged while its book's ``touch`` counter and staleness are
            mark = book.touch * 2 + (1 if book.stale else 0)
            if self._marks.get(token_id) == mark:
                return None
            self._marks[token_id] = mark
            top = book.top()
            if tops.get(token_id) == top:
                return None
            tops[token_id] = top
        return intents_of(self.strategy.on_book(self.ctx, token_id))

    def pause(self, start: float, end: float) -> None:
        """The source of market data was silent from ``start`` to ``end`` (a session break between
        recordings, a collector that stopped): that time ages no book and counts towards no
        staleness halt; the books resync from what comes after (``resync``, the replay's gaps)."""
        self.feed.pause(start, end)
        self.risk.kill_switch.pause(start, end)

    def resync(self, token_ids: Iterable[str]) -> list[Action]:
        """The feed of these tokens starts (again) here, after a gap in a recording or at the start
        of a replay: their books are stale until their next snapshot, which counts at once."""
        now = self.clock.now()
        subs = [t for t in token_ids if t in self.books]
        self.feed.on_stream_up(subs, now)
        self.books.mark_stale(subs)
        self._publish(now)
        return self._poll()

    def on_rest_books(self, snapshots: Iterable[Any]) -> list[Action]:
        """REST book snapshots fetched for stale tokens (``Feed.due_polls``)."""
        now = self.clock.now()
        updated = self.feed.apply_rest_books(self.books, snapshots, now)
        self._publish(now)
        intents: list[Intent] = []
        for b in updated:
            intents += self._on_book(b.token_id) or ()
        return self._run(intents, checked=True)

    def due_polls(self) -> list[list[str]]:
        return self.feed.due_polls(self.clock.now())

    def on_connection(self, ev: Any) -> list[Action]:
        """A stream ``ConnectionEvent`` (connected / reconnected / stale / disconnected)."""
        now = self.clock.now()
        up = ev.kind in ("connected", "reconnected")
        out: list[Action] = []
        if ev.channel == "market":
            subs = [t for t in ev.subscriptions if t in self.books]
            if up:
                self.feed.on_stream_up(subs, now)
            else:
                self.feed.on_stream_down(subs, now)
                self.books.mark_stale(subs)
            self._publish(now)
            if self.metrics is not None:
                self.metrics.stream_state.labels("market", str(ev.shard)).set(1 if up else 0)
        else:
            if self.metrics is not None:
                self.metrics.stream_state.labels("user", str(ev.shard)).set(1 if up else 0)
            out += self._apply_halt(self.risk.on_event(Connectivity(up, "user_ws"), now), "user stream")
            if ev.kind == "reconnected":
                # the venue does not replay missed user events: reconcile from REST, and send
                # nothing new until the venue's holdings are the booked ones (the venue may have
                # come back without them: ``reconcile_positions``)
                out += [SyncOrders(), FetchTrades(), CheckPositions()]
                if not self.stopped:
                    self.verifying = 1
        if ev.kind == "reconnected":
            self.stats.reconnects += 1
            if self.metrics is not None:
                self.metrics.reconnects.labels(ev.channel).inc()
        return out + self._poll()

    # --- answers and venue news (typed results, ``bot.execution.protocol``) ---------------------------
    def on_result(self, result: Result) -> list[Action]:
        """One typed result from whatever executes the actions (live shell or simulated venue)."""
        return self._handlers[type(result)](result)

    def _places_answered(self, r: PlacesAnswered) -> list[Action]:
        now = self.clock.now()
        batch = r.batch
        outputs = self.reconciler.on_acks(batch.order_ids, r.results, now)
        halt: list[Intent] = []
        for o, res in zip(batch.orders, r.results):
            if res.accepted:
                self.stats.orders_accepted += 1
                if self.metrics is not None:
                    self.metrics.orders_accepted.labels(_short(o.token_id)).inc()
                halt += self.risk.on_event(_ACCEPT, now)
            else:
                self.stats.orders_rejected += 1
                reason = classify_rejection(res.error_msg)
                if reason is RejectReason.POST_ONLY_CROSSES:  # its target's book is gone: not sent again
                    self.router.refused(o.token_id, o.side, o.price)
                if self.metrics is not None:
                    self.metrics.orders_rejected.labels(reason.value).inc()
                halt += self.risk.on_event(VenueReject((res.error_msg or "rejected")[:60]), now)
        return self._apply_halt(halt, "venue rejects") + self._outputs(outputs)

    def _places_failed(self, r: PlacesFailed) -> list[Action]:
        """The POST failed as a whole; ``outcome_unknown`` (timeout, 5xx) orders are looked up."""
        now = self.clock.now()
        outputs = self.reconciler.on_place_failed(r.batch.order_ids, now, unknown=r.outcome_unknown, reason=r.kind)
        if r.kind == WITHDRAWN:  # cancelled before it was sent: no error, nothing placed
            return self._outputs(outputs)
        self._count_error(r.kind)
        return self._apply_halt(self._error_event(r.kind, now), r.kind) + self._outputs(outputs)

    def _cancels_answered(self, r: CancelsAnswered) -> list[Action]:
        canceled = len(r.result.canceled)
        self.stats.canceled += canceled
        if self.metrics is not None:
            self.metrics.cancels.labels("canceled").inc(canceled)
        return self._outputs(self.reconciler.on_cancel_result(r.result, self.clock.now(), requested=r.batch.order_ids))

    def _cancels_failed(self, r: CancelsFailed) -> list[Action]:
        now = self.clock.now()
        self._count_error(r.kind)
        if self.metrics is not None:
            self.metrics.cancels.labels("failed").inc()
        outputs = self.reconciler.on_cancel_failed(r.batch.order_ids, now)
        self.router.cancels_failed(r.batch.order_ids, now)
        return self._apply_halt(self._error_event(r.kind, now), r.kind) + self._outputs(outputs)

    def _order_seen(self, r: OrderSeen) -> list[Action]:
        outputs = self.reconciler.on_order_event(r.record, self.clock.now())
        self._count_orphans()
        return self._outputs(outputs)

    def _trade_seen(self, r: TradeSeen) -> list[Action]:
        return self._outputs(self.reconciler.on_trade_event(r.record, self.clock.now()))

    def _trades_page(self, r: TradesPage) -> list[Action]:
        self._trades_pages += 1
        return self._outputs(self.reconciler.on_trades_page(r.records, self.clock.now(), r.cursor, r.next_cursor))

    def _holding(self) -> bool:
        """No order may leave anew: stopped, halted, or the venue's holdings not confirmed yet
        since the user channel came back (``verifying``). A resend is a place like any other."""
        return self.stopped or self.verifying != 0 or self.risk.state is TradingState.HALTED

    def _open_orders(self, r: OpenOrders) -> list[Action]:
        """A complete listing asked for at ``as_of``; orphans it shows (open at the venue, not
        working here) are counted and handled by the reconciler's policy. An order of unknown
        outcome it does not show is resent, or closed while no order may leave (``_holding``)."""
        outputs = self.reconciler.on_open_orders(r.records, self.clock.now(), r.as_of, pages=r.pages,
                                                 resend_unknown=not self._holding())
        self._count_orphans()
        return self._outputs(outputs)

    def _order_lookup(self, r: OrderLookup) -> list[Action]:
        return self._outputs(self.reconciler.on_order_lookup(r.order_id, r.record, self.clock.now(), r.as_of))

    def _request_failed(self, r: RequestFailed) -> list[Action]:
        """A read or heartbeat failed: counts towards the error-rate kill switch."""
        self._count_error(r.kind)
        return self._apply_halt(self._error_event(r.kind, self.clock.now()), r.kind) + self._poll()

    def on_positions(self, venue: dict[str, int]) -> list[Any]:
        """Venue positions (token -> share units) against the booked fills: the differences."""
        self.drifts = self.portfolio.reconcile(venue)
        return self.drifts

    def _drift_gauges(self, drifts: list[Any], since: dict[str, tuple[int, int, float, int]], now: float) -> None:
        """``bot_position_drift_shares``: the differences an earlier check already saw, unchanged.
        A read of the venue's holdings and the fills booked here are never taken at the same
        instant: a fill the venue counted but whose event is still on its way (or the reverse)
        shows at one check and is gone by the next, so a difference seen once is not drift. A
        token whose difference is gone reads 0 again."""
        gauge = self.metrics.drift
        for t in self._drift_shown:
            gauge.labels(_short(t)).set(0)
        shown = []
        for d in drifts:
            if since[d.token_id][2] < now:
                gauge.labels(_short(d.token_id)).set(d.ours - d.venue)
                shown.append(d.token_id)
        self._drift_shown = shown

    def reconcile_positions(self, venue: dict[str, int]) -> list[Action]:
        """The venue's holdings (token -> share units) against the booked fills.

        A difference is *confirmed* when the same one (same token, same sizes) has been seen for
        ``CONFIRM_DRIFT_S`` and ``CONFIRM_TRADES_READS`` trades reads have come in since it was
        first seen: fills in flight explain a passing one, not one that outlives reads of the
        trades. A confirmed difference halts (``position_unreconciled``, everything cancelled):
        the bot never trades on a position it cannot reconcile, and it stays halted until an
        operator resumes it (a restart seeds the portfolio from the venue again). After the user
        channel reconnects nothing new is sent until a check finds no difference (one every
        ``VERIFY_EVERY_S``; after ``MAX_VERIFY_CHECKS`` without agreement, it halts)."""
        now = self.clock.now()
        drifts = self.on_positions(venue)
        seen = self._drifts_before
        confirmed = []
        since: dict[str, tuple[int, int, float, int]] = {}
        for d in drifts:
            first = seen.get(d.token_id)
            if first is None or first[:2] != (d.ours, d.venue):
                first = (d.ours, d.venue, now, self._trades_pages)
            since[d.token_id] = first
            if now - first[2] >= CONFIRM_DRIFT_S and self._trades_pages - first[3] >= CONFIRM_TRADES_READS:
                confirmed.append(d)
        self._drifts_before = since
        if self.metrics is not None:
            self._drift_gauges(drifts, since, now)
        verifying = self.verifying
        if confirmed or (verifying and drifts and verifying >= MAX_VERIFY_CHECKS):
            self.verifying = 0
            shown = "; ".join(f"{d.token_id[-10:]} booked {d.ours} venue {d.venue}" for d in (confirmed or drifts)[:4])
            halt = self.risk.halt_for(HaltReason.POSITION_UNRECONCILED, shown)
            return self._apply_halt(halt, "position unreconciled")
        if verifying and not self.stopped:
            if drifts:
                self.verifying += 1
                return [CheckPositions(VERIFY_EVERY_S)]
            self.verifying = 0
            return self._poll()
        return []

    # --- time ----------------------------------------------------------------------------------
    def on_timer(self) -> list[Action]:
        """Periodic: freshness verdicts, kill switch with PnL, strategy timer, router poll."""
        now = self.clock.now()
        self._publish(now)
        self.reconciler.orders.forget_closed(now - self.config.forget_closed_after_s)
        self.reconciler.forget_settled(now)
        self.portfolio.compact()  # final fills folded in: memory holds the unsettled ones
        marks = self.marks()
        out = self._judge_losses(now, marks, self.books)
        self._gauges(marks, now)
        return out + self._run(intents_of(self.strategy.on_timer(self.ctx)))

    def _judge_losses(self, now: float, marks: dict[str, int], books: Iterable[Any] = ()) -> list[Action]:
        """The kill switch with the PnL at ``marks`` (and the freshness of ``books``)."""
        total = self.portfolio.total_pnl(marks)
        daily = self.daily.observe(now, total)
        halt = self.risk.evaluate(now, books=list(books), daily_pnl=daily, total_pnl=total)
        return self._apply_halt(halt, "kill switch")

    def resend(self, order_id: str) -> list[Action]:
        """POST again the same signed order the venue showed absent after an unknown outcome
        (the shell already spent a place token for it). Journaled before it leaves, as ever."""
        o = self.reconciler.orders.get(order_id)
        if o is None or o.signed is None or o.state is not OrderState.UNKNOWN or self._holding():
            return []  # held: the next listing closes it (``_open_orders``)
        outputs = self.reconciler.on_places_sent([o], self.clock.now())
        self.stats.orders_sent += 1
        return [SendPlaces(PlaceBatch((o,)))] + self._outputs(outputs, poll=False)

    def restore(self, state: Any, open_orders: Iterable[Any], trades: Iterable[Any]) -> list[Action]:
        """After a restart, before anything is sent: the journal's orders, fills and trade
        statuses into the reconciler and the portfolio, merged with what the venue shows (its
        trades, then its complete open-order listing) by ``bot.execution.restart.restore``:
        in-flight submits are closed, not resent, when absent; unseen trades are delivered once."""
        reversed_keys = set(map(tuple, state.reversed))
        for f in state.fills:
            if (f.trade_id, f.order_id) not in reversed_keys:
                self.portfolio.apply(f)
                status = state.trade_statuses.get(f.trade_id, f.status)
                _note(self.settlement, f.trade_id, status)
                self.portfolio.settle(f.trade_id, status)
        return self.absorb(restore(self.reconciler, state, open_orders, trades, self.clock.now()))

    def absorb(self, outputs: Iterable[Any]) -> list[Action]:
        """Reconciler outputs produced outside the handlers (restart merge) into the core."""
        return self._outputs(outputs, poll=False)

    def poll(self) -> list[Action]:
        """Emit whatever the throttles grant now (call at ``next_wakeup``)."""
        return self._poll()

    # --- internals -----------------------------------------------------------------------------
    def _publish(self, now: float) -> None:
        stale, fresh = self.feed.publish(self.books, now)
        if self.metrics is not None:
            for t in stale:
                self.metrics.book_stale.labels(_short(t)).set(1)
            for t in fresh:
                self.metrics.book_stale.labels(_short(t)).set(0)

    def _run(self, intents: Any, checked: bool = False) -> list[Action]:
        """Risk, router, poll. ``checked``: ``intents`` is already a list made by ``intents_of``."""
        if not checked:
            intents = intents_of(intents)
        if intents and self.blocked:
            intents = _unblocked(intents, self.blocked)
        if intents and not self.stopped:
            now = self.clock.now()
            decision = self.risk.check(
                intents, positions=self.portfolio, open_orders=self.reconciler.orders.working(),
                books=self.books, now=now,
            )
            if decision.rejections:
                self.stats.risk_rejections += len(decision.rejections)
                if self.metrics is not None:
                    for r in decision.rejections:
                        self.metrics.risk_rejections.labels(r.reason.value).inc()
            submit = self.router.submit
            broken = _broken_sets(decision.rejections) if decision.rejections else None
            for intent, reducing in zip(decision.accepted, decision.reducing):
                if broken and type(intent) is Take and intent.group in broken:
                    continue  # a set one leg of which risk refused goes not at all
                submit(intent, now, reducing)  # risk-reducing orders go first under pressure
        return self._poll()

    def _poll(self) -> list[Action]:
        if self.verifying and self.risk.state is not TradingState.HALTED:
            return []
        router = self.router
        now = self.clock.now()
        if router.idle(now):  # settled, or nothing to plan yet: no batch
            return []
        out: list[Action] = []
        ticks = self._ticks
        served: list[str] | None = [] if ticks else None
        for batch in router.poll(now):
            if isinstance(batch, PlaceBatch):
                outputs = self.reconciler.on_places_sent(batch.orders, now)
                self.stats.orders_sent += len(batch.orders)
                if self.metrics is not None:
                    for o in batch.orders:
                        self.metrics.orders_submitted.labels(_short(o.token_id)).inc()
                tick = None
                if served is not None:  # the oldest of the unanswered book changes of its tokens
                    for o in batch.orders:
                        at = ticks.get(o.token_id)
                        if at is not None:
                            served.append(o.token_id)
                            if tick is None or at < tick:
                                tick = at
                if tick is not None and self.perf is not None:
                    dt = self.perf() - tick
                    self.latencies.append(dt)
                    if self.metrics is not None and not self.stamp_sends:
                        self.metrics.tick_to_order.observe(dt)
                out.append(SendPlaces(batch, tick))
            else:
                outputs = self.reconciler.on_cancels_sent(batch.order_ids, now)
                self.stats.cancels_sent += len(batch.order_ids)
                out.append(SendCancels(batch))
            out += self._outputs(outputs, poll=False)
        if out:
            self.router.sent()  # the batches are recorded: the router may know it is settled
        if served:
            for t in served:
                ticks.pop(t, None)
        return out

    def _outputs(self, outputs: Iterable[Any], poll: bool = True) -> list[Action]:
        """Reconciler outputs: fills to the portfolio and strategy, requests to the shell."""
        out: list[Action] = []
        intents: list[Intent] = []
        for x in outputs:
            # the most frequent output first (the types are disjoint); the reconciler makes
            # updates only for a strategy with an order-update hook of its own
            if isinstance(x, OrderUpdate):
                intents += intents_of(self.strategy.on_order_update(self.ctx, x))
            elif isinstance(x, Fill):
                if self.portfolio.apply(x):
                    self.stats.fills += 1
                    self.stats.volume += x.size
                    self.stats.notional += x.notional
                    self.recent_fills.append(x)
                    _note(self.settlement, x.trade_id, x.status)
                    if self.metrics is not None:
                        self.metrics.fills.labels(_short(x.token_id), x.side.value).inc()
                        self.metrics.fill_volume.labels(_short(x.token_id), x.side.value).inc(x.size / 1e6)
                    intents += intents_of(self.strategy.on_fill(self.ctx, x))
            elif isinstance(x, FillReversal):
                if self.portfolio.apply(x):
                    self.stats.reversals += 1
                    _note(self.settlement, x.fill.trade_id, TradeStatus.FAILED)
                    if self.metrics is not None:
                        self.metrics.fills_reversed.labels(_short(x.fill.token_id)).inc()
                    intents += intents_of(self.strategy.on_fill(self.ctx, x.fill))
            elif isinstance(x, SettlementUpdate):
                _note(self.settlement, x.trade_id, x.status)
                self.portfolio.settle(x.trade_id, x.status)
            elif isinstance(x, CancelOrder):
                self.router.cancel(x.order_id)
            elif isinstance(x, (LookupOrder, ResendOrder, FetchTrades)):
                out.append(x)
            elif isinstance(x, (TradeUnbooked, TradeBooked)):
                if type(x) is TradeUnbooked:
                    self.stats.unbooked += 1
                    if self.metrics is not None:
                        self.metrics.trades_unbooked.inc()
                self._block()
                out.append(x)  # the shell logs it, once
        if intents:
            return out + self._run(intents, checked=True)
        return out + (self._poll() if poll else [])

    def _block(self) -> None:
        """Quoting stops on the tokens an unbooked trade record may move (their working orders
        are cancelled, their targets emptied, and nothing new goes there) and starts again, with
        the strategy's next target, once every such record of the token is booked."""
        blocked = frozenset(self.reconciler.blocked_tokens())
        for token in blocked - self.blocked:
            self.router.cancel_all(token)
        self.blocked = blocked
        if self.metrics is not None:
            self.metrics.blocked_tokens.set(len(blocked))

    def _count_orphans(self) -> None:
        """Orphans the reconciler found since the last look (open at the venue, not working
        here): into the stats and the ``bot_orphan_orders`` counter by kind."""
        rec = self.reconciler
        unknown = rec.orphans_unknown - self._orphans_seen[0]
        closed = rec.orphans_closed - self._orphans_seen[1]
        if unknown or closed:
            self._orphans_seen = (rec.orphans_unknown, rec.orphans_closed)
            self.stats.orphans += unknown + closed
            if self.metrics is not None:
                self.metrics.orphans.labels("unknown").inc(unknown)
                self.metrics.orphans.labels("closed").inc(closed)

    def _apply_halt(self, halt: list[Intent], detail: str) -> list[Action]:
        if not halt:
            return []
        self.stats.halts += 1
        for intent in halt:
            if isinstance(intent, CancelAll):
                self.router.cancel_all(intent.token_id)
        if self.metrics is not None:
            self.metrics.trading_state.set(_STATE_GAUGE[self.risk.state])
        return [VenueCancelAll(detail)] + self._poll()

    def _error_event(self, kind: str, now: float) -> list[Intent]:
        """Errors feed the kill switch, except 429s: a rate limit is the venue pacing us (the
        router's throttles absorb it), not a sign that trading is unsafe."""
        if kind == "rate_limited":
            return []
        return self.risk.on_event(VenueFailure(kind), now)

    def _count_error(self, kind: str) -> None:
        self.stats.send_errors += 1
        if kind == "rate_limited":
            self.stats.rate_limited += 1
        if self.metrics is not None:
            self.metrics.errors.labels(kind).inc()

    def _gauges(self, marks: dict[str, int], now: float) -> None:
        m = self.metrics
        if m is None:
            return
        m.trading_state.set(_STATE_GAUGE[self.risk.state])
        for token, pos in self.portfolio.positions().items():
            t = _short(token)
            m.position.labels(t).set(pos.size / 1e6)
            m.pnl_realized.labels(t).set(pos.realized_pnl / 1e6)
            m.pnl_unrealized.labels(t).set(pos.unrealized_pnl(marks.get(token)) / 1e6)
        for mkt in self.markets:
            for token in mkt.tokens:
                working = self.reconciler.orders.working(token)
                m.open_orders.labels(_short(token)).set(len(working))
                live = [o.sent_at for o in working if o.state is OrderState.LIVE]
                m.quote_age.labels(_short(token)).set(now - min(live) if live else 0)


class _OpenOrders:
    """Token -> working own orders, read-only, for the strategy context."""

    __slots__ = ("_rec",)

    def __init__(self, rec: Reconciler) -> None:
        self._rec = rec

    def get(self, token_id: str) -> list[Any] | None:
        return self._rec.orders.working(token_id) or None

    def __getitem__(self, token_id: str) -> list[Any]:
        return self._rec.orders.working(token_id)

    def __contains__(self, token_id: object) -> bool:
        return bool(self._rec.orders.working(token_id))  # type: ignore[arg-type]

    def __iter__(self):
        return iter({o.token_id for o in self._rec.orders.working()})

    def __len__(self) -> int:
        return len({o.token_id for o in self._rec.orders.working()})


# --- helpers ----------------------------------------------------------------------------------


def _broken_sets(rejections: list[Any]) -> set[str] | None:
    """The sets (``Take.group``) of which risk refused a leg: none of their legs is sent."""
    broken = {r.order.group for r in rejections if type(r.order) is Take and r.order.group}
    return broken or None


def _unblocked(intents: list[Intent], blocked: frozenset[str]) -> list[Intent]:
    """``intents`` with nothing new on a ``blocked`` token: its targets emptied (a cancel), its
    takes dropped; cancels pass."""
    out: list[Intent] = []
    for i in intents:
        if type(i) is QuoteTarget and i.token_id in blocked:
            if i.quotes:
                i = QuoteTarget(i.token_id)
        elif type(i) is Take and i.token_id in blocked:
            continue
        out.append(i)
    return out


def _note(settlement: dict[str, TradeStatus], trade_id: str, status: TradeStatus) -> None:
    """Record a trade's last status; past ``SETTLEMENTS_KEPT`` trades the oldest one noted is
    forgotten (the status view reads the recent fills only; the journal keeps every status)."""
    settlement[trade_id] = status
    if len(settlement) > SETTLEMENTS_KEPT:
        del settlement[next(iter(settlement))]


def _short(token_id: str) -> str:
    return token_id[-8:]



__all__ = ["Engine", "EngineConfig", "EngineStats"]

"""The live executor: the engine's actions carried out at the venue over HTTP, and the answers
posted back into the live shell's inbox as typed results (``bot.execution.executor``).

Invariants:

- trading writes (POST /orders, DELETE /orders) go out through a client *without* client-side
  throttling: the router already spent the very same ``orders``/``cancels``/``clob:all``
  throttles the limiter owns, so nothing is charged twice and no window is exceeded; each runs in
  its own task to its answer, even through a stop;
- writes on the same orders keep their order on the wire (``bot.live.writes``): a cancel of an
  order whose POST is on the wire waits for its answer, a place that would cross an order of ours
  whose cancel is on the wire waits for that cancel's answer; nothing else waits;
- a POST that times out or fails with a 5xx is reported with ``outcome_unknown`` and resolved by
  lookup, never resent blindly (the reconciler decides);
- the user channel's order and trade events, the trades pages, the complete open-order listing
  (every ``orders_sync_s``, stamped with when it was asked for) and the venue's holdings (every
  ``positions_poll_s``) reach the core only through the inbox; the reads of one kind never overlap;
- at stop, one DELETE /cancel-all clears the venue whatever the cancel throttle holds, the
  engine's last cancels go for anything it left, each retried through 429s, 5xx and resets; then
  the trades pages are read one last time, so every fill is booked;
- no secret is ever logged (credentials only reach the auth headers and the user channel).
"""

from __future__ import annotations

import time
from typing import Any, AsyncIterator, Awaitable, Callable

import anyio
import msgspec
import structlog

from bot.engine.engine import Engine
from bot.execution.executor import Deliver, Post
from bot.execution.protocol import (
    WITHDRAWN, CancelsAnswered, CancelsFailed, CheckPositions, FetchTrades, LookupOrder, OpenOrders, OrderLookup,
    OrderSeen, PlacesAnswered, PlacesFailed, RequestFailed, ResendOrder, Result, SendCancels, SendPlaces, SyncOrders,
    TradeBooked, TradeSeen, TradeUnbooked, TradesPage, VenueCancelAll,
)
from bot.execution.records import cancel_result, order_record, order_result
from bot.execution.router import CancelBatch
from bot.live.gauges import StreamGauges
from bot.live.inbox import Msg
from bot.live.positions import held_positions, venue_positions
from bot.live.venue import Venue
from bot.live.writes import crossed_own
from bot.ops.config import ShellConfig
from bot.venue.errors import NotFound, VenueError, error_kind
from bot.venue.pagination import cursor_pages
from bot.venue.stream import ConnectionEvent, UserStream

log = structlog.get_logger("bot.live")

MAX_TRADES_PAGES = 50  # trades pages one read walks before it waits for the next


class LiveExecutor:
    """Executes one engine's actions at ``venue``; see the module invariants."""

    def __init__(self, engine: Engine, venue: Venue, config: ShellConfig | None = None) -> None:
        self.engine = engine
        self.venue = venue
        self.config = config or ShellConfig()
        self.heartbeats_ok = 0
        self._post: Post | None = None
        self._tasks: Any = None  # reads and channels: cancelled when the shell stops
        self._writes: Any = None  # trading writes: not cancelled at stop, awaited
        self._trades_busy = False
        self._sync_busy = False
        self._in_flight = 0  # trading writes held or sent, not answered yet
        self._held: list[tuple[Any, set[tuple[str, str]]]] = []  # writes, the answers they wait for
        self._cancelling: dict[str, Any] = {}  # order id -> our order, its cancel on the wire or held
        self._placing: dict[str, None] = {}  # order ids whose POST is on the wire
        self._later: list[Any] | None = None  # tasks to start at the end of ``execute``
        engine.stamp_sends = True  # tick-to-order ends where the request is written (``_written``)

    # --- the executor's interface ------------------------------------------------------------
    def open(self, tasks: Any, writes: Any, post: Post) -> None:
        """Serve the shell: the user channel, heartbeats and periodic reads in ``tasks`` (when
        given), trading writes in ``writes``, every answer and piece of news into ``post``."""
        self._post, self._tasks, self._writes = post, tasks, writes
        if tasks is None:
            return
        cfg = self.config
        eng = self.engine
        scfg = msgspec.structs.replace(cfg.stream, url=self.venue.ws_url)
        user = UserStream(self._user_sink, self.venue.creds, [m.condition_id for m in eng.markets], scfg)
        tasks.start_soon(self.venue.keep_warm)
        tasks.start_soon(user.run)
        if cfg.heartbeats:
            tasks.start_soon(self._heartbeats)
        tasks.start_soon(self._every, cfg.trades_poll_s, self._fetch_trades)
        tasks.start_soon(self._every, cfg.positions_poll_s, self._fetch_positions)
        tasks.start_soon(self._every, cfg.orders_sync_s, self._sync_orders)
        if eng.metrics is not None:
            tasks.start_soon(self._gauges, StreamGauges(eng.metrics, "user", user))

    def execute(self, actions: list[Any], now: float) -> None:
        """Each action to its request (trading writes at once, in order; reads in tasks of their
        own); ``now`` is not needed: the venue stamps what it gets. The tasks the actions need
        are started after the last POST of the turn is written: a task starts no sooner for being
        made first, and making it costs the POSTs behind it time."""
        self._later = later = []
        try:
            for a in actions:
                if isinstance(a, (SendPlaces, SendCancels)):
                    self._write(a)
                elif isinstance(a, (TradeUnbooked, TradeBooked)):
                    report_unbooked(a)
                elif isinstance(a, VenueCancelAll):
                    self._spawn(self._cancel_all, a.reason)
                elif isinstance(a, SyncOrders):
                    self._spawn(self._sync_orders)
                elif isinstance(a, LookupOrder):
                    self._spawn(self._lookup, a.order_id)
                elif isinstance(a, ResendOrder):
                    self._spawn(self._resend, a)
                elif isinstance(a, FetchTrades):
                    self._spawn(self._fetch_trades)
                elif isinstance(a, CheckPositions):
                    self._spawn(self._check_positions, a.delay_s)
        finally:
            self._later = None
            for start, fn, args in later:
                start(fn, *args)

    def _start(self, group: Any, fn: Callable[..., Any], *args: Any) -> None:
        """``fn(*args)`` in a task of ``group``: at the end of ``execute`` when called from it."""
        later = self._later
        if later is not None:
            later.append((group.start_soon, fn, args))
        else:
            group.start_soon(fn, *args)

    def next_due(self) -> float | None:
        """Nothing is scheduled: answers are posted as the venue gives them."""
        return None

    def due(self, now: float) -> list[Result]:
        return []

    def in_flight(self) -> int:
        return self._in_flight

    def withdraw(self) -> list[Result]:
        """Empty the held writes; their answers as never sent: places failed with nothing
        placed, cancels failed (their orders are where they were, for the stop's cancel-all).
        The shell's tasks are gone: nothing new is read from now on."""
        self._tasks = None
        held, self._held = self._held, []
        self._in_flight -= len(held)
        for a, _ in held:
            if type(a) is SendCancels:
                for oid in a.batch.order_ids:
                    self._cancelling.pop(oid, None)
        return [PlacesFailed(a.batch, "stopped", False, "not sent: stopping") if type(a) is SendPlaces
                else CancelsFailed(a.batch, "stopped", "not sent: stopping") for a, _ in held]

    async def stop(self, actions: list[Any], now: float, deliver: Deliver) -> bool:
        """Inline, each retried through 429s, 5xx and resets until done (the caller bounds it in
        time): one DELETE /cancel-all, then the stop's cancels of orders it did not name."""
        done: set[str] = set()
        result = await _retrying(self.venue.writes.cancel_all)
        if result is not None:
            deliver(CancelsAnswered(CancelBatch(()), cancel_result(result)))
            done.update(result.canceled or ())
        for a in actions:
            if isinstance(a, SendCancels):
                ids = [i for i in a.batch.order_ids if i not in done]
                if not ids:
                    continue
                answer = await _retrying(lambda ids=ids: self.venue.writes.cancel_orders(ids))
                if answer is not None:
                    deliver(CancelsAnswered(a.batch, cancel_result(answer)))
        return result is not None

    async def final_reads(self, deliver: Deliver) -> None:
        """Once nothing of ours rests, the trades pages are read one last time: fills the user
        channel has not delivered yet (it may lag) are booked before the run ends. The last call
        of a run: no write leaves after it."""
        try:
            async for page in self._trades_pages(lambda c: _retrying(lambda: self.venue.clob.trades_page(cursor=c))):
                deliver(page)
        finally:
            self._writes = None

    # --- the account's side ------------------------------------------------------------------
    async def _user_sink(self, ev: Any) -> None:
        await self._post(_user_result(ev))

    async def _every(self, interval: float, read: Callable[[], Awaitable[None]]) -> None:
        if interval <= 0:
            return
        while True:
            await anyio.sleep(interval)
            self._spawn(read)

    async def _gauges(self, gauges: StreamGauges, interval: float = 1.0) -> None:
        while True:
            gauges.observe()
            await anyio.sleep(interval)

    async def _heartbeats(self) -> None:
        while True:
            try:
                await self.venue.clob.heartbeat()
                self.heartbeats_ok += 1
                self._metric("heartbeats", "ok")
            except VenueError as exc:
                self._metric("heartbeats", "error")
                log.warning("heartbeat_failed", error=str(exc)[:200])
                await self._post(RequestFailed(error_kind(exc)))
            await anyio.sleep(self.config.heartbeat_interval_s)

    def _metric(self, name: str, label: str) -> None:
        m = self.engine.metrics
        if m is not None:
            getattr(m, name).labels(label).inc()

    # --- writes ------------------------------------------------------------------------------
    def _spawn(self, fn: Callable[..., Any], *args: Any) -> None:
        if self._tasks is not None:
            self._start(self._tasks, fn, *args)

    def _write(self, action: Any) -> None:
        """Send a trading write in its own task; it runs to its answer even through a stop.
        Writes on the same orders keep their order on the wire (``bot.live.writes``): a cancel
        of an order whose POST is on the wire (or held) waits for its answer (else it could
        overtake the POST, find nothing, and leave the order resting); a held POST all of whose
        orders are cancelled never goes out (``_withdraw_places``); and a place batch that would
        cross one of our own orders being cancelled (its cancel on the wire, or itself held behind
        that order's POST) waits for that cancel's answer. Nothing else waits, and every wait is
        on a write made before the waiting one, so no cycle can form."""
        if self._writes is None:
            return
        self._in_flight += 1
        if type(action) is SendCancels:
            placing = self._placing
            ids = action.batch.order_ids
            waits = set()
            if self._held:
                self._withdraw_places(ids)
                held = {oid for a, _ in self._held if type(a) is SendPlaces for oid in a.batch.order_ids}
                waits = {("place", oid) for oid in ids if oid in held}  # its POST is still to go out
            waits.update(("place", oid) for oid in ids if oid in placing)
            store = self.engine.reconciler.orders
            for oid in ids:  # from now on a place that would cross one of these waits for its cancel
                o = store.get(oid)
                if o is not None:
                    self._cancelling[oid] = o
        else:
            waits = {("cancel", oid) for oid in crossed_own(action, self._cancelling, self._complement)} \
                if self._cancelling else None
        if waits:
            self._held.append((action, waits))
        else:
            self._start_write(action)

    def _withdraw_places(self, cancelled: Any) -> None:
        """Held places whose every order is now being cancelled never go out: each is answered as
        withdrawn (its orders cancelled, nothing placed). Sent later, such a place could land
        after a newer quote of ours went out past it, and cross it."""
        gone = set(cancelled)
        kept = []
        for action, waits in self._held:
            if type(action) is SendPlaces and gone.issuperset(action.batch.order_ids):
                self._in_flight -= 1
                self._start(self._writes, self._post, PlacesFailed(action.batch, WITHDRAWN, False, "not sent: cancelled first"))
            else:
                kept.append((action, waits))
        self._held = kept

    def _start_write(self, action: Any) -> None:
        """On the wire: only writes on the wire are waited for (they all end, answered or timed
        out), so held writes never wait on each other."""
        if self._writes is None:
            return
        ids = action.batch.order_ids
        if type(action) is SendCancels:
            self._start(self._writes, self._run_write, action, 0.0, None)
            return
        self._placing.update(dict.fromkeys(ids))
        started = time.perf_counter()
        self._start(self._writes, self._run_write, action, started, self._start_place(action, started))

    def _release_held(self, answered: set[tuple[str, str]]) -> None:
        """Writes answered: send the held writes that no longer wait for any."""
        held, self._held = self._held, []
        for action, waits in held:
            waits.difference_update(answered)
            if waits:
                self._held.append((action, waits))
            else:
                self._start_write(action)

    def _complement(self, token_id: str) -> str | None:
        m = self.engine.markets.get(token_id)
        return m.complement(token_id) if m is not None else None

    async def _run_write(self, action: Any, started: float = 0.0, flight: Any = None) -> None:
        cancel = type(action) is SendCancels
        try:
            await (self._cancel(action) if cancel else self._place(action, started, flight))
        finally:
            self._in_flight -= 1
            ids = action.batch.order_ids
            if cancel:
                for oid in ids:
                    self._cancelling.pop(oid, None)
            else:
                for oid in ids:
                    self._placing.pop(oid, None)
            if self._held:
                self._release_held({("cancel" if cancel else "place", oid) for oid in ids})

    def _written(self, action: SendPlaces, started: float) -> Callable[[], None] | None:
        """What to call as the POST is written: tick-to-order (the frame off the socket to this
        request written) and the send stage (the write started to written) observed."""
        m = self.engine.metrics
        if m is None:
            return None
        m.orders_per_post.observe(len(action.batch.orders))
        tick = action.tick_at

        def written() -> None:
            now = time.perf_counter()
            if tick is not None:
                m.tick_to_order.observe(now - tick)
            if started:
                m.live_stage.labels("send").observe(now - started)

        return written

    def _start_place(self, action: SendPlaces, started: float) -> Any:
        """The POST written at once if a kept-alive connection is free (no task to wait for
        first): what ``_place`` finishes; a failure to start is handed on as it is."""
        try:
            return self.venue.writes.start_post_orders([o.signed for o in action.batch.orders],
                                                       on_written=self._written(action, started))
        except Exception as exc:  # noqa: BLE001 - ``_place`` reports it as it would a failed send
            return exc

    async def _place(self, action: SendPlaces, started: float = 0.0, flight: Any = None) -> None:
        batch = action.batch
        try:
            if isinstance(flight, Exception):
                raise flight
            results = await self.venue.writes.post_orders(
                [o.signed for o in batch.orders], flight=flight,
                on_written=self._written(action, started) if flight is None else None)
        except VenueError as exc:
            await self._post(PlacesFailed(batch, error_kind(exc), exc.outcome_unknown, str(exc)[:200]))
            return
        except Exception as exc:  # noqa: BLE001 - unknown failure: the orders may have reached the venue
            await self._post(PlacesFailed(batch, "unexpected", True, f"{type(exc).__name__}: {exc}"[:200]))
            return
        await self._post(PlacesAnswered(batch, tuple(order_result(r) for r in results)))

    async def _cancel(self, action: SendCancels) -> None:
        batch = action.batch
        try:
            result = await self.venue.writes.cancel_orders(list(batch.order_ids))
        except Exception as exc:  # noqa: BLE001 - whatever failed, the orders are where they were
            await self._post(CancelsFailed(batch, error_kind(exc), str(exc)[:200]))
            return
        await self._post(CancelsAnswered(batch, cancel_result(result)))

    async def _cancel_all(self, reason: str) -> None:
        try:
            await self.venue.clob.cancel_all()
            log.warning("cancel_all", reason=reason)
        except VenueError as exc:
            log.error("cancel_all_failed", reason=reason, error=str(exc)[:200])

    async def _sync_orders(self) -> None:
        """One complete open-order listing at a time, stamped with when it was asked for."""
        if self._sync_busy:
            return
        self._sync_busy = True
        try:
            as_of = self.engine.clock.now()
            items: list[Any] = []
            pages = 0
            async for page in cursor_pages(lambda c: self.venue.clob.orders_page(cursor=c)):
                items += page.data
                pages += 1
        except VenueError as exc:
            log.warning("sync_orders_failed", error=str(exc)[:200])
            return
        finally:
            self._sync_busy = False
        await self._post(OpenOrders(tuple(order_record(o) for o in items), as_of, pages))

    async def _lookup(self, order_id: str) -> None:
        as_of = self.engine.clock.now()
        try:
            found = await self.venue.clob.get_order(order_id)
        except NotFound:
            found = None
        except VenueError as exc:
            log.warning("lookup_failed", order_id=order_id[:12], error=str(exc)[:200])
            return
        await self._post(OrderLookup(order_id, order_record(found) if found is not None else None, as_of))

    async def _resend(self, action: ResendOrder) -> None:
        """Wait for a place token (resends bypass the router), then let the core resend."""
        if action.signed is None:
            return
        th = self.venue.limiter.throttle("orders")
        while not th.try_take(1, time.time()):
            await anyio.sleep(max(0.01, th.delay(1, time.time())))
        await self._post(Msg("resend", action.order_id))

    async def _fetch_trades(self) -> None:
        if self._trades_busy:
            return
        self._trades_busy = True
        try:
            async for page in self._trades_pages(lambda c: self.venue.clob.trades_page(cursor=c)):
                await self._post(page)
        except VenueError as exc:
            log.warning("trades_poll_failed", error=str(exc)[:200])
        finally:
            self._trades_busy = False

    async def _fetch_positions(self, retry_s: float | None = None) -> None:
        """The venue's holdings to the core; a failed read is given up, or with ``retry_s`` read
        again after that many seconds until it succeeds."""
        while True:
            try:
                items = await held_positions(self.venue)
            except VenueError as exc:
                log.warning("positions_poll_failed", error=str(exc)[:200], retry_s=retry_s)
                if retry_s is None:
                    return
                await anyio.sleep(retry_s)
                continue
            await self._post(Msg("positions_seen", venue_positions(items, self.engine.markets)))
            return

    async def _check_positions(self, delay_s: float) -> None:
        """The venue's holdings after ``delay_s``, read again every second until they are."""
        await anyio.sleep(delay_s)
        await self._fetch_positions(retry_s=1.0)

    async def _trades_pages(self, fetch: Callable[[str | None], Awaitable[Any]]) -> AsyncIterator[TradesPage]:
        """The trades pages from the reconciler's cursor on, at most ``MAX_TRADES_PAGES``;
        ``fetch(cursor)`` reads one (``None``: stop there)."""
        cursor = self.engine.reconciler.trades_cursor
        for _ in range(MAX_TRADES_PAGES):
            page = await fetch(cursor)
            if page is None:
                return
            # the items as decoded: the reconciler reads each one, and one it cannot book
            # never stops the others (``Reconciler.unbooked``)
            yield TradesPage(tuple(page.data), cursor, page.next_cursor)
            if page.is_last or not page.next_cursor:
                return
            cursor = page.next_cursor


async def _retrying(call: Callable[[], Any]) -> Any:
    """``await call()`` until it succeeds; waits out 429s (their Retry-After) and retries 5xx and
    transport failures; any other venue error is logged and gives ``None``."""
    from bot.venue.errors import RateLimited, ServerError, TransportError

    while True:
        try:
            return await call()
        except RateLimited as exc:
            await anyio.sleep(min(2.0, exc.retry_after or 0.25))
        except (ServerError, TransportError):
            await anyio.sleep(0.2)
        except VenueError as exc:
            log.warning("stop_cancel_failed", error=str(exc)[:200])
            return None


def report_unbooked(a: Any) -> None:
    """The log line of a trade record the bot cannot book (the engine tells each one once), or of
    its booking at last."""
    if isinstance(a, TradeUnbooked):
        log.error("trade_unbooked", trade_id=a.trade_id, reason=a.reason[:200],
                  tokens=[t[-10:] for t in a.tokens][:8], quoting="stopped on these tokens until booked")
    else:
        log.warning("trade_booked", trade_id=a.trade_id, tokens=[t[-10:] for t in a.tokens][:8])


def _user_result(ev: Any) -> Any:
    """A user-channel frame as the engine takes it: a typed result, or a connection event."""
    if isinstance(ev, ConnectionEvent):
        return Msg("ws", ev, None)
    tag = type(ev).__struct_config__.tag
    return OrderSeen(order_record(ev)) if tag == "order" else TradeSeen(ev)


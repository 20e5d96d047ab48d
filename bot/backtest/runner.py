"""Backtests: the live engine, strategy and config over recorded books, in a plain loop.

There is no event loop. One timeline, in time order, drives everything:

- each recorded market event reaches the simulated venue at the venue's own time (its exchange
  timestamp, never after the receive time) and the engine at the recorded receive time, so the
  strategy sees the market with the recorded feed delay while its orders meet the book as it is
  at the venue when they arrive (``bot.sim.venue``: entry and response latency from the model);
- the venue's answers (acks, cancels, fills) reach the engine when the venue says they are due;
- the engine's timer runs every ``shell.timer_interval_s`` of simulated time and throttled work
  is emitted when the router says it can be.

Invariants: deterministic for a seed (the same recordings, config and seed give the same orders,
fills and results); memory does not grow with the recording's length (the replay streams, the
timeline holds only events whose receive time has not come, closed orders leave memory as live);
the simulated clock never runs backwards. Orders are not signed (a backtest needs no key): their
ids are numbered from the seed.
"""

from __future__ import annotations

import heapq
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import msgspec

from bot.core.clock import SimClock
from bot.core.markets import MarketInfo
from bot.engine.assembly import Signing, build_engine, configured_strategy, simulated_throttles
from bot.engine.engine import Engine, SendCancels, SendPlaces, VenueCancelAll
from bot.ops.config import BacktestConfig, traded_markets
from bot.sim.venue import SimVenue

ASSUMPTIONS = (
    "orders join the back of their price level and advance only as the queue model allows: a touch is not a fill",
    "each order reaches the book after the latency model's entry delay and is answered after its response delay",
    "market data reaches the strategy at its recorded receive time; the venue sees it at its exchange time",
    "what our takes remove from the book stays removed until the feed next updates that level",
    "trades settle (CONFIRMED) at once; fees per the venue's taker rule",
)


class BacktestError(Exception):
    """A backtest cannot run (no recording, no market, a market the config names is missing)."""


def exchange_time(ev: Any, received: float) -> float:
    """When the venue produced ``ev`` (its millisecond timestamp), never after it was received."""
    ms = getattr(ev, "timestamp_ms", None)
    if ms is None:
        raw = getattr(ev, "timestamp", None)
        try:
            ms = int(raw) if raw else 0
        except (TypeError, ValueError):
            ms = 0
    t = ms / 1000.0 if ms else received
    return t if t < received else received


class Backtest:
    """One run: an engine and a simulated venue on one simulated clock."""

    def __init__(self, engine: Engine, venue: SimVenue, clock: SimClock, *, timer_s: float, feed_delay: bool,
                 on_sample: Callable[[float], None] | None = None,
                 venue_view: Callable[[int, Any], Any] | None = None) -> None:
        """``venue_view(recv_ns, event)``: the event as the simulated venue should meet it, when
        that differs from what the strategy sees (a recording of our own live session: its books
        without our live orders, so the queue there is ours)."""
        self.engine = engine
        self.venue = venue
        self.clock = clock
        self.timer_s = timer_s
        self.feed_delay = feed_delay
        self.on_sample = on_sample
        self.venue_view = venue_view
        self.events = 0
        self.first_t: float | None = None  # receive times of the first and last events
        self.last_t: float | None = None
        self._pending: deque[tuple[float, Any]] = deque()  # (receive time, event) the engine has not seen
        self._next_timer: float | None = None

    # --- the loop ------------------------------------------------------------------------
    def run(self, events: Iterable[tuple[int, Any]], progress: Callable[[int, float], None] | None = None) -> None:
        """Feed every ``(receive ns, event)`` and drain what follows the last one."""
        venue = self.venue
        started = False
        for i, (ns, ev) in enumerate(events):
            t = ns / 1e9
            if not started:
                self._start(t)
                started = True
                self.first_t = t
            self.last_t = t
            self.events += 1
            if type(ev).__name__ in ("Gap", "MarketMeta"):
                self._advance(t)
                self._special(ev)
                continue
            at = exchange_time(ev, t) if self.feed_delay else t
            self._advance(at)
            venue.on_market(ev if self.venue_view is None else self.venue_view(ns, ev), at)
            self._pending.append((t, ev))
            if progress is not None and i & 4095 == 0:
                progress(self.events, t)
        if started:
            self._advance(float("inf"), drain=True)

    def _start(self, t: float) -> None:
        self.clock.set(t)
        self._next_timer = t + self.timer_s
        eng = self.engine
        self._dispatch(eng.resync([tok for m in eng.markets for tok in m.tokens]))
        self._dispatch(eng.start())

    def _advance(self, until: float, drain: bool = False) -> None:
        """Run everything due before ``until``, in time order: venue answers, the engine's view of
        market events, timers and throttled sends. ``drain``: until nothing is left but timers."""
        eng, venue, clock, pending = self.engine, self.venue, self.clock, self._pending
        while True:
            t_venue = venue.next_due()
            t_event = pending[0][0] if pending else None
            t_wake = eng.next_wakeup()
            t = until
            kind = 0
            if t_venue is not None and t_venue < t:
                t, kind = t_venue, 1
            if t_event is not None and t_event <= t:
                t, kind = t_event, 2
            if t_wake is not None and t_wake < t:
                t, kind = t_wake, 3
            if not drain and self._next_timer is not None and self._next_timer < t:
                t, kind = self._next_timer, 4
            if kind == 0:
                return
            if t > clock.now():
                clock.set(t)
            if kind == 1:
                for r in venue.due(t):
                    self._dispatch(eng.on_result(r))
            elif kind == 2:
                _, ev = pending.popleft()
                self._dispatch(eng.on_market_event(ev))
            elif kind == 3:
                self._dispatch(eng.poll())
            else:
                self._next_timer += self.timer_s
                self._dispatch(eng.on_timer())
                if self.on_sample is not None:
                    self.on_sample(t)

    def _special(self, ev: Any) -> None:
        name = type(ev).__name__
        if name == "Gap":  # the books were not continuous: stale until their next snapshot
            self._dispatch(self.engine.resync(ev.tokens))

    def _dispatch(self, actions: list[Any]) -> None:
        venue, now = self.venue, self.clock.now()
        for a in actions:
            ta = type(a)
            if ta is SendPlaces:
                venue.place(a.batch, now)
            elif ta is SendCancels:
                venue.cancel(a.batch, now)
            elif ta is VenueCancelAll:
                venue.cancel_all(now)
            # order listings, lookups and trade pages are not needed: the simulated venue tells
            # every change of our orders and trades as it happens


def run_backtest(config: Any, paths: list[str | Path], *, out: str | Path | None = None, progress: bool = False,
                 seed: int | None = None, log: Any = None,
                 events: tuple[list[Any], Iterator[tuple[int, Any]]] | None = None,
                 venue_view: Callable[[int, Any], Any] | None = None, source: Any = None) -> Any:
    """Backtest ``config``'s strategy on the recordings ``paths``; returns the ``Summary`` (and
    writes the results folder ``out`` when given). ``events``: the markets and events to replay
    instead of reading ``paths`` (a transformed replay); ``venue_view``: see ``Backtest``.
    ``source`` replaces the recordings with a data source that is not a file: an object with
    ``markets`` (``MarketInfo``) and ``events()`` (``(receive ns, event)`` in time order), such as
    ``bot.backtest.synthetic.SyntheticMarket``. Raises ``BacktestError`` for a run that cannot
    start, ``RecordingError`` for a path that is not a recording."""
    from bot.backtest.results import ResultsSink, Series, summarize

    bt: BacktestConfig = config.backtest
    seed = bt.seed if seed is None else seed
    wanted = set(traded_markets(config))
    if source is not None:
        found, stream = list(source.markets), source.events()
    else:
        metas, stream = events if events is not None else _sources(paths, bt, wanted)
        found = [m.info() for m in metas]
    markets: list[MarketInfo] = [m for m in found if not wanted or m.condition_id in wanted]
    if not markets:
        raise BacktestError("no market to trade: the recordings hold none" + (" of those configured" if wanted else ""))
    if wanted - {m.condition_id for m in markets}:
        missing = ", ".join(sorted(wanted - {m.condition_id for m in markets}))
        raise BacktestError(f"configured markets not in the recordings: {missing}")
    strategy = configured_strategy(config)
    clock = SimClock(0.0)
    sink = ResultsSink(out)  # with no folder, it only counts
    engine = build_engine(
        strategy, markets, clock=clock, signing=Signing(None, seed),
        throttles=simulated_throttles(config.venue.limits, clock), risk=config.risk, router=config.router,
        reconciler=msgspec.structs.replace(config.reconciler, owner=config.reconciler.owner or "backtest"),
        engine=config.engine, feed=config.feed, journal=sink, log=log,
    )
    sim = msgspec.structs.replace(config.sim, mode="backtest", seed=seed, owner=engine.reconciler.config.owner)
    venue = SimVenue(markets, sim)
    for m in markets:
        for t in m.tokens:
            if sim.holdings:
                engine.portfolio.seed(t, sim.holdings, 0)
    series = Series(sink, bt.sample_every_s)

    def sample(now: float) -> None:
        if series.due(now):
            series.take(engine, now)

    run = Backtest(engine, venue, clock, timer_s=config.shell.timer_interval_s, feed_delay=bt.feed_delay,
                   on_sample=sample, venue_view=venue_view)
    wall = time.perf_counter()
    bar = _progress(paths) if progress else None
    def tick(n: int, t: float) -> None:
        if bar is not None:
            bar(n, t - (run.first_t or t))

    try:
        run.run(stream, tick)
    finally:
        if bar is not None:
            bar(None, 0.0)
    wall = time.perf_counter() - wall
    span = (run.last_t - run.first_t) if run.first_t is not None and run.last_t is not None else 0.0
    if engine.markets and series.next_at is None and run.events:
        series.take(engine, clock.now())
    summary = summarize(engine, sink, series,
                        mode="backtest", events=run.events, seconds=span, wall_seconds=wall, seed=seed,
                        assumptions=ASSUMPTIONS)
    sink.write_summary(summary)
    sink.close()
    return summary


DATASET_SUFFIXES = (".parquet", ".csv")


def _sources(paths: list[str | Path], bt: BacktestConfig, wanted: set[str]) -> tuple[list[Any], Iterator[tuple[int, Any]]]:
    """The markets and the merged events of recordings and top-of-book files (``.parquet`` or
    ``.csv``: ``bot.backtest.importer``; their markets are the configured ones, else the first
    ``dataset_markets`` of each file)."""
    from bot.backtest import replay as rp

    files = [Path(p) for p in paths]
    dataset = [p for p in files if p.suffix in DATASET_SUFFIXES]
    recordings = [p for p in files if p.suffix not in DATASET_SUFFIXES]
    metas: list[Any] = []
    streams: list[Iterator[tuple[int, Any]]] = []
    if recordings:
        metas += rp.markets(recordings)
        streams.append(rp.replay(recordings, cache=bt.cache))
    if dataset:
        from bot.backtest.importer import quote_events

        choice = {"slugs": sorted(wanted)} if wanted else {"limit": bt.dataset_markets}
        found, events = quote_events(dataset, **choice)
        metas += found
        streams.append(events)
    if len(streams) == 1:
        return metas, streams[0]
    return metas, heapq.merge(*streams, key=lambda item: item[0])


def _progress(paths: list[str | Path]) -> Callable[[int | None, float], None]:
    """A progress line on a terminal (events, events/s, simulated time); nothing otherwise."""
    import sys

    if not sys.stderr.isatty():
        return lambda n, t: None
    from rich.console import Console

    console = Console(file=sys.stderr)
    start = time.perf_counter()
    status = console.status("backtest starting")
    status.start()

    def show(n: int | None, sim_s: float) -> None:
        if n is None:
            status.stop()
            return
        dt = time.perf_counter() - start
        status.update(f"backtest: {n:,} events, {n / dt if dt else 0:,.0f} events/s, {sim_s / 3600:.2f} h of market")

    return show

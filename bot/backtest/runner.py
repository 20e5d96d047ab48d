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
from pathlib import Path
from typing import Any, Callable, Iterator

import msgspec

from bot.backtest.timeline import Backtest
from bot.core.clock import SimClock
from bot.core.markets import MarketInfo, with_default_fee
from bot.engine.assembly import Signing, build_engine, simulated_throttles
from bot.ops.config import BacktestConfig, traded_markets
from bot.sim.venue import SimVenue
from bot.strategy_set import configured_strategy

ASSUMPTIONS = (
    "orders join the back of their price level and advance only as the queue model allows: a touch is not a fill",
    "each order reaches the book after the latency model's entry delay and is answered after its response delay",
    "market data reaches the strategy at its recorded receive time; the venue sees it at its exchange time",
    "what our takes remove from the book stays removed until the feed next updates that level",
    "trades settle (CONFIRMED) at once; fees per the venue's taker rule",
)


# closed orders a backtest still knows by id once they are gone: the order store's forgotten ones,
# and the simulated venue's closed ones (a cancel of one is "not open", not "not found"); a request
# naming a closed order arrives within the latency model's delays, a few closings later at most
FORGOTTEN_KEPT = 10_000


class BacktestError(Exception):
    """A backtest cannot run (no recording, no market, a market the config names is missing)."""


def run_backtest(config: Any, paths: list[str | Path], *, out: str | Path | None = None, progress: bool = False,
                 seed: int | None = None, log: Any = None,
                 events: tuple[list[Any], Iterator[tuple[int, Any]]] | None = None,
                 venue_view: Callable[[int, Any], Any] | None = None, source: Any = None,
                 results_format: str | None = None) -> Any:
    """Backtest ``config``'s strategy on the recordings ``paths``; returns the ``Summary`` (and
    writes the results folder ``out`` when given). ``events``: the markets and events to replay
    instead of reading ``paths`` (a transformed replay); ``venue_view``: see ``Backtest``.
    ``source`` replaces the recordings with a data source that is not a file: an object with
    ``markets`` (``MarketInfo``) and ``events()`` (``(receive ns, event)`` in time order), such as
    ``bot.backtest.synthetic.SyntheticMarket``. Raises ``BacktestError`` for a run that cannot
    start, ``RecordingError`` for a path that is not a recording. Interrupted (``KeyboardInterrupt``)
    while replaying, it still writes what ran and returns it marked ``partial``. ``results_format`` (``parquet``
    or ``jsonl``) overrides the config's ``[results] format``."""
    from bot.results.folder import ResultsSink, Series, summarize

    bt: BacktestConfig = config.backtest
    seed = bt.seed if seed is None else seed
    wanted = set(traded_markets(config))
    dataset = None
    read = None  # what the replay of recordings counted
    if source is not None:
        found, stream = list(source.markets), source.events()
    else:
        if events is not None:
            metas, stream = events
        else:
            metas, stream, dataset, read = _sources(paths, bt)
        found = [m.info() for m in metas]
    feed, notes = config.feed, ()
    if dataset is not None:  # a polled source: stale only after missing polls of its own cadence
        feed = msgspec.structs.replace(feed, stale_after_s=dataset.stale_after_s(feed.stale_after_s))
        notes = dataset.notes(feed.stale_after_s)
    breaks = recording_breaks(paths, feed.stale_after_s) if read is not None else []
    if breaks:
        notes += (breaks_note(breaks),)
    markets: list[MarketInfo] = [m for m in found if not wanted or m.condition_id in wanted]
    if not markets:
        shown = sorted(wanted)[:3] + (["..."] if len(wanted) > 3 else [])
        named = f" of those configured ({', '.join(shown)})" if wanted else ""
        raise BacktestError(f"no market to trade: the recordings hold none{named}")
    if wanted - {m.condition_id for m in markets}:
        missing = ", ".join(sorted(wanted - {m.condition_id for m in markets}))
        raise BacktestError(f"configured markets not in the recordings: {missing}")
    markets = with_default_fee(markets, config.sim.fee)
    strategy = configured_strategy(config)
    clock = SimClock(0.0)
    sink = ResultsSink(out, format=results_format or config.results.format)  # with no folder, it only counts
    engine = build_engine(
        strategy, markets, clock=clock, signing=Signing(None, seed),
        throttles=simulated_throttles(config.venue.limits, clock), risk=config.risk, router=config.router,
        # the simulated venue answers each trade once; a forgotten order's late answer arrives within
        # the latency model's delays: the last FORGOTTEN_KEPT closed orders' ids are plenty to know it
        reconciler=msgspec.structs.replace(config.reconciler, owner=config.reconciler.owner or "backtest",
                                           trades_listed=False,
                                           forgotten_kept=min(config.reconciler.forgotten_kept, FORGOTTEN_KEPT)),
        engine=config.engine, feed=feed, journal=sink, log=log, own_orders_shown=bt.own_orders_recorded,
    )
    sim = msgspec.structs.replace(config.sim, mode="backtest", seed=seed, owner=engine.reconciler.config.owner,
                                  closed_memory=min(config.sim.closed_memory, FORGOTTEN_KEPT))
    venue = SimVenue(markets, sim)
    for m in markets:
        for t in m.tokens:
            if sim.holdings:
                engine.portfolio.seed(t, sim.holdings, 0)
    series = Series(sink if sink.writes else None, bt.sample_every_s)  # no rows built for no folder

    def sample(now: float) -> None:
        if series.due(now):
            series.take(engine, now)

    run = Backtest(engine, venue, clock, timer_s=config.shell.timer_interval_s, feed_delay=bt.feed_delay,
                   on_sample=sample, venue_view=venue_view)
    wall = time.perf_counter()
    bar = _progress(paths) if progress else None
    meter = getattr(stream, "meter", None)  # how much of the recordings was read (a replay's)

    def tick(n: int, t: float) -> None:
        if bar is not None:
            bar(n, t - (run.first_t or t), meter.fraction() if meter is not None else None)

    pauses = dataset.pauses(feed.stale_after_s) if dataset is not None else []
    if breaks:  # recordings of different sessions: the time between them is a pause of the source
        pauses = sorted(pauses + breaks)
    if pauses:
        stream = _paused(stream, pauses, engine, run)
    interrupted = False
    try:
        run.run(stream, tick)
    except KeyboardInterrupt:  # what ran so far is kept, as a partial run, and said to be so
        interrupted = True
        getattr(stream, "close", lambda: None)()
    finally:
        if bar is not None:
            bar(None, 0.0, None)
    wall = time.perf_counter() - wall
    if interrupted:
        run.last_t = clock.now() if run.first_t is not None else None
    span = (run.last_t - run.first_t) if run.first_t is not None and run.last_t is not None else 0.0
    if engine.markets and series.next_at is None and run.events:
        series.take(engine, clock.now())
    summary = summarize(engine, sink, series,
                        mode="backtest", events=run.events, seconds=span, wall_seconds=wall, seed=seed,
                        assumptions=ASSUMPTIONS + notes)
    settled = dataset.settlement(engine.portfolio, summary.pnl) if dataset is not None else ""
    data = (*notes, settled) if settled else tuple(notes)
    if read is not None and (read.unreadable or read.frame_errors):
        data += (damage_note(read),)
    if data:
        summary = msgspec.structs.replace(summary, assumptions=summary.assumptions + ((settled,) if settled else ()),
                                          data_notes=data)
    if interrupted:
        summary = msgspec.structs.replace(summary, partial=True)
    sink.write_summary(summary)
    sink.close()
    return summary


def recording_breaks(paths: list[str | Path], longer_than_s: float) -> list[tuple[float, float]]:
    """The stretches between recordings of different sessions (no run covers them) longer than
    ``longer_than_s`` (``bot.backtest.replay.session_breaks``); top-of-book files have none, nor
    has one run (its files are not read then: the span of a run costs reading its last file)."""
    from bot.backtest.sources import split_sources
    from bot.backtest.replay import run_spans, runs
    from bot.backtest.replay import session_breaks

    recordings, _ = split_sources(paths)
    groups = runs(recordings) if recordings else []
    return session_breaks(run_spans(groups), longer_than_s) if len(groups) > 1 else []


def breaks_note(breaks: list[tuple[float, float]]) -> str:
    """One line on the session breaks between the recordings."""
    from bot.backtest.dataset import duration

    longest = max(b - a for a, b in breaks)
    return (f"{len(breaks)} session break(s) between recordings (the longest {duration(longest)}): that time ages no "
            "book and runs no timer, each later recording starts from its own snapshots (books stale until "
            "then, as after a reconnect), and orders resting through a break meet the first books after it")


def _paused(stream: Iterator[tuple[int, Any]], pauses: list[tuple[float, float]], engine: Any,
            run: Backtest) -> Iterator[tuple[int, Any]]:
    """``stream`` as it is; before the first event after each pause of the source, so before
    anything inside the pause happens, the engine is told of it (``Engine.pause``: it ages no book
    and counts towards no staleness halt) and the timeline skips its timers
    (``Backtest.skip_timers``: no strategy timer, kill-switch check or series sample in a silence
    of hours or weeks)."""
    if not pauses:
        yield from stream
        return
    waiting = list(reversed(pauses))

    def middle(pause: tuple[float, float]) -> float:
        # nothing is received inside a pause: its middle tells an event after it from one before
        # it whatever the rounding of seconds (a float) against the stream's integer nanoseconds
        return (pause[0] + pause[1]) / 2 * 1e9

    next_ns = middle(waiting[-1])  # compared in the stream's own nanoseconds, not divided per event
    for item in stream:
        if item[0] >= next_ns:
            while waiting and item[0] >= middle(waiting[-1]):
                start, end = waiting.pop()
                engine.pause(start, end)
                run.skip_timers(end)
            next_ns = middle(waiting[-1]) if waiting else float("inf")
        yield item


def damage_note(read: Any) -> str:
    """One line on what of the recordings could not be read (``ReplayStats``)."""
    parts = []
    if read.unreadable:
        parts.append(f"{read.unreadable} unreadable stretch(es) of the recordings skipped (unreadable lines, "
                     "damaged compressed data, files cut short), each a gap: the books were stale until their "
                     "next snapshot")
    if read.frame_errors:
        parts.append(f"{read.frame_errors} market frame(s) that could not be decoded skipped")
    return "; ".join(parts)


def _sources(paths: list[str | Path], bt: BacktestConfig) -> tuple[list[Any], Iterator[tuple[int, Any]], Any, Any]:
    """The markets and the merged events of recordings and top-of-book files (``.parquet`` or
    ``.csv``, named or under a folder named: ``bot.backtest.dataset``; their markets are those
    ``[backtest] dataset_*`` choose), the ``Dataset`` read, if any, and the replay's counts
    (``ReplayStats``, filled as the events are read; ``None`` with no recording)."""
    from bot.backtest import replay as rp
    from bot.backtest.sources import split_sources

    recordings, tables = split_sources(paths)
    metas: list[Any] = []
    streams: list[Iterator[tuple[int, Any]]] = []
    dataset = read = None
    if recordings:
        metas += rp.markets(recordings)
        read = rp.ReplayStats()
        streams.append(rp.replay(recordings, cache=bt.cache, stats=read))
    if tables:
        from bot.backtest.dataset import Dataset  # pyarrow: only for top-of-book files

        dataset = Dataset(tables, slugs=bt.dataset_slugs, category=bt.dataset_category, count=bt.dataset_markets,
                          rank=bt.dataset_rank, depth=bt.dataset_depth, stale_polls=bt.dataset_stale_polls)
        metas += dataset.metas
        streams.append(dataset.events)
    if len(streams) == 1:
        return metas, streams[0], dataset, read
    return metas, heapq.merge(*streams, key=lambda item: item[0]), dataset, read


def progress_line(n: int, elapsed: float, market_s: float, fraction: float | None) -> str:
    """The progress line: events read, their rate, hours of market replayed, and, when the share
    of the input read so far (``fraction``, 0..1) is known, the percentage and the time left at the
    rate so far (``ETA m:ss``)."""
    rate = n / elapsed if elapsed > 0 else 0.0
    line = f"backtest: {n:,} events, {rate:,.0f} events/s, {market_s / 3600:.2f} h of market"
    if fraction is not None and fraction > 0 and elapsed > 0:
        left = round(elapsed * (1.0 - min(fraction, 1.0)) / fraction)
        hours, rest = divmod(left, 3600)
        clock = f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"
        line += f", {min(fraction, 1.0):.0%} read, ETA {clock}"
    return line


def _progress(paths: list[str | Path]) -> Callable[[int | None, float, float | None], None]:
    """A progress line on a terminal (``progress_line``); nothing otherwise. Called with the
    events so far, the market time replayed and the share of the input read, then with None."""
    import sys

    if not sys.stderr.isatty():
        return lambda n, t, f: None
    from rich.console import Console

    console = Console(file=sys.stderr)
    start = time.perf_counter()
    status = console.status("backtest starting")
    status.start()

    def show(n: int | None, sim_s: float, fraction: float | None) -> None:
        if n is None:
            status.stop()
            return
        status.update(progress_line(n, time.perf_counter() - start, sim_s, fraction))

    return show

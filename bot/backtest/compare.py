"""Backtest against reality: replay the recording of a live (or paper) session through the same
strategy and config, align the two runs order by order, and say where simulation and reality part.

The recording of a live session holds our own live orders in its books (we were in the queue). The
backtest's simulated venue meets the books without them (``own_orders_out``): each level without
what our live orders rested there, so the simulated orders take their place in the queue and the
prints that filled us may fill them; the strategy sees the books as recorded, as it saw them live.

Alignment: an order of one run is paired with an order of the other at the same token, side, price
and size sent within ``window_s`` of it, and a fill with a fill on the same token and side at the
same price within ``fill_window_s`` (each paired once, nearest first). Then:

- quotes sent in one run and not the other;
- fills in one run and not the other, with their cause: ``latency`` (the other run's twin order
  was not resting in the book at that moment: not arrived yet, or gone; or it had none while
  an order of its own on that side was on its way in, or one at that price was being cancelled:
  the bot quotes around its own orders, even those on the wire, and places none beside one it is
  cancelling), ``queue`` (it was there: the queue model held it back, or let it
  through), ``quotes`` (the other run never sent such an order then);
- fill prices and times of paired fills, queue waits (send to first fill) of both runs;
- the PnL difference split into those causes: each fill is valued at a common final mark.

Every figure comes from the two runs' results (``bot.results.read.RunResults``).
"""

from __future__ import annotations

import statistics
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Sequence

import msgspec

from bot.execution.orders import OrderState
from bot.results import stats
from bot.results.read import FillRecord, RunOrder, RunResults
from bot.venue.enums import Side
from bot.venue.units import UNIT, format_units, parse_units

CAUSES = ("latency", "queue", "quotes")


class Pair(msgspec.Struct, frozen=True):
    live: RunOrder | None
    backtest: RunOrder | None


class FillGap(msgspec.Struct, frozen=True):
    """A fill one run had and the other did not, and why."""

    run: str  # "live" or "backtest": the run that had it
    fill: FillRecord
    cause: str


class Comparison(msgspec.Struct, frozen=True):
    """What the two runs did alike and apart (money in micro-units)."""

    live_orders: int
    backtest_orders: int
    paired_orders: int
    live_fills: int
    backtest_fills: int
    paired_fills: int
    gaps: tuple[FillGap, ...]
    price_diffs: tuple[int, ...]  # backtest - live price of paired fills
    time_diffs: tuple[float, ...]  # backtest - live time of paired fills, s
    live_queue_wait: float | None  # median send-to-first-fill, s
    backtest_queue_wait: float | None
    pnl_live: int
    pnl_backtest: int
    pnl_by_cause: dict[str, int]  # live - backtest PnL, split (prices: paired fills' price differences)

    @property
    def agreement(self) -> float:
        """Paired fills over all fills of both runs (1: every fill in both, 0: none in common)."""
        total = self.live_fills + self.backtest_fills
        return 2 * self.paired_fills / total if total else 1.0

    def cause_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(CAUSES, 0)
        for g in self.gaps:
            counts[g.cause] += 1
        return counts

    @property
    def main_cause(self) -> str | None:
        """The cause of most unpaired fills (None when every fill was paired)."""
        counts = self.cause_counts()
        best = max(counts, key=lambda c: counts[c])
        return best if counts[best] else None


# --- taking our own live orders out of the recorded books -----------------------------------


class _Resting:
    """What our live orders rested at one level over time: (start, end, size) intervals."""

    __slots__ = ("spans",)

    def __init__(self) -> None:
        self.spans: list[tuple[float, float, int]] = []

    def at(self, t: float) -> int:
        return sum(size for start, end, size in self.spans if start <= t < end)


def resting_levels(orders: Iterable[RunOrder], fills: Iterable[FillRecord] = ()) -> dict[tuple[str, bool, int], _Resting]:
    """(token, is_bid, price) -> what our orders rested there, on the venue's clock as near as the
    journal tells it: from when an order was sent until its cancel was sent (or it ended), its size
    stepping down at each fill's match time."""
    by_order: dict[str, list[FillRecord]] = defaultdict(list)
    for f in fills:
        by_order[f.order_id].append(f)
    levels: dict[tuple[str, bool, int], _Resting] = defaultdict(_Resting)
    for o in orders:
        if not any(c.state in _RESTED for c in o.changes):
            continue  # rejected, or never reached the book
        end = float("inf")
        for c in o.changes:
            if c.state is OrderState.PENDING_CANCEL or c.state.terminal:
                end = c.at
                break
        start, left = o.sent_at, o.size
        for f in sorted(by_order.get(o.order_id, ()), key=lambda f: f.ts):
            if f.ts >= end or left <= 0:
                break
            if f.ts > start:
                levels[(o.token_id, o.side is Side.BUY, o.price)].spans.append((start, f.ts, left))
                start = f.ts
            left -= f.size
        if left > 0 and end > start:
            levels[(o.token_id, o.side is Side.BUY, o.price)].spans.append((start, end, left))
    return dict(levels)


_RESTED = (OrderState.LIVE, OrderState.PARTIALLY_FILLED, OrderState.FILLED, OrderState.PENDING_CANCEL)


def own_orders_out(orders: Iterable[RunOrder], fills: Iterable[FillRecord] = ()) -> Any:
    """``venue_view`` for a backtest of our own session's recording (``bot.backtest.runner``):
    each event with our live orders' resting sizes taken out of every level it shows (a level then
    empty is removed), so the simulated venue's queues are as they would have been without us;
    the strategy still sees the recorded books, as live it saw its own orders in them."""
    levels = resting_levels(orders, fills)

    def view(ns: int, ev: Any) -> Any:
        if not levels:
            return ev
        t = ns / 1e9
        name = type(ev).__name__
        if name == "PriceChangeEvent":
            return msgspec.structs.replace(ev, price_changes=[_without(ch, levels, t) for ch in ev.price_changes])
        if name in ("BookEvent", "RestBook"):
            bids = [_level_without(lv, levels, ev.asset_id, True, t) for lv in ev.bids or ()]
            asks = [_level_without(lv, levels, ev.asset_id, False, t) for lv in ev.asks or ()]
            return msgspec.structs.replace(ev, bids=[lv for lv in bids if lv.size != "0"],
                                           asks=[lv for lv in asks if lv.size != "0"])
        return ev

    return view


def _less(size: str, key: tuple[str, bool, int], levels: dict, t: float) -> str:
    r = levels.get(key)
    if r is None:
        return size
    ours = r.at(t)
    if not ours:
        return size
    return format_units(max(0, parse_units(size) - ours))


def _without(ch: Any, levels: dict, t: float) -> Any:
    key = (ch.asset_id, ch.side == "BUY", parse_units(ch.price))
    size = _less(ch.size, key, levels, t)
    return ch if size == ch.size else msgspec.structs.replace(ch, size=size)


def _level_without(lv: Any, levels: dict, token: str, is_bid: bool, t: float) -> Any:
    size = _less(lv.size, (token, is_bid, parse_units(lv.price)), levels, t)
    return lv if size == lv.size else msgspec.structs.replace(lv, size=size)


# --- aligning two runs ----------------------------------------------------------------------


def align_orders(live: Sequence[RunOrder], backtest: Sequence[RunOrder], window_s: float = 2.0) -> list[Pair]:
    """Pairs of orders at the same token, side, price and size sent within ``window_s`` (each
    order used once, the nearest in time first), then the unpaired orders of each run."""
    by_key: dict[tuple, list[RunOrder]] = defaultdict(list)
    for o in backtest:
        by_key[(o.token_id, o.side, o.price, o.size)].append(o)
    candidates = []
    for o in live:
        for b in by_key.get((o.token_id, o.side, o.price, o.size), ()):
            dt = abs(b.sent_at - o.sent_at)
            if dt <= window_s:
                candidates.append((dt, o.order_id, b.order_id, o, b))
    candidates.sort(key=lambda c: (c[0], c[1], c[2]))
    used_live: set[str] = set()
    used_bt: set[str] = set()
    pairs: list[Pair] = []
    for _, lid, bid, o, b in candidates:
        if lid in used_live or bid in used_bt:
            continue
        used_live.add(lid)
        used_bt.add(bid)
        pairs.append(Pair(o, b))
    pairs += [Pair(o, None) for o in live if o.order_id not in used_live]
    pairs += [Pair(None, b) for b in backtest if b.order_id not in used_bt]
    return pairs


def align_fills(live: Sequence[FillRecord], backtest: Sequence[FillRecord],
                window_s: float = 2.0) -> list[tuple[FillRecord, FillRecord]]:
    """Pairs of fills on the same token and side at the same price within ``window_s`` of each
    other (each used once, nearest first): the same trade opportunity taken in both runs. (A
    venue's trade times may have whole-second resolution: the window covers it.)"""
    by_key: dict[tuple, list[FillRecord]] = defaultdict(list)
    for f in backtest:
        by_key[(f.token_id, f.side, f.price)].append(f)
    candidates = []
    for i, a in enumerate(live):
        for j, b in enumerate(by_key.get((a.token_id, a.side, a.price), ())):
            dt = abs(b.ts - a.ts)
            if dt <= window_s:
                candidates.append((dt, i, j, a, b))
    candidates.sort(key=lambda c: (c[0], c[1], c[2]))
    used_a: set[int] = set()
    used_b: set[int] = set()
    out: list[tuple[FillRecord, FillRecord]] = []
    for _, _, _, a, b in candidates:
        if id(a) in used_a or id(b) in used_b:
            continue
        used_a.add(id(a))
        used_b.add(id(b))
        out.append((a, b))
    return out


def resting_at(o: RunOrder, t: float, slack: float = 0.0) -> bool:
    """``o`` rested in the book at ``t`` (give or take ``slack``: a venue's trade times may be
    whole seconds): from its first live state until it ended."""
    start = None
    for c in o.changes:
        if start is None and c.state in _RESTED and c.state is not OrderState.PENDING_CANCEL:
            start = c.at
        if c.state.terminal:
            return start is not None and start - slack <= t <= c.at + slack
    return start is not None and start - slack <= t


def cancelling_at(o: RunOrder, t: float, slack: float = 0.0) -> bool:
    """``o``'s cancel was on the wire at some moment within ``slack`` of ``t``."""
    changes = o.changes
    for i, c in enumerate(changes):
        if c.state is OrderState.PENDING_CANCEL:
            end = changes[i + 1].at if i + 1 < len(changes) else float("inf")
            if c.at - slack <= t <= end + slack:
                return True
    return False


def arriving_at(o: RunOrder, t: float, slack: float = 0.0) -> bool:
    """``o`` was on its way in (sent, not yet resting nor ended) at some moment within ``slack``
    of ``t``."""
    until = float("inf")
    for c in o.changes:
        if (c.state in _RESTED and c.state is not OrderState.PENDING_CANCEL) or c.state.terminal:
            until = c.at
            break
    return o.sent_at - slack <= t <= until + slack


def compare_runs(live: RunResults, backtest: RunResults, *, window_s: float = 2.0, fill_window_s: float = 2.0,
                 mark: dict[str, int] | None = None) -> Comparison:
    """Align ``live`` and ``backtest`` order by order and fill by fill (module docstring); fills
    are valued at ``mark`` (token -> price; default the backtest's last sampled mids)."""
    backtest = during(backtest, live)
    pairs = align_orders(live.orders, backtest.orders, window_s)
    partner: dict[str, RunOrder] = {}  # order id -> its pair in the other run
    for p in pairs:
        if p.live is not None and p.backtest is not None:
            partner[p.live.order_id] = p.backtest
            partner[p.backtest.order_id] = p.live
    marks = mark if mark is not None else last_marks(backtest)
    matched = align_fills(live.fills, backtest.fills, fill_window_s)
    gaps: list[FillGap] = []
    price_diffs: list[int] = []
    time_diffs: list[float] = []
    by_cause = dict.fromkeys(CAUSES + ("prices",), 0)
    for a, b in matched:
        price_diffs.append(b.price - a.price)
        time_diffs.append(b.ts - a.ts)
        by_cause["prices"] += _value(a, marks) - _value(b, marks)
    paired_ids = {id(f) for pair in matched for f in pair}
    sides: dict[int, dict[tuple[str, Side], list[RunOrder]]] = {}
    for run_orders in (live.orders, backtest.orders):
        by_side = sides[id(run_orders)] = defaultdict(list)
        for o in run_orders:
            by_side[(o.token_id, o.side)].append(o)
    for run, fills, sign, others in (("live", live.fills, 1, backtest.orders),
                                     ("backtest", backtest.fills, -1, live.orders)):
        on_side = sides[id(others)]
        for f in fills:
            if id(f) in paired_ids:
                continue
            other = partner.get(f.order_id)
            if other is None:  # the other run never sent such an order then, unless an order of its
                # own on that side was on the wire then: the bot quotes around its own orders (none
                # beside one it is cancelling, none crossing one on its way), so its latency decided
                side = on_side.get((f.token_id, f.side), ())
                waited = any(arriving_at(o, f.ts, fill_window_s) or (
                    o.price == f.price and cancelling_at(o, f.ts, fill_window_s)) for o in side)
                cause = "latency" if waited else "quotes"
            else:  # its twin was in the book then (the queue decided), or not yet / no more (latency)
                cause = "queue" if resting_at(other, f.ts, fill_window_s) else "latency"
            gaps.append(FillGap(run, f, cause))
            by_cause[cause] += sign * _value(f, marks)
    paired_fills = len(matched)
    return Comparison(
        live_orders=len(live.orders), backtest_orders=len(backtest.orders),
        paired_orders=sum(1 for p in pairs if p.live is not None and p.backtest is not None),
        live_fills=len(live.fills), backtest_fills=len(backtest.fills), paired_fills=paired_fills,
        gaps=tuple(gaps), price_diffs=tuple(price_diffs), time_diffs=tuple(time_diffs),
        live_queue_wait=_median_wait(live), backtest_queue_wait=_median_wait(backtest),
        pnl_live=sum(_value(f, marks) for f in live.fills), pnl_backtest=sum(_value(f, marks) for f in backtest.fills),
        pnl_by_cause=by_cause,
    )


def during(results: RunResults, session: RunResults) -> RunResults:
    """``results`` cut to ``session``'s span (its first order sent to its last order's end): the
    backtest replays the whole recording, which may begin before the session traded."""
    if not session.orders:
        return results
    start = min(o.sent_at for o in session.orders)
    end = max((o.ended_at or o.sent_at) for o in session.orders)
    orders = tuple(o for o in results.orders if start <= o.sent_at <= end)
    kept = {o.order_id for o in orders}
    return msgspec.structs.replace(results, orders=orders, fills=tuple(f for f in results.fills if f.order_id in kept))


def last_marks(results: RunResults) -> dict[str, int]:
    """Each token's last sampled mid (micro-units) in ``results``' series."""
    out: dict[str, int] = {}
    for s in results.series:
        for token, ts in s.tokens.items():
            mid = ts.mid
            if mid is not None:
                out[token] = int(mid)
    return out


def _value(f: FillRecord, marks: dict[str, int]) -> int:
    """A fill's PnL at the mark: what it bought or sold is worth at the mark, less what it cost."""
    mark = marks.get(f.token_id, f.price)
    edge = mark - f.price if f.side is Side.BUY else f.price - mark
    return edge * f.size // UNIT - f.fee


def _median_wait(results: RunResults) -> float | None:
    """The median queue wait of the run's orders (``stats.queue_wait``: to the first maker fill)."""
    waits = [w for _, w in stats.queue_waits(results.orders, results.fills)]
    return statistics.median(waits) if waits else None


# --- what the recording must cover --------------------------------------------------------

COVER_SLACK_S = 5.0  # a session may start or end this much outside its recording (they start apart)


def session_span(live: RunResults) -> tuple[float, float] | None:
    """When the session traded: its first order sent to its last order's end (epoch seconds)."""
    if not live.orders:
        return None
    return (min(o.sent_at for o in live.orders), max((o.ended_at or o.sent_at) for o in live.orders))


def recording_span(recording: Sequence[str | Path]) -> tuple[float, float] | None:
    """The receive times (epoch seconds) of the recordings' first and last readable lines
    (``bot.backtest.replay.run_spans``); None if they hold nothing."""
    from bot.backtest.replay import run_spans, runs

    spans = run_spans(runs(recording))
    if not spans:
        return None
    return min(a for a, _ in spans), max(b for _, b in spans)


def missing_span(session: tuple[float, float] | None, recorded: tuple[float, float] | None,
                 slack_s: float = COVER_SLACK_S) -> str | None:
    """What of the session the recording does not cover, as one phrase, or None when it covers it
    (within ``slack_s`` at either end): a comparison over a recording of another time would find
    nothing in common and say so as if it were a finding."""
    if session is None:
        return None
    start, end = session
    if recorded is None:
        return f"the recording holds no events; the session traded {_utc(start)} to {_utc(end)}"
    lo, hi = recorded
    gaps = []
    if lo > start + slack_s:
        gaps.append(f"{_utc(start)} to {_utc(min(lo, end))}")
    if hi < end - slack_s:
        gaps.append(f"{_utc(max(hi, start))} to {_utc(end)}")
    if not gaps:
        return None
    return (f"the recording ({_utc(lo)} to {_utc(hi)}) does not cover the session ({_utc(start)} to {_utc(end)}): "
            f"missing {' and '.join(gaps)}")


def _utc(t: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


# --- running it -----------------------------------------------------------------------------


def backtest_session(config: Any, recording: Sequence[str | Path], live: RunResults, out: str | Path,
                     seed: int | None = None) -> RunResults:
    """The backtest of ``recording`` with ``config``, our live orders taken out of its books for
    the simulated venue; the strategy reads the books as recorded, our live orders in them, as it
    read them live (``own_orders_recorded``: the touch it quotes around leaves ours out)."""
    from bot.results.read import read_results
    from bot.backtest.replay import markets, replay
    from bot.backtest.runner import run_backtest

    config = msgspec.structs.replace(config, backtest=msgspec.structs.replace(config.backtest, own_orders_recorded=True))
    run_backtest(config, list(recording), out=out, seed=seed, events=(markets(recording), replay(recording, cache=False)),
                 venue_view=own_orders_out(live.orders, live.fills))
    return read_results(out)


class Setting(msgspec.Struct, frozen=True):
    """A latency and queue model tried by ``suggest``, and how well it matched the live run."""

    latency_s: float
    queue: str
    agreement: float
    main_cause: str | None


LATENCIES = (0.005, 0.02, 0.05, 0.1, 0.25)
QUEUES = ("risk_averse", "prob")


def suggest(config: Any, recording: Sequence[str | Path], live: RunResults, *, seed: int | None = None,
            latencies: Sequence[float] = LATENCIES, queues: Sequence[str] = QUEUES) -> list[Setting]:
    """Every pair of constant latency (both ways) and queue model tried, best agreement first."""
    from bot.sim.latency import LatencyConfig
    from bot.sim.queue import QueueConfig

    tried: list[Setting] = []
    for lat in latencies:
        for q in queues:
            sim = msgspec.structs.replace(config.sim, latency=LatencyConfig(entry=lat, response=lat),
                                          queue=QueueConfig(kind=q))
            cfg = msgspec.structs.replace(config, sim=sim)
            with tempfile.TemporaryDirectory() as tmp:
                bt = backtest_session(cfg, recording, live, Path(tmp) / "r", seed=seed)
            c = compare_runs(live, bt)
            tried.append(Setting(lat, q, c.agreement, c.main_cause))
    tried.sort(key=lambda s: (-s.agreement, s.latency_s, s.queue))
    return tried


def rows(c: Comparison) -> list[tuple[str, str, str]]:
    """(figure, live, backtest) rows of a comparison."""
    def wait(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f} s"

    counts = c.cause_counts()
    out = [
        ("orders", str(c.live_orders), str(c.backtest_orders)),
        ("orders paired", str(c.paired_orders), str(c.paired_orders)),
        ("fills", str(c.live_fills), str(c.backtest_fills)),
        ("fills paired", str(c.paired_fills), str(c.paired_fills)),
        ("fills only here", str(sum(1 for g in c.gaps if g.run == "live")),
         str(sum(1 for g in c.gaps if g.run == "backtest"))),
        ("median queue wait", wait(c.live_queue_wait), wait(c.backtest_queue_wait)),
        ("PnL at the final marks (USDC)", format_units(c.pnl_live), format_units(c.pnl_backtest)),
    ]
    for cause in CAUSES:
        out.append((f"unpaired fills: {cause}", str(counts[cause]), ""))
    for cause, v in c.pnl_by_cause.items():
        out.append((f"PnL difference from {cause} (USDC)", format_units(v), ""))
    if c.price_diffs:
        out.append(("paired fills: mean price difference (bt - live)",
                    format_units(sum(c.price_diffs) // len(c.price_diffs)), ""))
    if c.time_diffs:
        out.append(("paired fills: median time difference (bt - live)", f"{statistics.median(c.time_diffs):.3f} s", ""))
    out.append(("fill agreement", f"{c.agreement:.1%}", ""))
    out.append(("main cause of unpaired fills", c.main_cause or "-", ""))
    return out


def comparison_section(c: Comparison, settings: Sequence[Setting] = ()) -> Any:
    """The comparison as a report section (``bot.results.report``)."""
    from bot.results.report import Note, Section, Table

    parts: list[Any] = [Table("compare-table", ("figure", "live", "backtest"), tuple(rows(c)))]
    if settings:
        parts.append(Table("compare-settings", ("latency each way", "queue model", "fill agreement", "main cause"),
                           tuple((f"{s.latency_s * 1000:g} ms", s.queue, f"{s.agreement:.1%}", s.main_cause or "-")
                                 for s in settings)))
        best = settings[0]
        parts.append(Note(f"Best match: {best.latency_s * 1000:g} ms each way with the {best.queue} queue model "
                          f"({best.agreement:.1%} of fills in common)."))
    return Section("comparison", "Backtest against live", tuple(parts))

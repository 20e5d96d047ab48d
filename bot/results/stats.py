"""Statistics of a run, from its results only (``bot.results.read.RunResults``): markouts, queue
waits, fill fractions and rate, drawdown.

Definitions (pure functions; floats only for statistics, never for money that is booked):

- markout of a fill at horizon ``h``: the mid ``h`` seconds after the fill minus the mid at the
  fill, signed for our side (+ for a buy, - for a sell), in price micro-units per share:
  positive means the market moved our way, negative is the adverse selection a maker pays. The mid
  at the fill is the last sample at or before it (no older than the shortest horizon); the mid
  after is the first sample at or after ``ts + h`` (no later than ``ts + 2h``); a fill without
  both has no markout at ``h``. Means by side weigh each fill by its size.
- queue wait of an order: from the time it rested (its first LIVE state, when seen no later than
  its first maker fill; else its send) to its first maker fill. Taker fills did not wait in a
  queue and have none.
- an order was accepted unless the venue rejected it or had not answered by its last change (it
  ended PENDING_SUBMIT or UNKNOWN): an order cancelled before its ack counts, as the venue took it;
  its fill fraction is the largest ``filled`` it reached over its size; the fill rate is the share
  of accepted orders with any fill.
- max drawdown: the largest fall of total PnL from an earlier high (0 for a run that never fell).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Iterable, Sequence

import msgspec

from bot.execution.orders import OrderState
from bot.results.read import HORIZONS, FillRecord, RunOrder, Sample
from bot.venue.enums import Side

_UNANSWERED = frozenset({OrderState.PENDING_SUBMIT, OrderState.UNKNOWN})


class Markout(msgspec.Struct, frozen=True):
    """One fill's mid moves at each horizon (``None``: no mid there)."""

    fill: FillRecord
    moves: tuple[float | None, ...]


class MidPath(msgspec.Struct, frozen=True):
    """A token's mid at the samples that had one, in time order."""

    times: list[float]
    mids: list[float]

    def before(self, t: float, oldest: float) -> float | None:
        """The last mid at or before ``t``, if sampled at or after ``oldest``."""
        i = bisect_right(self.times, t) - 1
        return self.mids[i] if i >= 0 and self.times[i] >= oldest else None

    def after(self, t: float, latest: float) -> float | None:
        """The first mid at or after ``t``, if sampled at or before ``latest``."""
        i = bisect_left(self.times, t)
        return self.mids[i] if i < len(self.times) and self.times[i] <= latest else None


def mid_paths(series: Iterable[Sample]) -> dict[str, MidPath]:
    """Each token's mids over the series (samples without a mid are skipped)."""
    out: dict[str, MidPath] = {}
    for s in series:
        for tok, ts in s.tokens.items():
            mid = ts.mid
            if mid is not None:
                p = out.setdefault(tok, MidPath([], []))
                p.times.append(s.t)
                p.mids.append(mid)
    return out


def markouts(fills: Iterable[FillRecord], series: Sequence[Sample],
             horizons: Sequence[float] = HORIZONS) -> list[Markout]:
    """Every fill's markouts at ``horizons`` (see the module's definition)."""
    paths = mid_paths(series)
    first = min(horizons)
    out = []
    for f in fills:
        path = paths.get(f.token_id)
        base = path.before(f.ts, f.ts - first) if path is not None else None
        sign = 1 if f.side is Side.BUY else -1
        moves: list[float | None] = []
        for h in horizons:
            later = path.after(f.ts + h, f.ts + 2 * h) if base is not None and path is not None else None
            moves.append(sign * (later - base) if later is not None and base is not None else None)
        out.append(Markout(f, tuple(moves)))
    return out


class MarkoutMean(msgspec.Struct, frozen=True):
    """Size-weighted mean markout of one side at one horizon over ``fills`` fills."""

    side: Side
    horizon: float
    mean: float | None
    fills: int


def markout_means(marks: Sequence[Markout], horizons: Sequence[float] = HORIZONS) -> list[MarkoutMean]:
    """Per side (buy, sell) and horizon, the size-weighted mean of the markouts that exist."""
    out = []
    for side in (Side.BUY, Side.SELL):
        for i, h in enumerate(horizons):
            num = 0.0
            size = n = 0
            for m in marks:
                move = m.moves[i]
                if m.fill.side is side and move is not None:
                    num += move * m.fill.size
                    size += m.fill.size
                    n += 1
            out.append(MarkoutMean(side, h, num / size if size else None, n))
    return out


def _fills_by_order(fills: Iterable[FillRecord]) -> dict[str, list[FillRecord]]:
    out: dict[str, list[FillRecord]] = {}
    for f in fills:
        out.setdefault(f.order_id, []).append(f)
    return out


def queue_wait(order: RunOrder, fills: Iterable[FillRecord]) -> float | None:
    """Seconds ``order`` rested before its first maker fill (``None``: no maker fill)."""
    maker = [f.ts for f in fills if f.is_maker and f.order_id == order.order_id]
    if not maker:
        return None
    first = min(maker)
    start = order.sent_at
    for c in order.changes:
        if c.state is OrderState.LIVE:
            if c.at <= first:
                start = c.at
            break
    return max(0.0, first - start)


def queue_waits(orders: Iterable[RunOrder], fills: Iterable[FillRecord]) -> list[tuple[RunOrder, float]]:
    """Every order with a maker fill and its queue wait."""
    by_order = _fills_by_order(fills)
    out = []
    for o in orders:
        w = queue_wait(o, by_order.get(o.order_id, ()))
        if w is not None:
            out.append((o, w))
    return out


def accepted(order: RunOrder) -> bool:
    """The venue took the order (see the module's definition)."""
    if any(c.state is OrderState.REJECTED for c in order.changes):
        return False
    final = order.final
    return final is not None and (final.state not in _UNANSWERED or final.filled > 0)


def fill_fraction(order: RunOrder) -> float:
    """The largest share of its size ``order`` had filled (0..1)."""
    filled = max((c.filled for c in order.changes), default=0)
    return min(1.0, filled / order.size) if order.size > 0 else 0.0


def fill_fractions(orders: Iterable[RunOrder]) -> list[tuple[RunOrder, float]]:
    """Every accepted order and its fill fraction."""
    return [(o, fill_fraction(o)) for o in orders if accepted(o)]


def fill_rate(orders: Iterable[RunOrder]) -> float:
    """Accepted orders with any fill over accepted orders (0 when none was accepted)."""
    fr = fill_fractions(orders)
    return sum(1 for _, x in fr if x > 0) / len(fr) if fr else 0.0


def drawdown(totals: Iterable[int]) -> list[int]:
    """At each point, how far the total PnL is below its highest so far (micro-units, >= 0)."""
    out = []
    high: int | None = None
    for v in totals:
        high = v if high is None or v > high else high
        out.append(high - v)
    return out


def max_drawdown(totals: Iterable[int]) -> int:
    """The largest fall of total PnL from an earlier high."""
    return max(drawdown(totals), default=0)

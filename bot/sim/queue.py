"""Queue position of our order resting at one price level of a book we do not own (paper and
backtest venues matching against recorded or live L2 data).

State is one integer: ``ahead``, the units queued in front of our order. Invariants:
``0 <= ahead <= level total (excluding us)``; a level that shrinks without trades (cancels) moves
us forward by a model-chosen share. Trades at our price consume the queue from the front in
``bot.sim.resting``.
"""

from __future__ import annotations

from typing import Protocol

import msgspec


class QueueModel(Protocol):
    def on_depth(self, ahead: int, old_total: int, new_total: int) -> int: ...


class RiskAverseQueue:
    """Cancels are assumed to come from behind us: we only advance on trades, or when the
    level shrinks below the volume we thought was ahead."""

    __slots__ = ()

    def on_depth(self, ahead: int, old_total: int, new_total: int) -> int:
        return min(ahead, max(0, new_total))


class ProbQueue:
    """A shrink of ``d`` units (no trade) is split between the front and the back of the queue:
    the front loses ``d * f(front) / (f(front) + f(back))`` with ``f(x) = x ** power``
    (power 1: proportional; larger powers put cancels further from us)."""

    __slots__ = ("power",)

    def __init__(self, power: float = 2.0) -> None:
        if power <= 0:
            raise ValueError("power must be > 0")
        self.power = power

    def on_depth(self, ahead: int, old_total: int, new_total: int) -> int:
        if new_total >= old_total:  # growth joins behind us
            return min(ahead, max(0, new_total))
        d = old_total - new_total
        behind = max(0, old_total - ahead)
        fa = float(ahead) ** self.power
        fb = float(behind) ** self.power
        share = fa / (fa + fb) if fa + fb else 0.0
        front_loss = max(int(d * share), d - behind)  # the back cannot lose more than it has
        return max(0, min(ahead - front_loss, new_total))


class QueueConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Which queue model estimates our place at a level: ``risk_averse`` (cancels come from
    behind us; the default) or ``prob`` (cancels split by ``power``, see ``ProbQueue``)."""

    kind: str = "risk_averse"
    power: float = 2.0

    def __post_init__(self) -> None:
        if self.kind not in ("risk_averse", "prob"):
            raise ValueError(f"queue model must be risk_averse or prob, not {self.kind!r}")
        if not self.power > 0:
            raise ValueError("queue power must be > 0")


def queue_model(config: QueueConfig) -> QueueModel:
    if config.kind == "prob":
        return ProbQueue(config.power)
    return RiskAverseQueue()

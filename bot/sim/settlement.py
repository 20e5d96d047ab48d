"""Trade settlement: MATCHED -> MINED -> CONFIRMED, with a seeded share of trades going
RETRYING and then either MINED -> CONFIRMED or FAILED.

Invariants: a trade's status only moves forward along its path, which is drawn once at match
time from the engine's seeded generator; due times are ``match_time`` plus the configured
delays, so the same seed and clock give the same sequence. A trade leaves the schedule when it
reaches CONFIRMED or FAILED.
"""

from __future__ import annotations

import heapq
import random

import msgspec

from bot.sim.trades import Trade
from bot.venue.enums import TradeStatus

NORMAL, RETRY_THEN_MINED, RETRY_THEN_FAILED = 0, 1, 2

MATCHED = TradeStatus.MATCHED
MINED = TradeStatus.MINED
CONFIRMED = TradeStatus.CONFIRMED
RETRYING = TradeStatus.RETRYING
FAILED = TradeStatus.FAILED


class SettlementConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Delays are seconds from the previous status; shares are probabilities in [0, 1]."""

    enabled: bool = True  # False: trades stay MATCHED (benchmarks, pure matching tests)
    mined_after: float = 2.0
    confirmed_after: float = 3.0
    retry_share: float = 0.0  # MATCHED -> RETRYING -> MINED -> CONFIRMED
    fail_share: float = 0.0  # MATCHED -> RETRYING -> FAILED (balances reversed)
    retrying_after: float = 2.0
    failed_after: float = 4.0

    def __post_init__(self) -> None:
        if not (0 <= self.retry_share <= 1 and 0 <= self.fail_share <= 1):
            raise ValueError("retry_share and fail_share must be within [0, 1]")
        if self.retry_share + self.fail_share > 1:
            raise ValueError("retry_share + fail_share must not exceed 1")
        if min(self.mined_after, self.confirmed_after, self.retrying_after, self.failed_after) < 0:
            raise ValueError("settlement delays must be >= 0")


class Settlement:
    """The schedule of pending status changes."""

    __slots__ = ("config", "rng", "_heap", "_seq")

    def __init__(self, config: SettlementConfig, rng: random.Random) -> None:
        self.config = config
        self.rng = rng
        self._heap: list[tuple[float, int, Trade]] = []
        self._seq = 0

    def __len__(self) -> int:
        return len(self._heap)

    def schedule(self, trade: Trade) -> None:
        """Draw the trade's path and queue its first change (no-op when disabled)."""
        cfg = self.config
        if not cfg.enabled:
            return
        path = NORMAL
        if cfg.retry_share or cfg.fail_share:
            u = self.rng.random()
            if u < cfg.fail_share:
                path = RETRY_THEN_FAILED
            elif u < cfg.fail_share + cfg.retry_share:
                path = RETRY_THEN_MINED
        trade.path = path
        delay = cfg.mined_after if path == NORMAL else cfg.retrying_after
        self._push(trade.match_time + delay, trade)

    def _push(self, due: float, trade: Trade) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (due, self._seq, trade))

    def next_due(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def advance(self, now: float) -> list[tuple[Trade, TradeStatus, float]]:
        """Apply every change due at or before ``now``; return ``(trade, new status, time)`` in
        order. A trade appears once per step taken. The caller reverses balances for trades that
        became FAILED.
        """
        heap = self._heap
        cfg = self.config
        changed: list[tuple[Trade, TradeStatus, float]] = []
        while heap and heap[0][0] <= now:
            due, _, trade = heapq.heappop(heap)
            st = trade.status
            if st is MATCHED:
                nxt = MINED if trade.path == NORMAL else RETRYING
            elif st is RETRYING:
                nxt = FAILED if trade.path == RETRY_THEN_FAILED else MINED
            elif st is MINED:
                nxt = CONFIRMED
            else:  # already terminal
                continue
            trade.status = nxt
            trade.last_update = due
            if nxt is MINED or (nxt is RETRYING and not trade.tx_hash):
                trade.tx_hash = f"0x{self.rng.getrandbits(256):064x}"
            changed.append((trade, nxt, due))
            if nxt is MINED:
                self._push(due + cfg.confirmed_after, trade)
            elif nxt is RETRYING:
                self._push(due + (cfg.failed_after if trade.path == RETRY_THEN_FAILED
                                  else cfg.mined_after), trade)
        return changed

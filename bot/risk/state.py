"""The trading state (ACTIVE, REDUCING, HALTED) and the kill switch that moves it.

Invariants: entering HALTED, or REDUCING from ACTIVE, emits one ``CancelAll`` so nothing placed
under a looser state stays resting; a halt is sticky: only a manual ``resume`` leaves it, and a
trigger that still holds halts again at the next evaluation.
"""

from __future__ import annotations

import enum
from typing import Any, Iterable

import msgspec

from bot.core.intents import CancelAll, Intent

from .limits import RiskLimits
from .window import SlidingWindow


class TradingState(str, enum.Enum):
    ACTIVE = "ACTIVE"  # every check applies, everything may pass
    REDUCING = "REDUCING"  # only orders that shrink exposure: a market's net, a neg-risk event's worst case
    HALTED = "HALTED"  # nothing but cancels


class HaltReason(str, enum.Enum):
    MANUAL = "manual"
    DAILY_LOSS = "daily_loss"
    TOTAL_LOSS = "total_loss"
    STALE_DATA = "stale_data"
    ERROR_RATE = "error_rate"
    REJECT_STREAK = "reject_streak"
    DISCONNECTED = "disconnected"
    POSITION_UNRECONCILED = "position_unreconciled"  # the venue's holdings are not the booked fills


class Connectivity(msgspec.Struct, frozen=True):
    """The venue link (``source``: e.g. ``"user_ws"``, ``"rest"``) went up or down."""

    connected: bool
    source: str = "venue"


class VenueFailure(msgspec.Struct, frozen=True):
    """An I/O or venue error (timeouts, 5xx, unexpected bodies) counted towards the error rate."""

    kind: str = ""


class VenueReject(msgspec.Struct, frozen=True):
    """The venue refused one of our orders; consecutive rejects form a streak."""

    reason: str = ""


class VenueAccept(msgspec.Struct, frozen=True):
    """The venue accepted one of our orders; ends a reject streak."""


class Trigger(msgspec.Struct, frozen=True):
    reason: HaltReason
    detail: str = ""


class TradingStatus:
    """The current state and why; transitions return the intents they require."""

    __slots__ = ("state", "reasons")

    def __init__(self) -> None:
        self.state = TradingState.ACTIVE
        self.reasons: list[Trigger] = []

    def halt(self, trigger: Trigger) -> list[Intent]:
        first = self.state is not TradingState.HALTED
        if not self.has_reason(trigger.reason):
            self.reasons.append(trigger)
        self.state = TradingState.HALTED
        return [CancelAll()] if first else []

    def has_reason(self, reason: HaltReason) -> bool:
        return any(t.reason is reason for t in self.reasons)

    def reduce(self, trigger: Trigger) -> list[Intent]:
        """Only from ACTIVE: a halt is never softened to REDUCING."""
        if self.state is not TradingState.ACTIVE:
            return []
        self.state = TradingState.REDUCING
        self.reasons.append(trigger)
        return [CancelAll()]

    def resume(self) -> None:
        self.state = TradingState.ACTIVE
        self.reasons.clear()


class KillSwitch:
    """Watches losses, market-data freshness, error rate, reject streak and connectivity.

    ``triggers(now, ...)`` is a pure read of what it has been fed: the conditions that call for a
    halt right now, in a fixed order.
    """

    __slots__ = ("limits", "_errors", "_reject_streak", "_down_since", "_stale_since")

    def __init__(self, limits: RiskLimits) -> None:
        self.limits = limits
        self._errors = SlidingWindow(limits.error_window_s)
        self._reject_streak = 0
        self._down_since: dict[str, float] = {}
        self._stale_since: dict[str, float] = {}

    # -- feeds ----------------------------------------------------------------------------

    def on_event(self, event: Any, now: float) -> bool:
        """Feed one kill-switch event; returns False for events it does not know."""
        if isinstance(event, Connectivity):
            if event.connected:
                self._down_since.pop(event.source, None)
            else:
                self._down_since.setdefault(event.source, now)
        elif isinstance(event, VenueFailure):
            self._errors.record(now)
        elif isinstance(event, VenueReject):
            self._reject_streak += 1
        elif isinstance(event, VenueAccept):
            self._reject_streak = 0
        else:
            return False
        return True

    def observe_books(self, books: Iterable[Any], now: float) -> None:
        """Note which books are stale (``token_id``, ``stale``) and since when."""
        seen = set()
        for b in books:
            seen.add(b.token_id)
            if b.stale:
                self._stale_since.setdefault(b.token_id, now)
            else:
                self._stale_since.pop(b.token_id, None)
        for t in [t for t in self._stale_since if t not in seen]:
            del self._stale_since[t]

    def pause(self, start: float, end: float) -> None:
        """The source itself was silent from ``start`` to ``end`` (between two recordings, a
        collector stopped): a book stale, or a link down, since ``start`` or before counts as if
        that time had not passed, so the pause alone calls for no halt (``Feed.pause`` likewise)."""
        if end <= start:
            return
        for since in (self._stale_since, self._down_since):
            for key, t in since.items():
                if t <= start:
                    since[key] = t + (end - start)

    def reset(self) -> None:
        """Forget counted errors and rejects (on manual resume)."""
        self._errors.clear()
        self._reject_streak = 0

    @property
    def reject_streak(self) -> int:
        return self._reject_streak

    # -- decision -------------------------------------------------------------------------

    def triggers(
        self, now: float, *, daily_pnl: int | None = None, total_pnl: int | None = None
    ) -> list[Trigger]:
        lim = self.limits
        out: list[Trigger] = []
        if lim.max_daily_loss is not None and daily_pnl is not None and -daily_pnl > lim.max_daily_loss:
            out.append(Trigger(HaltReason.DAILY_LOSS, f"daily pnl {daily_pnl} < -{lim.max_daily_loss}"))
        if lim.max_total_loss is not None and total_pnl is not None and -total_pnl > lim.max_total_loss:
            out.append(Trigger(HaltReason.TOTAL_LOSS, f"total pnl {total_pnl} < -{lim.max_total_loss}"))
        if lim.stale_halt_s is not None and self._stale_since:
            token, since = min(self._stale_since.items(), key=lambda kv: (kv[1], kv[0]))
            if now - since > lim.stale_halt_s:
                out.append(Trigger(HaltReason.STALE_DATA, f"book {token} stale for {now - since:.1f}s"))
        if lim.max_errors is not None:
            n = self._errors.count(now)
            if n > lim.max_errors:
                out.append(Trigger(HaltReason.ERROR_RATE, f"{n} errors in {lim.error_window_s}s"))
        if lim.max_reject_streak is not None and self._reject_streak >= lim.max_reject_streak:
            out.append(Trigger(HaltReason.REJECT_STREAK, f"{self._reject_streak} rejects in a row"))
        if lim.disconnect_halt_s is not None and self._down_since:
            source, since = min(self._down_since.items(), key=lambda kv: (kv[1], kv[0]))
            if now - since >= lim.disconnect_halt_s:
                out.append(Trigger(HaltReason.DISCONNECTED, f"{source} down for {now - since:.1f}s"))
        return out

"""The risk gate: the stateful shell around the pure checks (trading state, kill switch, order
rate, reject counters and log lines).

Invariants: every rejection is counted under its reason and logged once, except those of the
trading state itself (``halted``, ``reduce_only``): one line per state change says quoting is
refused, the rest are only counted (``bot_risk_rejections``), so a halted bot does not log each
quote its strategy keeps asking for; the order-rate window
is charged only with orders that were accepted and will be sent; a halt (manual or from the
kill switch) returns a ``CancelAll`` to send before anything else.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import structlog

from bot.core.intents import Intent
from bot.core.markets import MarketIndex

from .checks import BookLike, PositionsLike, Reason, RiskDecision, Universe, check_intents
from .limits import RiskLimits
from .state import HaltReason, KillSwitch, TradingState, TradingStatus, Trigger, VenueAccept
from .window import SlidingWindow


_STATE_REASONS = frozenset({Reason.HALTED, Reason.REDUCE_ONLY})  # refused for the state, not the order


class RiskGate:
    """Checks intents before the router sees them; owns the trading state."""

    def __init__(self, limits: RiskLimits, markets: MarketIndex, *, log: Any = None) -> None:
        self.limits = limits
        self.universe = Universe(markets)
        self.status = TradingStatus()
        self.kill_switch = KillSwitch(limits)
        self.rate = SlidingWindow(limits.rate_window_s)
        self.reject_counts: dict[Reason, int] = {}
        self.halt_counts: dict[HaltReason, int] = {}
        # token -> the name of the strategy quoting it, when several share the account: a
        # rejection's log line names it
        self.owners: Mapping[str, str] = {}
        self.log = log if log is not None else structlog.get_logger("risk")
        self._told: TradingState | None = None  # the state whose refusals were logged (once)

    @property
    def state(self) -> TradingState:
        return self.status.state

    # -- pre-trade ------------------------------------------------------------------------

    def check(
        self,
        intents: Iterable[Intent],
        *,
        positions: PositionsLike,
        open_orders: Iterable[Any],
        books: Mapping[str, BookLike] | Any,
        now: float,
    ) -> RiskDecision:
        budget = None
        if self.limits.max_orders_per_window is not None:
            budget = max(0, self.limits.max_orders_per_window - self.rate.count(now))
        decision = check_intents(
            intents,
            state=self.status.state,
            limits=self.limits,
            universe=self.universe,
            positions=positions,
            open_orders=open_orders,
            books=books,
            rate_budget=budget,
        )
        if decision.new_orders:
            self.rate.record(now, decision.new_orders)
        state = self.status.state
        for r in decision.rejections:
            self.reject_counts[r.reason] = self.reject_counts.get(r.reason, 0) + 1
            if r.reason in _STATE_REASONS:
                if self._told is state:
                    continue  # told once for this state; counted
                self._told = state
            o = r.order
            named = {"strategy": self.owners.get(o.token_id, "")} if self.owners else {}
            self.log.warning(
                "risk_reject",
                **named,
                reason=r.reason.value,
                token_id=o.token_id,
                side=o.side.value,
                price=o.price,
                size=getattr(o, "size", None) or getattr(o, "amount", None),
                detail=r.detail,
                state=state.value,
            )
        return decision

    # -- kill switch and manual control ---------------------------------------------------

    def on_event(self, event: Any, now: float) -> list[Intent]:
        """Feed a kill-switch event (connectivity, venue error, reject, accept) and evaluate (an
        accept only ends a reject streak: it cannot call for a halt)."""
        self.kill_switch.on_event(event, now)
        if type(event) is VenueAccept:
            return []
        return self.evaluate(now)

    def evaluate(
        self,
        now: float,
        *,
        books: Iterable[Any] | None = None,
        daily_pnl: int | None = None,
        total_pnl: int | None = None,
    ) -> list[Intent]:
        """Run the kill switch; returns the intents a resulting halt requires (``CancelAll``)."""
        if books is not None:
            self.kill_switch.observe_books(books, now)
        out: list[Intent] = []
        for trigger in self.kill_switch.triggers(now, daily_pnl=daily_pnl, total_pnl=total_pnl):
            out.extend(self._halt(trigger))
        return out

    def halt(self, detail: str = "") -> list[Intent]:
        """Manual halt: cancel everything, accept nothing but cancels until ``resume``."""
        return self._halt(Trigger(HaltReason.MANUAL, detail))

    def halt_for(self, reason: HaltReason, detail: str = "") -> list[Intent]:
        """A halt the engine finds itself (e.g. an unreconciled position): as the kill switch's."""
        return self._halt(Trigger(reason, detail))

    def reduce_only(self, detail: str = "") -> list[Intent]:
        """Manual switch to REDUCING (from ACTIVE): cancel everything, then only reduce."""
        out = self.status.reduce(Trigger(HaltReason.MANUAL, detail))
        if out:
            self._told = None
            self.log.warning("risk_reducing", detail=detail)
        return out

    def resume(self) -> None:
        """Manual resume to ACTIVE; counted errors and the reject streak are forgotten."""
        self.status.resume()
        self.kill_switch.reset()
        self._told = None
        self.log.warning("risk_resumed")

    def _halt(self, trigger: Trigger) -> list[Intent]:
        known = self.status.state is TradingState.HALTED and self.status.has_reason(trigger.reason)
        out = self.status.halt(trigger)
        if not known:
            self._told = None
            self.halt_counts[trigger.reason] = self.halt_counts.get(trigger.reason, 0) + 1
            self.log.error("risk_halt", reason=trigger.reason.value, detail=trigger.detail)
        return out

"""What executes the engine's actions, as one interface: the live venue over HTTP
(``bot.live.executor.LiveExecutor``) in a live run, the simulated venue (``bot.sim.venue.SimVenue``)
in paper trading and backtests. Every mode is an event source and an executor; the engine and the
loops that drive it (the live shell, the backtest's timeline) speak to an executor only here.

The conversation (``bot.execution.protocol``): the driver hands the engine's actions over with
``execute(actions, now)`` in the order the engine emitted them, and feeds every ``Result`` that
comes back to the engine. Results come back by one of two roads, each executor using one:

- an executor on a clock of its own (the simulated venue) schedules its answers: ``next_due()``
  says when the next is due and ``due(now)`` returns those due by ``now``, in time order; the
  driver wakes for them;
- an executor on the wire (the live venue) has nothing scheduled (``next_due()`` is ``None``,
  ``due`` empty): its answers, the user channel's order and trade news and the pages it reads are
  posted into the driver's inbox with the ``post`` it was opened with, as they arrive.

Invariants every executor keeps:

- every ``SendPlaces`` is answered exactly once, by ``PlacesAnswered`` (one result per order, in
  the batch's order) or ``PlacesFailed``; every ``SendCancels`` exactly once, by ``CancelsAnswered``
  or ``CancelsFailed``; a failure whose outcome is unknown says so (``outcome_unknown``) and is
  resolved by lookup, never by a blind resend;
- write order on the wire: a cancel never overtakes the place of its order, a place that
  would cross an order of ours whose cancel is on its way waits for that cancel's answer
  (``bot.live.writes``), and a place still waiting when all its orders are cancelled is never
  sent (answered ``PlacesFailed`` of kind ``WITHDRAWN``); the simulated venue meets each write when its entry latency brings it,
  as the real venue meets requests racing on the wire;
- actions it has no use for are ignored (the simulated venue tells every change of our orders and
  trades as it happens, so it needs no listing, lookup, trades page or positions check);
- at ``stop`` nothing of ours is left resting where the venue answered, and every answer the stop
  gets reaches the engine (``deliver``) before ``stop`` returns.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Protocol, runtime_checkable

from bot.execution.protocol import Result

Deliver = Callable[[Result], list[Any]]  # a result into the engine; the actions it asks for
Post = Callable[[Any], Awaitable[None]]  # a message into the driver's inbox


@runtime_checkable
class Executor(Protocol):
    """Executes the engine's actions and hands their results back; see the module invariants."""

    def open(self, tasks: Any, writes: Any, post: Post) -> None:
        """Start serving a live loop: ``tasks`` (a task group, cancelled when the loop stops) runs
        the executor's own work (channels, periodic reads), ``writes`` (a task group that outlives
        the stop) its trading writes, which run to their answers; ``post`` puts a result into the
        loop's inbox. An executor without such work does nothing here."""

    def execute(self, actions: list[Any], now: float) -> None:
        """Carry out ``actions`` (emitted at ``now``, in the engine's order)."""

    def next_due(self) -> float | None:
        """When the next scheduled result is due; ``None`` when none is scheduled."""

    def due(self, now: float) -> list[Result]:
        """The scheduled results due by ``now``, in time order."""

    def in_flight(self) -> int:
        """Writes sent or held and not answered yet, whose answers will be posted."""

    def withdraw(self) -> list[Result]:
        """The stop begins: writes held back (waiting for others) never leave; their answers as
        never sent (places failed with nothing placed, cancels failed: the orders are where they
        were)."""

    async def stop(self, actions: list[Any], now: float, deliver: Deliver) -> bool:
        """Cancel everything of ours: the stop's ``actions`` (the engine's last cancels) carried
        out and every order at the venue cancelled, each answer delivered. Returns whether the
        venue answered the cancel of everything."""

    async def final_reads(self, deliver: Deliver) -> None:
        """Once nothing of ours rests: what the venue did that was not told yet (fills a lagging
        channel had not delivered) read one last time and delivered."""

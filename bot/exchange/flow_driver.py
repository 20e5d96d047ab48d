"""Drives bot/sim/flow.py's seeded synthetic traders against the engine on the server clock.

Invariant: one ``BackgroundTraders`` per open market (active, not closed, unresolved), seeded from
the server seed and the market's position, centred on the market's configured mid; the markets
of one neg-risk event share one ``EventValue`` (their fair values sum to 1), started from their
mids; ``step(now)``
runs only on the event-loop thread and returns the engine events the flow produced (the
synthetic market drains the engine), which the caller hands to the WebSocket hub, so no event
is lost or sent twice. A market is stepped only when one of its traders is due (``next_due``),
so a step costs what is due, not the number of markets.
"""

from __future__ import annotations

import heapq

import msgspec

from bot.exchange.config import ServerFlowConfig
from bot.sim.flow import BackgroundTraders, EventValue, FlowConfig

START_MIN, START_MAX = 0.02, 0.98
EVENT_DISLOCATIONS_PER_S = 0.2  # per market of a neg-risk event: whole sets mispriced about a tenth of the time


class FlowDriver:
    def __init__(self, markets: list[BackgroundTraders]) -> None:
        self.markets = markets

    @classmethod
    def create(cls, state, config: ServerFlowConfig) -> "FlowDriver":
        chosen = [m for m in state.catalog.markets if m.active and not m.closed and m.winner < 0]
        if config.markets:
            chosen = chosen[: config.markets]
        events: dict[str, list] = {}  # every open market of each neg-risk event, chosen or not
        for m in state.catalog.markets:
            if m.neg_risk and m.event_id and m.active and not m.closed and m.winner < 0:
                events.setdefault(m.event_id, []).append(m)
        flow = FlowConfig().faster(config.speed)
        wanted = {m.event_id for m in chosen if m.event_id in events}
        values = {eid: EventValue([float(m.mid) for m in events[eid]], flow, seed=f"event:{state.config.seed}:{eid}")
                  for eid in sorted(wanted) if len(events[eid]) > 1}
        sims = []
        for index, m in enumerate(chosen):
            start = min(START_MAX, max(START_MIN, float(m.mid)))
            sim_config = FlowConfig(start_price=start, name=f"flow{index}").faster(config.speed)
            value = values.get(m.event_id) if m.neg_risk else None
            outcome = events[m.event_id].index(m) if value is not None else 0
            if value is not None:  # a set is mispriced now and then: its providers' quotes dislocate
                sim_config = msgspec.structs.replace(sim_config, dislocation_rate=EVENT_DISLOCATIONS_PER_S * config.speed)
            sims.append(BackgroundTraders(state.engine, m.info, sim_config, seed=state.config.seed * 1_000 + index,
                                          value=value, outcome=outcome))
        return cls(sims)

    def step(self, now: float) -> list:
        """Run every action due by ``now`` across all markets in time order (a market's actions
        never go out ahead of another market's earlier ones, so the prints' stamps never go
        back); every market on the first step. The engine events they caused, in that order."""
        events: list = []
        waiting: list[tuple[float, int]] = []
        for index, sim in enumerate(self.markets):
            due = sim.next_due()
            if due is None:  # not started (its first quotes go out now), or nobody waiting
                events.extend(sim.step(now))
                due = sim.next_due()
            if due is not None and due <= now:
                waiting.append((due, index))
        heapq.heapify(waiting)
        while waiting:
            _, index = heapq.heappop(waiting)
            sim = self.markets[index]
            events.extend(sim.step(min(now, waiting[0][0]) if waiting else now))
            due = sim.next_due()
            if due is not None and due <= now:
                heapq.heappush(waiting, (due, index))
        return events

    def next_due(self) -> float | None:
        """When the first trader of any market acts next (``None``: none is waiting)."""
        dues = [d for d in (sim.next_due() for sim in self.markets) if d is not None]
        return min(dues) if dues else None

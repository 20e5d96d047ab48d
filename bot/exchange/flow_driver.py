"""Drives bot/sim/flow.py's seeded synthetic traders against the engine on the server clock.

Invariant: the driver only submits orders through the engine's public commands on the loop
thread; when the flow module is unavailable it is simply absent (books still hold the seeded
liquidity ladder).
"""

from __future__ import annotations


class FlowDriver:
    def __init__(self, flow) -> None:
        self.flow = flow

    @classmethod
    def create(cls, state, config) -> "FlowDriver | None":
        try:
            from bot.sim import flow as flow_mod
        except ImportError:
            return None
        factory = getattr(flow_mod, "SyntheticFlow", None) or getattr(flow_mod, "Flow", None)
        if factory is None:
            return None
        markets = [m.info for m in state.catalog.markets]
        if config.markets:
            markets = markets[: config.markets]
        try:
            flow = factory(state.engine, markets, seed=state.config.seed)
        except TypeError:
            return None
        return cls(flow)

    def step(self, now: float) -> None:
        self.flow.step(now)

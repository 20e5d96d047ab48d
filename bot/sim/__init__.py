"""The simulated venues: matching engine, accounts, settlement, synthetic traders, the small
latency and queue models, and the venue of paper trading and backtests (``venue.py``, matching
our orders against an external L2 book). Pure and deterministic (time is a parameter, randomness
is seeded); knows nothing of HTTP. See ``matching.py`` for the engine's rules."""

from bot.sim.events import (
    BookLevelChanged,
    BookSnapshot,
    MakerOrderView,
    OrderEvent,
    OrderView,
    TickSizeChanged,
    TradeEvent,
    TradePrint,
    TradeView,
)
from bot.sim.flow import BackgroundTraders, FlowConfig
from bot.sim.matching import Balance, MatchingConfig, MatchingEngine
from bot.sim.orders import LOT, AmountsError, NewOrder
from bot.sim.positions import AccountPosition
from bot.sim.results import CancelResult, OrderResult
from bot.sim.settlement import SettlementConfig
from bot.sim.ticks import TickConfig

__all__ = [
    "LOT", "AccountPosition", "AmountsError", "BackgroundTraders", "Balance", "BookLevelChanged",
    "BookSnapshot", "CancelResult", "FlowConfig", "MakerOrderView", "MatchingConfig",
    "MatchingEngine", "NewOrder", "OrderEvent", "OrderResult", "OrderView", "SettlementConfig",
    "TickConfig", "TickSizeChanged", "TradeEvent", "TradePrint", "TradeView",
]

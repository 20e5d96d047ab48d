"""Pre-trade risk: limits, checks, the trading state and the kill switch."""

from .checks import Projection, Reason, Rejection, RiskDecision, Universe, check_intents
from .gate import RiskGate
from .limits import RiskLimits
from .state import (
    Connectivity, HaltReason, KillSwitch, TradingState, TradingStatus, Trigger, VenueAccept,
    VenueFailure, VenueReject,
)
from .window import SlidingWindow

__all__ = [
    "Connectivity", "HaltReason", "KillSwitch", "Projection", "Reason", "Rejection",
    "RiskDecision", "RiskGate", "RiskLimits", "SlidingWindow", "TradingState", "TradingStatus",
    "Trigger", "Universe", "VenueAccept", "VenueFailure", "VenueReject", "check_intents",
]

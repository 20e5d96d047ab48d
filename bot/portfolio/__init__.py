"""Positions, PnL and netting, built from fills only (the reconciler is the writer)."""

from .netting import ComplementNet, event_markets, net_market, outcome_payoffs, worst_case_pnl
from .pnl import DailyPnl, PnlSnapshot, marks_from_books, snapshot
from .positions import Drift, Portfolio, Position, fills_of

__all__ = [
    "ComplementNet", "DailyPnl", "Drift", "PnlSnapshot", "Portfolio", "Position",
    "event_markets", "fills_of", "marks_from_books", "net_market", "outcome_payoffs",
    "snapshot", "worst_case_pnl",
]

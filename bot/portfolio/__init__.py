"""Positions, PnL and netting, built from fills only (the reconciler is the writer)."""

from .netting import ComplementNet, event_markets, net_market, outcome_payoffs, worst_case_pnl
from .pnl import DailyPnl, PnlSnapshot, marks_from_books, snapshot
from .positions import Drift, Portfolio, Position, fills_of
from .sets import CompleteSets, SetGroup, SetTotals, complete_sets, held_sets, set_groups, totals

__all__ = [
    "ComplementNet", "CompleteSets", "DailyPnl", "Drift", "PnlSnapshot", "Portfolio", "Position",
    "SetGroup", "SetTotals", "complete_sets", "event_markets", "fills_of", "held_sets", "marks_from_books",
    "net_market", "outcome_payoffs", "set_groups", "snapshot", "totals", "worst_case_pnl",
]

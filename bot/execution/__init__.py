"""Execution: diff and router (intents to throttled batches), own order state, the reconciler
(the only writer of order state) and the SQLite journal that makes restarts exact.

Synchronous and deterministic: values in, values out, ``now`` passed in; no HTTP, no sockets.
"""

from bot.execution.diff import diff
from bot.execution.journal import Journal, JournalConfig, JournalState
from bot.execution.orders import OrderState, OrderStore, OwnOrder
from bot.execution.reconciler import OrderUpdate, Reconciler, ReconcilerConfig
from bot.execution.protocol import FetchTrades, LookupOrder, ResendOrder
from bot.execution.restart import restore
from bot.execution.router import CancelBatch, OrderRequest, PlaceBatch, Router, RouterConfig

__all__ = [
    "CancelBatch", "FetchTrades", "Journal", "JournalConfig", "JournalState", "LookupOrder", "OrderRequest",
    "OrderState", "OrderStore", "OrderUpdate", "OwnOrder", "PlaceBatch", "Reconciler", "ReconcilerConfig",
    "ResendOrder", "Router", "RouterConfig", "diff", "restore",
]

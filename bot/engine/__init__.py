"""The engine that composes books, strategy, risk, router, reconciler and portfolio, the typed
results that flow back into it, and the one assembly that builds it for any mode."""

"""The engine that composes books, strategy, risk, router, reconciler and portfolio (it speaks
``bot.execution.protocol`` with whatever executes its actions), and the one assembly that builds
it for any mode."""

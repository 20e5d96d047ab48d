"""A trading framework for a prediction-market CLOB: one deterministic core for live, paper and backtest."""

__version__ = "0.1.0"

"""A run's results, the same for every mode: the results folder a backtest writes
(``folder``), the reading of a folder or of a live or paper journal into one form (``read``), its
statistics (``stats``) and its report (``report``). Below the shells and the backtest, which
both use it; it reads no recording itself (a journal's books come in as market events).
"""

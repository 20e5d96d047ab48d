"""The ``bot`` command's commands, one module a group: the parser of them all (``parser``), what
every command can use (``session``, and ``venue``: the one place a command's venue clients are
made), market data (``market``), offline order signing (``order``), keys (``keys``), config checks
and templates (``config``), operator commands on the account (``account``), live trading, the demo
and the local exchange (``run``), backtests (``backtest``), recording and reports (``data``).
The entry point, with its exit codes, is ``bot.cli.main``.
"""

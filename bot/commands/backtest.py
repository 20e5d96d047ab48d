"""``bot backtest``, ``bot compare`` and ``bot sweep``: handed over to ``bot.backtest``.

Invariant: none starts without a config naming a strategy; the message says which config.
"""

from __future__ import annotations

from bot.commands.entry_points import entry_point, finish
from bot.commands.session import Session
from bot.ops.config import ConfigError, has_strategy


def cmd_backtest(s: Session) -> int:
    run = entry_point("bot.backtest.cli", "backtest")
    if not has_strategy(s.config):
        where = s.config_path or "the default config"
        raise ConfigError(f"{where}: [strategy] path (or [[strategies]]) is not set (bot backtest --config FILE)")
    return finish(run(s.config, s.args))


def cmd_compare(s: Session) -> int:
    from bot.backtest.cli import compare

    if not has_strategy(s.config):
        raise ConfigError(f"{s.config_path or 'the default config'}: [strategy] path (or [[strategies]]) is not set")
    return compare(s.config, s.args)


def cmd_sweep(s: Session) -> int:
    run = entry_point("bot.backtest.sweep", "sweep")
    if not has_strategy(s.config):
        where = s.config_path or "the default config"
        raise ConfigError(f"{where}: [strategy] path (or [[strategies]]) is not set (bot sweep --config FILE)")
    return finish(run(s.config, s.args))

"""``bot backtest``, ``bot compare`` and ``bot sweep``: handed over to ``bot.backtest``.

Invariant: none starts without a config naming a strategy; the message says which config.
"""

from __future__ import annotations

from bot.commands.entry_points import entry_point, finish
from bot.commands.session import Session
from bot.ops.config import ConfigError, has_strategy


def cmd_backtest(s: Session) -> int:
    return _run_configured(s, "bot.backtest.cli", "backtest")


def cmd_compare(s: Session) -> int:
    from bot.backtest.cli import compare

    if not has_strategy(s.config):
        raise ConfigError(f"{s.config_path or 'the default config'}: [strategy] path (or [[strategies]]) is not set")
    return compare(s.config, s.args)


def cmd_sweep(s: Session) -> int:
    return _run_configured(s, "bot.backtest.sweep", "sweep")


def _run_configured(s: Session, module_name: str, command: str) -> int:
    """``module_name.run(config, args)`` for ``bot command``, once the config names a strategy."""
    run = entry_point(module_name, command)
    if not has_strategy(s.config):
        where = s.config_path or "the default config"
        raise ConfigError(f"{where}: [strategy] path (or [[strategies]]) is not set (bot {command} --config FILE)")
    return finish(run(s.config, s.args))

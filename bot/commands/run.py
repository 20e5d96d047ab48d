"""``bot run`` (live or ``--paper``), ``bot demo`` and ``bot exchange``: handed over to the live
runner, the demo and the local exchange.

Invariant: ``bot run`` starts nothing without a config naming a strategy; logs go to stderr at the
configured level.
"""

from __future__ import annotations

from bot.commands.entry_points import entry_point, finish
from bot.commands.session import CommandError, Session
from bot.ops.config import DEFAULT_CONFIG_PATH, ConfigError, has_strategy


def configure_run_logging(s: Session) -> None:
    """Logs of a long-running command: ``--log-level``, else the config's ``[log]``."""
    from bot.ops.logging import configure

    log = s.config.log
    configure(s.args.log_level or log.level, json=log.json)


def cmd_run(s: Session) -> int:
    run = entry_point("bot.live.run", "run")
    if s.config_path is None:
        raise CommandError(f"bot run needs a config: --config FILE (or {DEFAULT_CONFIG_PATH})")
    if not has_strategy(s.config):
        raise ConfigError(f"{s.config_path}: [strategy] path (or [[strategies]]) is not set")
    configure_run_logging(s)
    return finish(run(s.config, s.args))


def cmd_demo(s: Session) -> int:
    run = entry_point("bot.live.demo", "demo")
    return finish(run(s.args))


def cmd_exchange(s: Session) -> int:
    from bot.exchange import cli as exchange_cli

    return int(exchange_cli.run(s.args) or 0)

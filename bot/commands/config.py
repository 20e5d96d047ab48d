"""``bot config check`` and ``bot new strategy``: a config file checked as a run would read it, and
a strategy started from a template that works as written.

Invariant: a config that passes the check loads its strategies too (each with its own params), and
with ``--secrets`` its key and credentials, whose values are never shown; with ``--venue`` each
order size below a traded market's minimum order is a warning line (the check still passes).
"""

from __future__ import annotations

import sys
from pathlib import Path

from bot.commands.session import EXIT_OK, CommandError, Session
from bot.ops.config import has_strategy, load_bot_config, summarize


def cmd_new_strategy(s: Session) -> int:
    from bot.ops.scaffold import ScaffoldError, new_strategy

    a = s.args
    try:
        written = new_strategy(a.name, a.dir)
    except ScaffoldError as exc:
        raise CommandError(f"bot new strategy: {exc}") from None
    print(f"wrote {', '.join(str(p) for p in written)}")
    strategy, test, config = written
    print(f"next: .venv/bin/python -m pytest {test}; .venv/bin/bot backtest --config {config} --synthetic")
    return EXIT_OK


def cmd_config_check(s: Session) -> int:
    a = s.args
    config = load_bot_config(a.file)
    strategy = None
    if has_strategy(config):
        from bot.strategy_set import configured_strategy

        strategy = configured_strategy(config)
    if a.venue and strategy is not None:
        for line in undersized_at_venue(s, config, strategy):
            sys.stderr.write(f"warning: {a.file}: {line}\n")
    line = f"ok: {a.file}: {summarize(config)}"
    if a.secrets:
        from bot.ops.secrets import load_secrets

        found = load_secrets(config.secrets)
        if found.private_key is not None:
            found.wallet()  # parses the key; reports a malformed one without showing it
        if found.has_credentials:
            found.credentials()
        line += f"; {found.describe()}"
    sys.stdout.write(line + "\n")
    return EXIT_OK


def undersized_at_venue(s: Session, config, strategy) -> list[str]:
    """The order sizes of ``strategy`` below the minimum order of a market it trades, as the venue
    lists the markets (every market it lists when the config names none)."""
    from bot.commands.venue import on_venue
    from bot.live.markets import load_markets
    from bot.ops.config import traded_markets
    from bot.strategy_set import StrategySet

    s.use_config(config, Path(s.args.file))  # the venue the checked file names

    async def listed(venue):  # the markets a run of this file would load
        async with venue.clob() as clob:
            return await load_markets(clob, traded_markets(config))

    markets = on_venue(s, listed)
    if isinstance(strategy, StrategySet):
        strategy.bind(markets)
    return strategy.undersized(markets)

"""What every command can use: its arguments, and the config and secrets, read on first use.

Invariant: the config and secrets are read once per invocation, and only by the commands that
need them (``bot --help`` or ``bot markets`` read no secret); ``last_url`` names the venue URL a
command opened last, for the error line of an unreachable host.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from bot.ops.arguments import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE
from bot.ops.config import BotConfig, resolve_bot_config

__all__ = ["EXIT_INTERNAL", "EXIT_OK", "EXIT_USAGE", "CommandError", "Session"]


class CommandError(ValueError):
    """A command that cannot proceed for a reason the user can fix (one line)."""


class Session:
    """One invocation: its arguments, and the config and secrets, made on demand."""

    def __init__(self, args: argparse.Namespace, http_transport: Any = None) -> None:
        self.args = args
        self.http_transport = http_transport  # replaces the network (``httpx.AsyncBaseTransport``), in tests
        self._config: tuple[BotConfig, Path | None] | None = None
        self._secrets = None
        self.last_url: str | None = None  # base URL of the last transport made, for error lines

    @property
    def config(self) -> BotConfig:
        return self._resolved()[0]

    @property
    def config_path(self) -> Path | None:
        return self._resolved()[1]

    def use_config(self, config: BotConfig, path: Path | None) -> None:
        """Make ``config`` (read from ``path``) this invocation's config: what it reaches the venue with."""
        self._config = (config, path)

    def _resolved(self) -> tuple[BotConfig, Path | None]:
        if self._config is None:
            self._config = resolve_bot_config(getattr(self.args, "config_file", None))
        return self._config

    @property
    def secrets(self):
        if self._secrets is None:
            from bot.ops.secrets import load_secrets

            self._secrets = load_secrets(self.config.secrets)
        return self._secrets

    def console(self):
        """A rich console on the current stdout (wide when not a terminal, so ids never fold)."""
        from rich.console import Console

        out = sys.stdout
        return Console(file=out, width=None if out.isatty() else 240, highlight=False, soft_wrap=False)

"""The parts a command hands over to (live trading, the demo, backtests, sweeps), which an install
may leave out: found by name when the command runs, so the rest of ``bot`` works without them.

Invariant: a part that is not installed is one line (``bot run: not available ...``, exit 2); an
import error inside an installed part is not mistaken for its absence.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from bot.commands.session import EXIT_OK, CommandError


def entry_point(module_name: str, command: str) -> Callable[..., Any]:
    """``module_name.run``, or a CommandError when that module is not part of this install."""
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and module_name.startswith(missing) and module_name[len(missing):len(missing) + 1] in ("", "."):
            raise CommandError(f"bot {command}: not available ({module_name} is not installed)") from None
        raise
    run = getattr(module, "run", None)
    if not callable(run):
        raise CommandError(f"bot {command}: not available ({module_name} has no run())")
    return run


def finish(result: Any) -> int:
    """The exit code of what an entry point returned (awaited first when it is a coroutine)."""
    if inspect.iscoroutine(result):
        import anyio

        result = anyio.run(lambda: result)
    return EXIT_OK if result is None else int(result)

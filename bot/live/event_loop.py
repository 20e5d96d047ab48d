"""The event loop a live or paper run turns on (``[shell] event_loop``): the standard library's
asyncio loop, or uvloop's (libuv: socket readiness, timers, callbacks and thread wake-ups handled
in C), which takes less of the bot's own time between a market frame off the socket and the order
request it causes.

Invariant: the choice is made once, before the run's loop starts, and the loop that runs is said
in one log line once the run is set to trade.
``"auto"`` takes uvloop when it is installed and asyncio otherwise (the log line says which and
why); ``"uvloop"`` named explicitly and not installed is refused in one line, never silently run
on another loop. Nothing else in the bot depends on which loop runs: every socket, timer and
thread hop goes through anyio or the asyncio interfaces both loops implement.
"""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Literal

import structlog

from bot.ops.config import ConfigError

log = structlog.get_logger("bot.live")

UVLOOP_PIN = "uvloop==0.23.0"  # the version requirements.lock and pyproject.toml's [uvloop] extra install


def uvloop_installed() -> bool:
    return importlib.util.find_spec("uvloop") is not None


def chosen_loop(wanted: str, installed: bool) -> Literal["asyncio", "uvloop"]:
    """The loop a run turns on, given the config's ``wanted`` and whether uvloop is ``installed``;
    ``"uvloop"`` wanted but not installed is a ``ConfigError``."""
    if wanted == "uvloop" and not installed:
        raise ConfigError(f"shell.event_loop = \"uvloop\" but uvloop is not installed "
                          f"(pip install {UVLOOP_PIN}, or set event_loop = \"asyncio\")")
    if wanted == "auto":
        return "uvloop" if installed else "asyncio"
    return "uvloop" if wanted == "uvloop" else "asyncio"


def backend_options(wanted: str) -> dict[str, bool]:
    """``anyio.run``'s ``backend_options`` for the loop ``wanted`` resolves to (``chosen_loop``)."""
    return {"use_uvloop": chosen_loop(wanted, uvloop_installed()) == "uvloop"}


def running_loop() -> str:
    """``"uvloop"`` or ``"asyncio"``: the loop this code runs on."""
    return "uvloop" if type(asyncio.get_running_loop()).__module__.startswith("uvloop") else "asyncio"


def say_loop(wanted: str) -> None:
    """The one log line naming the loop the run turns on (said once the run is set to trade, so
    a run refused before says nothing but its refusal)."""
    loop = running_loop()
    if wanted == "auto" and loop == "asyncio" and not uvloop_installed():
        log.info("event_loop", loop=loop, note=f"uvloop is not installed ({UVLOOP_PIN} is the faster loop)")
    else:
        log.info("event_loop", loop=loop)

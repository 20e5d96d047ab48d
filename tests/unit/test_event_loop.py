"""The live run's event loop (``[shell] event_loop``): uvloop when installed and asked for or left
to ``auto``, asyncio otherwise; uvloop named but not installed is refused in one line."""

from __future__ import annotations

import anyio
import pytest

from bot.live.event_loop import backend_options, chosen_loop, running_loop, uvloop_installed
from bot.ops.config import ConfigError, ShellConfig


def test_auto_takes_uvloop_when_it_is_installed_and_asyncio_when_not():
    assert ShellConfig().event_loop == "auto"
    assert chosen_loop("auto", installed=True) == "uvloop"
    assert chosen_loop("auto", installed=False) == "asyncio"


@pytest.mark.parametrize("installed", [True, False])
def test_asyncio_named_is_asyncio_whatever_is_installed(installed):
    assert chosen_loop("asyncio", installed=installed) == "asyncio"


def test_uvloop_named_but_not_installed_is_a_one_line_config_error():
    assert chosen_loop("uvloop", installed=True) == "uvloop"
    with pytest.raises(ConfigError) as info:
        chosen_loop("uvloop", installed=False)
    message = str(info.value)
    assert "\n" not in message
    assert 'shell.event_loop = "uvloop"' in message and "not installed" in message and "uvloop==" in message


@pytest.mark.parametrize("wanted", ["auto", "asyncio", "uvloop"])
def test_the_run_turns_on_the_loop_chosen(wanted):
    """``anyio.run`` given these options runs on that loop (the class of the running loop says)."""
    if wanted == "uvloop" and not uvloop_installed():
        pytest.skip("uvloop is not installed")

    async def loop_name() -> str:
        return running_loop()

    name = anyio.run(loop_name, backend="asyncio", backend_options=backend_options(wanted))
    uv = wanted == "uvloop" or (wanted == "auto" and uvloop_installed())
    assert name == ("uvloop" if uv else "asyncio")
    if uv:  # the name read from the running loop itself
        async def module() -> str:
            import asyncio

            return type(asyncio.get_running_loop()).__module__

        assert anyio.run(module, backend="asyncio", backend_options=backend_options(wanted)).startswith("uvloop")

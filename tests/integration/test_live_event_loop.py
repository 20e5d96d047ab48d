"""``bot run`` on the event loop ``[shell] event_loop`` names, against the local exchange over real
sockets: on uvloop (when installed) and on asyncio it quotes (orders accepted by the exchange),
says in its log which loop it turned on, and stops cleanly (exit 0, nothing left resting); a
loop the config cannot name is refused in one line (exit 2) before anything is sent."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from bench.chaos import bot_env
from bot.live.event_loop import uvloop_installed
from tests.integration.exchange_fixture import exchange  # noqa: F401 - the module's exchange
from tests.integration.test_live_restart import config_text

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def run_on(ex, tmp_path: Path, loop: str, duration: float = 4.0) -> subprocess.CompletedProcess:
    cond = httpx.get(ex.urls.clob + "/markets").json()["data"][0]["condition_id"]
    cfg = tmp_path / "bot.toml"
    cfg.write_text(config_text(ex, cond, tmp_path / "journal.sqlite") + f'\n[shell]\nevent_loop = "{loop}"\n')
    return subprocess.run([sys.executable, "-m", "bot.cli", "run", "--config", str(cfg), "--duration", str(duration)],
                          cwd=REPO, env=bot_env(ex.demo_account), capture_output=True, text=True, timeout=60)


def loops_logged(stderr: str) -> list[str]:
    out = []
    for line in stderr.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("event") == "event_loop":
            out.append(rec.get("loop"))
    return out


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_a_run_on_the_named_loop_quotes_and_stops_cleanly(exchange, tmp_path, loop):
    ex = exchange
    if loop == "uvloop" and not uvloop_installed():
        pytest.skip("uvloop is not installed")
    p = run_on(ex, tmp_path, loop)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Traceback" not in p.stdout + p.stderr
    assert loops_logged(p.stderr) == [loop], p.stderr[-2000:]
    accepted = re.search(r"orders accepted\D+(\d+)", p.stdout)
    assert accepted is not None and int(accepted.group(1)) > 0, p.stdout
    assert "open orders at the exchange: 0" in p.stdout, p.stdout


def test_a_loop_the_config_cannot_name_is_one_line_and_exit_2(exchange, tmp_path):
    ex = exchange
    before = len(ex.call(lambda: list(ex.exchange.state.engine.orders)))
    p = run_on(ex, tmp_path, "trio")
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert "shell.event_loop" in lines[0] and "trio" in lines[0], lines[0]
    assert len(ex.call(lambda: list(ex.exchange.state.engine.orders))) == before  # nothing was sent

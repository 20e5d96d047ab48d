"""Real services for tests (Redis, Prometheus, promtool) from Debian's packages.

Each is looked up on PATH, installed with ``apt-get`` when missing (once per session), and the
test that needs it is skipped with the reason only when it cannot be installed.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from bot.exchange.server import free_port

_TRIED: dict[str, str | None] = {}


def debian_tool(command: str, package: str) -> str:
    """The path of ``command``, installing Debian's ``package`` if needed; skips the test if
    neither works, saying why."""
    found = shutil.which(command) or (f"/usr/bin/{command}" if os.access(f"/usr/bin/{command}", os.X_OK) else None)
    if found:
        return found
    if package not in _TRIED:
        _TRIED[package] = _apt_install(package)
    found = shutil.which(command) or (f"/usr/bin/{command}" if os.access(f"/usr/bin/{command}", os.X_OK) else None)
    if not found:
        pytest.skip(f"{command} is not installed and Debian's {package} package could not be installed: "
                    f"{_TRIED[package] or 'it does not provide the command'}")
    return found


def _apt_install(package: str) -> str | None:
    if shutil.which("apt-get") is None:
        return "apt-get is not available"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for args in (["apt-get", "install", "-y", "-q", "--no-install-recommends", package],
                 ["apt-get", "update", "-q"],
                 ["apt-get", "install", "-y", "-q", "--no-install-recommends", package]):
        try:
            done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{' '.join(args[:2])}: {exc}"
        if args[1] == "install" and done.returncode == 0:
            return None
    return (done.stderr.strip().splitlines() or ["apt-get failed"])[-1][:200]



def wait_port(port: int, deadline_s: float = 15.0, proc: subprocess.Popen | None = None) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{proc.args[0]} exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port} after {deadline_s}s")


class RedisServer:
    """A throwaway ``redis-server`` on a free loopback port, without persistence."""

    def __init__(self, port: int | None = None) -> None:
        binary = debian_tool("redis-server", "redis-server")
        self.port = port or free_port()
        self.dir = tempfile.mkdtemp(prefix="redis-")
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.dir, "--daemonize", "no", "--protected-mode", "yes"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        wait_port(self.port, proc=self.proc)
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def redis_server():
    server = RedisServer()
    try:
        yield server
    finally:
        server.stop()


def promtool() -> str:
    return debian_tool("promtool", "prometheus")


def prometheus() -> str:
    return debian_tool("prometheus", "prometheus")


REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"

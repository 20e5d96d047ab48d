"""Debian's headless ``chromium``, driven over the DevTools protocol (a WebSocket), to open a page
and see what a user would: the page's state after its scripts ran, the console's errors and
uncaught exceptions, and a screenshot.

``chromium_path()`` finds the browser, installing Debian's package when it is missing, or gives the
reason it cannot (the caller skips with it). Everything waits on a condition with a deadline.

Also a command: ``python -m tests.integration.browser PAGE.html --screenshot OUT.png`` renders a
page and saves its screenshot (how the report's screenshot in ``docs/`` is made).
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-default-apps",
         "--disable-extensions", "--mute-audio", "--hide-scrollbars")


def chromium_path(install: bool = True) -> tuple[str | None, str]:
    """(path to chromium, "") or (None, why it is not there and could not be installed)."""
    found = shutil.which("chromium") or (CHROMIUM if os.path.exists(CHROMIUM) else None)
    if found or not install:
        return found, "" if found else "chromium is not installed"
    if shutil.which("apt-get") is None:
        return None, "chromium is not installed and apt-get is not available to install it"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    why = ""
    for cmd in (["apt-get", "install", "-y", "-q", "chromium"], ["apt-get", "update", "-q"],
                ["apt-get", "install", "-y", "-q", "chromium"]):
        try:
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"installing chromium failed: {exc}"
        if cmd[1] == "install" and r.returncode == 0:
            break
        if r.returncode != 0:
            why = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
    found = shutil.which("chromium") or (CHROMIUM if os.path.exists(CHROMIUM) else None)
    return found, "" if found else f"chromium is not installed and `apt-get install chromium` failed: {why}"


class PageResult:
    """What the browser saw of one page."""

    def __init__(self) -> None:
        self.errors: list[str] = []  # console errors, uncaught exceptions, failed loads
        self.value: Any = None  # the result of the check expression
        self.screenshot: bytes | None = None


class Browser:
    """One headless chromium with a fresh profile; ``open`` a page in it, then ``close``."""

    def __init__(self, path: str, *, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="report-chromium-")
        self._proc = subprocess.Popen(
            [path, *FLAGS, f"--user-data-dir={self._profile}", "--remote-debugging-port=0", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        port_file = Path(self._profile) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.is_file() and len(port_file.read_text().splitlines()) >= 2):
            if self._proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {self._proc.returncode} before it listened")
            if time.monotonic() > deadline:
                self.close()
                raise TimeoutError("chromium did not start its DevTools endpoint in time")
            time.sleep(0.05)
        port, ws_path = port_file.read_text().splitlines()[:2]
        from websockets.sync.client import connect

        self._ws = connect(f"ws://127.0.0.1:{port}{ws_path}", max_size=None, open_timeout=timeout).__enter__()
        self._ids = itertools.count(1)
        self._events: list[dict[str, Any]] = []

    def _call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        mid = next(self._ids)
        msg: dict[str, Any] = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self._ws.send(json.dumps(msg))
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer to {method}")
            m = json.loads(self._ws.recv(timeout=left))
            if m.get("id") == mid:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error'].get('message')}")
                return m.get("result", {})
            if "method" in m:
                self._events.append(m)

    def _wait_event(self, method: str, session: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not any(e["method"] == method and e.get("sessionId") == session for e in self._events):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {method} event")
            m = json.loads(self._ws.recv(timeout=left))
            if "method" in m:
                self._events.append(m)

    def open(self, url: str, check: str, *, width: int = 1400, screenshot: bool = False) -> PageResult:
        """Load ``url``, wait until the JavaScript expression ``check`` is truthy (its value is
        returned), collect every error the page logged, and take a full-page screenshot."""
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        s = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self._call(f"{domain}.enable", session=s)
        self._call("Emulation.setDeviceMetricsOverride",
                   {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session=s)
        self._events.clear()
        self._call("Page.navigate", {"url": url}, session=s)
        self._wait_event("Page.loadEventFired", s)
        result = PageResult()
        deadline = time.monotonic() + self.timeout
        while True:
            r = self._call("Runtime.evaluate", {"expression": check, "returnByValue": True, "awaitPromise": True},
                           session=s)
            if "exceptionDetails" in r:
                raise RuntimeError(f"check failed: {r['exceptionDetails'].get('text')}")
            result.value = r["result"].get("value")
            if result.value or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        if screenshot:
            h = self._call("Runtime.evaluate", {"expression": "document.documentElement.scrollHeight",
                                                "returnByValue": True}, session=s)["result"]["value"]
            self._call("Emulation.setDeviceMetricsOverride",
                       {"width": width, "height": int(h), "deviceScaleFactor": 1, "mobile": False}, session=s)
            import base64

            shot = self._call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=s)
            result.screenshot = base64.b64decode(shot["data"])
        self._call("Runtime.evaluate", {"expression": "0"}, session=s)  # drain events logged so far
        for e in self._events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                result.errors.append(f"exception: {d.get('exception', {}).get('description') or d.get('text')}")
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                result.errors.append("console.error: " + " ".join(str(a.get("value", a.get("description")))
                                                               for a in p.get("args", [])))
            elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                result.errors.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}".strip())
        self._call("Target.closeTarget", {"targetId": target})
        return result

    def close(self) -> None:
        ws = getattr(self, "_ws", None)
        if ws is not None:
            try:
                self._call("Browser.close")
            except Exception:
                pass
            ws.__exit__(None, None, None)
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=10)
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# An expression true once every figure listed by the report drew: per id, its plot element and
# at least one SVG layer exist.
FIGURES_DRAWN = """(() => {
  const ids = JSON.parse(document.getElementById('report-figures').textContent);
  const state = ids.map(id => {
    const el = document.getElementById(id);
    return {id, plot: !!(el && el.querySelector('.plot-container')), svg: el ? el.querySelectorAll('svg.main-svg').length : 0,
            data: !!(el && el.data && el.data.length)};
  });
  return state.every(s => s.plot && s.svg > 0 && s.data) ? state : null;
})()"""


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="render a report in headless chromium")
    ap.add_argument("page")
    ap.add_argument("--screenshot", required=True)
    ap.add_argument("--width", type=int, default=1400)
    a = ap.parse_args(argv)
    path, why = chromium_path()
    if path is None:
        print(why)
        return 2
    with Browser(path) as b:
        r = b.open(Path(a.page).resolve().as_uri(), FIGURES_DRAWN, width=a.width, screenshot=True)
    if r.errors or not r.value:
        print("\n".join(r.errors) or "not every figure drew")
        return 1
    Path(a.screenshot).write_bytes(r.screenshot or b"")
    print(f"{len(r.value)} figures drew; screenshot: {a.screenshot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

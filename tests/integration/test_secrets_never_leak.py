"""Secrets never leave their wrappers: the demo (live, its own key and credentials), a paper run
and a backtest (with a key, API credentials and a keystore passphrase in the environment) write
none of them to stdout, stderr, logs, journals, results or metrics."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest

from bot.exchange.config import ExchangeConfig, ServerFlowConfig
from bot.exchange.state import ExchangeState
from tests.integration.exchange_fixture import start_exchange
from tests.integration.test_paper import config_text
from tests.services import free_port

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample"
DEMO_SEED = 5



def env_secrets() -> dict[str, str]:
    """A made-up key and credentials, as an operator would export them."""
    root = hashlib.sha256(b"secrets-never-leak").hexdigest()
    return {
        "BOT_PRIVATE_KEY": "0x" + root,
        "BOT_API_KEY": "00000000-1111-2222-3333-444444444444",  # an identifier, not a secret
        "BOT_API_SECRET": "c2VjcmV0LXRoYXQtbXVzdC1uZXZlci1sZWFr",
        "BOT_API_PASSPHRASE": hashlib.sha256(b"passphrase").hexdigest(),
        "BOT_KEYSTORE_PASSPHRASE": "keystore words that must never leak",
    }


def forms(secret: str) -> set[bytes]:
    """What a leak of ``secret`` may look like: as is, without ``0x``, in either case."""
    bare = secret[2:] if secret[:2] in ("0x", "0X") else secret
    return {v.encode() for v in (secret, bare, bare.lower(), bare.upper())}


def run_scraping_metrics(cmd: list[str], env: dict, out: Path, port: int, timeout: float = 90.0) -> int:
    """Run ``cmd`` with its stdout and stderr in ``out``; while it runs, save its metrics pages."""
    with (out / "stdout.txt").open("wb") as so, (out / "stderr.txt").open("wb") as se:
        p = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=so, stderr=se)
        end = time.monotonic() + timeout
        scraped = 0
        try:
            while p.poll() is None and time.monotonic() < end:
                try:  # the last page seen is kept: it holds the most series
                    page = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2.0)
                except httpx.HTTPError:
                    page = None
                if page is not None and page.status_code == 200 and "bot_mode" in page.text:
                    (out / f"metrics-{scraped % 2}.txt").write_text(page.text)
                    scraped += 1
                time.sleep(0.3)
            assert p.poll() is not None, f"{cmd[3]} did not end within {timeout}s"
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert scraped, f"no metrics page was served by {cmd}"
    return p.returncode


def leaks(folder: Path, secrets: dict[str, str]) -> list[str]:
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if path.suffix == ".parquet":  # compressed: its rows are searched as text too
            data += json.dumps(pq.read_table(path).to_pylist(), default=str).encode()
        for name, value in secrets.items():
            if any(f in data for f in forms(value)):
                found.append(f"{name} in {path.relative_to(folder)}")
    return found


def test_no_secret_in_any_output_of_the_demo_a_paper_run_and_a_backtest(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOT_")}
    made_up = env_secrets()
    env.update(made_up)
    secrets = {k: v for k, v in made_up.items() if k != "BOT_API_KEY"}

    # the demo trades live against its own exchange, with the demo account's key and credentials
    demo_account = ExchangeState(ExchangeConfig(seed=DEMO_SEED, demo_credentials="deterministic")).demo
    secrets.update(demo_key=demo_account.private_key, demo_secret=demo_account.creds.secret,
                   demo_passphrase=demo_account.creds.passphrase)
    demo = tmp_path / "demo"
    demo.mkdir()
    port = free_port()
    rc = run_scraping_metrics(
        [sys.executable, "-m", "bot.live.demo", "--duration", "4", "--no-view", "--seed", str(DEMO_SEED),
         "--demo-credentials", "deterministic",
         "--metrics-port", str(port), "--journal", str(demo / "journal.sqlite")], env, demo, port)
    assert rc == 0, (demo / "stderr.txt").read_text()[-2000:]
    assert "orders sent" in (demo / "stdout.txt").read_text()

    # a paper run on the local exchange's books, logging at debug level
    paper = tmp_path / "paper"
    paper.mkdir()
    ex = start_exchange(flow=ServerFlowConfig(enabled=True, speed=30.0))
    try:
        cond = ex.exchange.state.catalog.markets[0].condition_id
        port = free_port()
        text = config_text(ex, cond, paper / "journal.sqlite").replace(
            "[metrics]\nenabled = false", f"[metrics]\nenabled = true\nport = {port}")
        cfg = paper / "bot.toml"
        cfg.write_text(text + '\n[log]\nlevel = "debug"\n')
        rc = run_scraping_metrics([sys.executable, "-m", "bot.cli", "run", "--paper", "--config", str(cfg),
                                   "--duration", "6"], env, paper, port)
    finally:
        ex.stop()
    assert rc == 0, (paper / "stderr.txt").read_text()[-2000:]
    assert (paper / "journal.paper.sqlite").exists()

    # a backtest of the shipped sample recording, writing its results folder
    back = tmp_path / "backtest"
    proc = subprocess.run([sys.executable, "-m", "bot.cli", "--log-level", "debug", "backtest", "--config",
                           "config/bot.example.toml", "--no-progress", "--data", str(SAMPLE), "--out",
                           str(back / "results")], cwd=REPO, env=env, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (back / "stdout.txt").write_bytes(proc.stdout)
    (back / "stderr.txt").write_bytes(proc.stderr)
    assert (back / "results" / "fills.parquet").exists()

    # the reports of the backtest and of the paper run
    for source, report in ((back / "results", back / "report.html"), (paper / "journal.paper.sqlite", paper / "report.html")):
        proc = subprocess.run([sys.executable, "-m", "bot.cli", "report", str(source), "--out", str(report)],
                              cwd=REPO, env=env, capture_output=True, timeout=120)
        assert proc.returncode == 0 and report.stat().st_size > 0, proc.stderr[-2000:]
        (report.parent / f"{report.stem}.out.txt").write_bytes(proc.stdout + proc.stderr)

    assert leaks(tmp_path, secrets) == []
    (tmp_path / "planted.txt").write_text(f"x{secrets['demo_key'][2:].upper()}x")  # the search does find one
    assert leaks(tmp_path, secrets) == ["demo_key in planted.txt"]

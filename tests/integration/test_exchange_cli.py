"""``bot exchange``: documented options, flags onto the config, and a ready-to-use demo account."""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import msgspec
import pytest

from bot.exchange import cli
from bot.exchange.config import ExchangeConfig
from bot.exchange.server import start_in_thread
from bot.venue.auth import Credentials
from bot.venue.clob import ClobClient
from bot.venue.transport import Transport

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def test_help_documents_every_option():
    parser = cli.build_parser()
    options = [a for a in parser._actions if a.option_strings and a.dest != "help"]
    assert len(options) >= 30
    undocumented = [a.option_strings[0] for a in options if not a.help or a.help == argparse.SUPPRESS]
    assert undocumented == []
    out = subprocess.run([sys.executable, "-m", "bot.exchange.cli", "--help"], cwd=REPO, capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 0
    for a in options:
        assert a.option_strings[0] in out.stdout
    assert "config/exchange.toml" in out.stdout


def test_flags_map_onto_the_config():
    args = cli.build_parser().parse_args([
        "--config", str(REPO / "config" / "exchange.toml"), "--clob-port", "0", "--catalog-port", "0",
        "--data-port", "0", "--flow", "off", "--flow-markets", "2", "--limits-scale", "0.5", "--limits-queue", "0",
        "--latency-ms", "1", "2", "--error-rate", "0.1", "--error-route", "/book", "--rate-limit-burst", "5", "1",
        "--restart-every", "30", "2", "3", "--ws-drop-every", "9", "--user-event-delay-ms", "4",
        "--user-event-duplicate-rate", "0.2", "--user-event-reorder-rate", "0.3", "--settlement-fail-rate", "0.4",
        "--version-mismatch-rate", "0.5", "--fault-seed", "11", "--mined-after", "0.1", "--confirmed-after", "0.2",
        "--heartbeat-timeout", "3", "--neg-risk-events", "0",
    ])
    c = cli.build_config(args)
    assert isinstance(c, ExchangeConfig) and c.clob_port == 0 and c.markets == 8  # the file's value is kept
    assert (c.flow.enabled, c.flow.markets, c.limits_scale, c.limits_queue_s) == (False, 2, 0.5, 0.0)
    f = c.faults
    assert (f.latency_ms_min, f.latency_ms_max, f.error_rate, f.error_routes) == (1, 2, 0.1, ("/book",))
    assert (f.rate_limit_burst_every_s, f.rate_limit_burst_s) == (5, 1)
    assert (f.restart_every_s, f.restart_s, f.post_only_s, f.ws_drop_every_s) == (30, 2, 3, 9)
    assert (f.user_event_delay_ms, f.user_event_duplicate_rate, f.user_event_reorder_rate) == (4, 0.2, 0.3)
    assert (f.settlement_fail_rate, f.version_mismatch_rate, f.seed) == (0.4, 0.5, 11)
    assert (c.settlement.mined_after_s, c.settlement.confirmed_after_s, c.heartbeat_timeout_s) == (0.1, 0.2, 3)
    assert c.neg_risk_events == 0
    assert cli.build_config(cli.build_parser().parse_args([])).flow.enabled is True  # flow on by default


@pytest.mark.parametrize("argv", [
    ["--single-port", "--port", "-5"],
    ["--demo-usdc", "lots"],
    ["--config", "/nonexistent.toml"],
])
def test_bad_option_exits_2(capsys, argv):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("bot exchange: ") and "Traceback" not in err and len(err.splitlines()) == 1


def _banner(lines: list[str]) -> dict[str, str]:
    fields = {}
    for line in lines:
        key, _, value = line.partition(" ")
        fields[key] = value.strip()
    return fields


@pytest.mark.anyio
async def test_run_prints_urls_and_a_funded_demo_key():
    proc = subprocess.Popen([sys.executable, "-m", "bot.exchange.cli", "--flow", "off"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines: list[str] = []
        deadline = time.monotonic() + 30
        while not any(line.startswith("passphrase ") for line in lines):
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.poll() else lines
            line = proc.stdout.readline()
            if line:
                lines.append(line.rstrip("\n"))
        f = _banner(lines)
        for surface in ("catalog", "clob", "data"):
            assert f[surface].startswith("http://127.0.0.1:")
        assert f["ws"].startswith("ws://127.0.0.1:")
        assert httpx.get(f["clob"] + "/ok").text.strip('"') == "OK"
        assert isinstance(httpx.get(f["catalog"] + "/markets").json(), list)
        address = next(line for line in lines if line.startswith("demo address")).split()[-1]
        creds = Credentials(f["apiKey"], f["secret"], f["passphrase"])
        async with Transport(f["clob"]) as t:
            clob = ClobClient(t, creds=creds, address=address)
            assert int((await clob.balance_allowance("COLLATERAL")).balance) == 100_000 * 1_000_000
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()


def test_run_in_process_stops_on_hook(capsys):
    stop = threading.Event()
    args = cli.build_parser().parse_args(["--flow", "off"])
    result: list[int] = []
    th = threading.Thread(target=lambda: result.append(cli.run(args, stop=stop)))
    th.start()
    try:
        deadline = time.monotonic() + 20
        out = ""
        while "apiKey" not in out:
            assert time.monotonic() < deadline and th.is_alive()
            time.sleep(0.05)
            out += capsys.readouterr().out
    finally:
        stop.set()
        th.join(timeout=10)
    assert result == [0]
    clob = _banner(out.splitlines())["clob"]
    with pytest.raises(httpx.ConnectError):
        httpx.get(clob + "/ok")  # stopped: the port is closed


def test_exchange_of_no_market_starts_and_lists_none():
    config = cli.build_config(cli.build_parser().parse_args(["--markets", "0", "--neg-risk-events", "0", "--flow",
                                                              "off"]))
    with start_in_thread(msgspec.structs.replace(config, clob_port=0, catalog_port=0, data_port=0)) as ex:
        assert httpx.get(ex.urls.catalog + "/markets").json() == []
        assert httpx.get(ex.urls.clob + "/markets").json()["data"] == []

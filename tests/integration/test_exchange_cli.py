"""``bot exchange``: documented options, flags onto the config, and a ready-to-use demo account."""

from __future__ import annotations

import argparse
import socket
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
from bot.exchange.server import Urls, start_in_thread
from bot.ops.config import VenueConfig
from bot.venue.auth import Credentials
from bot.venue.clob import ClobClient
from bot.venue.eip712 import Wallet
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
    """``catalog``/``clob``/``data``/``ws`` URLs and the ``BOT_...`` values of the export lines."""
    fields = {}
    for line in lines:
        if line.startswith("export "):
            key, _, value = line.removeprefix("export ").partition("=")
        else:
            key, _, value = line.partition(" ")
        fields[key] = value.strip()
    return fields


def _banner_lines(proc: subprocess.Popen) -> list[str]:
    """The lines ``bot exchange`` printed up to its last export line (it is listening by then)."""
    lines: list[str] = []
    deadline = time.monotonic() + 30
    while not any(line.startswith("export BOT_API_PASSPHRASE=") for line in lines):
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.poll() else lines
        line = proc.stdout.readline()
        if line:
            lines.append(line.rstrip("\n"))
    return lines


@pytest.mark.anyio
async def test_run_prints_urls_and_a_funded_demo_key():
    proc = subprocess.Popen([sys.executable, "-m", "bot.exchange.cli", "--flow", "off", "--free-ports"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = _banner_lines(proc)
        f = _banner(lines)
        for surface in ("catalog", "clob", "data"):
            assert f[surface].startswith("http://127.0.0.1:")
        assert f["ws"].startswith("ws://127.0.0.1:")
        assert httpx.get(f["clob"] + "/ok").text.strip('"') == "OK"
        assert isinstance(httpx.get(f["catalog"] + "/markets").json(), list)
        address = next(line for line in lines if line.startswith("demo address")).split()[2]
        assert Wallet(f["BOT_PRIVATE_KEY"]).address == address
        creds = Credentials(f["BOT_API_KEY"], f["BOT_API_SECRET"], f["BOT_API_PASSPHRASE"])
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
    args = cli.build_parser().parse_args(["--flow", "off", "--free-ports"])
    result: list[int] = []
    th = threading.Thread(target=lambda: result.append(cli.run(args, stop=stop)))
    th.start()
    try:
        deadline = time.monotonic() + 20
        out = ""
        while "export BOT_API_PASSPHRASE=" not in out:
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


# -- ports: where the bot looks, unless told otherwise ---------------------------------------------


def _ports(c: ExchangeConfig) -> tuple[int, int, int]:
    return c.clob_port, c.catalog_port, c.data_port


def test_default_ports_are_where_the_bots_default_config_looks(tmp_path):
    venue = VenueConfig()
    looked_at = tuple(int(url.rsplit(":", 1)[1]) for url in (venue.clob_url, venue.catalog_url, venue.data_url))
    assert int(venue.ws_url.rsplit(":", 1)[1]) == looked_at[0]  # the CLOB port serves the WebSockets
    parse = cli.build_parser().parse_args
    assert _ports(cli.build_config(parse([]))) == looked_at
    assert _ports(cli.build_config(parse(["--free-ports"]))) == (0, 0, 0)
    assert _ports(cli.build_config(parse(["--free-ports", "--clob-port", "9100"]))) == (9100, 0, 0)
    only_seed = tmp_path / "seed.toml"
    only_seed.write_text("seed = 4\n")
    assert _ports(cli.build_config(parse(["--config", str(only_seed)]))) == looked_at  # file without ports
    ports = tmp_path / "ports.toml"
    ports.write_text("clob_port = 9200\n")
    assert _ports(cli.build_config(parse(["--config", str(ports)]))) == (9200, *looked_at[1:])
    assert _ports(cli.build_config(parse(["--config", str(ports), "--clob-port", "9300"]))) == (9300, *looked_at[1:])
    assert _ports(cli.build_config(parse(["--config", str(ports), "--free-ports"]))) == (0, 0, 0)


def test_banner_gives_venue_lines_only_for_other_ports():
    default = VenueConfig()
    same = Urls(default.catalog_url, default.clob_url, default.data_url, default.ws_url)
    assert cli._venue_lines(same) == []
    other = Urls("http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3", "ws://127.0.0.1:2")
    lines = cli._venue_lines(other)
    assert '#   clob_url = "http://127.0.0.1:2"' in lines and '#   ws_url = "ws://127.0.0.1:2"' in lines


def test_busy_port_is_named_with_what_to_do(capsys):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        stop = threading.Event()
        stop.set()  # were the port not busy, the exchange would stop at once (and the test fail)
        args = cli.build_parser().parse_args(["--free-ports", "--clob-port", str(port), "--flow", "off"])
        assert cli.run(args, stop=stop) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"port {port} (clob) on 127.0.0.1 is in use" in err and "--free-ports" in err and "--clob-port" in err


def test_exchange_of_no_market_starts_and_lists_none():
    config = cli.build_config(cli.build_parser().parse_args(["--markets", "0", "--neg-risk-events", "0", "--flow",
                                                              "off"]))
    with start_in_thread(msgspec.structs.replace(config, clob_port=0, catalog_port=0, data_port=0)) as ex:
        assert httpx.get(ex.urls.catalog + "/markets").json() == []
        assert httpx.get(ex.urls.clob + "/markets").json()["data"] == []


def test_shared_venue_flags_map_onto_the_config():
    args = cli.build_parser().parse_args([
        "--demo-credentials", "deterministic", "--ws-connections-per-client", "8", "--header-timeout", "2.5",
        "--max-header-bytes", "4096", "--max-headers", "20", "--waiting-per-client", "30", "--waiting-total", "90",
        "--keep-alive", "7", "--log-requests", "--connections-per-client", "40", "--ws-bytes-per-client", "65536",
    ])
    c = cli.build_config(args)
    assert (c.demo_credentials, c.ws_connections_per_client, c.header_timeout_s) == ("deterministic", 8, 2.5)
    assert (c.max_header_bytes, c.max_headers, c.waiting_per_client, c.waiting_total) == (4096, 20, 30, 90)
    assert (c.keep_alive_s, c.log_requests) == (7, True)
    assert (c.connections_per_client, c.ws_input_bytes_per_client_s) == (40, 65536)
    defaults = cli.build_config(cli.build_parser().parse_args([]))
    assert defaults.demo_credentials == "random" and defaults.log_requests is False
    assert cli.main(["--header-timeout", "0"]) == 2 and cli.main(["--demo-credentials", "seeded"]) == 2


def test_the_env_file_holds_the_banners_export_lines_owner_only_and_goes_with_the_exchange(tmp_path):
    import signal
    import stat

    env = tmp_path / "exchange.env"
    # started as from a terminal: Ctrl-C (SIGINT) at its default, whatever this test process was
    # left with (an ignored SIGINT is inherited across exec, and the exchange would never see it)
    proc = subprocess.Popen([sys.executable, "-X", "faulthandler", "-m", "bot.exchange.cli", "--flow", "off",
                             "--free-ports", "--env-file", str(env)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        lines = _banner_lines(proc)
        assert env.read_text().splitlines() == [line for line in lines if line.startswith("export BOT_")]
        assert stat.S_IMODE(env.stat().st_mode) == 0o600
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=20)
        except subprocess.TimeoutExpired:  # say where it hangs: its signal mask and every thread's stack
            status = Path(f"/proc/{proc.pid}/status").read_text()
            masks = [line for line in status.splitlines() if line.startswith(("SigBlk", "SigIgn", "SigCgt"))]
            proc.send_signal(signal.SIGABRT)  # faulthandler prints the threads' tracebacks
            pytest.fail(f"bot exchange did not stop within 20 s of SIGINT ({masks}):\n"
                        f"{proc.communicate(timeout=20)[1][-6000:]}")
        assert code == 0
        assert not env.exists()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()

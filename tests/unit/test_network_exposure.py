"""What listens, listens on this machine only unless asked: the local exchange refuses a host
beyond loopback without ``expose``, metrics default to loopback, and no client turns TLS
verification off."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from bot.exchange import cli as exchange_cli
from bot.exchange.config import ExchangeConfig, is_loopback
from bot.ops.config import MetricsConfig
from bot.ops.metrics import Metrics
from tests.unit.test_keystore import logging_kept  # noqa: F401

BOT = Path(__file__).resolve().parents[2] / "bot"


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST."])
def test_loopback_hosts_need_no_flag(host):
    assert is_loopback(host) and ExchangeConfig(host=host).host == host


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "10.0.0.1", "192.168.1.2", "example.org", "localhost.example"])
def test_a_host_beyond_loopback_needs_expose(host):
    assert not is_loopback(host)
    with pytest.raises(ValueError, match="expose"):
        ExchangeConfig(host=host)
    assert ExchangeConfig(host=host, expose=True).host == host


def test_bot_exchange_refuses_to_listen_beyond_loopback_without_the_flag(capsys, logging_kept):
    assert exchange_cli.main(["--host", "0.0.0.0", "--free-ports"]) == 2
    err = capsys.readouterr().err
    assert "--expose" in err and len(err.strip().splitlines()) == 1


def test_metrics_listen_on_loopback_by_default():
    assert is_loopback(MetricsConfig().host)
    assert is_loopback(inspect.signature(Metrics.serve).parameters["host"].default)


def test_no_client_turns_tls_verification_off():
    off = re.compile(r"verify\s*=\s*False|CERT_NONE|check_hostname\s*=\s*False|_create_unverified_context")
    found = [f"{p.relative_to(BOT)}:{n}" for p in sorted(BOT.rglob("*.py"))
             for n, line in enumerate(p.read_text().splitlines(), 1) if off.search(line)]
    assert found == []

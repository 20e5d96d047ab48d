"""The one place the commands reach the venue (``bot.commands.venue``): each client made on the
configured venue with the credentials its access needs, read before anything is sent, and closed
when the command's block of it ends."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import httpx
import pytest

from bot.commands.session import Session
from bot.commands.venue import PUBLIC, SIGNER, TRADER, Venue, on_venue

COMMANDS = Path(__file__).resolve().parents[2] / "bot" / "commands"
KEY = "0x0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
ADDRESS = "0xFCAd0B19bB29D4674531d6f115237E16AfCE377c"
TOKEN = "42"
BOOK = {"market": "0xabc", "asset_id": TOKEN, "timestamp": "1", "hash": "h", "bids": [], "asks": [],
        "tick_size": "0.01", "min_order_size": "5", "neg_risk": False}


class Recorded(httpx.MockTransport):
    """A mock network that counts the requests it answers and whether it was closed."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.closed = False
        super().__init__(self._answer)

    def _answer(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(200, json=BOOK)

    async def aclose(self) -> None:
        self.closed = True


@pytest.fixture(autouse=True)
def no_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the built-in defaults: no config/bot.toml of the checkout
    for name in ("BOT_PRIVATE_KEY", "BOT_API_KEY", "BOT_API_SECRET", "BOT_API_PASSPHRASE"):
        monkeypatch.delenv(name, raising=False)


def session(network: httpx.AsyncBaseTransport) -> Session:
    return Session(argparse.Namespace(config_file=None), network)


def test_a_client_is_closed_when_its_block_ends_and_the_url_is_kept_for_errors():
    network = Recorded()
    s = session(network)

    async def read(venue: Venue):
        async with venue.clob() as clob:
            book = await clob.book(TOKEN)
            assert not network.closed
        return book

    book = on_venue(s, read)
    assert book.asset_id == TOKEN and len(network.requests) == 1
    assert network.closed
    assert s.last_url == s.config.venue.clob_url
    assert str(network.requests[0].url).startswith(s.config.venue.clob_url.rstrip("/"))


def test_each_access_reads_only_the_secrets_it_needs(monkeypatch):
    s = session(Recorded())
    assert (Venue(s, PUBLIC).wallet, Venue(s, PUBLIC).creds) == (None, None)  # no key at all: fine
    monkeypatch.setenv("BOT_PRIVATE_KEY", KEY)
    s = session(Recorded())
    signer = Venue(s, SIGNER)
    assert signer.wallet.address == ADDRESS and signer.creds is None


def test_a_missing_credential_is_said_before_anything_is_sent(monkeypatch):
    monkeypatch.setenv("BOT_PRIVATE_KEY", KEY)
    network = Recorded()

    async def never(venue: Venue):  # pragma: no cover - must not run
        raise AssertionError("ran without credentials")

    with pytest.raises(ValueError, match="BOT_API"):
        on_venue(session(network), never, TRADER)
    assert network.requests == []


def test_an_unknown_access_is_refused():
    with pytest.raises(ValueError, match="access"):
        Venue(session(Recorded()), "admin")


def test_no_command_makes_a_venue_client_itself():
    """Only ``bot/commands/venue.py`` constructs the venue's clients and transports."""
    made = re.compile(r"\b(ClobClient|CatalogClient|AccountClient|Transport)\(")
    offenders = [p.name for p in COMMANDS.glob("*.py") if p.name != "venue.py" and made.search(p.read_text())]
    assert offenders == []

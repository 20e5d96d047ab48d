"""The venue as the commands reach it: the one place a command's clients are made.

Invariant: every venue client a command uses is made here, on the configured venue (its URLs,
route limits, timeouts, chain and auth settings), with the credentials its access needs, read
before anything is sent (a missing key is said first); each client is closed when the command's
block of it ends, and the session keeps the URL opened last for the error line of an unreachable
host.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from bot.commands.session import Session

PUBLIC = "public"  # market data: no key
SIGNER = "signer"  # the configured key signs (L1: API key creation)
TRADER = "trader"  # the key and the API credentials (L2: the account's orders)
ACCESS = (PUBLIC, SIGNER, TRADER)

T = TypeVar("T")


class Venue:
    """The configured venue's clients for one command, each opened by ``async with``."""

    def __init__(self, session: Session, access: str = PUBLIC) -> None:
        if access not in ACCESS:
            raise ValueError(f"access {access!r}: expected one of {', '.join(ACCESS)}")
        self.session = session
        self.wallet = session.secrets.wallet() if access in (SIGNER, TRADER) else None
        self.creds = session.secrets.credentials() if access == TRADER else None

    @asynccontextmanager
    async def clob(self) -> AsyncIterator[Any]:
        """The CLOB client, signing with the key and credentials of this access."""
        from bot.venue.auth import AuthConfig
        from bot.venue.clob import ClobClient

        venue = self.session.config.venue
        async with self._transport("clob") as t:
            yield ClobClient(t, creds=self.creds, address=self.wallet.address if self.wallet is not None else None,
                             wallet=self.wallet, chain_id=venue.chain_id,
                             auth=AuthConfig(timestamp_unit=venue.timestamp_unit))

    @asynccontextmanager
    async def catalog(self) -> AsyncIterator[Any]:
        """The catalog client (markets, events, tags)."""
        from bot.venue.catalog import CatalogClient

        async with self._transport("catalog") as t:
            yield CatalogClient(t)

    @asynccontextmanager
    async def account(self) -> AsyncIterator[Any]:
        """The account-data client (a wallet's positions)."""
        from bot.venue.account import AccountClient

        async with self._transport("account") as t:
            yield AccountClient(t)

    def _transport(self, surface: str) -> Any:
        """A pooled HTTP transport to ``surface`` (``clob``, ``catalog`` or ``account``)."""
        from bot.venue.limits import RouteLimiter
        from bot.venue.transport import Transport

        venue = self.session.config.venue
        url = {"clob": venue.clob_url, "catalog": venue.catalog_url, "account": venue.data_url}[surface]
        self.session.last_url = url
        return Transport(url, limiter=RouteLimiter(venue.limits, surface), transport=self.session.http_transport,
                         config=venue.timeouts)


def on_venue(session: Session, call: Callable[[Venue], Awaitable[T]], access: str = PUBLIC) -> T:
    """``await call(venue)`` run to its end, on the configured venue with ``access``."""
    import anyio

    return anyio.run(call, Venue(session, access))

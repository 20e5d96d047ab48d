"""REST book fetches for the feed's fallback: ``POST /books`` in batches.

Invariant: one request per batch of at most ``batch_size`` tokens, batches sent one after the other
(the caller's budget, :meth:`bot.core.feed.Feed.due_polls`, decides how many run per tick); a
failed batch is reported, never retried here, and does not stop the other batches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import structlog

log = structlog.get_logger("bot.venue.poller")


class PollResult(msgspec.Struct, frozen=True):
    """Snapshots fetched (venue ``OrderBook`` models) and the batches that failed, with why."""

    books: list[Any]
    failed: list[tuple[tuple[str, ...], str]]


async def poll_books(client: Any, token_ids: Sequence[str], *, batch_size: int = 50) -> PollResult:
    """Fetch the books of ``token_ids`` with ``client.books(batch)`` (the CLOB client's
    ``POST /books``), ``batch_size`` tokens per request."""
    books: list[Any] = []
    failed: list[tuple[tuple[str, ...], str]] = []
    ids = list(dict.fromkeys(token_ids))
    for i in range(0, len(ids), batch_size):
        batch = ids[i:i + batch_size]
        try:
            books.extend(await client.books(batch))
        except Exception as exc:  # noqa: BLE001 - venue errors are typed; each batch stands alone
            reason = f"{type(exc).__name__}: {exc}"
            log.warning("rest_books_failed", tokens=len(batch), error=reason[:300])
            failed.append((tuple(batch), reason))
    return PollResult(books=books, failed=failed)

"""The account's holdings at the venue for a live or paper run: ``GET /positions`` read whole,
the tracked tokens' opening mids (``POST /books``), and the portfolio seeded from them.

Invariant: only the tracked markets' tokens count, as share micro-units; fills already booked
(restored from a journal) are part of the venue's figure and never counted twice.
"""

from __future__ import annotations

from typing import Any

import structlog

from bot.core.markets import MarketIndex
from bot.engine.engine import Engine
from bot.live.markets import units_of
from bot.live.venue import Venue
from bot.venue.errors import VenueError
from bot.venue.units import parse_units

log = structlog.get_logger("bot.live")


def venue_positions(items: list[Any], markets: MarketIndex) -> dict[str, int]:
    """``GET /positions`` items as token -> share units for the tracked markets (an item names
    its token by id, or as ``condition:outcome_index``)."""
    out: dict[str, int] = {}
    for p in items:
        token = p.asset
        cond, sep, idx = token.partition(":")
        if sep and idx.isdigit():
            try:
                token = markets.by_condition(cond).tokens[int(idx)]
            except (KeyError, IndexError):
                continue
        if markets.get(token) is None:
            continue
        out[token] = units_of(p.size, 0)
    return out


async def held_positions(venue: Venue) -> list[Any]:
    """Every position of the account's holder, all pages to the first empty one (a venue that
    serves fewer than asked per page is read to the end too), however small (the venue's listing
    hides balances under one share unless asked)."""
    return [p async for p in venue.account.iter_positions(venue.holder, size_threshold=0)]


async def opening_mids(engine: Engine, venue: Venue) -> dict[str, int]:
    """Each tracked token's mid now, ``(best bid + best ask) // 2`` where both exist, read with
    ``POST /books`` a batch of the feed's ``batch_size`` tokens at a time (the most the venue names
    in one request); a ``VenueError`` is the caller's."""
    tokens = [t for m in engine.markets for t in m.tokens]
    batch = engine.feed.config.batch_size
    mids: dict[str, int] = {}
    for i in range(0, len(tokens), batch):
        for b in await venue.clob.books(tokens[i:i + batch]):
            bids = [parse_units(lv.price) for lv in b.bids or ()]
            asks = [parse_units(lv.price) for lv in b.asks or ()]
            if bids and asks:
                mids[b.asset_id] = (max(bids) + min(asks)) // 2
    return mids


async def seed_positions(engine: Engine, venue: Venue) -> dict[str, int]:
    """Start the portfolio from the venue's holdings of the tracked tokens, valued at the
    current mid (so PnL counts only what this run trades). Fills already in the portfolio
    (restored from a journal) are part of the venue's figure and are not counted twice. These
    mids become the engine's ``opening_marks``: at ``start()``, before anything trades, the day's
    PnL is valued at them (a fresh day starts, and is journaled, there; a day start restored from
    the journal goes on unchanged) and a day already past its loss limit halts."""
    try:
        items = await held_positions(venue)
        mids = await opening_mids(engine, venue)
    except VenueError as exc:
        log.warning("seed_positions_failed", error=str(exc)[:200])
        return {}
    held = venue_positions(items, engine.markets)
    for token, size in held.items():
        base = size - engine.portfolio.size(token)
        if base:
            engine.portfolio.seed(token, base, mids.get(token, 0))
    engine.opening_marks = mids  # start() values the day and judges the loss limits here
    return held

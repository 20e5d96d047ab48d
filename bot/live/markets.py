"""The markets a live or paper run trades, as the venue lists them: tokens, tick, minimum size,
end date, each market's fee rule (``GET /clob-markets/{condition_id}``) and reward programme.

Invariant: every amount is read into integer micro-units; a market whose fee rule is missing or
unusable books no fee (logged), one whose rewards cannot be read has none.
"""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import structlog

from bot.core.markets import MarketInfo, RewardTerms
from bot.venue.clob import ClobClient
from bot.venue.errors import NotFound
from bot.venue.fees import NO_FEE, FeeError, FeeSchedule, schedule_from_wire
from bot.venue.models.timestamps import epoch_ms
from bot.venue.units import UnitsError, parse_units

log = structlog.get_logger("bot.live")

MARKET_LOOKUPS = 8  # GET /clob-markets requests in flight at once while markets load


async def load_markets(clob: ClobClient, condition_ids: tuple[str, ...] = (), limit: int | None = None,
                       neg_risk: bool | None = None) -> list[MarketInfo]:
    """Markets to trade: the given condition ids, else every open market taking orders (the first
    ``limit`` of them when given; only neg-risk ones, or only others, when ``neg_risk`` says)."""
    out: list[MarketInfo] = []
    async for m in clob.iter_markets():
        if condition_ids and m.condition_id not in condition_ids:
            continue
        if not condition_ids and (m.closed or m.accepting_orders is False or (
                neg_risk is not None and bool(m.neg_risk) != neg_risk)):
            continue
        if len(m.tokens) != 2:
            continue
        tick = units_of(m.minimum_tick_size, 10_000)
        min_size = units_of(m.minimum_order_size, 5_000_000)
        out.append(MarketInfo(
            condition_id=m.condition_id, tokens=(m.tokens[0].token_id, m.tokens[1].token_id),
            tick=tick, min_size=min_size, neg_risk=bool(m.neg_risk),
            event_id=m.neg_risk_market_id or "", outcomes=(m.tokens[0].outcome, m.tokens[1].outcome),
            end_ts=_end_ts(m.end_date_iso), rewards=reward_terms(m.rewards),
        ))
        if not condition_ids and limit is not None and len(out) >= limit:
            break
    # each market's fee rule: ``fd`` of GET /clob-markets/{condition_id}, a few asked at once (each
    # request still passes the client's rate limiter), so start-up does not wait them out in turn
    fds: dict[str, Any] = {}
    slots = anyio.Semaphore(MARKET_LOOKUPS)

    async def fee_of(condition_id: str) -> None:
        async with slots:
            try:
                fds[condition_id] = (await clob.clob_market(condition_id)).fee
            except NotFound:
                log.warning("fee_schedule_missing", market=condition_id)
                fds[condition_id] = None

    async with anyio.create_task_group() as tg:
        for info in out:
            tg.start_soon(fee_of, info.condition_id)
    return [msgspec.structs.replace(info, fee=fee_schedule(fds[info.condition_id])) for info in out]


def fee_schedule(fd: Any) -> FeeSchedule:
    """A market's ``fd`` (``r``, ``e``, ``to``, rebate ``rb``) as the fee rule its fills are booked
    with; a market without one, or with values the rule cannot use, books no fee (logged)."""
    if fd is None:
        return NO_FEE
    try:
        return schedule_from_wire(fd.rate, fd.exponent, fd.rebate, fd.taker_only)
    except FeeError as exc:
        log.warning("fee_schedule_unusable", error=str(exc))
        return NO_FEE


def units_of(value: Any, default: int) -> int:
    """A venue amount (text, number or ``None``: ``default``) as micro-units."""
    if value is None:
        return default
    if isinstance(value, float):
        value = repr(value)
    return parse_units(str(value))


def _end_ts(text: Any) -> int:
    """A market's end date as unix seconds; 0 when absent or unreadable (it only informs quoting)."""
    try:
        ms = epoch_ms(text)
    except ValueError:
        return 0
    return ms // 1000 if ms and ms > 0 else 0


def reward_terms(rewards: Any) -> RewardTerms | None:
    """The venue's ``rewards`` object (interface 2.13: daily rates per asset, ``min_size`` in shares,
    ``max_spread`` in cents) as micro-units; ``None`` for a market without a programme."""
    if rewards is None:
        return None
    try:
        rate = sum(units_of(r.rewards_daily_rate, 0) for r in rewards.rates or ())
        terms = RewardTerms(daily_rate=rate, min_size=units_of(rewards.min_size, 0),
                            max_spread=units_of(rewards.max_spread, 0) // 100)  # cents -> price units
    except (UnitsError, ValueError):
        return None
    return terms if terms.active else None


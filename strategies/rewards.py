"""Rewards-aware quoting: an option of the market makers that moves quotes into a market's rewarded
spread, at the rewarded size, when the reward they are expected to earn there outweighs the adverse
selection they are expected to suffer there.

The venue's liquidity rewards (interface 2.13: ``rewards`` with a daily rate, a minimum size and a
maximum spread) are shared among a market's makers by score. An order of at least ``min_size``
shares resting ``s`` from the mid, with ``s < v = max_spread``, scores ``((v - s) / v)^2 * size``;
a maker's score on a market is ``Q = max(min(Q_bid, Q_ask), max(Q_bid, Q_ask) / c)`` while the mid
is within [0.10, 0.90] (one-sided quoting earns a third, ``c = 3``) and ``min(Q_bid, Q_ask)``
outside it. The reward rate is the daily rate times our share of the market's total score.

Expected adverse selection of a quote is its fill rate ``A * exp(-k * delta)`` (takers per second
reaching its distance ``delta``, the market-making models' intensity) times its size times
``markout``, the price move expected against a filled share. ``adjust`` compares the candidates
(base quotes moved to the widest price that still scores, or a few ticks further in, sizes raised
to the minimum where the inventory allows) with the base quotes on ``reward - adverse selection``
per second and keeps the best; the rate of the quotes it returns is what ``reward_rate`` says, which the strategies
add up over time as the reward they estimate they earned. Where the market pays makers a rebate
(``MarketInfo.fee``), the rebate the quotes' expected fills earn (``rebate_rate``) counts with the reward.

Floats only for these rates (statistics); prices stay integer grid prices.
"""

from __future__ import annotations

import math
from typing import Iterable, Iterator

import msgspec

from bot.core.markets import MarketInfo, RewardTerms
from bot.core.vocabulary import LOT, NO_FEE, UNIT, FeeSchedule, Price, Shares, Usdc, maker_rebate
from strategies.market_maker import BookView, ceil_to_grid, floor_to_grid
from strategies.pairs import Level, YesQuotes

DAY_S = 86_400.0
EDGE_LOW, EDGE_HIGH = 100_000, 900_000  # one-sided quoting scores only while the mid is within these


class RewardsParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The rewards option. Terms set here (non-zero) replace the market's own; ``markout`` is the
    expected loss per filled share (price units); ``a``, ``k`` the takers' intensity for a strategy
    that does not estimate one."""

    enabled: bool = False
    daily_rate: Usdc = 0  # USDC per day; 0: the market's
    min_size: Shares = 0  # shares; 0: the market's
    max_spread: Price = 0  # a price distance from the mid; 0: the market's
    markout: float = 0.005
    a: float = 1.0
    k: float = 150.0
    one_sided_divisor: float = 3.0

    def __post_init__(self) -> None:
        if min(self.daily_rate, self.min_size, self.max_spread) < 0:
            raise ValueError("rewards daily_rate, min_size and max_spread must not be negative")
        if self.max_spread >= UNIT:
            raise ValueError("rewards max_spread must be below one price unit")
        for name in ("markout", "a", "k"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"rewards {name} must be a finite number >= 0")
        if not (math.isfinite(self.one_sided_divisor) and self.one_sided_divisor >= 1):
            raise ValueError("rewards one_sided_divisor must be >= 1")

    def terms(self, market: MarketInfo) -> RewardTerms | None:
        """The terms in force on ``market``: the market's, with what is set here replacing them."""
        own = market.rewards or RewardTerms()
        terms = RewardTerms(daily_rate=self.daily_rate or own.daily_rate, min_size=self.min_size or own.min_size,
                            max_spread=self.max_spread or own.max_spread)
        return terms if terms.active else None


CLEAR_TICKS = 2  # a moved quote stays this many ticks from the other side's touch (at least one tick clear)


def level_score(distance: int, size: int, terms: RewardTerms) -> float:
    """One order's score: ``((v - s) / v)^2 * size`` (shares) within the spread at the size, else 0."""
    v = terms.max_spread
    if size < terms.min_size or size <= 0 or not 0 <= distance < v:
        return 0.0
    return ((v - distance) / v) ** 2 * (size / UNIT)


def market_score(bids: Iterable[tuple[int, int]], asks: Iterable[tuple[int, int]], mid: int,
                 terms: RewardTerms, divisor: float = 3.0) -> float:
    """A maker's score from its bids and asks (YES price, size): two-sided quoting counts fully,
    one-sided a ``1 / divisor`` share, and nothing near the ends of the price range."""
    q_bid = sum(level_score(mid - p, z, terms) for p, z in bids)
    q_ask = sum(level_score(p - mid, z, terms) for p, z in asks)
    if EDGE_LOW <= mid <= EDGE_HIGH:
        return max(min(q_bid, q_ask), max(q_bid, q_ask) / divisor)
    return min(q_bid, q_ask)


def reward_rate(ours: YesQuotes, others_bids: Iterable[tuple[int, int]], others_asks: Iterable[tuple[int, int]],
                mid: int, terms: RewardTerms, divisor: float = 3.0) -> float:
    """USDC per second that ``ours`` is expected to earn against the others' resting liquidity."""
    q = market_score(((lv.price, lv.size) for lv in ours.bids), ((lv.price, lv.size) for lv in ours.asks),
                     mid, terms, divisor)
    if q <= 0:
        return 0.0
    rest = market_score(others_bids, others_asks, mid, terms, divisor)
    return terms.daily_rate / UNIT / DAY_S * q / (q + rest)


def fill_rates(quotes: YesQuotes, mid: int, a: float, k: float) -> Iterator[tuple[Level, float]]:
    """Each level of ``quotes`` with its expected fills per second, ``a * exp(-k * delta)`` at its
    distance ``delta`` from ``mid`` (price units; a level through the mid counts as at it)."""
    for lv in quotes.bids:
        yield lv, a * math.exp(-k * (max(0, mid - lv.price) / UNIT))
    for lv in quotes.asks:
        yield lv, a * math.exp(-k * (max(0, lv.price - mid) / UNIT))


def adverse_rate(quotes: YesQuotes, mid: int, a: float, k: float, markout: float) -> float:
    """USDC per second expected to be lost to informed flow: fill rate times size times markout."""
    return sum(rate * (lv.size / UNIT) * markout for lv, rate in fill_rates(quotes, mid, a, k))


def rebate_rate(quotes: YesQuotes, mid: int, a: float, k: float, fee: FeeSchedule) -> float:
    """USDC per second the quotes' expected fills earn in maker rebates: fill rate times the
    rebate on the quote's size at its price (``bot.venue.fees.maker_rebate``)."""
    if not fee.rebate:
        return 0.0
    return sum(rate * maker_rebate(lv.price, lv.size, fee) / UNIT for lv, rate in fill_rates(quotes, mid, a, k))


def widest_scoring(mid: int, terms: RewardTerms, tick: int, bid: bool) -> int:
    """The grid price farthest from ``mid`` that still scores (strictly within ``max_spread``)."""
    if bid:
        return floor_to_grid(mid - terms.max_spread, tick) + tick
    return ceil_to_grid(mid + terms.max_spread, tick) - tick


def candidate(base: YesQuotes, touch: BookView, terms: RewardTerms, room: tuple[int, int], inward: int = 0) -> YesQuotes:
    """``base`` moved to score: quotes wider than the rewarded spread come in to its edge and then
    ``inward`` ticks more (never wider than they were, and never within one tick of the other
    side's touch, our own orders included: a post-only quote there crosses as soon as that side
    moves a tick towards it, before the quote arrives, and one at our own order locks it), sizes
    under the minimum go up to it while ``room`` (bid, ask) allows."""
    mid = (touch.best_bid + touch.best_ask) // 2  # type: ignore[operator]
    tick = touch.tick
    want = -(-terms.min_size // LOT) * LOT
    # the other side's touch with our own orders in: a quote moved in never locks one of ours
    # that stays (a band keeps an order while it is inside the band)
    bid_touch = touch.gross_bid if touch.gross_bid is not None else touch.best_bid
    ask_touch = touch.gross_ask if touch.gross_ask is not None else touch.best_ask
    out: list[tuple[Level, ...]] = []
    for levels, bid, space in ((base.bids, True, room[0]), (base.asks, False, room[1])):
        edge = widest_scoring(mid, terms, tick, bid) + (inward * tick if bid else -inward * tick)
        if bid and ask_touch is not None:
            edge = min(edge, ask_touch - CLEAR_TICKS * tick)
        if not bid and bid_touch is not None:
            edge = max(edge, bid_touch + CLEAR_TICKS * tick)
        moved: list[Level] = []
        for lv in levels:
            price = max(lv.price, edge) if bid else min(lv.price, edge)
            size = lv.size
            if size < want <= space:
                size = want
            space -= size
            if tick <= price <= UNIT - tick:
                moved.append(Level(price, size))
        out.append(tuple(moved))
    quotes = YesQuotes(out[0], out[1])
    if quotes.bids and quotes.asks and quotes.bids[0].price >= quotes.asks[0].price:
        return base
    return quotes


def adjust(base: YesQuotes, touch: BookView, terms: RewardTerms | None, params: RewardsParams,
           room: tuple[int, int], others: tuple[list[tuple[int, int]], list[tuple[int, int]]],
           intensity: tuple[float, float], fee: FeeSchedule = NO_FEE) -> tuple[YesQuotes, float]:
    """The quotes to send and their expected reward rate (USDC per second): of the base quotes and
    the candidates that score (``candidate`` at each step inwards across the rewarded spread), the
    one with the highest ``reward + maker rebates - adverse selection``.
    ``others``: the book's resting liquidity that is not ours (bids, asks); ``room``: the sizes
    the inventory limit leaves on each side; ``intensity``: ``(A, k)``."""
    if terms is None or touch.stale or touch.best_bid is None or touch.best_ask is None or not base:
        return base, 0.0
    mid = (touch.best_bid + touch.best_ask) // 2
    a, k = intensity

    def net(q: YesQuotes) -> tuple[float, float]:
        r = reward_rate(q, others[0], others[1], mid, terms, params.one_sided_divisor)
        return r + rebate_rate(q, mid, a, k, fee) - adverse_rate(q, mid, a, k, params.markout), r

    best, (best_net, best_rate) = base, net(base)
    for inward in range(max(1, terms.max_spread // touch.tick)):  # from the edge of the spread inwards
        cand = candidate(base, touch, terms, room, inward)
        if cand != best:
            cand_net, cand_rate = net(cand)
            if cand_net > best_net:
                best, best_net, best_rate = cand, cand_net, cand_rate
    return best, best_rate


def others_levels(levels: list[tuple[int, int]], ours: Iterable[Level]) -> list[tuple[int, int]]:
    """A side of the book without our own resting sizes (the venue's book includes our orders)."""
    mine: dict[int, int] = {}
    for lv in ours:
        mine[lv.price] = mine.get(lv.price, 0) + lv.size
    return [(p, z - mine.get(p, 0)) for p, z in levels if z - mine.get(p, 0) > 0]

"""Positions from an account's own fills: size, average price and realized PnL per token.

Invariant: ``cost`` is the USDC units paid for the ``size`` held (exact integers); a sale removes
cost pro rata (floored) and realizes ``proceeds - removed cost``. Tokens that came from outside
trades enter at a stated cost: airdrops at 0, splits at 0.5 per token (a pair costs 1 USDC), and
merges leave at 0.5 per token. FAILED trades are not fills.
"""

from __future__ import annotations

import msgspec

from bot.venue.enums import Side
from bot.venue.units import UNIT


class AccountPosition(msgspec.Struct, frozen=True, gc=False):
    token: str
    market: str
    outcome: str
    size: int
    avg_price: int  # cost * UNIT // size, 0 when flat
    cost: int
    realized_pnl: int
    total_bought: int  # share units bought over the account's history


class PositionFill(msgspec.Struct, frozen=True, gc=False):
    """One change of holding: ``cash`` is USDC paid (BUY) or received (SELL), after fees."""

    token: str
    side: Side
    size: int
    cash: int


def positions_from_fills(
    fills: list[PositionFill], market_of: dict[str, tuple[str, str]]
) -> list[AccountPosition]:
    """Fold fills (oldest first) into one position per token; ``market_of``: token -> (market,
    outcome)."""
    state: dict[str, list[int]] = {}  # token -> [size, cost, realized, bought]
    for f in fills:
        s = state.setdefault(f.token, [0, 0, 0, 0])
        if f.side is Side.BUY:
            s[0] += f.size
            s[1] += f.cash
            s[3] += f.size
        else:
            held = s[0]
            sold = min(f.size, held)
            removed = s[1] * sold // held if held else 0
            s[0] = held - sold
            s[1] -= removed
            s[2] += f.cash - removed
    out = []
    for token, (size, cost, realized, bought) in state.items():
        market, outcome = market_of.get(token, ("", ""))
        avg = cost * UNIT // size if size else 0
        out.append(AccountPosition(token, market, outcome, size, avg, cost, realized, bought))
    return out

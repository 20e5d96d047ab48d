"""The domain's words that strategies speak: sides, order types, trade statuses, micro-units,
the size lot (and ``lot_floor``, what an order can sell of a 6-decimal holding), the most orders
one request sends (``MAX_BATCH``: a set's legs at most), the fee rule, and the annotations of
parameters a config writes in shares, USDC and prices (``Shares``, ``OrderSize``, ``Usdc``, ``Price``).

Strategies import these from here, never from ``bot.venue``: the core owns the vocabulary the
layers above it share, and the venue's spelling of it stays behind the core. One definition each
(they live with the venue's rules, this module names them for the layers above).
"""

from __future__ import annotations

from bot.venue.enums import OrderType, Side, TradeStatus
from bot.venue.fees import BPS, NO_FEE, FeeSchedule, fee_worth, maker_rebate, taker_fee
from bot.venue.units import LOT, MAX_BATCH, UNIT, format_units, lot_floor, parse_units
from bot.core.quantities import OrderSize, Price, Shares, Usdc

__all__ = ["BPS", "LOT", "MAX_BATCH", "NO_FEE", "UNIT", "FeeSchedule", "OrderSize", "OrderType", "Price", "Shares", "Side", "TradeStatus",
           "Usdc", "fee_worth", "format_units", "lot_floor", "maker_rebate", "parse_units", "taker_fee"]

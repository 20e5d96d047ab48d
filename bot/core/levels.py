"""A ``price_change`` whose levels are already integer micro-units.

Replays of recorded books yield this instead of the venue's ``PriceChangeEvent`` when they read a
recording's derived cache (``bot.backtest.cache``): the wire's decimal strings were parsed once,
when the cache was built, so books apply the levels without parsing them again.

Invariants:

- it means exactly what the ``price_change`` it was made from means: ``Books.apply_event`` builds
  the same books from either (levels, best prices, timestamps, and the hash each book ends with);
- it is tagged ``price_change`` and reads like one (``market``, ``timestamp``, ``price_changes``),
  so code written for the venue's event consumes it unchanged; ``tokens`` lists the tokens it
  changes without building the level objects;
- ``levels`` packs four signed 64-bit integers (native byte order) per level change, in the
  wire's order: the token's index in ``tokens``, 1 for a bid (``BUY``) or 0 for an ask, the price
  and the new total size (0 removes the level), both in micro-units; ``hashes[i]`` is the last
  level hash the frame carried for ``tokens[i]`` (``""`` when it carried none). Bytes and tuples
  of strings keep a cached chunk of these events cheap to decode and invisible to the cyclic GC.
- the books and the simulated venue read ``levels`` through one reader,
  ``bot.core.book.level_cells``, which checks every level before handing any out.
"""

from __future__ import annotations

import struct

import msgspec

from bot.venue.models.ws import LevelChange
from bot.venue.units import format_units

FIELDS_PER_LEVEL = 4  # token index, is_bid, price, size
LEVEL_BYTES = 8 * FIELDS_PER_LEVEL
_PACK = struct.Struct("=4q")


def pack_levels(levels: list[tuple[int, int, int, int]]) -> bytes:
    """``(token index, is_bid, price, size)`` per level change, packed for ``PriceLevels.levels``."""
    return b"".join(_PACK.pack(*lv) for lv in levels)


class PriceLevels(msgspec.Struct, gc=False, frozen=True, tag_field="event_type", tag="price_change"):
    """Level changes of one ``price_change`` frame, in micro-units (see the module invariants)."""

    market: str
    timestamp_ms: int
    tokens: tuple[str, ...]
    levels: bytes
    hashes: tuple[str, ...]

    @property
    def timestamp(self) -> str:
        """The venue timestamp as the wire spells it (epoch milliseconds)."""
        return str(self.timestamp_ms)

    def unpacked(self) -> list[tuple[int, int, int, int]]:
        """``(token index, is_bid, price, size)`` of each level change."""
        return list(_PACK.iter_unpack(self.levels))

    @property
    def price_changes(self) -> list[LevelChange]:
        """The level changes as the venue's ``LevelChange`` objects (built on each call). A
        token's hash rides on its last level, so applying them leaves each book with that hash."""
        tokens, hashes = self.tokens, self.hashes
        levels = self.unpacked()
        last = {lv[0]: i for i, lv in enumerate(levels)}
        return [
            LevelChange(asset_id=tokens[slot], price=format_units(price), side="BUY" if is_bid else "SELL",
                        size=format_units(size), hash=(hashes[slot] or None) if last[slot] == i else None)
            for i, (slot, is_bid, price, size) in enumerate(levels)
        ]

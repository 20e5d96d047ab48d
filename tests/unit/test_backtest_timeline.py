"""The backtest's timeline: when the venue met an event (its exchange time, never after it was
received), read from whichever timestamp the event carries."""

from __future__ import annotations

from types import SimpleNamespace

from bot.backtest.timeline import exchange_time
from bot.core.levels import PriceLevels
from bot.venue.models.ws import LastTradePriceEvent


def test_the_exchange_time_is_the_event_stamp_capped_at_its_receipt() -> None:
    levels = PriceLevels("0xm", 1_700_000_000_250, ("Y",), b"", ("",))
    assert exchange_time(levels, 1_700_000_001.0) == 1_700_000_000.25
    assert exchange_time(levels, 1_699_999_999.0) == 1_699_999_999.0  # a stamp after receipt: receipt
    assert exchange_time(PriceLevels("0xm", 0, ("Y",), b"", ("",)), 5.0) == 5.0  # no stamp
    trade = LastTradePriceEvent(asset_id="Y", market="0xm", price="0.5", side="BUY", size="1",
                                timestamp="1700000000500")
    for _ in range(2):  # the second time through the class's remembered shape
        assert exchange_time(trade, 1_700_000_001.0) == 1_700_000_000.5
    assert exchange_time(SimpleNamespace(timestamp="oops"), 7.0) == 7.0


def test_any_object_carrying_a_millisecond_stamp_is_read_by_it() -> None:
    # objects of one class, only some of which carry the field: each is read as it is
    assert exchange_time(SimpleNamespace(timestamp_ms=2_000, timestamp="9000"), 10.0) == 2.0
    assert exchange_time(SimpleNamespace(timestamp="3000"), 10.0) == 3.0
    assert exchange_time(SimpleNamespace(timestamp_ms=4_000), 10.0) == 4.0

"""A ``/data/trades`` page as the live venue sends it books exactly, and one record it cannot book
never stops the rest.

The fixture (``fixtures/data_trades_offgrid_page.json``) carries V2 records whose legs are priced
off the 6-decimal grid (``"0.7210000476613491"``: 8.199139 USDC for 11.371898 shares), with
6-decimal sizes, ``fee_rate_bps: ""`` on the legs and epoch-second match times: a maker fill of
ours, one of ours whose price cannot be read (in the middle), a taker fill of ours beside two
other makers (one of them unreadable), and a maker fill of ours beside another maker.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

from bot.core.events import Fill
from bot.execution.orders import OwnOrder
from bot.execution.reconciler import Reconciler, ReconcilerConfig
from bot.execution.protocol import TradeBooked, TradeUnbooked
from bot.portfolio.positions import Portfolio
from bot.venue.enums import Side, TradeStatus
from bot.venue.models import Page, Trade, decode

U = 1_000_000
PAGE = Path(__file__).parent / "fixtures" / "data_trades_offgrid_page.json"
OWNER = "6f2b1c9a-3d4e-4f5a-8b6c-7d8e9f0a1b2c"
YES = "71321045679252212594626385532706912750332728571942532289631379312455583992563"
NO = "52114319501245915516055106046884209969926127482827954674443846427813813222426"
A = "0x" + "a1" * 32  # maker BUY YES, off the grid
B = "0x" + "b2" * 32  # maker BUY YES, a price that cannot be read
C = "0x" + "c3" * 32  # taker SELL YES, off the grid
D = "0x" + "0a" * 32  # maker BUY NO, off the grid
TRADE_A, TRADE_B, TRADE_C, TRADE_D = (
    "5d1a7c3e-0b4f-4a8e-9f61-2c0e7b9d4a01", "8b2e4f60-71c3-4d95-a0e8-3f1d2c4b5a02",
    "c47a9e15-2d3b-4c6f-8e1a-5b9d0f2e6c03", "f0e1d2c3-b4a5-4968-8776-655443322104",
)


def ours() -> Reconciler:
    rec = Reconciler(ReconcilerConfig(owner=OWNER))
    rec.on_places_sent([
        OwnOrder(A, YES, Side.BUY, 721_000, 20 * U, signed={}),
        OwnOrder(B, YES, Side.BUY, 720_000, 10 * U, signed={}),
        OwnOrder(C, YES, Side.SELL, 310_000, 3 * U, signed={}),
        OwnOrder(D, NO, Side.BUY, 350_000, 600 * U, signed={}),
    ], 1.0)
    return rec


def page_items() -> list[Trade]:
    return decode(PAGE.read_bytes(), Page[Trade]).data


def cash(price: str, size: str) -> int:
    """The settled micro-USDC the leg's price stands for: price x size, to the nearest unit."""
    return round(Fraction(price) * Fraction(size) * U)


def test_fixture_is_what_the_live_venue_sends() -> None:
    raw = json.loads(PAGE.read_bytes())["data"]
    legs = [m for t in raw for m in t["maker_orders"]]
    assert {m["fee_rate_bps"] for m in legs} == {""}
    assert all(t["match_time"].isdigit() for t in raw)
    prices = [t["price"] for t in raw] + [m["price"] for m in legs]
    assert sum(len(p.split(".")[1]) == 16 for p in prices) >= 5
    assert all(len(m["matched_amount"].split(".")[-1]) in (1, 2, 6) for m in legs)
    # the off-grid prices are ratios of whole micro-units, printed as binary floats
    assert float(Fraction(8_199_139, 11_371_898)) == float("0.7210000476613491")
    assert float(Fraction(733_333, 2_365_591)) == float("0.3099999112272578")
    assert float(Fraction(202_811_519, 579_461_479)) == float("0.3500000023297493")


def test_offgrid_page_books_exactly_and_the_bad_record_is_kept() -> None:
    rec = ours()
    out = rec.on_trades_page(page_items(), 2.0, cursor="MA==", next_cursor="NA==")
    fills = {f.trade_id: f for f in out if isinstance(f, Fill)}
    assert set(fills) == {TRADE_A, TRADE_C, TRADE_D}  # B is not booked, and did not stop C and D
    a, c, d = fills[TRADE_A], fills[TRADE_C], fills[TRADE_D]
    assert (a.order_id, a.side, a.size, a.price, a.is_maker) == (A, Side.BUY, 11_371_898, 721_000, True)
    assert a.notional_e12 == cash("0.7210000476613491", "11.371898") * U == 8_199_139 * U
    assert (c.order_id, c.side, c.size, c.price, c.is_maker) == (C, Side.SELL, 2_365_591, 310_000, False)
    assert c.notional_e12 == 733_333 * U
    assert (d.order_id, d.side, d.size, d.price, d.notional_e12) == (D, Side.BUY, 579_461_479, 350_000, 202_811_519 * U)
    assert c.status is TradeStatus.MINED and a.status is d.status is TradeStatus.CONFIRMED
    assert a.ts == 1767225600.0

    pf = Portfolio()
    for f in (a, c, d):
        assert pf.apply(f)
    yes, no = pf.position(YES), pf.position(NO)
    assert yes.size == 11_371_898 - 2_365_591 == 9_006_307
    assert no.size == 579_461_479
    assert yes.cash_e12 == (733_333 - 8_199_139) * U  # the settled amounts, to the micro-unit
    assert no.cash_e12 == -202_811_519 * U
    assert pf.cash == 733_333 - 8_199_139 - 202_811_519
    removed = 8_199_139 * U * 2_365_591 // 11_371_898  # the sold shares' part of the cost
    assert yes.realized_e12 == 733_333 * U - removed
    assert yes.cost_e12 == 8_199_139 * U - removed
    assert no.avg_price == 202_811_519 * U // 579_461_479 == 350_000

    # the unreadable leg of ours: told once, its token stops quoting, the read resumes before it
    (told,) = [x for x in out if isinstance(x, TradeUnbooked)]
    assert told.trade_id == TRADE_B and told.tokens == (YES,) and "0xb2b2" in told.reason
    assert rec.blocked_tokens() == {YES}
    assert rec.trades_cursor == "MA=="
    again = rec.on_trades_page(page_items(), 3.0, cursor="MA==", next_cursor="NA==")
    assert not [x for x in again if isinstance(x, (Fill, TradeUnbooked))]  # nothing twice
    assert rec.blocked_tokens() == {YES}


def test_the_bad_record_books_once_the_venue_sends_it_readable() -> None:
    rec = ours()
    rec.on_trades_page(page_items(), 2.0, cursor="MA==", next_cursor="NA==")
    raw = json.loads(PAGE.read_bytes())
    raw["data"][1]["maker_orders"][0]["price"] = "0.72"
    fixed = decode(json.dumps(raw).encode(), Page[Trade]).data
    out = rec.on_trades_page(fixed, 3.0, cursor="MA==", next_cursor="NA==")
    (fill,) = [f for f in out if isinstance(f, Fill)]
    assert (fill.trade_id, fill.order_id, fill.size, fill.price, fill.notional_e12) == (TRADE_B, B, 4 * U, 720_000, None)
    assert [x.trade_id for x in out if isinstance(x, TradeBooked)] == [TRADE_B]
    assert rec.blocked_tokens() == set()


def test_an_unreadable_record_in_the_middle_does_not_stop_the_page() -> None:
    raw = json.loads(PAGE.read_bytes())
    raw["data"][1]["status"] = "TRADE_STATUS_SETTLING"  # a status this bot does not know
    items = decode(json.dumps(raw).encode(), Page[Trade]).data
    rec = ours()
    out = rec.on_trades_page(items, 2.0, cursor="MA==", next_cursor="NA==")
    assert {f.trade_id for f in out if isinstance(f, Fill)} == {TRADE_A, TRADE_C, TRADE_D}
    (told,) = [x for x in out if isinstance(x, TradeUnbooked)]
    assert told.trade_id == TRADE_B and "SETTLING" in told.reason
    assert told.tokens == (YES,)  # the leg of ours it names (an order we know)
    assert TRADE_B in rec.unbooked and rec.trades_cursor == "MA=="


def test_other_makers_unreadable_legs_are_no_concern_of_ours() -> None:
    raw = json.loads(PAGE.read_bytes())
    raw["data"] = [raw["data"][2]]  # our taker fill beside an unreadable maker leg of another key
    rec = ours()
    out = rec.on_trades_page(decode(json.dumps(raw).encode(), Page[Trade]).data, 2.0, cursor="MA==",
                             next_cursor="LTE=")
    assert [f.order_id for f in out if isinstance(f, Fill)] == [C]
    assert rec.unbooked == {} and rec.blocked_tokens() == set()

"""Amount math (venue.md 3): vectors, refusals, book walk, fees, exchange-side checks."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction

import pytest

from bot.venue.amounts import (
    MARKET_TAKER_STEP,
    AmountError,
    MarketAccuracyError,
    NoMatch,
    check_signed_amounts,
    decimal_units,
    exact_price_units,
    fee_adjusted_buy_amount,
    fee_per_usdc,
    levels_from_wire,
    limit_amounts,
    market_amounts,
    market_price,
    parse_tick,
)
from bot.venue.enums import OrderType, Side


@pytest.fixture(scope="module")
def upstream(data_dir):
    return json.loads((data_dir / "vectors" / "polymarket_signing_vectors.json").read_text())


def limit_from_text(side, price, size, tick):
    t = parse_tick(tick)
    return limit_amounts(Side(side), exact_price_units(price, t), decimal_units(size, "size", 2), t)


def market_from_text(side, amount, price, tick):
    t = parse_tick(tick)
    return market_amounts(Side(side), decimal_units(amount, "amount", 2), decimal_units(price, "price"), t)


def test_spec_examples():
    assert limit_amounts(Side.BUY, 560_000, 21_370_000, 10_000) == (11_967_200, 21_370_000)
    assert market_amounts(Side.BUY, 100_000_000, 550_000, 10_000) == (100_000_000, 181_818_100)


def test_float_quirks_expect_exact_decimal(signing_vectors):
    quirks = signing_vectors["amount_quirks_v2_float_vs_decimal"]
    assert len(quirks) == 4
    for q in quirks:
        if q["kind"] == "limit":
            got = limit_from_text(q["side"], q["price"], q["size"], q["tick_size"])
        else:
            got = market_from_text(q["side"], q["amount"], q["price"], q["tick_size"])
        exp = q["exact_decimal"]
        assert got == (int(exp["makerAmount"]), int(exp["takerAmount"])), q["id"]
        wrong = q["py_clob_client_v2_float"]
        assert got != (int(wrong["makerAmount"]), int(wrong["takerAmount"]))


def test_upstream_order_amounts(upstream):
    section = upstream["order_amounts_v1"]
    checked = 0
    for vec in section["create_order_vectors"]:
        if "expected" not in vec or vec["options"]["tick_size"] not in ("0.1", "0.01", "0.001", "0.0001"):
            continue
        args, tick = vec["order_args"], vec["options"]["tick_size"]
        maker, taker = vec["expected"]["makerAmount"], vec["expected"]["takerAmount"]
        if vec["call"] == "create_order":
            got = limit_from_text(args["side"], args["price"], args["size"], tick)
        else:
            got = market_from_text(args["side"], args["amount"], args["price"], tick)
            # the official client keeps the tick's amount decimals (5 on 0.001, 6 on 0.0001), which
            # production refuses on a market order: ours floors the taker leg to 4 decimals
            taker = taker // MARKET_TAKER_STEP * MARKET_TAKER_STEP
        assert got == (maker, taker), vec["line"]
        checked += 1
    assert checked >= 50


def test_upstream_market_price_walk(upstream):
    vectors = upstream["order_amounts_v1"]["market_price_vectors"]
    assert len(vectors) == 20
    for vec in vectors:
        side = Side.BUY if vec["fn"] == "calculate_buy_market_price" else Side.SELL
        amount, otype = vec["args"]
        price = market_price(
            side, levels_from_wire(vec["positions"]), decimal_units(amount, "amount"),
            OrderType(otype.split(".")[1]),
        )
        assert price == decimal_units(vec["expected"], "price"), vec["line"]


def test_market_price_thin_book():
    asks = [(500_000, 100_000_000), (400_000, 100_000_000)]  # best (0.4) last
    with pytest.raises(NoMatch, match="no match"):
        market_price(Side.BUY, asks, 100_000_000, OrderType.FOK)
    assert market_price(Side.BUY, asks, 100_000_000, OrderType.FAK) == 500_000
    with pytest.raises(NoMatch):
        market_price(Side.SELL, [], 1, OrderType.FAK)


@pytest.mark.parametrize("tick", ["0.005", "0.0025", "0.02", "1", "abc"])
def test_unsupported_ticks_refused(tick):
    with pytest.raises(AmountError, match="tick"):
        parse_tick(tick)


def test_supported_ticks():
    assert [parse_tick(t) for t in ("0.1", "0.01", "0.001", "0.0001")] == [100_000, 10_000, 1_000, 100]
    assert parse_tick(0.01) == 10_000
    with pytest.raises(AmountError, match="unsupported tick"):
        limit_amounts(Side.BUY, 500_000, 1_000_000, 5_000)


@pytest.mark.parametrize(
    "price,size,match",
    [
        (555_000, 10_000_000, "not a multiple"),
        (0, 10_000_000, "outside"),
        (1_000_000, 10_000_000, "outside"),
        (990_000 + 10_000, 10_000_000, "outside"),
        (500_000, 9_999, "below 0.01"),
    ],
)
def test_limit_refusals(price, size, match):
    with pytest.raises(AmountError, match=match):
        limit_amounts(Side.BUY, price, size, 10_000)


def test_limit_bounds_and_min_size():
    assert limit_amounts(Side.SELL, 10_000, 1_000_000, 10_000) == (1_000_000, 10_000)
    assert limit_amounts(Side.BUY, 990_000, 1_000_000, 10_000) == (990_000, 1_000_000)
    with pytest.raises(AmountError, match="minimum"):
        limit_amounts(Side.BUY, 500_000, 4_990_000, 10_000, min_size=5_000_000)
    assert limit_amounts(Side.BUY, 500_000, 5_009_999, 10_000, min_size=5_000_000) == (2_500_000, 5_000_000)


def test_decimal_edges():
    assert exact_price_units("0.56", 10_000) == 560_000
    with pytest.raises(AmountError, match="multiple"):
        exact_price_units("0.565", 10_000)
    with pytest.raises(AmountError, match="not a number"):
        exact_price_units("x", 10_000)
    assert decimal_units("12.8205", "size", 2) == 12_820_000
    assert decimal_units(Decimal("0.0000009"), "size") == 0
    with pytest.raises(AmountError, match="negative"):
        decimal_units("-1", "size")


def test_market_refusals_and_flooring():
    # price floors to the tick; amounts floor to 0.01
    assert market_amounts(Side.SELL, 37_509_999, 459_999, 10_000) == (37_500_000, 16_875_000)
    with pytest.raises(AmountError, match="below 0.01"):
        market_amounts(Side.BUY, 9_999, 500_000, 10_000)
    with pytest.raises(AmountError, match="outside"):
        market_amounts(Side.BUY, 1_000_000, 9_999, 10_000)


def test_fee_vectors_and_adjustment(upstream):
    fees = upstream["fees_v2_formula_vectors"]
    for vec in fees["platform_fee"]:
        price = decimal_units(vec["price"], "price")
        amount = Fraction(Decimal(str(vec["contracts"])) * Decimal(str(vec["price"])))
        fee = amount * fee_per_usdc(price, str(vec["fee_rate"]), vec["fee_exponent"])
        assert fee == Fraction(Decimal(str(vec["expected"]))), vec
    for vec in fees["builder_fee"]:
        amount = Fraction(Decimal(str(vec["contracts"])) * Decimal(str(vec["price"])))
        fee = amount * fee_per_usdc(decimal_units(vec["price"], "price"), "0", 2, str(vec["builder_taker_fee_rate"]))
        assert fee == Fraction(Decimal(str(vec["expected"])))
    comb = fees["combined"]
    per = fee_per_usdc(500_000, str(comb["fee_rate"]), comb["fee_exponent"], str(comb["builder_taker_fee_rate"]))
    assert 50 * per == Fraction(Decimal(str(comb["expected_total"])))
    # enough balance: unchanged
    assert fee_adjusted_buy_amount(50_000_000, 100_000_000, 500_000, "0.25", 2) == 50_000_000
    # tight balance: amount + fees fits, and one more unit would not
    bal = 50_000_000
    adj = fee_adjusted_buy_amount(50_000_000, bal, 500_000, "0.25", 2, "0.01")
    per = Decimal("0.25") * Decimal("0.0625") / Decimal("0.5") + Decimal("0.01")
    assert adj * (1 + per) <= bal < (adj + 1) * (1 + per)
    assert adj == 48_019_207  # 50 / 1.04125, floored
    with pytest.raises(AmountError):
        fee_adjusted_buy_amount(1, 1, 0, "0.25", 2)
    # fractional exponent goes through high-precision decimals and still fits
    adj = fee_adjusted_buy_amount(10_000_000, 10_000_000, 300_000, "0.2", "1.5")
    assert adj < 10_000_000


def test_exchange_checks():
    assert check_signed_amounts(Side.BUY, 11_967_200, 21_370_000, OrderType.GTC, 10_000).price == 560_000
    assert check_signed_amounts(Side.SELL, 33_330_000, 9_999_000, OrderType.GTD, 100_000).price == 300_000
    with pytest.raises(AmountError, match="multiple of 10000"):
        check_signed_amounts(Side.BUY, 5_000_000, 10_000_001, OrderType.GTC, 10_000)
    with pytest.raises(AmountError, match="tick grid"):
        check_signed_amounts(Side.BUY, 5_000_001, 10_000_000, OrderType.GTC, 10_000)
    with pytest.raises(AmountError, match="valid price"):
        check_signed_amounts(Side.BUY, 5_500_000, 10_000_000, OrderType.GTC, 100_000)
    with pytest.raises(AmountError, match="valid price"):
        check_signed_amounts(Side.BUY, 10_000_000, 10_000_000, OrderType.GTC, 10_000)
    with pytest.raises(AmountError, match="positive"):
        check_signed_amounts(Side.BUY, 0, 10_000_000, OrderType.GTC, 10_000)
    # market: maker leg multiple of 10_000, worst price bound
    buy = check_signed_amounts(Side.BUY, 100_000_000, 181_818_100, OrderType.FOK, 10_000)
    assert buy.price == 550_000  # 100 / 181.8181 = 0.55000002..: asks <= 0.55 are acceptable
    sell = check_signed_amounts(Side.SELL, 37_500_000, 16_875_000, OrderType.FAK, 10_000)
    assert sell.price == 450_000
    refusal = ("invalid amounts, the market buy orders maker amount supports a max accuracy of 2 decimals, "
               "taker amount a max of 4 decimals")
    for maker, taker in ((100_000_001, 181_818_100), (100_000_000, 181_818_180), (100_000_000, 181_818_101)):
        with pytest.raises(MarketAccuracyError) as err:
            check_signed_amounts(Side.BUY, maker, taker, OrderType.FOK, 1_000)
        assert str(err.value) == refusal



@pytest.mark.parametrize("value", ["9" * 30, "1e40", Decimal("1e28")])
def test_an_amount_out_of_range_is_an_amount_error(value):
    with pytest.raises(AmountError, match="out of range"):
        decimal_units(value, "size", 2)


# -- what the legs and refusals say exactly ------------------------------------------------------

from bot.venue.units import MAX_WHOLE_DIGITS  # noqa: E402

U = 1_000_000


def test_market_legs_are_exact_integers_on_both_sides():
    # BUY 10.00 USDC at 0.30: floor(10 / 0.3) = 33.3333 shares at 4 decimals
    assert market_amounts(Side.BUY, 10 * U, 300_000, 10_000) == (10 * U, 33_333_300)
    # SELL 7.77 shares at 0.33: 2.5641 USDC, floored at 4 decimals; the USDC leg is an integer
    legs = market_amounts(Side.SELL, 7_770_000, 330_000, 10_000)
    assert legs == (7_770_000, 2_564_100) and all(type(x) is int for x in legs)
    big = 10**15 + 10_000  # beyond a float's exact integers once multiplied by the price
    legs = market_amounts(Side.SELL, big, 330_000, 10_000)
    assert legs == (big, big * 330_000 // (U * 100) * 100) and type(legs[1]) is int


def test_a_market_price_of_one_or_more_is_refused_with_the_range():
    with pytest.raises(AmountError, match=r"^price 1000000 units outside \[10000, 990000\]$"):
        market_amounts(Side.BUY, 10 * U, U, 10_000)
    with pytest.raises(AmountError, match=r"^amount 9999 units is below 0.01$"):
        market_amounts(Side.BUY, 9_999, 500_000, 10_000)
    with pytest.raises(AmountError, match=r"^price 1000000 units outside \[10000, 990000\]$"):
        limit_amounts(Side.BUY, U, 10 * U, 10_000)


def test_limit_legs_stay_exact_integers_of_any_size():
    shares = 10**15
    legs = limit_amounts(Side.BUY, 330_000, shares, 10_000)
    assert legs == (shares * 330_000 // U, shares) and all(type(x) is int for x in legs)


def test_signed_amounts_give_price_shares_and_usdc():
    fok, gtc = OrderType.FOK, OrderType.GTC
    assert check_signed_amounts(Side.BUY, 5 * U, 10 * U, fok, 10_000) == (500_000, 10 * U, 5 * U)
    # a SELL's worst price is rounded up: 3.3301 USDC for 10 shares accepts bids >= 0.33301
    terms = check_signed_amounts(Side.SELL, 10 * U, 3_330_100, fok, 10_000)
    assert terms == (333_010, 10 * U, 3_330_100) and type(terms.price) is int
    with pytest.raises(MarketAccuracyError, match="^invalid amounts, the market sell orders maker amount supports a "
                                                  "max accuracy of 2 decimals, taker amount a max of 4 decimals$"):
        check_signed_amounts(Side.SELL, 10 * U, 3_330_001, fok, 10_000)  # a fifth and sixth decimal
    assert check_signed_amounts(Side.SELL, 10 * U, 4 * U, gtc, 10_000) == (400_000, 10 * U, 4 * U)
    assert check_signed_amounts(Side.BUY, 4 * U, 10 * U, gtc, 10_000) == (400_000, 10 * U, 4 * U)
    for maker, taker in ((0, U), (U, 0), (-U, U)):
        with pytest.raises(AmountError, match="^order amounts must be positive$"):
            check_signed_amounts(Side.BUY, maker, taker, gtc, 10_000)
    with pytest.raises(AmountError, match="^implied price is not on the tick grid$"):
        check_signed_amounts(Side.BUY, 1_000_000, 3 * U, gtc, 10_000)


def test_decimal_units_at_their_edges():
    assert decimal_units("0", "size") == 0 and decimal_units(Decimal("1.5"), "size") == 1_500_000
    assert decimal_units("9" * (MAX_WHOLE_DIGITS - 1), "size") == int("9" * (MAX_WHOLE_DIGITS - 1)) * U
    assert decimal_units(str(10**MAX_WHOLE_DIGITS - 1), "size") == (10**MAX_WHOLE_DIGITS - 1) * U
    with pytest.raises(AmountError, match="out of range"):
        decimal_units(str(10**MAX_WHOLE_DIGITS), "size")
    long = "1" + "0" * MAX_WHOLE_DIGITS + "123456789" * 6
    with pytest.raises(AmountError, match=rf"^size is out of range: {long[:40]}$"):
        decimal_units(long, "size")
    with pytest.raises(AmountError, match=r"^price is not a number: 'abc'$"):
        decimal_units("abc", "price")
    with pytest.raises(AmountError, match=r"^price is not a finite number: 'Infinity'$"):
        decimal_units("Infinity", "price")
    with pytest.raises(AmountError, match=r"^size is negative: -1$"):
        decimal_units("-1", "size")


def test_exact_prices_refuse_what_is_off_the_grid_or_not_finite():
    assert exact_price_units("0.51", 10_000) == 510_000
    with pytest.raises(AmountError, match=r"^price 0.5050001 is not a multiple of the tick 0.01$"):
        exact_price_units("0.5050001", 10_000)
    with pytest.raises(AmountError, match="not a multiple of the tick"):
        exact_price_units("0.5000005", 100)  # finer than a micro-unit
    for bad in ("sNaN", "NaN", "Infinity"):
        with pytest.raises(AmountError):
            exact_price_units(bad, 10_000)


def test_ticks_off_the_supported_ones_or_not_finite_are_refused():
    for bad in ("0.0100001", "Infinity", "NaN", "0.02"):
        with pytest.raises(AmountError, match="tick size"):
            parse_tick(bad)


def test_a_book_walk_needs_the_whole_amount():
    levels = [(400_000, 5 * U), (300_000, 5 * U)]  # best last
    assert market_price(Side.SELL, levels, 10 * U) == 400_000
    for amount in (10 * U + 1, 11 * U):
        with pytest.raises(NoMatch, match="^no match$"):
            market_price(Side.SELL, levels, amount)
    with pytest.raises(NoMatch, match="^no match$"):
        market_price(Side.BUY, [], U)
    with pytest.raises(NoMatch, match="^no match$"):
        market_price(Side.BUY, [], U, OrderType.FAK)
    # BUY: 5 shares at 0.3 = 1.5 USDC, then 5 at 0.4 = 2 USDC: 3.5 USDC in all
    assert market_price(Side.BUY, levels, 3_500_000) == 400_000
    with pytest.raises(NoMatch):
        market_price(Side.BUY, levels, 3_500_001)


def test_fee_rates_with_a_fractional_exponent_and_the_price_range():
    # r * (p (1 - p)) ** e / p at p = 0.5, e = 0.5: 0.02 * 0.5 / 0.5 = 0.02
    assert fee_per_usdc(500_000, "0.02", "0.5") == Fraction(2, 100)
    assert abs(float(fee_per_usdc(200_000, "0.02", "1.5")) - 0.02 * 0.16 ** 1.5 / 0.2) < 1e-15
    assert fee_per_usdc(1, "0", "1", "0.001") == Fraction(1, 1000)
    for price in (0, U, U + 1):
        with pytest.raises(AmountError, match=rf"^price {price} units outside \(0, 1000000\)$"):
            fee_per_usdc(price, "0.02", "1")


def test_levels_from_the_wire_name_the_bad_field():
    assert levels_from_wire([{"price": "0.5", "size": "2"}]) == [(500_000, 2 * U)]
    with pytest.raises(AmountError, match="^price is not a number"):
        levels_from_wire([{"price": "x", "size": "2"}])
    with pytest.raises(AmountError, match="^size is not a number"):
        levels_from_wire([{"price": "0.5", "size": "x"}])


def test_a_fractional_exponent_is_computed_to_fifty_digits():
    from decimal import localcontext

    with localcontext() as ctx:
        ctx.prec = 50
        weight = Fraction((Decimal(21) / Decimal(100)) ** Decimal("1.5"))  # (0.3 * 0.7) ** 1.5
    assert fee_per_usdc(300_000, "0.02", "1.5") == Fraction(2, 100) * weight / Fraction(3, 10)


def test_market_orders_on_fine_ticks_carry_the_decimals_the_venue_accepts():
    # BUY 9.98 USDC at 0.985 (tick 0.001): 10.13197... shares floor to 10.1319 (4 decimals), not 10.13197
    assert market_amounts(Side.BUY, 9_980_000, 985_000, 1_000) == (9_980_000, 10_131_900)
    # BUY 12.34 at 0.7 (tick 0.001): 17.6285 shares; SELL 12.34 shares at 0.1237 (tick 0.0001): 1.5264 USDC
    assert market_amounts(Side.BUY, 12_340_000, 700_000, 1_000) == (12_340_000, 17_628_500)
    assert market_amounts(Side.SELL, 12_340_000, 123_700, 100) == (12_340_000, 1_526_400)
    # on 0.1 and 0.01 ticks the tick's own amount decimals (3 and 4) stand
    assert market_amounts(Side.BUY, 10_000_000, 300_000, 100_000) == (10_000_000, 33_333_000)
    # an amount too small to price within a tick of the limit is refused, never signed worse
    with pytest.raises(AmountError, match="too small to buy"):
        market_amounts(Side.BUY, 10_000, 300_000, 100)  # 0.0333 share would pay 0.3003 > 0.3001
    with pytest.raises(AmountError, match="too small to sell"):
        market_amounts(Side.SELL, 10_000, 123_700, 100)  # 0.001237 USDC floors to 0.0012: 0.12 < 0.1236
    with pytest.raises(AmountError, match="too small to buy"):
        market_amounts(Side.BUY, 10_000, 999_900, 100)  # 0.0100 share at 0.9999 pays 1.0

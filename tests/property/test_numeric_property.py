"""Account-data figures and price-history points read a number and its string spelling alike.

Spec (interface.md 2.11/2.12 and the price history, as other clients send them): every field
below is a JSON number or a string holding one. Integer fields take ``-?[0-9]+`` within 64 bits;
decimal fields take what ``Decimal`` reads, finite and below 10**18 in magnitude, exactly. Anything
else is a DecodeError naming the model and the field.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from bot.venue.models import (
    DataPosition, DataPositionV2, DataTrade, DataTradeV2, DecodeError, HistoryPoint, HolderGroup,
    HolderGroupV2, PriceHistory, decode,
)

W = "0x56687bf447db6ffa42ffe2204a05edaa20f55839"
C = "0xc8f1cf5d4f26e0fd9c8fe89f2a7b3263b902cf14fde7bfccef525753bb492e47"
T = "71321045863084981365469005770620412523470745398083994982746259498689308907982"


class Case:
    """One model: a minimal valid item, where it sits in the body, its integer and decimal fields."""

    def __init__(self, model: Any, item: dict, ints: tuple[str, ...], decimals: tuple[str, ...],
                 wrap: Any = None, unwrap: Any = None) -> None:
        self.model, self.item, self.ints, self.decimals = model, item, ints, decimals
        self.wrap = wrap or (lambda x: [x])
        self.unwrap = unwrap or (lambda m: m[0])

    def body(self, field: str, json_text: str) -> bytes:
        """The item with ``field`` set to the raw JSON text ``json_text``, wrapped as the route sends it."""
        item = {k: v for k, v in self.item.items() if k != field}
        marker = "__FIELD__"
        item[field] = marker
        return json.dumps(self.wrap(item)).replace(f'"{marker}"', json_text).encode()

    def field(self, field: str, json_text: str) -> Any:
        obj = self.unwrap(decode(self.body(field, json_text), self.model))
        return getattr(obj, _attr(obj, field))

    def __repr__(self) -> str:
        return str(self.model)


def _attr(obj: Any, wire: str) -> str:
    return dict(zip(obj.__struct_encode_fields__, obj.__struct_fields__))[wire]


def holder_wrap(item: dict) -> list:
    return [{"token": C + ":0", "holders": [item]}]


def holder_v2_wrap(item: dict) -> list:
    return [{"token_id": T, "holders": [item]}]


CASES = [
    Case(list[DataPosition], {"proxyWallet": W, "asset": T, "conditionId": C, "size": 1},
         ("outcomeIndex", "timestamp"),
         ("size", "avgPrice", "initialValue", "currentValue", "cashPnl", "percentPnl", "totalBought",
          "realizedPnl", "percentRealizedPnl", "curPrice")),
    Case(list[HolderGroup], {"proxyWallet": W, "amount": 1}, ("outcomeIndex",), ("amount",),
         holder_wrap, lambda m: m[0].holders[0]),
    Case(list[DataTrade], {"side": "BUY", "asset": T, "conditionId": C, "size": 1, "price": 1,
                           "timestamp": 1}, ("timestamp", "outcomeIndex"), ("size", "price")),
    Case(list[DataPositionV2], {"proxy_wallet": W, "token_id": T, "condition_id": C, "current_size": 1},
         ("outcome_index", "last_event_at"),
         ("current_size", "avg_price", "entry_cost_usdc", "entry_fees_usdc", "total_cost_usdc",
          "current_price", "current_value", "total_size", "realized_pnl", "unrealized_pnl", "total_pnl",
          "percent_pnl", "percent_realized_pnl")),
    Case(list[HolderGroupV2], {"proxy_wallet": W, "amount": 1}, ("outcome_index",),
         ("amount", "avg_price", "entry_cost_usdc", "current_price", "current_value", "realized_pnl",
          "unrealized_pnl", "total_pnl"),
         holder_v2_wrap, lambda m: m[0].holders[0]),
    Case(list[DataTradeV2], {"side": "SELL", "token_id": T, "condition_id": C, "size": 1, "price": 1,
                             "timestamp": 1}, ("timestamp", "outcome_index"), ("size", "price")),
    Case(PriceHistory, {"t": 1, "p": 1}, ("t",), ("p",),
         lambda item: {"history": [item]}, lambda m: m.history[0]),
]

INT_FIELDS = st.sampled_from([(c, f) for c in CASES for f in c.ints])
DECIMAL_FIELDS = st.sampled_from([(c, f) for c in CASES for f in c.decimals])
INTS = st.integers(min_value=-(2**63), max_value=2**63 - 1)
DECIMALS = st.decimals(allow_nan=False, allow_infinity=False).filter(lambda d: d.copy_abs() < Decimal("1e18"))
NEAR_MISSES = st.one_of(
    st.text(max_size=12),
    st.from_regex(r"[-+0-9.eE_ xna]{0,14}", fullmatch=True),
    st.sampled_from(["abc", "", " ", "1e999", "-1e18", "1e18", "nan", "NaN", "-nan", "inf", "Infinity",
                     "0x10", "1,5", "1.2.3", "--1", "1e", "e5", "1.0", "1e3", "+5", " 5", "5 ", "1_000",
                     "\u0663", "9" * 30, "true", "null"]),
)


def is_integer_spelling(text: str) -> bool:
    return re.fullmatch(r"-?[0-9]+", text) is not None and -(2**63) <= int(text) < 2**63


def is_decimal_spelling(text: str) -> bool:
    try:
        value = Decimal(text)
    except InvalidOperation:
        return False
    return value.is_finite() and value.copy_abs() < Decimal("1e18")


def assert_refused(case: Case, field: str, json_text: str) -> None:
    with pytest.raises(DecodeError) as info:
        case.field(field, json_text)
    message = str(info.value)
    model = case.model if isinstance(case.model, type) else case.model.__args__[0]
    assert model.__name__ in message
    assert f"`{field}`" in message or f".{field}`" in message, message


@settings(max_examples=400, deadline=None)
@given(INT_FIELDS, INTS)
def test_an_integer_reads_the_same_as_a_number_or_a_string(where, n) -> None:
    case, field = where
    as_number, as_string = case.field(field, str(n)), case.field(field, json.dumps(str(n)))
    assert type(as_number) is int and type(as_string) is int
    assert as_number == as_string == n


@settings(max_examples=400, deadline=None)
@given(DECIMAL_FIELDS, DECIMALS)
def test_a_decimal_reads_exactly_the_same_as_a_number_or_a_string(where, d) -> None:
    case, field = where
    text = str(d)  # a valid JSON number: digits, optional fraction and exponent
    as_number, as_string = case.field(field, text), case.field(field, json.dumps(text))
    assert type(as_number) is Decimal and type(as_string) is Decimal
    assert str(as_number) == str(as_string) == text  # the exact text, digit for digit


@settings(max_examples=600, deadline=None)
@given(INT_FIELDS, NEAR_MISSES)
def test_an_integer_field_refuses_any_other_text(where, text) -> None:
    case, field = where
    if is_integer_spelling(text):
        assert case.field(field, json.dumps(text)) == int(text)
    else:
        assert_refused(case, field, json.dumps(text))


@settings(max_examples=600, deadline=None)
@given(DECIMAL_FIELDS, NEAR_MISSES)
def test_a_decimal_field_refuses_any_other_text(where, text) -> None:
    case, field = where
    if is_decimal_spelling(text):
        assert case.field(field, json.dumps(text)) == Decimal(text)
    else:
        assert_refused(case, field, json.dumps(text))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([(c, f) for c in CASES for f in c.ints + c.decimals]),
       st.sampled_from(["true", "false", "[]", "{}", '["1"]', "1e999", "-1e999", "1.5"]))
def test_other_json_values_are_refused(where, json_text) -> None:
    case, field = where
    if json_text == "1.5" and field in case.decimals:
        assert case.field(field, json_text) == Decimal("1.5")
    else:
        assert_refused(case, field, json_text)


def test_integers_beyond_64_bits_are_refused_in_either_spelling() -> None:
    case = CASES[-1]
    for n in (2**63, -(2**63) - 1, 10**30):
        assert_refused(case, "t", str(n))
        assert_refused(case, "t", json.dumps(str(n)))
    assert case.field("t", str(2**63 - 1)) == 2**63 - 1


def test_a_point_built_in_code_keeps_the_numbers_it_was_given() -> None:
    """The local exchange builds its price history from ints and floats and sends JSON numbers."""
    from bot.venue.models import encode

    point = HistoryPoint(t=1729000000, p=0.51)
    assert encode(PriceHistory(history=[point])) == b'{"history":[{"t":1729000000,"p":0.51}]}'
    assert HistoryPoint(t="1729000000", p="0.51") == HistoryPoint(t=1729000000, p=Decimal("0.51"))
    with pytest.raises(ValueError, match="`t` is not an integer"):
        HistoryPoint(t=True, p=1)

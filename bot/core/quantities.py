"""Sizes, amounts and prices as people write them in a config (``10`` shares, ``"2.5"`` USDC,
``0.005`` of a price), turned into the integer micro-units everything inside counts in.

A config struct marks such a field with one of three annotations: ``Shares`` (``OrderSize`` for
the size of one order), ``Usdc`` or ``Price`` (an ``int`` in micro-units inside; a whole share is
``UNIT``). ``in_units(table, type_)`` converts a parsed table before it is decoded: at a marked
field, an integer ``n`` is ``n`` whole units, a decimal string is read exactly, and a float is
read as the shortest decimal that spells it; ``as_written`` is the way back. Python code that
builds the structs directly passes micro-units, as everywhere inside.

Invariants: a value is converted exactly or refused with a ``QuantityError`` naming its key, never
rounded: more than six decimals, a float with more than 15 significant digits (it no longer says
what was written), a boolean, text that is not a decimal number, and a bare integer that looks
like micro-units (``MICRO_LOOKING``: refused, not scaled) are refused. Unmarked fields are left as
they are, and a table is converted once (``in_units`` of a converted table would scale it again:
the config loaders call it exactly once).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, Callable, Mapping

import msgspec
import msgspec.inspect as mi

from bot.venue.units import DECIMALS, UNIT, UnitsError, format_units, parse_units

_UNIT = "unit"
_ORDER = "order"
SHARES, USDC, PRICE = "shares", "USDC", "price"

Shares = Annotated[int, msgspec.Meta(extra={_UNIT: SHARES})]
"""A number of shares: written ``10`` or ``"10.5"`` in a config, micro-units inside."""
Usdc = Annotated[int, msgspec.Meta(extra={_UNIT: USDC})]
"""An amount of USDC: written ``50`` or ``"2.5"`` in a config, micro-units inside."""
Price = Annotated[int, msgspec.Meta(extra={_UNIT: PRICE})]
"""A price, or a distance between prices, per share: written ``0.005`` or ``"0.52"``."""
OrderSize = Annotated[int, msgspec.Meta(extra={_UNIT: SHARES, _ORDER: True})]
"""The shares one order carries (``Shares``): a market whose minimum order is larger gets none of
them, which ``undersized`` reports."""

MICRO_LOOKING = {SHARES: 10**6, USDC: 10**6, PRICE: 1000}
"""A bare integer this large at a field of that unit is refused (``"..."`` says it is meant): a
config from when files held micro-units (``order_size = 10000000`` for 10 shares, ``margin = 5000``
for 0.005) would otherwise trade a million times the size, or lift a loss limit out of reach."""
FLOAT_DIGITS = 15  # a float of at most 15 significant digits spells back what was written


class QuantityError(ValueError):
    """A size, amount or price in a config that is not an exact number of micro-units."""


def to_units(value: Any, unit: str = SHARES) -> int:
    """``value`` (int, exact decimal text, or a float of at most 15 significant digits) as
    micro-units; anything else is a ``QuantityError`` saying why in a few words."""
    if isinstance(value, bool):
        raise QuantityError(f"expected a number of {unit}, got {str(value).lower()}")
    if isinstance(value, int):
        if abs(value) >= 10 ** 18:
            raise QuantityError(f"{value} {unit} is out of range")
        return value * UNIT
    if isinstance(value, float):
        text = repr(value)
        mantissa = text.lower().partition("e")[0]
        if sum(c.isdigit() for c in mantissa.lstrip("-0.")) > FLOAT_DIGITS:
            raise QuantityError(f"{text} has more digits than a TOML float keeps exactly: "
                                f"write it as a string (\"...\")")
        return _parse(text, unit)
    if isinstance(value, str):
        return _parse(value.strip(), unit)
    raise QuantityError(f"expected a number of {unit}, got {type(value).__name__}")


def _parse(text: str, unit: str) -> int:
    try:
        return parse_units(text)
    except UnitsError:
        pass
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise QuantityError(f"expected {unit} as a number (10, 10.5 or \"10.5\"), got {text[:40]!r}") from None
    if value.is_finite() and int(value.as_tuple().exponent) < -DECIMALS:
        raise QuantityError(f"{text[:40]} {unit} has more than {DECIMALS} decimals")
    raise QuantityError(f"{text[:40]} {unit} is out of range")


def in_units(table: Any, type_: Any, where: str = "", off: str | None = None) -> Any:
    """A copy of the parsed ``table`` with every value at a ``Shares``, ``Usdc`` or ``Price``
    field of ``type_`` (nested structs, lists, tuples and tables included) in micro-units; a value
    that cannot be is a ``QuantityError`` whose message starts with its key (``where`` prefixes
    it). Values that are not numbers or text (``None``, a table) are left for the decoder. ``off``:
    how the caller spells "none" (named in the message of a field that may be off)."""

    def leaf(value: Any, t: mi.Type, key: str, optional: bool) -> Any:
        unit = _unit_of(t)
        if unit is None or not isinstance(value, (int, float, str)):
            return value
        try:
            if type(value) is int and abs(value) >= MICRO_LOOKING[unit]:
                raise QuantityError(f"{value} looks like micro-units: a config writes {unit} as they are, so "
                                    f"write {format_units(value)} (or \"{value}\" to mean {value} {unit})")
            return to_units(value, unit)
        except QuantityError as exc:
            message = str(exc)
            if optional and off:
                message = message.replace(", got", f' or "{off}", got', 1)
            raise QuantityError(f"`{key}`: {message}") from None

    return map_table(table, type_, leaf, where)


def as_written(table: Any, type_: Any) -> Any:
    """The inverse of ``in_units``: a copy of ``table`` (builtins of ``type_``, micro-units) with
    every ``Shares``, ``Usdc`` or ``Price`` value as a config file writes it, a whole number as an
    integer (``10``) and anything finer, or large enough to look like micro-units, as its exact
    decimal text (``"10.5"``, ``"5000000"``)."""

    def leaf(value: Any, t: mi.Type, key: str, optional: bool) -> Any:
        unit = _unit_of(t)
        if unit is None or type(value) is not int:
            return value
        whole, frac = divmod(value, UNIT)
        return whole if not frac and abs(whole) < MICRO_LOOKING[unit] else format_units(value)

    return map_table(table, type_, leaf)


_SEQUENCES = (mi.ListType, mi.VarTupleType, mi.SetType, mi.FrozenSetType)


def _unit_of(t: mi.Type) -> str | None:
    while isinstance(t, mi.Metadata):
        if t.extra and _UNIT in t.extra:
            return t.extra[_UNIT]
        t = t.type
    return None


def map_table(table: Any, type_: Any, leaf: Callable[[Any, mi.Type, str, bool], Any], where: str = "") -> Any:
    """A copy of the parsed ``table`` with every value that is not a table or an array (a string,
    a number, a boolean) replaced by ``leaf(value, its type, its key, whether it may be None)``,
    following the fields of ``type_`` through nested structs, tables, arrays and unions; keys
    ``type_`` does not know are kept as they are, for the decoder to name."""
    return _walk(table, mi.type_info(type_), where, leaf)


def _walk(value: Any, t: mi.Type, where: str, leaf: Any, optional: bool = False) -> Any:
    bare = _bare(t)
    if isinstance(bare, mi.UnionType):
        optional = any(isinstance(m, mi.NoneType) for m in bare.types)
        scalars = []
        for m in bare.types:
            b = _bare(m)
            if isinstance(value, dict) and isinstance(b, (mi.StructType, mi.DictType)) or \
                    isinstance(value, (list, tuple)) and isinstance(b, (*_SEQUENCES, mi.TupleType)):
                return _walk(value, m, where, leaf, optional)
            if not isinstance(b, mi.NoneType):
                scalars.append(m)
        if isinstance(value, (dict, list, tuple)):
            return value
        return leaf(value, next((m for m in scalars if _unit_of(m)), scalars[0] if scalars else t), where, optional)
    if isinstance(bare, mi.StructType) and isinstance(value, dict):
        fields = {f.encode_name: f.type for f in bare.fields}
        return {k: _walk(v, fields[k], _at(where, k), leaf) if k in fields else v for k, v in value.items()}
    if isinstance(bare, mi.DictType) and isinstance(value, dict):
        return {k: _walk(v, bare.value_type, _at(where, k), leaf) for k, v in value.items()}
    if isinstance(bare, _SEQUENCES) and isinstance(value, (list, tuple)):
        return [_walk(v, bare.item_type, f"{where}[{i}]", leaf) for i, v in enumerate(value)]
    if isinstance(bare, mi.TupleType) and isinstance(value, (list, tuple)):
        return [_walk(v, it, f"{where}[{i}]", leaf) for i, (v, it) in enumerate(zip(value, bare.item_types))] \
            + list(value[len(bare.item_types):])
    if isinstance(value, (dict, list, tuple)):
        return value
    return leaf(value, t, where, optional)


def _bare(t: mi.Type) -> mi.Type:
    while isinstance(t, mi.Metadata):
        t = t.type
    return t


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else str(key)


def order_sizes(params: Any, where: str = "") -> list[tuple[str, int]]:
    """``(key, micro-units)`` of every ``OrderSize`` value in the struct ``params`` (nested
    structs, tuples and lists included), in field order."""
    found: list[tuple[str, int]] = []
    _sizes(params, mi.type_info(type(params)), where, found)
    return found


def _sizes(value: Any, t: mi.Type, where: str, found: list[tuple[str, int]]) -> None:
    while isinstance(t, mi.Metadata):
        if t.extra and t.extra.get(_ORDER) and isinstance(value, int):
            found.append((where, value))
            return
        t = t.type
    if isinstance(t, mi.UnionType):
        for m in t.types:
            if not isinstance(m, mi.NoneType):
                _sizes(value, m, where, found)
    elif isinstance(t, mi.StructType) and isinstance(value, msgspec.Struct):
        for f in t.fields:
            _sizes(getattr(value, f.name), f.type, _at(where, f.encode_name), found)
    elif isinstance(t, (*_SEQUENCES, mi.TupleType)) and isinstance(value, (list, tuple)):
        types = t.item_types if isinstance(t, mi.TupleType) else (t.item_type,) * len(value)
        for i, (v, it) in enumerate(zip(value, types)):
            _sizes(v, it, f"{where}[{i}]", found)


def undersized(params: Any, minimums: Mapping[str, int]) -> list[str]:
    """One line for each ``OrderSize`` in ``params`` below the minimum order of some market
    (``minimums``: market name -> minimum size, micro-units): those markets never get that order."""
    lines = []
    for key, size in order_sizes(params):
        below = sorted(name for name, least in minimums.items() if size < least)
        if below:
            least = max(minimums[name] for name in below)
            shown = ", ".join(below[:3]) + (f" and {len(below) - 3} more" if len(below) > 3 else "")
            lines.append(f"{key} = {format_units(size)} shares is below the minimum order of {len(below)} "
                         f"market(s) (up to {format_units(least)} shares: {shown}): none is sent there")
    return lines

"""Numbers the wire may spell either way: as a JSON number or as a numeric string.

interface.md documents the account-data figures (positions, holders, public trades) and the price
history with JSON numbers; clients in the wild write the same fields as strings
(``"timestamp": "1729000180"``, ``"outcomeIndex": "0"``, ``"t": "1729000000"``). A field typed
:data:`WireInt` or :data:`WireDecimal` in a :class:`NumericWire` model reads both spellings.

Invariant: after decoding, a ``WireInt`` field holds an ``int`` and a ``WireDecimal`` field an
exact, finite ``Decimal``, whichever spelling arrived (``5`` and ``"5"`` decode equal, as do
``0.52`` and ``"0.52"``); no value passes through a binary float. Anything else (``"abc"``, ``""``,
``"nan"``, ``"1e999"``, a boolean, a fraction for an integer) raises
:class:`~bot.venue.models.decoding.DecodeError` naming the model and the field. Magnitudes are
bounded (integers within 64 bits, decimals below 10**18) so later arithmetic stays bounded.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, Union, get_args, get_origin

import msgspec

from .decoding import Wire


class _IntSpelling:
    """Marks a :data:`WireInt` field (msgspec ignores the marker; :class:`NumericWire` reads it)."""


class _DecimalSpelling:
    """Marks a :data:`WireDecimal` field."""


WireInt = Annotated[Union[int, str], _IntSpelling]
"""An integer sent as a JSON integer or a decimal-integer string (``-?[0-9]+``); an ``int`` once decoded."""

WireDecimal = Annotated[Decimal, _DecimalSpelling]
"""A decimal sent as a JSON number or a numeric string, read exactly; a finite ``Decimal`` once decoded.

msgspec reads both spellings straight into ``Decimal`` (a JSON number from its text, never through
a float; a string by ``Decimal``'s grammar, which also allows surrounding spaces and ``_`` between
digits); :class:`NumericWire` then refuses the non-finite and the out-of-range ones.
"""

INT_LIMIT = 2**63
"""An integer field holds ``-INT_LIMIT <= n < INT_LIMIT``."""

DECIMAL_DIGITS_LIMIT = 18
"""A decimal field holds values below ``10**DECIMAL_DIGITS_LIMIT`` in magnitude."""

_INT_TEXT_MAX = len(str(INT_LIMIT)) + 1  # sign and digits: longer strings are refused unparsed


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def wire_int(value: Any, field: str) -> int:
    """``value`` (an int or a decimal-integer string) as an ``int``; anything else is a ValueError."""
    if type(value) is str:
        digits = value[1:] if value[:1] == "-" else value
        if not (0 < len(value) <= _INT_TEXT_MAX and digits.isascii() and digits.isdigit()):
            raise ValueError(f"`{field}` is not an integer: {_shown(value)}")
        value = int(value)
    elif type(value) is not int:
        raise ValueError(f"`{field}` is not an integer: {_shown(value)}")
    if not -INT_LIMIT <= value < INT_LIMIT:
        raise ValueError(f"`{field}` is out of range: {_shown(value)}")
    return value


def wire_decimal(value: Any, field: str) -> Any:
    """``value`` checked as a finite, bounded ``Decimal`` (a string is parsed exactly first).

    An ``int`` or ``float`` passed by code (never by the decoder, which yields ``Decimal``) is
    kept as given, so a model built in code encodes the number it was given.
    """
    if type(value) is str:
        try:
            value = Decimal(value)
        except InvalidOperation:
            raise ValueError(f"`{field}` is not a number: {_shown(value)}") from None
    elif not isinstance(value, Decimal):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
        raise ValueError(f"`{field}` is not a number: {_shown(value)}")
    if not value.is_finite():
        raise ValueError(f"`{field}` is not a finite number: {_shown(str(value))}")
    if value and value.adjusted() >= DECIMAL_DIGITS_LIMIT:
        raise ValueError(f"`{field}` is out of range: {_shown(str(value))}")
    return value


_Plan = tuple[tuple[str, str, Any], ...]
_plans: dict[type, _Plan] = {}


def _marker(tp: Any) -> Any:
    """The spelling marker of a field type (``WireInt``, ``WireDecimal``, either ``| None``)."""
    if get_origin(tp) is Union:
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            tp = args[0]
    for mark in getattr(tp, "__metadata__", ()):
        if mark in (_IntSpelling, _DecimalSpelling):
            return mark
    return None


def _plan(cls: type) -> _Plan:
    """(attribute, wire name, check) for every WireInt / WireDecimal field of ``cls``; cached."""
    plan = _plans.get(cls)
    if plan is None:
        checks = {_IntSpelling: wire_int, _DecimalSpelling: wire_decimal}
        plan = _plans[cls] = tuple(
            (f.name, f.encode_name, checks[mark])
            for f in msgspec.structs.fields(cls)
            if (mark := _marker(f.type)) is not None
        )
    return plan


class NumericWire(Wire, kw_only=True):
    """Base of the wire models with :data:`WireInt` / :data:`WireDecimal` fields.

    Every such field is normalised and checked once the struct is built (decoded from bytes,
    converted from parsed JSON or constructed in code); a bad value raises ``ValueError``, which
    the decoders report as a :class:`~bot.venue.models.decoding.DecodeError` at the item's path.
    """

    def __post_init__(self) -> None:
        for attr, wire, check in _plan(type(self)):
            value = getattr(self, attr)
            if value is not None:
                checked = check(value, wire)
                if checked is not value:
                    setattr(self, attr, checked)

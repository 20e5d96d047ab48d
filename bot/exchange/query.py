"""Numbers in query strings and headers, read strictly and within bounds.

Invariant: a value is accepted only in its plain ASCII form (``-?[0-9]+`` for integers, a decimal
with an optional two-digit exponent for numbers, at most ``MAX_DIGITS`` digits) and inside its
range, so no later step sees a ``nan``, an ``inf`` (the form bounds a number below 10^120), a
negative where none is allowed, or an integer too large for a timestamp or a counter; anything else
is the client's mistake and raises ``Reply`` with the surface's 400 body.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from bot.exchange.replies import Reply, bad_request

MAX_DIGITS = 19  # every integer the exchange reads fits in a signed 64-bit word
MAX_UNIX_S = 253_402_300_799  # 9999-12-31T23:59:59Z: the latest timestamp any route accepts
_INTEGER = re.compile(r"-?[0-9]{1,%d}" % MAX_DIGITS)
_NUMBER = re.compile(r"-?[0-9]{1,%d}(\.[0-9]{1,%d})?([eE][-+]?[0-9]{1,2})?" % (MAX_DIGITS, MAX_DIGITS))


def parse_int(text: str, lo: int, hi: int | None = None) -> int:
    """``text`` as an integer in [lo, hi]; ``ValueError`` (with the reason) otherwise."""
    if not _INTEGER.fullmatch(text):
        raise ValueError("must be an integer")
    value = int(text)
    if value < lo or (hi is not None and value > hi):
        raise ValueError(f"must be between {lo} and {hi}" if hi is not None else f"must be >= {lo}")
    return value


def parse_number(text: str, lo: float, hi: float | None = None) -> float:
    """``text`` as a decimal number in [lo, hi]; ``ValueError`` (with the reason) otherwise."""
    if not _NUMBER.fullmatch(text):
        raise ValueError("must be a decimal number")
    value = float(text)
    if value < lo or (hi is not None and value > hi):
        raise ValueError(f"must be between {lo:g} and {hi:g}" if hi is not None else f"must be >= {lo:g}")
    return value


def query_int(q: Mapping[str, str], name: str, default, lo: int, hi: int | None = None,
              fail: Callable[[str], Reply] = bad_request):
    """The integer parameter ``name`` of ``q`` (``default`` when absent or empty)."""
    return _query(q, name, default, parse_int, lo, hi, fail)


def query_number(q: Mapping[str, str], name: str, default, lo: float, hi: float | None = None,
                 fail: Callable[[str], Reply] = bad_request):
    """The numeric parameter ``name`` of ``q`` (``default`` when absent or empty)."""
    return _query(q, name, default, parse_number, lo, hi, fail)


def _query(q, name, default, parse, lo, hi, fail):
    raw = q.get(name)
    if raw is None or raw == "":
        return default
    try:
        return parse(raw, lo, hi)
    except ValueError as exc:
        raise fail(f"{name} {exc}") from None

"""Command-line arguments: usage errors on one line, and a declared range for every number typed.

Invariant: a value that is not a number, not finite or outside its range never reaches a command:
parsing stops with one line naming the option, the value given and the allowed range, and exit
code 2. An option that sets a config field takes its range from that field's msgspec constraints
(``field_range``), so the flag and the TOML key accept exactly the same values.
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
from decimal import Decimal, InvalidOperation
from typing import Any, NoReturn

import msgspec
import msgspec.inspect as mi

# exit codes of every command
EXIT_OK, EXIT_INTERNAL, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # as a shell reports a command ended by SIGINT
_SHOWN = 40  # characters of a bad value repeated in an error line
_INT = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_NOUNS = {int: "an integer", float: "a number", Decimal: "a decimal number"}


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a usage error on one line (``PROG: error: ... (see PROG --help)``)
    and exits with code 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")
        raise SystemExit(EXIT_USAGE)


class Range(msgspec.Struct, frozen=True):
    """The values one number may take: its kind (``int``, ``float`` or ``Decimal``) and bounds
    (``None``: unbounded on that side). Floats and decimals are always finite."""

    kind: Any = int
    ge: Any = None
    gt: Any = None
    le: Any = None
    lt: Any = None

    def __contains__(self, value: Any) -> bool:
        return not (
            (self.ge is not None and value < self.ge) or (self.gt is not None and value <= self.gt)
            or (self.le is not None and value > self.le) or (self.lt is not None and value >= self.lt)
        )

    def describe(self) -> str:
        """``an integer in 0..65535``, ``a number in [0, 1]``, ``a number > 0``..."""
        noun = _NOUNS[self.kind]
        low, high = _first(self.ge, self.gt), _first(self.le, self.lt)
        if low is None and high is None:
            return noun
        if low is None:
            return f"{noun} {'<=' if self.le is not None else '<'} {_show(high)}"
        if high is None:
            return f"{noun} {'>=' if self.ge is not None else '>'} {_show(low)}"
        if self.kind is int and self.ge is not None and self.le is not None:
            return f"{noun} in {_show(low)}..{_show(high)}"
        return (f"{noun} in {'[' if self.ge is not None else '('}{_show(low)}, "
                f"{_show(high)}{']' if self.le is not None else ')'}")

    def parse(self, text: str) -> Any:
        """``text`` as a value of this range, or ``ValueError`` saying what was expected."""
        value = _convert(self.kind, text)
        if value is None or value not in self:
            raise ValueError(f"got {_quote(text)}, expected {self.describe()}")
        return value

    def __call__(self, text: str) -> Any:  # an argparse ``type``
        try:
            return self.parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    def __repr__(self) -> str:  # argparse names the type in some messages
        return self.describe()

    def text(self) -> "_Text":
        """The same check as an argparse ``type`` that keeps the text as typed (exact decimals)."""
        return _Text(self)


class _Text:
    """An argparse ``type``: the value as typed, once ``rng`` accepts it."""

    def __init__(self, rng: Range) -> None:
        self.range = rng

    def __call__(self, text: str) -> str:
        self.range(text)
        return text.strip()

    def __repr__(self) -> str:
        return self.range.describe()


def integer(ge: int | None = None, le: int | None = None) -> Range:
    return Range(int, ge=ge, le=le)


def number(*, ge: float | None = None, gt: float | None = None, le: float | None = None,
           lt: float | None = None) -> Range:
    return Range(float, ge=ge, gt=gt, le=le, lt=lt)


def decimal(*, ge: Any = None, gt: Any = None, le: Any = None, lt: Any = None) -> Range:
    return Range(Decimal, ge=_dec(ge), gt=_dec(gt), le=_dec(le), lt=_dec(lt))


def field_range(struct: type, name: str) -> Range:
    """The range of ``struct.name`` as its msgspec constraints declare it (``Meta(ge=..., le=...)``)."""
    for f in _fields(struct):
        if f.name == name:
            t = f.type
            while isinstance(t, mi.Metadata):
                t = t.type
            kind = {mi.IntType: int, mi.FloatType: float}.get(type(t))
            if kind is None:
                raise TypeError(f"{struct.__name__}.{name} is not a number")
            return Range(kind, ge=t.ge, gt=t.gt, le=t.le, lt=t.lt)
    raise AttributeError(f"{struct.__name__} has no field {name!r}")


def run_seconds() -> Range:
    """How long ``bot run`` or ``bot demo`` may be asked to last: more than 0 s, at most a year."""
    return number(gt=0, le=366 * 86_400.0)


@functools.cache
def _fields(struct: type) -> tuple[Any, ...]:
    return mi.type_info(struct).fields


def with_range(help_text: str, rng: Range | _Text) -> str:
    """``help_text`` followed by the allowed values, for ``--help``."""
    r = rng.range if isinstance(rng, _Text) else rng
    return f"{help_text}; {r.describe()}"


def _convert(kind: Any, text: str) -> Any:
    """``text`` as ``kind``; ``None`` when it is not a finite number of that kind."""
    s = text.strip()
    if kind is int:
        if not _INT.fullmatch(s):
            return None
        if len(s) > 4000:  # beyond any range and beyond int()'s digit limit
            return -10**4001 if s.startswith("-") else 10**4001
        return int(s)
    if not _NUMBER.fullmatch(s):  # no nan, inf, underscores or non-ASCII digits
        return None
    if kind is float:
        value = float(s)
        return value if value not in (float("inf"), float("-inf")) else None
    try:
        return Decimal(s)
    except InvalidOperation:  # pragma: no cover - the pattern admits only finite decimals
        return None


def _first(a: Any, b: Any) -> Any:
    return a if a is not None else b


def _dec(value: Any) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def _show(bound: Any) -> str:
    if isinstance(bound, int) and bound > 10**12 and (bound + 1) & bound == 0:
        return f"2^{(bound + 1).bit_length() - 1}-1"
    if isinstance(bound, float) and bound.is_integer():
        return str(int(bound))
    return str(bound)


def _quote(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "…")

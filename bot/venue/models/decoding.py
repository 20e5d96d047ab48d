"""Typed decoding of venue payloads: one error type, one cached decoder per model.

Invariant: every payload that does not fit its model raises :class:`DecodeError` naming the model
and the offending field (msgspec's own path, e.g. ``Object missing required field `id` - at `$[0]```);
nothing else (no ``KeyError``, no ``msgspec.ValidationError``) escapes a decode call.
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import accumulate
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")

MAX_JSON_DEPTH = 32  # the deepest payload of the venue (an order batch, a market listing) nests a few levels
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # a JSON string, escapes included
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [0] * 256
_STEP[ord("[")] = _STEP[ord("{")] = 1
_STEP[ord("]")] = _STEP[ord("}")] = -1


def json_depth(raw: bytes) -> int:
    """How deeply ``raw`` nests arrays and objects (brackets inside strings do not count)."""
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKET)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def too_deep(data: bytes | str) -> bool:
    """``data`` nests deeper than :data:`MAX_JSON_DEPTH`, found by a flat scan before any decoder
    recurses into it (a deep enough nesting exhausts the C stack of a recursive decoder). Only
    text with more brackets than the bound is scanned."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if raw.count(b"[") + raw.count(b"{") <= MAX_JSON_DEPTH:
        return False
    return json_depth(raw) > MAX_JSON_DEPTH


def fixed_depth(model: Any) -> bool:
    """Decoding JSON into ``model`` builds nothing deeper than the model's own type tree: no
    free-form (``Any``) value and no model that contains itself. What such a model does not hold
    msgspec skips, level by level under the interpreter's recursion limit (a RecursionError, in
    small C frames); a free-form decode recurses in large frames once per level of the text and
    needs the depth scan (:func:`too_deep`) first."""
    import msgspec.inspect as mi

    def fixed(t: Any, path: frozenset) -> bool:
        if isinstance(t, mi.AnyType):
            return False
        if isinstance(t, mi.StructType):
            if t.cls in path:
                return False
            inner = path | {t.cls}
            return all(fixed(f.type, inner) for f in t.fields)
        parts = [getattr(t, a) for a in ("item_type", "key_type", "value_type") if hasattr(t, a)]
        parts += list(getattr(t, "types", ())) + list(getattr(t, "item_types", ()))
        return all(fixed(p, path) for p in parts)

    return fixed(mi.type_info(model), frozenset())


class DecodeError(ValueError):
    """A payload that does not match the model it was decoded as."""

    def __init__(self, model: str, detail: str) -> None:
        self.model = model
        self.detail = detail
        super().__init__(f"cannot decode {model}: {detail}")


def model_name(model: Any) -> str:
    """A readable name for a type or a generic alias (``Page[OpenOrder]``, ``list[DataPosition]``)."""
    if isinstance(model, type):
        return model.__name__
    return re.sub(r"[\w.]+\.(\w+)", r"\1", str(model))


@lru_cache(maxsize=None)
def json_decoder(model: Any) -> msgspec.json.Decoder:
    """The cached msgspec JSON decoder for ``model`` (types and generic aliases are hashable)."""
    return msgspec.json.Decoder(model)


def decode(data: bytes | str, model: type[T] | Any) -> T:
    """Decode JSON bytes straight into ``model``; bad JSON or a bad shape raises :class:`DecodeError`."""
    if too_deep(data):
        raise DecodeError(model_name(model), f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        return json_decoder(model).decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise DecodeError(model_name(model), str(exc)) from None
    except UnicodeDecodeError as exc:  # JSON is UTF-8: a string holding other bytes is malformed
        raise DecodeError(model_name(model), f"invalid UTF-8 at byte {exc.start}") from None
    except RecursionError:  # a free-form (``Any``) field nested past the interpreter's depth
        raise DecodeError(model_name(model), "JSON nested too deeply") from None


def convert(obj: Any, model: type[T] | Any) -> T:
    """Convert already-parsed JSON (dicts and lists, e.g. ``response.json()``) into ``model``."""
    try:
        return msgspec.convert(obj, model)
    except msgspec.ValidationError as exc:
        raise DecodeError(model_name(model), str(exc)) from None


_encoder = msgspec.json.Encoder(decimal_format="number")


def encode(obj: Any) -> bytes:
    """Compact JSON bytes of a model (fields unset by default are omitted where the model says so).

    A ``Decimal`` figure is written as the JSON number it was read from (exact text), not a string.
    """
    return _encoder.encode(obj)


def to_builtins(obj: Any) -> Any:
    """A model as plain dicts and lists with the wire's field names."""
    return msgspec.to_builtins(obj)


class Wire(msgspec.Struct, kw_only=True, omit_defaults=True, repr_omit_defaults=True):
    """Base of every wire model: keyword construction, unknown keys ignored, unset optionals omitted.

    Optional fields default to ``None`` so that encoding emits exactly the fields that were set
    (an explicit ``""`` or ``False`` is still emitted).
    """


class FastWire(Wire, gc=False):
    """Base for hot-path models (levels, stream events): not tracked by the cyclic GC.

    Safe because decoded instances never form reference cycles; do not store a model inside itself.
    """

"""The venue's many time spellings, read as one integer: epoch milliseconds.

Invariant: ISO 8601 strings, epoch seconds and epoch milliseconds (as numbers or decimal strings)
all map to the same instant in integer milliseconds; an empty or null value maps to ``None``.
A numeric value below 10**12 is read as seconds, anything larger as milliseconds.
"""

from __future__ import annotations

from datetime import datetime, timezone

_MS_THRESHOLD = 10**12


def epoch_ms(value: str | int | float | None) -> int | None:
    """Epoch milliseconds from an ISO 8601 / epoch-seconds / epoch-ms value; ``None`` if empty."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a timestamp: {value!r}")
    if isinstance(value, (int, float)):
        return _scale(value)
    text = value.strip()
    if text.isdigit():
        return _scale(int(text))
    try:
        return _scale(float(text))
    except ValueError:
        pass
    return _iso_ms(text)


def _scale(number: int | float) -> int:
    if abs(number) < _MS_THRESHOLD:
        return int(round(number * 1000))
    return int(number)


def _iso_ms(text: str) -> int:
    t = text.replace(" ", "T", 1) if "T" not in text else text
    if t.endswith("Z") or t.endswith("z"):
        t = t[:-1] + "+00:00"
    elif len(t) >= 3 and t[-3] in "+-" and t[-2:].isdigit() and ":" not in t[-3:] and "T" in t[:-3]:
        t = t + ":00"  # "+00" -> "+00:00"
    try:
        dt = datetime.fromisoformat(t)
    except ValueError:
        raise ValueError(f"not a timestamp: {text!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(round(dt.timestamp() * 1000))

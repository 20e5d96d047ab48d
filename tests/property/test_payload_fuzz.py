"""Every real payload of ``../shared/data``, mutated: byte flips, truncation, a value swapped for
another JSON type, huge and non-finite numbers, deep nesting. Each decoder answers with events or
a model, or raises its one typed error (:class:`DecodeError`), in bounded time; and a WebSocket
stream fed the mutated frames counts them and delivers the next good frame as if nothing happened.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.venue.auth import Credentials
from bot.venue.models import decode, decode_market_frame, decode_user_frame
from bot.venue.models.decoding import DecodeError
from bot.venue.stream import MarketStream, UserStream
from tests.conformance.test_captured_payloads import MARKET, TABLE, USER
from tests.conftest import SHARED

DATA = SHARED / "data"
PATHS = sorted(TABLE)
ODD_VALUES = (None, True, 0, -1, 1.5, 10**400, -(10**400), "", "x" * 5000, "1e999", "NaN", "-0", [], {}, [[[]]],
              {"a": {"b": None}})


def raw(path: str) -> bytes:
    return (DATA / path).read_bytes()


def decode_as(path: str, data: bytes) -> Any:
    kind = TABLE[path][0]
    if kind == MARKET:
        return decode_market_frame(data)
    if kind == USER:
        return decode_user_frame(data)
    return decode(data, kind)


def typed_or_ok(path: str, data: bytes) -> None:
    try:
        decode_as(path, data)
    except DecodeError as exc:
        assert str(exc).startswith("cannot decode ") and "\n" not in str(exc)[:200]


def nodes(value: Any, at: tuple = ()) -> list[tuple]:
    """The path of every value inside ``value`` (itself included)."""
    out = [at]
    if isinstance(value, dict):
        for k, v in value.items():
            out += nodes(v, at + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += nodes(v, at + (i,))
    return out


def replaced(value: Any, at: tuple, new: Any) -> Any:
    if not at:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[at[0]] = replaced(value[at[0]], at[1:], new)
    return copy


def test_every_payload_under_every_kind_of_mutation():
    """A sweep over every file: truncations, flips, swaps at spread positions (no randomness)."""
    for path in PATHS:
        data = raw(path)
        n = len(data)
        for cut in sorted({0, 1, n // 2, n - 1, *range(0, n, max(1, n // 23))}):
            typed_or_ok(path, data[:cut])
        for pos in range(0, n, max(1, n // 29)):
            for byte in (0x00, 0x22, 0x7B, 0x5D, 0xFF):
                typed_or_ok(path, data[:pos] + bytes([byte]) + data[pos + 1:])
        doc = json.loads(data)
        every = nodes(doc)
        for i, at in enumerate(every[:: max(1, len(every) // 40)]):
            typed_or_ok(path, json.dumps(replaced(doc, at, ODD_VALUES[i % len(ODD_VALUES)])).encode())
        typed_or_ok(path, b"[" * 100_000 + data + b"]" * 100_000)
        typed_or_ok(path, json.dumps(replaced(doc, every[-1], float("inf"))).encode())


@st.composite
def mutated(draw) -> tuple[str, bytes]:
    path = draw(st.sampled_from(PATHS))
    data = raw(path)
    how = draw(st.sampled_from(["flip", "cut", "swap", "nest", "splice"]))
    if how == "flip":
        pos = draw(st.integers(0, len(data) - 1))
        return path, data[:pos] + bytes([draw(st.integers(0, 255))]) + data[pos + 1:]
    if how == "cut":
        return path, data[: draw(st.integers(0, len(data)))]
    if how == "nest":
        depth = draw(st.integers(1, 5000))
        return path, b'{"a":' * depth + data + b"}" * depth
    if how == "splice":
        pos = draw(st.integers(0, len(data)))
        return path, data[:pos] + draw(st.binary(max_size=64)) + data[pos:]
    doc = json.loads(data)
    at = draw(st.sampled_from(nodes(doc)))
    new = draw(st.one_of(st.sampled_from(ODD_VALUES), st.integers(), st.floats(allow_nan=False),
                         st.text(max_size=30), st.recursive(st.none() | st.integers(), st.lists, max_leaves=5)))
    return path, json.dumps(replaced(doc, at, new)).encode()


@settings(max_examples=600, deadline=2000, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_any_mutation_of_a_real_payload_decodes_or_is_a_decode_error(case: tuple[str, bytes]) -> None:
    typed_or_ok(*case)


CREDS = Credentials("00000000-0000-0000-0000-000000000000", "c2VjcmV0", "passphrase")
FRAMES = {kind: [p for p in PATHS if TABLE[p][0] == kind] for kind in (MARKET, USER)}


@pytest.mark.parametrize("kind,stream_type", [(MARKET, MarketStream), (USER, UserStream)])
def test_a_stream_fed_broken_frames_delivers_the_next_good_one(kind, stream_type) -> None:
    got: list = []
    stream = MarketStream(got.append) if stream_type is MarketStream else UserStream(got.append, CREDS)
    link = stream._new_link(())
    frames = [raw(p) for p in FRAMES[kind]]
    broken = [f[: len(f) // 2] for f in frames] + [b"\xff" + f for f in frames] + [b"[" * 50_000]

    async def feed() -> None:
        for bad, good in zip(broken, frames * 3):
            await stream._on_frame(link, bad)
            before = len(got)
            await stream._on_frame(link, good)
            assert len(got) > before or decode_as(FRAMES[kind][frames.index(good)], good) == []

    anyio.run(feed)
    c = stream.counters  # a broken frame is a decode error, or no event at all (not JSON)
    assert c.decode_errors >= 1 and c.decode_errors + c.ignored_frames >= len(broken)
    assert c.frames == 2 * len(broken) and c.messages >= len(broken) - 1


DEEP_FRAMES = (
    b"[" * 200_000 + b"]" * 200_000,
    b'{"a":' * 200_000 + b"1" + b"}" * 200_000,
    # typed: the unknown key's value is skipped, never built
    b'{"event_type":"price_change","market":"m","timestamp":"1","price_changes":[],"x":'
    + b"[" * 200_000 + b"]" * 200_000 + b"}",
    b'{"event_type":"book","asset_id":"1","market":"m","timestamp":"1","bids":[],"asks":[],"x":' + b'{"a":' * 200_000
    + b"1" + b"}" * 200_001,
    b'[{"event_type":"order","x":' + b"[" * 200_000 + b"]" * 200_000 + b"}]",  # no typed fit: scanned
    # deep enough to exhaust the C stack even in a typed decoder's skip, were the limit lifted unscanned
    b'{"event_type":"price_change","market":"m","timestamp":"1","price_changes":[],"x":'
    + b"[" * 5_000_000 + b"]" * 5_000_000 + b"}",
    # deeper than the scan's bound, within the interpreter's: the typed decoder skips the key
    b'{"event_type":"price_change","market":"m","timestamp":"1","price_changes":[],"x":'
    + b"[" * 500 + b"]" * 500 + b"}",
)

_DEEP_CHILD = """
import sys
if sys.argv[1] != "default":
    sys.setrecursionlimit(int(sys.argv[1]))
from bot.venue.models import decode_market_frame, decode_user_frame
from bot.venue.models.decoding import DecodeError
from tests.property.test_payload_fuzz import DEEP_FRAMES
for frame in DEEP_FRAMES:
    for dec in (decode_market_frame, decode_user_frame):
        try:
            out = dec(frame)
        except DecodeError as exc:
            out = str(exc)
        print(dec.__name__, type(out).__name__, len(out) if isinstance(out, list) else out[:60])
"""


@pytest.mark.parametrize("limit", ["default", "100000000"])
def test_deep_frames_never_exhaust_the_c_stack_whatever_the_recursion_limit(limit: str) -> None:
    """Unscanned, a free-form decode of any of these frames, or a typed one of the last with the
    recursion limit lifted, exhausts the C stack (a segfault). At the default limit the typed
    decoders take what fits them unscanned (deeper than the interpreter's limit: a RecursionError,
    the same DecodeError); lifted, every frame is scanned first."""
    import subprocess
    import sys

    from tests.conftest import REPO

    done = subprocess.run([sys.executable, "-c", _DEEP_CHILD, limit], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-500:]
    lines = done.stdout.splitlines()
    assert len(lines) == 2 * len(DEEP_FRAMES)
    typed = {12} if limit == "default" else set()  # taken by the typed decoder, unscanned
    assert [lines[i] for i in sorted(typed)] == ["decode_market_frame list 1"] * len(typed)
    assert all(ln.endswith("str cannot decode frame: JSON nested deeper than 32 levels")
               for i, ln in enumerate(lines) if i not in typed)


def test_a_typed_frame_is_never_scanned_and_a_deep_one_is_a_decode_error(monkeypatch) -> None:
    """The typed path (a ``price_change`` frame, a tagged event) decodes without the depth scan,
    and a value nested far past the interpreter's limit under a key it does not hold is skipped
    into a clean DecodeError, in this very process (no crash, no scan)."""
    import sys

    from bot.venue.models import ws

    def scanned(data: Any) -> bool:
        raise AssertionError("the typed path scanned a frame")

    limit = sys.getrecursionlimit()  # another test of this process may have raised it (a doc build does)
    sys.setrecursionlimit(1000)  # the interpreter's default: the typed path then never scans
    try:
        _typed_frames_unscanned(monkeypatch, ws, scanned)
    finally:
        sys.setrecursionlimit(limit)


def _typed_frames_unscanned(monkeypatch: Any, ws: Any, scanned: Any) -> None:
    monkeypatch.setattr(ws, "too_deep", scanned)
    (pc,) = decode_market_frame(raw("realworld/nautechsystems__nautilus_trader/tests/integration_tests/adapters/"
                                    "polymarket/resources/ws_messages/price_change_v2.json"))
    assert pc.price_changes
    for frame in (DEEP_FRAMES[2], DEEP_FRAMES[3]):  # 200,000 levels under an unknown key
        with pytest.raises(DecodeError, match="nested deeper than 32 levels"):
            decode_market_frame(frame)
    (shallow,) = decode_market_frame(DEEP_FRAMES[6])  # 500 levels: deeper than the scan's bound, skipped
    assert shallow.price_changes == []


class Loose(msgspec.Struct):
    extra: dict[str, Any]


class Nested(msgspec.Struct):
    child: Nested | None = None


def test_the_frame_models_are_of_fixed_depth_and_a_free_form_model_is_not() -> None:
    from bot.venue.models import ws
    from bot.venue.models.decoding import fixed_depth

    assert ws._TYPED_FIXED
    assert not fixed_depth(Loose) and not fixed_depth(list[Any]) and not fixed_depth(Nested)
    assert fixed_depth(list[dict[str, int]]) and fixed_depth(ws.PriceChangeEvent)

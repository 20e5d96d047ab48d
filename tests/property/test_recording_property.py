"""Property tests of the recording format: any line decodes to a record or a typed error, replay of
any mutated line never crashes, frames round-trip byte for byte, and merged runs come out in
receive-time order."""

from __future__ import annotations

import random
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.backtest.recording import (
    KINDS, Header, LineError, RecordingWriter, WriterConfig, WsLine, decode_line, fast_ws, raw_lines,
)
from bot.backtest.replay import Gap, ReplayStats, _File, replay
from bot.venue.models.ws import LastTradePriceEvent, decode_market_frame

REPO = Path(__file__).resolve().parents[2]
SAMPLE = sorted((REPO / "data" / "sample").glob("*.jsonl.zst"))


def _real_lines() -> list[bytes]:
    """A few lines of every kind from the sample recording."""
    lines = [line for p in SAMPLE for line in raw_lines(p) if type(line) is bytes]
    by_kind: dict[bytes, list[bytes]] = {}
    for line in lines:
        kind = line[line.find(b'"k":"') + 5:][:6]
        by_kind.setdefault(kind, []).append(line)
    rng = random.Random(3)
    return [line for group in by_kind.values() for line in rng.sample(group, min(4, len(group)))]


REAL = _real_lines()
HEADER = decode_line(next(raw_lines(SAMPLE[0])))
assert isinstance(HEADER, Header)


@st.composite
def mutated(draw) -> bytes:
    line = bytearray(draw(st.sampled_from(REAL)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "splice"]))
        pos = draw(st.integers(0, max(0, len(line) - 1)))
        if op == "flip" and line:
            line[pos] = draw(st.integers(0, 255))
        elif op == "insert":
            line[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete" and line:
            del line[pos:pos + draw(st.integers(1, 16))]
        elif op == "truncate":
            del line[pos:]
        elif op == "splice":
            other = draw(st.sampled_from(REAL))
            cut = draw(st.integers(0, len(other)))
            line[pos:] = other[cut:]
    return bytes(line).replace(b"\n", b" ")


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(line=mutated())
def test_any_mutation_of_a_real_line_is_a_record_or_a_typed_error(line: bytes) -> None:
    try:
        rec = decode_line(line)
    except LineError:
        return
    assert type(rec).__struct_config__.tag in KINDS and 0 <= rec.t < 2**63


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(line=mutated(), levels=st.booleans())
def test_replaying_any_mutation_of_a_real_line_gives_events_never_a_crash(line: bytes, levels: bool) -> None:
    stats = ReplayStats()
    st_ = _File(SAMPLE[0], HEADER, stats, strict=False, levels=levels)
    events = st_.line(line)
    for t, ev in events:
        assert isinstance(t, int) and t >= HEADER.t
    if stats.bad_lines:
        assert len(events) == 1 and isinstance(events[0][1], Gap)


@settings(max_examples=60, deadline=None)
@given(frames=st.lists(st.binary(max_size=200) | st.text(max_size=80).map(str.encode), max_size=30))
def test_frames_round_trip_byte_for_byte(tmp_path_factory, frames: list[bytes]) -> None:
    tmp = tmp_path_factory.mktemp("rt")
    w = RecordingWriter(WriterConfig(directory=str(tmp), flush_bytes=256), run="rt")
    for i, f in enumerate(frames):
        w.ws(i % 2, f, 10**18 + i)
    w.close()
    got = [rec.frame for rec in (decode_line(line) for line in raw_lines(w.path)) if isinstance(rec, WsLine)]
    assert got == frames


@settings(max_examples=60, deadline=None)
@given(runs=st.lists(st.lists(st.integers(0, 40), min_size=0, max_size=25), min_size=1, max_size=5),
       rotate=st.integers(2, 10))
def test_runs_merge_in_receive_time_order_ties_in_the_order_given(tmp_path_factory, runs, rotate) -> None:
    tmp = tmp_path_factory.mktemp("merge")
    paths: list[Path] = []
    expected = []
    for r, steps in enumerate(runs):
        w = RecordingWriter(WriterConfig(directory=str(tmp / f"r{r}"), flush_bytes=1), run=f"run{r}",
                            clock_ns=lambda: 10**18)
        t = 10**18
        for i, step in enumerate(steps):
            t += step  # non-decreasing within a run; equal times across runs are common
            w.ws(0, b'{"event_type":"last_trade_price","asset_id":"a","market":"m","price":"0.5","side":"BUY",'
                    b'"size":"1","timestamp":"1","transaction_hash":"%d.%d"}' % (r, i), t)
            expected.append((t, r, i))
            if i % rotate == rotate - 1:
                w.rotate()
        w.close()
        paths += w.files
    random.Random(len(paths)).shuffle(paths)  # the order of files within a run does not matter
    order = sorted({int(p.parent.name[1:]) for p in paths}, key=lambda r: [q.parent.name for q in paths].index(f"r{r}"))
    rank = {r: k for k, r in enumerate(order)}  # runs rank by their first file named
    got = [(t, tuple(map(int, ev.transaction_hash.split(".")))) for t, ev in replay(paths, cache=False)
           if isinstance(ev, LastTradePriceEvent)]
    assert [t for t, _ in got] == sorted(t for t, _ in got)
    assert sorted(got, key=lambda x: (x[0], rank[x[1][0]])) == got  # ties: the runs' order
    assert sorted(got) == sorted((t, (r, i)) for t, r, i in expected)
    for r in range(len(runs)):  # each run in its own order
        mine = [i for _, (rr, i) in got if rr == r]
        assert mine == sorted(mine)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(line=mutated())
def test_the_fast_path_reads_no_line_the_general_decoder_refuses(line: bytes) -> None:
    fast = fast_ws(line)
    if fast is None:
        return
    try:
        events = decode_market_frame(fast[1])
    except Exception:  # noqa: BLE001 - a frame the stream skips; the line itself is judged below
        events = []
    if events:  # the fast path used it: the line must be a valid ws line of that time and frame
        rec = decode_line(line)
        assert isinstance(rec, WsLine) and (rec.t, rec.frame) == fast

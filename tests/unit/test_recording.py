"""The recording format: lines, the writer's blocks and files, the reader, the replay of a file."""

from __future__ import annotations

import json
import os
import re
import signal
import tracemalloc
from pathlib import Path

import msgspec
import pytest
import zstandard

from bot.backtest.recording import (
    FORMAT, Damage, EndLine, FileReader, GapLine, Header, LineError, MarketMeta, RecordingError,
    RecordingWriter, RestBook, UnknownKind, WriterConfig, WsLine, decode_line, fast_ws, market_meta, raw_lines,
    read_header,
)
from bot.backtest.replay import Gap, ReplayStats, markets, replay
from bot.core.book import Books
from bot.core.markets import MarketInfo
from bot.venue.models.book import Level, OrderBook
from bot.venue.models.markets import ClobMarket
from bot.venue.models.ws import BookEvent, LastTradePriceEvent, PriceChangeEvent, decode_market_frame

REPO = Path(__file__).resolve().parents[2]
T0 = 1_800_000_000_000_000_000
META = MarketMeta(condition_id="0xm", tokens=["111", "222"], outcomes=["Yes", "No"], tick_size="0.001",
                  min_order_size="2.5", neg_risk=True, event_id="ev", question="Q?", slug="q")


class Clock:
    """A settable clock for the writer: receive times and its monotonic deadlines."""

    def __init__(self) -> None:
        self.ns = T0
        self.mono = 100.0

    def time_ns(self) -> int:
        return self.ns

    def monotonic(self) -> float:
        return self.mono


def writer(tmp_path: Path, clock: Clock | None = None, **config) -> RecordingWriter:
    clock = clock or Clock()
    cfg = WriterConfig(directory=str(tmp_path), **config)
    return RecordingWriter(cfg, source="ws://test", tokens=["111", "222"], markets=[META], run="run1",
                           clock_ns=clock.time_ns, monotonic=clock.monotonic)


def trade(i: int, token: str = "111") -> bytes:
    return (b'{"event_type":"last_trade_price","asset_id":"%s","market":"0xm","price":"0.5","side":"BUY",'
            b'"size":"1","timestamp":"1","transaction_hash":"%d"}' % (token.encode(), i))


def zstd_frames(path: Path) -> list[bytes]:
    """The decompressed content of each zstd frame of a file."""
    data = path.read_bytes()
    out = []
    while data:
        size = zstandard.frame_content_size(data)
        params = zstandard.get_frame_parameters(data)
        assert params.has_checksum
        dobj = zstandard.ZstdDecompressor().decompressobj()
        out.append(dobj.decompress(data))
        data = dobj.unused_data
        assert size == len(out[-1])
    return out


# -- lines -------------------------------------------------------------------------------------


def test_frames_are_written_exactly_as_received_verbatim_or_in_base64(tmp_path: Path) -> None:
    frames = [
        trade(1),
        b'[{"event_type":"book","asset_id":"111","market":"0xm","timestamp":"5","bids":[],"asks":[]}]',
        b'PONGish not json',
        b'{"a":\n1}',  # a line break inside: base64
        b' {"a":1}',  # surrounding whitespace: base64
        b'{"a":"\xff"}',  # invalid UTF-8: base64
        b'\x00\x01\x02 binary',
        '{"a":"caf\u00e9"}'.encode(),  # valid UTF-8: verbatim
    ]
    w = writer(tmp_path)
    for i, f in enumerate(frames):
        w.ws(i % 3, f, T0 + i)
    w.close()
    lines = [line for line in raw_lines(w.path) if type(line) is bytes]
    ws = [decode_line(line) for line in lines if b'"k":"ws"' in line]
    assert [rec.frame for rec in ws] == frames
    assert [rec.c for rec in ws] == [i % 3 for i in range(len(frames))]
    verbatim = [b'"f":' in line for line in lines if b'"k":"ws"' in line]
    assert verbatim == [True, True, False, False, False, False, False, True]
    for line in lines:  # every line is plain JSON
        json.loads(line)


def test_receive_times_never_go_back_within_a_run(tmp_path: Path) -> None:
    clock = Clock()
    w = writer(tmp_path, clock)
    w.ws(0, trade(1), T0 + 50)
    w.ws(0, trade(2), T0 + 10)  # the wall clock stepped back
    clock.ns = T0 + 5
    w.gap("x")
    w.ws(0, trade(3), T0 + 60)
    w.close()
    times = [rec.t for rec in FileReader(w.path) if not isinstance(rec, Damage)]
    assert times == [T0 + 50, T0 + 50, T0 + 50, T0 + 60, T0 + 60]


def test_decode_line_types_every_kind_and_refuses_anything_else() -> None:
    assert isinstance(decode_line(b'{"k":"gap","t":5,"tokens":["a"]}'), GapLine)
    rec = decode_line(b'{"f":{"x":[1,2]},"c":3,"k":"ws","t":7,"extra":{"ignored":true}}')  # any key order
    assert isinstance(rec, WsLine) and (rec.t, rec.c, rec.frame) == (7, 3, b'{"x":[1,2]}')
    assert decode_line(b'{"k":"end","t":9}') == EndLine(t=9, reason="stop")
    with pytest.raises(UnknownKind):
        decode_line(b'{"k":"later_kind","t":1}')
    bad = [b"", b"not json", b"[1,2]", b'{"k":"ws","t":1}', b'{"k":"ws","t":1,"f":1,"b":"AA=="}',
           b'{"k":"ws","t":-1,"f":1}', b'{"k":"ws","t":1,"b":"%%%"}', b'{"k":"gap"}', b'{"t":1}',
           b'{"k":"ws","t":9223372036854775808,"f":1}', b'{"k":"book","t":1,"book":{"asset_id":1}}']
    for line in bad:
        with pytest.raises(LineError):
            decode_line(line)


def test_fast_path_reads_only_the_writers_own_spelling() -> None:
    assert fast_ws(b'{"t":12,"k":"ws","c":0,"f":{"a":1}}') == (12, b'{"a":1}')
    for line in (b'{"t":012,"k":"ws","c":0,"f":1}', b'{"t":1_2,"k":"ws","c":0,"f":1}',
                 b'{"t":9223372036854775808,"k":"ws","c":0,"f":1}', b'{"t":1,"k":"ws","c":0,"b":"AA=="}',
                 b'{"k":"ws","t":1,"c":0,"f":1}', b'{"t":1,"k":"ws","c":0,"f":1} '):
        assert fast_ws(line) is None


# -- blocks and files --------------------------------------------------------------------------


def test_a_file_begins_with_a_block_holding_only_its_header(tmp_path: Path) -> None:
    w = writer(tmp_path)
    w.ws(0, trade(1))
    w.flush()
    w.ws(0, trade(2))
    w.close()
    blocks = zstd_frames(w.path)
    assert len(blocks) == 3
    header = decode_line(blocks[0].rstrip(b"\n"))
    assert blocks[0].count(b"\n") == 1 and isinstance(header, Header)
    assert (header.format, header.version, header.run, header.file, header.source) == (FORMAT, 1, "run1", 0, "ws://test")
    assert header.tokens == ["111", "222"] and header.markets == [META]
    assert blocks[2].endswith(b'{"k":"end","t":%d}\n' % T0)


def test_blocks_end_on_time_and_on_size(tmp_path: Path) -> None:
    clock = Clock()
    w = writer(tmp_path, clock, flush_s=1.0, flush_bytes=2000)
    w.ws(0, trade(1))
    assert not w.tick() and w.blocks == 1  # only the header block: not due yet
    clock.mono += 1.0
    w.tick()
    assert w.blocks == 2
    for i in range(40):  # about 190 bytes a line: a block ends every 2000 bytes without a tick
        w.ws(0, trade(i))
    assert w.blocks == 5
    w.close()


def test_files_rotate_on_size_and_time_and_replay_as_one_run(tmp_path: Path) -> None:
    clock = Clock()
    w = writer(tmp_path, clock, rotate_s=10.0, rotate_bytes=1024, flush_bytes=1)
    rotated: list[Path] = []
    w.on_rotate = rotated.append
    w.ws(0, trade(1))  # one line per block; the first file passes 1 KiB after a few
    while len(w.files) == 1:
        w.ws(0, trade(2))
    clock.mono += 10.0
    w.tick()  # on time
    w.ws(0, trade(3))
    w.close("SIGTERM")
    assert len(w.files) == 3 and rotated == w.files[1:]
    ends = [[r for r in FileReader(p) if isinstance(r, EndLine)] for p in w.files]
    assert [e[-1].reason for e in ends] == ["rotate", "rotate", "SIGTERM"]
    assert [e[-1].next for e in ends] == [w.files[1].name, w.files[2].name, ""]
    assert [read_header(p).file for p in w.files] == [0, 1, 2]
    events = list(replay(list(reversed(w.files)), cache=False))
    gaps = [ev for _, ev in events if isinstance(ev, Gap)]
    assert gaps == [Gap(("111", "222"), "recording ended: SIGTERM")]  # none at a rotation
    trades = [ev.transaction_hash for _, ev in events if isinstance(ev, LastTradePriceEvent)]
    assert trades[0] == "1" and trades[-1] == "3" and len(trades) == w.frames


def test_a_missing_file_of_a_run_is_a_gap(tmp_path: Path) -> None:
    clock = Clock()
    w = writer(tmp_path, clock)
    for i in range(3):
        clock.ns += 1000
        w.ws(0, trade(i))
        w.rotate()
    w.close()
    files = [w.files[0], w.files[2], w.files[3]]
    gaps = [(t, ev) for t, ev in replay(files, cache=False) if isinstance(ev, Gap)]
    assert gaps[0][1] == Gap(("111", "222"), "run run1: file 1 missing")
    assert gaps[0][0] == read_header(w.files[2]).t


def test_a_killed_writer_loses_at_most_the_block_it_was_filling(tmp_path: Path) -> None:
    """A child process writes, ends a block, writes more and is SIGKILLed: every line of every
    ended block replays, the unended one is lost, and the file ends in a gap."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            w = RecordingWriter(WriterConfig(directory=str(tmp_path), flush_s=3600, flush_bytes=2**30),
                                tokens=["111"], run="killed")
            for i in range(50):
                w.ws(0, trade(i))
            w.flush()
            for i in range(50, 80):
                w.ws(0, trade(i))
        finally:
            os.kill(os.getpid(), signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    (path,) = tmp_path.iterdir()
    stats = ReplayStats()
    events = list(replay([path], cache=False, stats=stats))
    trades = [int(ev.transaction_hash) for _, ev in events if isinstance(ev, LastTradePriceEvent)]
    assert trades == list(range(50))
    assert events[-1][1] == Gap(("111",), "no end line: the file was cut short")


def twenty_trades(tmp_path: Path):
    """A closed recording of 20 trade prints in blocks of about 400 bytes."""
    w = writer(tmp_path, flush_bytes=400)
    for i in range(20):
        w.ws(0, trade(i))
    w.close()
    return w


def test_a_file_cut_anywhere_replays_up_to_the_cut(tmp_path: Path) -> None:
    w = twenty_trades(tmp_path)
    data = w.path.read_bytes()
    header_block = len(zstandard.ZstdCompressor(level=3, write_checksum=True).compress(zstd_frames(w.path)[0]))
    cut_file = tmp_path / "cut.jsonl.zst"
    seen_before = -1
    for cut in range(header_block, len(data) + 1, 7):
        cut_file.write_bytes(data[:cut])
        events = list(replay([cut_file], cache=False))
        trades = [int(ev.transaction_hash) for _, ev in events if isinstance(ev, LastTradePriceEvent)]
        assert trades == list(range(len(trades)))  # a prefix, in order
        assert len(trades) >= seen_before  # more bytes never give fewer lines
        seen_before = len(trades)
        assert isinstance(events[-1][1], Gap)
    assert seen_before == 20


def test_files_that_are_not_recordings_are_refused_with_one_line(tmp_path: Path) -> None:
    cases = {
        "empty.jsonl": b"",
        "text.jsonl": b"hello\n",
        "other.jsonl": b'{"k":"header","t":1,"format":"something-else","version":1}\n',
        "v2.jsonl": b'{"k":"header","t":1,"format":"pmbot-recording","version":2}\n',
        "gap-first.jsonl": b'{"k":"gap","t":1}\n',
        "bad.jsonl.zst": b"\x28\xb5\x2f\xfd garbage",
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(RecordingError) as err:
            list(replay([tmp_path / name]))
        assert "\n" not in str(err.value) and name in str(err.value)
    with pytest.raises(RecordingError, match="no such recording"):
        replay([tmp_path / "missing.jsonl.zst"])


def test_unreadable_lines_are_gaps_or_errors_when_strict(tmp_path: Path) -> None:
    path = tmp_path / "damaged.jsonl"
    path.write_bytes(b"\n".join([
        b'{"k":"header","t":1,"format":"pmbot-recording","version":1,"tokens":["111"]}',
        b'{"t":2,"k":"ws","f":' + trade(1) + b"}",
        b'{"t":3,"k":"ws","f":{broken',
        b'{"k":"newer_kind","t":4}',
        b'{"t":5,"k":"ws","f":{"event_type":"book","asset_id":5}}',  # known event, bad shape: skipped
        b'{"t":6,"k":"ws","f":' + trade(2) + b"}",
        b'{"k":"end","t":7}',
    ]) + b"\n")
    stats = ReplayStats()
    events = [ev for _, ev in replay([path], cache=False, stats=stats)]
    assert [type(ev).__name__ for ev in events] == ["LastTradePriceEvent", "Gap", "LastTradePriceEvent", "Gap"]
    assert events[1].tokens == ("111",) and events[1].reason.startswith("unreadable line")
    assert (stats.bad_lines, stats.unknown_lines, stats.frame_errors) == (1, 1, 1)
    with pytest.raises(LineError, match="damaged.jsonl"):
        list(replay([path], cache=False, strict=True))


# -- metadata ----------------------------------------------------------------------------------


def test_market_metadata_builds_the_core_market() -> None:
    assert META.info() == MarketInfo(condition_id="0xm", tokens=("111", "222"), tick=1_000, min_size=2_500_000,
                                     neg_risk=True, event_id="ev", outcomes=("Yes", "No"))
    for bad in (msgspec.structs.replace(META, tokens=["1"]), msgspec.structs.replace(META, tick_size="1"),
                msgspec.structs.replace(META, tick_size="x"), msgspec.structs.replace(META, min_order_size="-1")):
        with pytest.raises(RecordingError):
            bad.info()


def test_metadata_of_a_clob_market_keeps_exact_decimals() -> None:
    m = msgspec.convert({"condition_id": "0xc", "minimum_tick_size": 0.001, "minimum_order_size": 15,
                         "neg_risk": True, "neg_risk_market_id": "0xev", "question": "Q", "market_slug": "s",
                         "tokens": [{"token_id": "1", "outcome": "Up"}, {"token_id": "2", "outcome": "Down"}]},
                        ClobMarket)
    meta = market_meta(m)
    assert (meta.tick_size, meta.min_order_size, meta.event_id, meta.outcomes) == ("0.001", "15", "0xev", ["Up", "Down"])
    assert meta.info().tick == 1_000


def test_rest_books_and_metadata_replay_as_typed_events(tmp_path: Path) -> None:
    w = writer(tmp_path)
    book = OrderBook(market="0xm", asset_id="111", timestamp="9", bids=[Level(price="0.4", size="10")], asks=[])
    w.rest_book(book)
    w.market(msgspec.structs.replace(META, tick_size="0.01"))
    w.gap("stale", ["222"])
    w.close()
    events = [ev for _, ev in replay([w.path], cache=False)]
    assert events[0] == META
    assert type(events[1]) is RestBook and events[1].asset_id == "111" and events[1].bids == book.bids
    assert events[2].tick_size == "0.01"
    assert events[3] == Gap(("222",), "stale")
    assert markets([w.path]) == [META]


# -- a recording written by hand, from the format's page ---------------------------------------


def hand_written() -> bytes:
    doc = (REPO / "docs" / "recording-format.md").read_text()
    return re.search(r"```jsonl\n(.*?)```", doc, re.S).group(1).encode()


@pytest.mark.parametrize("compressed", [False, True])
def test_the_recording_written_by_hand_in_the_docs_replays(tmp_path: Path, compressed: bool) -> None:
    data = hand_written()
    if compressed:  # as `zstd hand.jsonl` would: one frame
        path = tmp_path / "hand.jsonl.zst"
        path.write_bytes(zstandard.ZstdCompressor().compress(data))
    else:
        path = tmp_path / "hand.jsonl"
        path.write_bytes(data)
    events = list(replay([path], cache=False))
    kinds = [type(ev).__name__ for _, ev in events]
    assert kinds == ["MarketMeta", "RestBook", "BookEvent", "PriceChangeEvent", "LastTradePriceEvent", "Gap",
                     "BookEvent", "Gap"]
    assert [t for t, _ in events] == sorted(t for t, _ in events)
    assert events[0][1].info().tokens == ("111", "222")
    assert events[4][1].price == "0.6" and events[4][1].asset_id == "111"
    assert events[5][1] == Gap(("111",), "disconnected")
    assert events[-1][1] == Gap(("111", "222"), "recording ended: stop")
    pc = events[3][1]
    assert isinstance(pc, PriceChangeEvent) and [c.asset_id for c in pc.price_changes] == ["111", "222"]
    assert isinstance(events[6][1], BookEvent) and events[6][1].bids[0].price == "0.44"


def test_the_sample_recording_replays_whole(tmp_path: Path) -> None:
    sample = sorted((REPO / "data" / "sample").glob("*.jsonl.zst"))
    assert len(sample) >= 1 and sum(p.stat().st_size for p in sample) < 1_000_000
    stats = ReplayStats()
    events = list(replay(sample, cache=False, stats=stats))
    assert stats.bad_lines == stats.frame_errors == stats.damaged_files == stats.held_times == 0
    assert len(markets(sample)) == 3
    frames = sum(1 for line in (ln for p in sample for ln in raw_lines(p)) if b'"k":"ws"' in line[:40])
    assert stats.frames == frames > 1000
    assert [t for t, _ in events] == sorted(t for t, _ in events)
    assert isinstance(events[-1][1], Gap) and events[-1][1].reason == "recording ended: duration"


def test_frames_in_a_recording_decode_as_the_live_stream_decodes_them(tmp_path: Path) -> None:
    sample = sorted((REPO / "data" / "sample").glob("*.jsonl.zst"))
    expected = []
    for p in sample:
        for line in raw_lines(p):
            rec = decode_line(line)
            if isinstance(rec, WsLine):
                expected += [(rec.t, ev) for ev in decode_market_frame(rec.frame)]
    got = [(t, ev) for t, ev in replay(sample, cache=False)
           if isinstance(ev, (BookEvent, PriceChangeEvent, LastTradePriceEvent)) and type(ev) is not RestBook]
    assert got == expected


def test_reading_holds_one_chunk_and_one_line(tmp_path: Path, monkeypatch) -> None:
    import bot.backtest.recording as recording

    monkeypatch.setattr(recording, "READ_CHUNK", 64)
    monkeypatch.setattr(recording, "MAX_LINE_BYTES", 500)
    w = writer(tmp_path)
    w.ws(0, trade(1))
    w.ws(0, b'{"x":"' + b"a" * 1000 + b'"}')  # a line longer than the reader holds
    w.ws(0, trade(2))
    w.close()
    items = list(FileReader(w.path))
    assert isinstance(items[0], WsLine) and isinstance(items[1], Damage) and "longer than 500" in items[1].reason
    assert len(items) == 3 and isinstance(items[2], Damage)  # nothing after it is read; no end line seen


def _peak_while(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_writing_and_replaying_hold_flat_memory_however_long_the_recording(tmp_path: Path, monkeypatch) -> None:
    """Four times the frames: the writer's peak stays within its block, replay's within a read
    chunk (small here, so that both recordings are many chunks long)."""
    import bot.backtest.cache as cache_mod
    import bot.backtest.recording as recording

    monkeypatch.setattr(recording, "READ_CHUNK", 32 * 1024)
    monkeypatch.setattr(cache_mod, "CHUNK_RECORDS", 128)
    def write(n: int, where: Path) -> Path:
        w = RecordingWriter(WriterConfig(directory=str(where), flush_bytes=64 * 1024), run=where.name)
        for i in range(n):
            w.ws(0, trade(i, token=str(i % 7)), T0 + i)
        w.close()
        return w.path

    short, long = tmp_path / "short", tmp_path / "long"
    writes = [_peak_while(lambda: write(n, d)) for n, d in ((2_000, short), (8_000, long))]
    assert max(writes) < 1_000_000 and writes[1] < writes[0] * 1.5 + 100_000

    def replay_all(path: Path, cache: bool) -> None:
        books = Books(track_all=True)
        for _, ev in replay([path], cache=cache):
            books.apply_event(ev)

    for cache in (False, True, True):  # without the cache, building it, reading it
        peaks = [_peak_while(lambda: replay_all(next(d.iterdir()), cache)) for d in (short, long)]
        assert peaks[1] < peaks[0] * 1.25 + 50_000, (cache, peaks)


def test_a_replay_counts_the_stretches_it_could_not_read_from_the_file_and_from_its_cache(tmp_path: Path) -> None:
    w = twenty_trades(tmp_path)
    data = w.path.read_bytes()
    cut = tmp_path / "cut.jsonl.zst"
    cut.write_bytes(data[: len(data) * 2 // 3])
    counts = []
    for cache in (False, True, True):  # the file; the file, building its cache; the cache
        stats = ReplayStats()
        list(replay([cut], cache=cache, stats=stats))
        counts.append((stats.unreadable, stats.cached_files))
    assert counts == [(1, 0), (1, 0), (1, 1)]
    stats = ReplayStats()
    list(replay([w.path], cache=False, stats=stats))
    assert stats.unreadable == 0  # a whole file: nothing unreadable, though a recorder's gap would be a gap

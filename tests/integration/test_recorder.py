"""The recorder over real sockets against the local exchange: what it writes is what it received,
reconnects are gaps followed by fresh snapshots, and `bot record` stops cleanly on SIGTERM and
leaves a readable file when killed."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from bot.backtest.recorder import Recorder, RecorderConfig, resolve_markets
from bot.backtest.recording import (
    BookLine, EndLine, FileReader, GapLine, Header, MarketLine, WriterConfig, WsLine, raw_lines,
)
from bot.backtest.replay import Gap, ReplayStats, markets, replay
from bot.exchange.config import FaultConfig, ServerFlowConfig
from bot.venue.catalog import CatalogClient
from bot.venue.clob import ClobClient
from bot.venue.models.ws import decode_market_frame
from bot.venue.stream import StreamConfig
from bot.venue.transport import Transport
from tests.integration.exchange_fixture import start_exchange, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

REPO = Path(__file__).resolve().parents[2]
FLOW = ServerFlowConfig(enabled=True, interval_s=0.05)


def stream_config(ex: Any) -> StreamConfig:
    return StreamConfig(url=ex.urls.ws, ping_interval_s=0.5, stale_after_s=3.0, check_interval_s=0.2,
                        backoff_base_s=0.05, backoff_cap_s=0.2, use_env_proxy=False)


class Watching(Recorder):
    """A recorder that also keeps what its stream tap was handed."""

    def __init__(self, *a: Any, **k: Any) -> None:
        super().__init__(*a, **k)
        self.seen: list[tuple[int, int, bytes]] = []

    def _on_frame(self, shard: int, frame: bytes, recv_ns: int) -> None:
        super()._on_frame(shard, frame, recv_ns)
        if frame != b"PONG":
            self.seen.append((shard, frame, recv_ns))


async def record(ex: Any, tmp: Path, until: Any, n_markets: int = 2, **writer: Any) -> Watching:
    async with Transport(ex.urls.clob) as t, Transport(ex.urls.catalog) as c:
        clob = ClobClient(t)
        chosen = await resolve_markets(clob, CatalogClient(c), limit=n_markets)
        config = RecorderConfig(writer=WriterConfig(directory=str(tmp), flush_s=0.2, **writer),
                                stream=stream_config(ex))
        rec = Watching(clob, chosen, config)
        async with anyio.create_task_group() as tg:
            async def stop_when_done() -> None:
                with anyio.fail_after(45):
                    while not until(rec):
                        await anyio.sleep(0.02)
                rec.request_stop("enough")

            tg.start_soon(stop_when_done)
            await rec.run(signals=False)
        return rec


def test_a_recording_replays_exactly_the_frames_received_in_order(tmp_path: Path) -> None:
    ex = start_exchange(flow=FLOW)
    try:
        rec = anyio.run(record, ex, tmp_path, lambda r: len(r.seen) >= 40)
    finally:
        ex.stop()
    assert rec.writer is not None and rec.writer.closed
    (path,) = rec.writer.files
    written = [r for r in FileReader(path)]
    header = FileReader(path).header
    assert isinstance(header, Header) and header.tokens == rec.tokens and header.markets == rec.markets
    ws = [r for r in written if isinstance(r, WsLine)]
    assert [(r.c, r.frame, r.t) for r in ws] == rec.seen  # every frame, byte for byte, with its time
    assert isinstance(written[-1], EndLine) and written[-1].reason == "enough"
    # replay: the events of those frames, in order, and the metadata of the markets
    stats = ReplayStats()
    events = list(replay([path], cache=False, stats=stats))
    expected = [(t, ev) for _, frame, t in rec.seen for ev in decode_market_frame(frame)]
    got = [(t, ev) for t, ev in events if type(ev).__name__ in
           ("BookEvent", "PriceChangeEvent", "LastTradePriceEvent", "TickSizeChangeEvent")]
    assert got == expected and len(got) >= 40
    assert stats.frames == len(rec.seen) and stats.frame_errors == stats.bad_lines == 0
    recorded = markets([path])
    assert [m.condition_id for m in recorded] == [m.condition_id for m in rec.markets]
    for m in recorded:
        info = m.info()
        assert info.tick == 10_000 and set(info.tokens) <= set(header.tokens)
    # a REST snapshot of every token after the connection came up
    books = [r for r in written if isinstance(r, BookLine)]
    assert {b.book.asset_id for b in books} == set(rec.tokens)


def test_a_reconnect_is_a_gap_then_fresh_snapshots_and_metadata(tmp_path: Path) -> None:
    ex = start_exchange(flow=FLOW, faults=FaultConfig(ws_drop_every_s=1.5))

    def reconnected_and_snapshotted(r: Watching) -> bool:
        if r.writer is None or r.gaps < 1:
            return False
        return r.snapshots >= 2 * len(r.tokens)  # the start's and the reconnect's

    try:
        rec = anyio.run(record, ex, tmp_path, reconnected_and_snapshotted)
    finally:
        ex.stop()
    (path,) = rec.writer.files
    written = [r for r in FileReader(path)]
    gap_at = next(i for i, r in enumerate(written) if isinstance(r, GapLine))
    gap = written[gap_at]
    assert set(gap.tokens) == set(rec.tokens) and gap.reason.startswith("disconnected")
    after = written[gap_at + 1:]
    assert {r.book.asset_id for r in after if isinstance(r, BookLine)} == set(rec.tokens)
    assert {r.market.condition_id for r in after if isinstance(r, MarketLine)} == {m.condition_id for m in rec.markets}
    # in replay: the gap marks every token stale, then a snapshot of each comes after it
    events = list(replay([path], cache=False))
    i = next(i for i, (_, ev) in enumerate(events) if isinstance(ev, Gap))
    t_gap = events[i][0]
    resnapped = {ev.asset_id for t, ev in events[i + 1:] if type(ev).__name__ in ("RestBook", "BookEvent") and t >= t_gap}
    assert resnapped == set(rec.tokens)


# -- the command ----------------------------------------------------------------------------------


def config_file(tmp_path: Path, ex: Any) -> Path:
    u = ex.urls
    path = tmp_path / "bot.toml"
    path.write_text(u.venue_toml() +
                    f'\n[log]\nlevel = "warning"\n')
    return path


def start_record(tmp_path: Path, ex: Any, *extra: str) -> tuple[subprocess.Popen, Path]:
    out = tmp_path / "rec"
    p = subprocess.Popen([sys.executable, "-m", "bot.cli", "record", "--config", str(config_file(tmp_path, ex)),
                          "--out", str(out), "--limit", "2", *extra], cwd=REPO, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    return p, out


def frames_in(out: Path) -> int:
    files = sorted(out.glob("*.jsonl.zst")) if out.exists() else []
    n = 0
    for path in files:
        try:
            n += sum(1 for line in raw_lines(path) if type(line) is bytes and b'"k":"ws"' in line[:40])
        except OSError:
            return 0
    return n


def test_sigterm_leaves_a_complete_readable_file(tmp_path: Path) -> None:
    ex = start_exchange(flow=FLOW)
    try:
        p, out = start_record(tmp_path, ex)
        try:
            wait_for(lambda: frames_in(out) >= 30, deadline_s=30, what="frames on disk")
        finally:
            p.send_signal(signal.SIGTERM)
            stdout, stderr = p.communicate(timeout=30)
    finally:
        ex.stop()
    assert p.returncode == 0, stderr
    assert "Traceback" not in stderr and "stopped by SIGTERM" in stdout
    (path,) = sorted(out.glob("*.jsonl.zst"))
    records = list(FileReader(path))
    assert isinstance(records[-1], EndLine) and records[-1].reason == "SIGTERM"
    stats = ReplayStats()
    events = list(replay([path], cache=False, stats=stats))
    assert stats.damaged_files == stats.bad_lines == 0 and stats.frames >= 30
    assert [ev for _, ev in events if isinstance(ev, Gap)] == [Gap(tuple(FileReader(path).header.tokens),
                                                                   "recording ended: SIGTERM")]


def test_sigkill_leaves_a_file_that_replays_up_to_its_last_block(tmp_path: Path) -> None:
    ex = start_exchange(flow=FLOW)
    try:
        p, out = start_record(tmp_path, ex, "--flush-s", "0.2")
        try:
            wait_for(lambda: frames_in(out) >= 30, deadline_s=30, what="frames on disk")
            before = frames_in(out)
        finally:
            p.send_signal(signal.SIGKILL)
            p.communicate(timeout=30)
    finally:
        ex.stop()
    assert p.returncode == -signal.SIGKILL
    (path,) = sorted(out.glob("*.jsonl.zst"))
    stats = ReplayStats()
    events = list(replay([path], cache=False, stats=stats))
    assert stats.frames >= before and stats.bad_lines == 0  # every block written before the kill
    assert events[-1][1].reason == "no end line: the file was cut short"


def test_bad_choices_end_with_one_line_and_code_2(tmp_path: Path) -> None:
    ex = start_exchange()
    try:
        cfg = config_file(tmp_path, ex)
        for args, words in ((["--out", str(tmp_path)], "choose what to record"),
                            (["--market", "0x" + "00" * 32], "0x" + "00" * 32),
                            (["--token", "123"], "123"),
                            (["--limit", "0"], "expected an integer in 1..100")):
            p = subprocess.run([sys.executable, "-m", "bot.cli", "record", "--config", str(cfg), *args],
                               cwd=REPO, capture_output=True, text=True, timeout=60)
            lines = p.stderr.strip().splitlines()
            assert p.returncode == 2 and len(lines) == 1 and words in lines[0], p.stderr
            assert "Traceback" not in p.stderr
    finally:
        ex.stop()
    assert not any(tmp_path.glob("*.jsonl.zst"))


def test_an_unreachable_venue_is_one_line(tmp_path: Path) -> None:
    cfg = tmp_path / "bot.toml"
    cfg.write_text('[venue]\nclob_url = "http://127.0.0.1:9"\nws_url = "ws://127.0.0.1:9"\n')
    p = subprocess.run([sys.executable, "-m", "bot.cli", "record", "--config", str(cfg), "--market", "0xabc",
                        "--out", str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "127.0.0.1:9" in p.stderr  # (the run's timeout bounds how long it may take)

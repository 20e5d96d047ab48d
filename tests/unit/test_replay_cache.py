"""The derived cache of a recording: built on first replay beside it, used while the recording is
unchanged, rebuilt when it changes, never trusted when damaged; the same events either way."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import bot.backtest.cache as cache_mod
from bot.backtest.cache import CacheError, cache_path
from bot.core.book import price_levels_of
from bot.backtest.recording import RecordingWriter, WriterConfig
from bot.backtest.replay import ReplayStats, replay
from bot.core.book import Books
from bot.core.levels import PriceLevels
from bot.venue.models.ws import PriceChangeEvent

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def sample(tmp_path: Path) -> list[Path]:
    """The sample recording, copied (a replay writes its cache beside it)."""
    out = []
    for p in sorted((REPO / "data" / "sample").glob("*.jsonl.zst")):
        out.append(Path(shutil.copy2(p, tmp_path / p.name)))
    return out


def books_state(events) -> list:
    books = Books(track_all=True)
    for _, ev in events:
        books.apply_event(ev)
    return [(b.token_id, b.bids, b.asks, b.hash, b.timestamp_ms, b.epoch, b.last_trade_price, b.tick)
            for b in books] + [books.errors, books.ignored]


def same_events(json_events, cached_events) -> None:
    assert len(json_events) == len(cached_events)
    for (t1, a), (t2, b) in zip(json_events, cached_events):
        assert t1 == t2
        if type(a) is PriceChangeEvent:
            assert type(b) is PriceLevels and b == price_levels_of(a)
        else:
            assert type(a) is type(b) and a == b


def test_the_first_replay_builds_the_cache_and_later_ones_read_it(sample: list[Path]) -> None:
    plain = list(replay(sample, cache=False))
    assert not any(cache_path(p).exists() for p in sample)
    first_stats = ReplayStats()
    first = list(replay(sample, stats=first_stats))
    assert first_stats.built_caches == 2 and first_stats.cached_files == 0
    assert all(cache_path(p).exists() for p in sample)
    again_stats = ReplayStats()
    again = list(replay(sample, stats=again_stats))
    assert again_stats.cached_files == 2 and again_stats.built_caches == 0 and again_stats.cached_events > 1000
    assert again == first
    same_events(plain, again)
    assert books_state(plain) == books_state(again)
    assert sum(1 for _, ev in again if type(ev) is PriceLevels) > 1000


def test_a_changed_recording_gets_a_new_cache(tmp_path: Path, sample: list[Path]) -> None:
    list(replay(sample[:1]))
    first = cache_path(sample[0]).stat().st_mtime_ns
    # the same file name, other content (a recording of one frame)
    w = RecordingWriter(WriterConfig(directory=str(tmp_path / "new")), run="new")
    w.ws(0, b'{"event_type":"last_trade_price","asset_id":"a","market":"m","price":"0.5","side":"BUY",'
            b'"size":"1","timestamp":"1"}', 10**18)
    w.close()
    os.replace(w.path, sample[0])
    stats = ReplayStats()
    events = list(replay(sample[:1], stats=stats))
    assert stats.built_caches == 1 and stats.cached_files == 0
    assert [type(ev).__name__ for _, ev in events] == ["LastTradePriceEvent", "Gap"]
    assert cache_path(sample[0]).stat().st_mtime_ns != first
    assert list(replay(sample[:1])) == events  # and the new cache is used


def test_a_damaged_cache_is_an_error_once_then_rebuilt(sample: list[Path]) -> None:
    plain = list(replay(sample[:1], cache=False))
    list(replay(sample[:1]))
    path = cache_path(sample[0])
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path)  # the recording's stamp is what counts: the cache still looks current
    with pytest.raises(CacheError, match="damaged cache"):
        list(replay(sample[:1]))
    assert not path.exists()
    stats = ReplayStats()
    same_events(plain, list(replay(sample[:1], stats=stats)))
    assert stats.built_caches == 1


def test_an_incomplete_cache_is_never_used(sample: list[Path]) -> None:
    list(replay(sample[:1]))
    path = cache_path(sample[0])
    path.write_bytes(path.read_bytes()[:-4])  # no end marker
    stats = ReplayStats()
    list(replay(sample[:1], stats=stats))
    assert stats.cached_files == 0 and stats.built_caches == 1


def test_an_abandoned_replay_leaves_no_cache(sample: list[Path]) -> None:
    events = replay(sample[:1])
    for i, _ in enumerate(events):
        if i == 100:
            break
    events.close()
    assert sorted(p.name for p in sample[0].parent.iterdir()) == sorted(p.name for p in sample)


def test_a_cache_that_cannot_be_written_leaves_replay_as_it_is(sample: list[Path], monkeypatch) -> None:
    def refuse(*_a, **_k):
        raise PermissionError("read-only directory")

    monkeypatch.setattr("bot.backtest.replay.CacheWriter", refuse)
    stats = ReplayStats()
    events = list(replay(sample, stats=stats))
    assert stats.built_caches == 0 and not any(cache_path(p).exists() for p in sample)
    assert books_state(events) == books_state(replay(sample, cache=False))


def test_the_cache_is_read_a_chunk_at_a_time(sample: list[Path], monkeypatch) -> None:
    monkeypatch.setattr(cache_mod, "CHUNK_RECORDS", 64)
    list(replay(sample[:1]))
    opened = cache_mod.open_cache(sample[0])
    assert opened is not None
    _, chunks = opened
    sizes = [len(chunk.items) for chunk in chunks]
    assert len(sizes) > 10 and max(sizes) == 64

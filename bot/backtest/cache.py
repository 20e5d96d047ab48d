"""The derived binary cache of a recording file: its records with ``price_change`` frames already
parsed to integers, so a replay neither decompresses JSON nor parses decimals again.

The cache of ``NAME.jsonl.zst`` is ``NAME.jsonl.zst.cache`` beside it::

    MAGIC | u32 n | header (msgpack, n bytes) | { u32 n | u32 crc32 | chunk (zstd of msgpack, n bytes) }* | u32 0

The header names the recording (file name, size, modification time in ns) and carries its header
line; each chunk holds up to ``CHUNK_RECORDS`` records, each a receive time and either a
market event of a frame, decoded (a ``price_change`` as :class:`~bot.core.levels.PriceLevels`, in
integers; the other kinds as the venue's own types), or the bytes of any other line (replayed as
the recording's reader replays it).

Invariants:

- the recording stays the source of truth: a cache is used only when its header matches the
  recording's current name, size and modification time and it ends with its end marker;
  anything else is rebuilt on the next replay;
- a cache appears complete or not at all: it is written to a temporary file and renamed into
  place only when the replay that built it read the whole recording;
- every chunk is checked (crc32) before it is decoded: a damaged cache is a :class:`CacheError`,
  never wrong books.
"""

from __future__ import annotations

import os
import secrets
import struct
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Union

import msgspec
import zstandard

from bot.backtest.recording import ReadMeter, RecordingError
from bot.core.levels import PriceLevels
from bot.venue.models.ws import (
    BestBidAskEvent, BookEvent, LastTradePriceEvent, MarketResolvedEvent, NewMarketEvent, TickSizeChangeEvent,
)

MAGIC = b"PMBRC\x00\x01\x00"
VERSION = 1
LEVEL = 1  # zstd level of the chunks: decompressing costs less than reading them uncompressed
SUFFIX = ".cache"
CHUNK_RECORDS = 1024
_U32 = struct.Struct("<I")
_U32X2 = struct.Struct("<II")
MAX_CHUNK_BYTES = 1 << 30


class CacheError(RecordingError):
    """A cache file that is damaged (it is removed; the next replay rebuilds it)."""


class CacheHeader(msgspec.Struct, array_like=True, frozen=True):
    version: int
    byteorder: str  # of the packed levels
    source_name: str
    source_size: int
    source_mtime_ns: int
    header_line: bytes


# What a chunk item is: a market event of a frame, decoded (the price changes in integers), or the
# bytes of any other line. Every market event type of the venue's stream but ``price_change``
# (which is cached as PriceLevels) round-trips through msgpack exactly.
CachedEvent = Union[PriceLevels, BookEvent, LastTradePriceEvent, TickSizeChangeEvent, BestBidAskEvent,
                    NewMarketEvent, MarketResolvedEvent]
CACHED_TYPES = frozenset(CachedEvent.__args__)  # type: ignore[attr-defined]


class Chunk(msgspec.Struct, array_like=True, gc=False):
    t: list[int]  # receive time of each item
    items: list[Union[CachedEvent, bytes]]
    lines: int  # how many items are line bytes


_header_decoder = msgspec.msgpack.Decoder(CacheHeader)
_chunk_decoder = msgspec.msgpack.Decoder(Chunk)
_encoder = msgspec.msgpack.Encoder()


def cache_path(source: Path) -> Path:
    return source.with_name(source.name + SUFFIX)


def _source_stat(source: Path) -> tuple[int, int]:
    st = source.stat()
    return st.st_size, st.st_mtime_ns


def open_cache(source: Path, meter: ReadMeter | None = None) -> tuple[bytes, Iterator[Chunk]] | None:
    """``(header line, chunks)`` of a valid cache of ``source``, else None (missing, stale or not a
    cache). A chunk that fails its check raises CacheError (and the cache file is removed).
    ``meter`` counts the cache's reading for ``source``."""
    path = cache_path(source)
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed by the chunk iterator
    except OSError:
        return None
    try:
        size, mtime_ns = _source_stat(source)
        if fh.read(len(MAGIC)) != MAGIC:
            fh.close()
            return None
        n = _read_u32(fh)
        header = _header_decoder.decode(fh.read(n))
        fh.seek(-4, os.SEEK_END)
        complete = fh.read(4) == b"\x00\x00\x00\x00"
        if not complete or header.version != VERSION or header.byteorder != sys.byteorder \
                or header.source_name != source.name \
                or header.source_size != size or header.source_mtime_ns != mtime_ns:
            fh.close()
            return None
        fh.seek(len(MAGIC) + 4 + n)
    except (OSError, ValueError, msgspec.MsgspecError, struct.error):
        fh.close()
        return None
    if meter is not None:
        meter.reading(source, fh)
    return header.header_line, _chunks(fh, path)


def _read_u32(fh: Any) -> int:
    data = fh.read(4)
    if len(data) != 4:
        raise ValueError("cut short")
    return _U32.unpack(data)[0]


def _chunks(fh: Any, path: Path) -> Iterator[Chunk]:
    unpack = zstandard.ZstdDecompressor().decompress
    with fh:
        while True:
            try:
                n = _read_u32(fh)
                if n == 0:
                    return
                if n > MAX_CHUNK_BYTES:
                    raise ValueError(f"chunk of {n} bytes")
                crc = _read_u32(fh)
                data = fh.read(n)
                if len(data) != n or zlib.crc32(data) != crc:
                    raise ValueError("chunk checksum mismatch")
                chunk = _chunk_decoder.decode(unpack(data))
                if len(chunk.t) != len(chunk.items) or not chunk.t:
                    raise ValueError("chunk columns empty or of different lengths")
            except (OSError, ValueError, msgspec.MsgspecError, zstandard.ZstdError) as exc:
                _remove(path)
                raise CacheError(f"{path}: damaged cache ({exc}); removed, the next replay rebuilds it") from None
            yield chunk


class CacheWriter:
    """Builds the cache of ``source`` beside it: ``add`` records, then ``commit`` (or ``abort``)."""

    def __init__(self, source: Path, header_line: bytes) -> None:
        self.source = source
        self.path = cache_path(source)
        size, mtime_ns = _source_stat(source)
        self._tmp = self.path.with_name(f"{self.path.name}.tmp-{os.getpid()}-{secrets.token_hex(3)}")
        self._fh = open(self._tmp, "xb")  # noqa: SIM115 - closed by commit/abort
        header = _encoder.encode(CacheHeader(VERSION, sys.byteorder, source.name, size, mtime_ns, header_line))
        self._pack = zstandard.ZstdCompressor(level=LEVEL).compress
        self._fh.write(MAGIC + _U32.pack(len(header)) + header)
        self._t: list[int] = []
        self._items: list[Any] = []
        self._lines = 0

    def add(self, t: int, item: Any) -> None:
        """One item: a market event of a cached type, or a line's bytes."""
        self._t.append(t)
        self._items.append(item)
        if type(item) is bytes:
            self._lines += 1
        if len(self._t) >= CHUNK_RECORDS:
            self._flush()

    def _flush(self) -> None:
        if not self._t:
            return
        data = self._pack(_encoder.encode(Chunk(self._t, self._items, self._lines)))
        self._fh.write(_U32X2.pack(len(data), zlib.crc32(data)) + data)
        self._t = []
        self._items = []
        self._lines = 0

    def commit(self) -> Path:
        self._flush()
        self._fh.write(b"\x00\x00\x00\x00")
        self._fh.close()
        os.replace(self._tmp, self.path)
        return self.path

    def abort(self) -> None:
        if not self._fh.closed:
            self._fh.close()
        _remove(self._tmp)


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass

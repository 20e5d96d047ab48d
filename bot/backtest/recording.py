"""The recording format (``docs/recording-format.md``): its lines, its files, its writer and reader.

A recording is a run of files, each a sequence of zstd frames ("blocks") holding JSON lines. Every
line is one JSON object with a receive time ``t`` (nanoseconds since the Unix epoch) and a kind
``k``: ``header`` (first line of every file: format, version, run, tokens, markets), ``ws`` (a
market-channel frame exactly as received), ``book`` (a REST book snapshot), ``market`` (market
metadata), ``gap`` (the books named were not continuous from here) and ``end`` (the file was
closed cleanly).

Invariants:

- a ``ws`` line carries the frame's exact bytes: verbatim as the JSON value ``f`` when the frame
  is one JSON value on one line, else base64 in ``b``; decoding either gives back those bytes;
- within a run ``t`` never decreases (a wall clock stepping back holds ``t`` until it catches up);
- the writer ends a block (one complete zstd frame, written and flushed) at least every
  ``flush_s`` seconds and every ``flush_bytes`` of lines, so a killed writer loses at most the
  block it was filling; a file always begins with a block holding only its header;
- a file closed cleanly ends with an ``end`` line; a file without one was cut short (the reader
  reports it as a gap, after the last complete line);
- ``decode_line`` turns any bytes into a typed line or a :class:`LineError`, never anything else;
- reading never holds more than one read chunk and one line in memory.
"""

from __future__ import annotations

import base64
import binascii
import io
import os
import secrets
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, Union

import msgspec
import zstandard

from bot.core.markets import MarketInfo
from bot.venue.models.book import OrderBook
from bot.venue.units import UNIT, UnitsError, format_units, parse_units

FORMAT = "pmbot-recording"
VERSION = 1
SUFFIX = ".jsonl.zst"
PLAIN_SUFFIX = ".jsonl"  # the same lines uncompressed: readable too
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
MAX_LINE_BYTES = 96 * 2**20  # a 64 MiB frame (the stream's cap) in base64, with room to spare
READ_CHUNK = 2**20

Nanos = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
Shard = Annotated[int, msgspec.Meta(ge=0, lt=2**31)]
Token = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]


class RecordingError(ValueError):
    """A file that is not a readable recording (wrong format or version, unreadable data)."""


class LineError(RecordingError):
    """One line that is not a valid record of the format."""


class UnknownKind(LineError):
    """A well-formed line of a kind this version does not know (a later minor addition)."""


# --------------------------------------------------------------------------------------------
# What a recording holds besides frames (also what replay yields for them)


class MarketMeta(msgspec.Struct, frozen=True, kw_only=True):
    """A market as recorded: enough to build the core's ``MarketInfo`` with no venue at hand.

    ``tick_size`` and ``min_order_size`` are exact decimal text, as the venue spells them;
    ``tokens[i]`` is the token of ``outcomes[i]``; ``event_id`` groups the markets of one
    neg-risk event.
    """

    condition_id: Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
    tokens: list[Token]
    outcomes: list[str] = []
    tick_size: str = "0.01"
    min_order_size: str = "5"
    neg_risk: bool = False
    event_id: str = ""
    question: str = ""
    slug: str = ""

    def info(self) -> MarketInfo:
        """The core's view of this market; a RecordingError when it is not a binary market with a
        valid tick (0 < tick < 1) and minimum size."""
        if len(self.tokens) != 2:
            raise RecordingError(f"market {self.condition_id}: {len(self.tokens)} tokens, a binary market has 2")
        try:
            tick = parse_units(self.tick_size)
            min_size = parse_units(self.min_order_size)
        except UnitsError as exc:
            raise RecordingError(f"market {self.condition_id}: {exc}") from None
        if not 0 < tick < UNIT or min_size < 0:
            raise RecordingError(f"market {self.condition_id}: tick {self.tick_size!r} or minimum size "
                                 f"{self.min_order_size!r} out of range")
        outcomes = tuple(self.outcomes) if len(self.outcomes) == 2 else ("Yes", "No")
        return MarketInfo(condition_id=self.condition_id, tokens=(self.tokens[0], self.tokens[1]),
                          tick=tick, min_size=min_size, neg_risk=self.neg_risk, event_id=self.event_id,
                          outcomes=outcomes)  # type: ignore[arg-type]


def decimal_text(value: Any, default: str) -> str:
    """An informational venue number (int, float or decimal text) as exact decimal text; ``default``
    when absent or not a number of at most six decimals."""
    if value is None or isinstance(value, bool):
        return default
    text = repr(value) if isinstance(value, float) else str(value)
    try:
        return format_units(parse_units(text))
    except UnitsError:
        return default


def market_meta(market: Any) -> MarketMeta:
    """The metadata of a CLOB market (``bot.venue.models.ClobMarket``)."""
    return MarketMeta(
        condition_id=market.condition_id,
        tokens=[t.token_id for t in market.tokens],
        outcomes=[t.outcome for t in market.tokens],
        tick_size=decimal_text(market.minimum_tick_size, "0.01"),
        min_order_size=decimal_text(market.minimum_order_size, "5"),
        neg_risk=bool(market.neg_risk),
        event_id=market.neg_risk_market_id or "",
        question=market.question or "",
        slug=market.market_slug or market.slug or "",
    )


class RestBook(OrderBook, kw_only=True):
    """A REST book snapshot (``GET /book``, ``POST /books``) as recorded, told apart from the
    stream's ``book`` event by its type; the engine takes it as a REST snapshot."""


class Gap(msgspec.Struct, frozen=True):
    """The books of ``tokens`` were not continuous here (``reason`` says why): a consumer marks
    them stale until their next snapshot."""

    tokens: tuple[str, ...]
    reason: str


# --------------------------------------------------------------------------------------------
# Lines


class _Line(msgspec.Struct, tag_field="k", frozen=True):
    t: Nanos  # first after the kind: the receive time


class Header(_Line, tag="header", kw_only=True):
    """First line of every file. ``run`` names the recorder run (its files share it), ``file`` is
    the file's number in the run (0, 1, ...); ``tokens`` are the subscribed tokens and ``markets``
    their metadata when the file began."""

    format: str
    version: int
    run: str = ""
    file: Annotated[int, msgspec.Meta(ge=0, lt=2**31)] = 0
    source: str = ""
    tokens: list[Token] = []
    markets: list[MarketMeta] = []

    def all_tokens(self) -> tuple[str, ...]:
        """The tokens the file is about: those subscribed and those of its markets."""
        return tuple(dict.fromkeys([*self.tokens, *(t for m in self.markets for t in m.tokens)]))


class WsLine(_Line, tag="ws", kw_only=True):
    """A market-channel frame as received on connection (shard) ``c``: verbatim JSON in ``f`` or
    base64 bytes in ``b`` (exactly one of them)."""

    c: Shard = 0
    f: msgspec.Raw = msgspec.Raw()  # empty: absent
    b: str | None = None

    def __post_init__(self) -> None:
        if (len(self.f) > 0) == (self.b is not None):
            raise ValueError("a ws line carries exactly one of f (JSON) and b (base64)")
        if self.b is not None:
            _b64(self.b)

    @property
    def frame(self) -> bytes:
        """The frame's bytes as received."""
        if self.b is None:
            return bytes(self.f)
        return _b64(self.b)


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("ws line: b is not base64") from None


class BookLine(_Line, tag="book", kw_only=True):
    """A REST book snapshot of one token."""

    book: RestBook


class MarketLine(_Line, tag="market", kw_only=True):
    """Market metadata, fetched again (after a reconnect)."""

    market: MarketMeta


class GapLine(_Line, tag="gap", kw_only=True, omit_defaults=True):
    """The books of ``tokens`` (absent: every token of the file) were not continuous here."""

    reason: str = ""
    tokens: list[Token] | None = None


class EndLine(_Line, tag="end", kw_only=True, omit_defaults=True):
    """The file was closed cleanly: ``rotate`` (the run continues in ``next``) or why it stopped."""

    reason: str = "stop"
    next: str = ""


Line = Union[Header, WsLine, BookLine, MarketLine, GapLine, EndLine]
KINDS = ("header", "ws", "book", "market", "gap", "end")

_line_decoder = msgspec.json.Decoder(Line)  # type: ignore[arg-type]
_any_decoder = msgspec.json.Decoder()
_raw_decoder = msgspec.json.Decoder(msgspec.Raw)
_encoder = msgspec.json.Encoder()


def decode_line(line: bytes) -> Line:
    """One line (without its newline) as a typed record; a :class:`LineError` for anything else.

    Keys may come in any order and unknown keys are ignored; a line of a kind this version does
    not know is an :class:`UnknownKind` naming the kind (readers skip it)."""
    try:
        return _line_decoder.decode(line)
    except msgspec.ValidationError as exc:
        kind = _kind_of(line)
        if kind is not None and kind not in KINDS:
            raise UnknownKind(f"unknown line kind {kind[:40]!r}") from None
        raise LineError(f"bad {kind or 'line'}: {exc}") from None
    except msgspec.DecodeError as exc:
        raise LineError(f"not a JSON line: {exc}") from None
    except ValueError as exc:  # __post_init__
        raise LineError(str(exc)) from None


def _kind_of(line: bytes) -> str | None:
    try:
        obj = _any_decoder.decode(line)
    except (msgspec.DecodeError, ValueError):  # ValueError: a key that is not UTF-8
        return None
    kind = obj.get("k") if isinstance(obj, dict) else None
    return kind if isinstance(kind, str) else None


_WS_HEAD = b'{"t":'
_WS_KIND = b',"k":"ws","c":'
_WS_FRAME = b',"f":'


def fast_ws(line: bytes) -> tuple[int, bytes] | None:
    """``(t, frame)`` of a ``ws`` line spelled exactly as the writer spells it
    (``{"t":T,"k":"ws","c":C,"f":FRAME}``), else None. Only the envelope is checked here: a
    caller that cannot decode the frame falls back to :func:`decode_line`."""
    if not line.startswith(_WS_HEAD) or line[-1:] != b"}":
        return None
    i = line.find(_WS_KIND, 6, 40)  # t has at most 19 digits
    if i < 0:
        return None
    j = line.find(_WS_FRAME, i + 15, i + 30)  # c has at most 10 digits
    if j < 0:
        return None
    t = line[5:i]
    c = line[i + 14:j]
    if not (t.isdigit() and c.isdigit()) or (t[0] == 48 and len(t) > 1) or (c[0] == 48 and len(c) > 1):
        return None
    value = int(t)
    if value >= 2**63 or int(c) >= 2**31:
        return None
    return value, line[j + 5:-1]


def raw_json(frame: bytes) -> bool:
    """True when ``frame`` can sit verbatim in a line: exactly one JSON value, no surrounding
    whitespace, no line break, valid UTF-8."""
    if b"\n" in frame or b"\r" in frame:
        return False
    try:
        raw = _raw_decoder.decode(frame)
    except (msgspec.DecodeError, ValueError):
        return False
    if len(raw) != len(frame):
        return False
    if frame.isascii():
        return True
    try:
        frame.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def ws_line(t: int, shard: int, frame: bytes) -> bytes:
    """The line of one frame (with its newline)."""
    if raw_json(frame):
        return b'{"t":%d,"k":"ws","c":%d,"f":%s}\n' % (t, shard, frame)
    return b'{"t":%d,"k":"ws","c":%d,"b":"%s"}\n' % (t, shard, base64.b64encode(frame))


# --------------------------------------------------------------------------------------------
# Writing


class WriterConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Where files go and when blocks end and files rotate."""

    directory: str = "recordings"
    prefix: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_.-]{1,64}$")] = "book"
    rotate_bytes: Annotated[int, msgspec.Meta(ge=2**10, le=2**40)] = 256 * 2**20  # compressed bytes
    rotate_s: Annotated[float, msgspec.Meta(gt=0, le=30 * 86_400)] = 3600.0
    flush_s: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 1.0
    flush_bytes: Annotated[int, msgspec.Meta(ge=1, le=2**30)] = 2**20  # uncompressed bytes per block
    level: Annotated[int, msgspec.Meta(ge=1, le=19)] = 3
    fsync: bool = False  # also fsync each block (survives a power cut, not only a killed process)


def new_run_id(now_ns: int | None = None) -> str:
    """``YYYYmmddTHHMMSSZ-xxxx``: the UTC start time and four random hex digits."""
    now = time.gmtime((time.time_ns() if now_ns is None else now_ns) // 1_000_000_000)
    return time.strftime("%Y%m%dT%H%M%SZ", now) + "-" + secrets.token_hex(2)


class RecordingWriter:
    """Writes one run of recording files: lines into blocks, blocks into rotating files.

    Time comes from ``clock_ns`` (receive times) and ``monotonic`` (flush and rotation deadlines);
    ``on_rotate(path)`` is called after a new file began (the recorder snapshots the books into it).
    """

    def __init__(self, config: WriterConfig, *, source: str = "", tokens: Iterable[str] = (),
                 markets: Iterable[MarketMeta] = (), run: str | None = None,
                 clock_ns: Callable[[], int] = time.time_ns,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.source = source
        self.tokens = list(dict.fromkeys(tokens))
        self.markets: dict[str, MarketMeta] = {m.condition_id: m for m in markets}
        self.clock_ns = clock_ns
        self.monotonic = monotonic
        self.run = run or new_run_id(clock_ns())
        self.directory = Path(config.directory)
        self.files: list[Path] = []
        self.on_rotate: Callable[[Path], Any] | None = None
        self.frames = 0
        self.lines = 0
        self.blocks = 0
        self.bytes_written = 0  # compressed, all files
        self._cctx = zstandard.ZstdCompressor(level=config.level, write_checksum=True)
        self._buf: list[bytes] = []
        self._buf_bytes = 0
        self._t = 0
        self._fh: io.BufferedWriter | None = None
        self._file_bytes = 0
        self._opened_at = 0.0
        self._flushed_at = 0.0
        self.closed = False
        self._open(0)

    @property
    def path(self) -> Path:
        """The file being written."""
        return self.files[-1]

    def now(self, t: int | None = None) -> int:
        """A receive time for a line: ``t`` (or the clock), never below the last one written."""
        value = self.clock_ns() if t is None else t
        if value < self._t:
            return self._t
        self._t = value
        return value

    # -- lines ------------------------------------------------------------------------------

    def ws(self, shard: int, frame: bytes | str, t: int | None = None) -> None:
        """One market-channel frame exactly as received."""
        data = frame.encode() if isinstance(frame, str) else frame
        self._add(ws_line(self.now(t), shard, data))
        self.frames += 1

    def rest_book(self, book: OrderBook, t: int | None = None) -> None:
        self._add(_encoder.encode(BookLine(t=self.now(t), book=_as_rest(book))) + b"\n")

    def market(self, meta: MarketMeta, t: int | None = None) -> None:
        self.markets[meta.condition_id] = meta
        self._add(_encoder.encode(MarketLine(t=self.now(t), market=meta)) + b"\n")

    def gap(self, reason: str, tokens: Iterable[str] | None = None, t: int | None = None) -> None:
        listed = None if tokens is None else list(tokens)
        self._add(_encoder.encode(GapLine(t=self.now(t), reason=reason, tokens=listed)) + b"\n")

    def _add(self, line: bytes) -> None:
        if self.closed:
            raise RecordingError(f"{self.path}: writer is closed")
        self._buf.append(line)
        self._buf_bytes += len(line)
        self.lines += 1
        if self._buf_bytes >= self.config.flush_bytes:
            self.tick()

    # -- blocks and files -------------------------------------------------------------------

    def tick(self) -> bool:
        """End the block if it is due (size or age), then start a new file if this one is due;
        True when a new file began. Call it at least every ``flush_s``."""
        now = self.monotonic()
        if self._buf and (self._buf_bytes >= self.config.flush_bytes or now - self._flushed_at >= self.config.flush_s):
            self.flush()
        if self._file_bytes >= self.config.rotate_bytes or now - self._opened_at >= self.config.rotate_s:
            self.rotate()
            return True
        return False

    def flush(self) -> None:
        """End the block: compress what is buffered as one zstd frame, write and flush it."""
        self._flushed_at = self.monotonic()
        if not self._buf or self._fh is None:
            return
        block = self._cctx.compress(b"".join(self._buf))
        self._buf.clear()
        self._buf_bytes = 0
        self._fh.write(block)
        self._fh.flush()
        if self.config.fsync:
            os.fsync(self._fh.fileno())
        self._file_bytes += len(block)
        self.bytes_written += len(block)
        self.blocks += 1

    def rotate(self) -> Path:
        """Close this file (its ``end`` line names the next) and begin the next one."""
        seq = len(self.files)
        nxt = self._name(seq)
        self._close_file(EndLine(t=self.now(), reason="rotate", next=nxt.name))
        self._open(seq)
        if self.on_rotate is not None:
            self.on_rotate(self.path)
        return self.path

    def close(self, reason: str = "stop") -> None:
        """End the run: an ``end`` line, the last block, fsync, close. Idempotent."""
        if self.closed:
            return
        self._close_file(EndLine(t=self.now(), reason=reason))
        self.closed = True

    def _name(self, seq: int) -> Path:
        return self.directory / f"{self.config.prefix}-{self.run}-{seq:05d}{SUFFIX}"

    def _open(self, seq: int) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self._name(seq)
        self._fh = open(path, "xb")  # noqa: SIM115 - closed by _close_file
        self.files.append(path)
        self._file_bytes = 0
        self._opened_at = self.monotonic()
        header = Header(t=self.now(), format=FORMAT, version=VERSION, run=self.run, file=seq,
                        source=self.source, tokens=self.tokens, markets=list(self.markets.values()))
        self._buf.append(_encoder.encode(header) + b"\n")
        self._buf_bytes += len(self._buf[-1])
        self.lines += 1
        self.flush()  # a file always begins with a readable header

    def _close_file(self, end: EndLine) -> None:
        if self._fh is None:
            return
        self._buf.append(_encoder.encode(end) + b"\n")
        self.lines += 1
        self.flush()
        try:
            os.fsync(self._fh.fileno())
        finally:
            self._fh.close()
            self._fh = None


def _as_rest(book: OrderBook) -> RestBook:
    if type(book) is RestBook:
        return book
    return RestBook(**{f: getattr(book, f) for f in OrderBook.__struct_fields__})


# --------------------------------------------------------------------------------------------
# Reading


class Damage(msgspec.Struct, frozen=True):
    """What the reader reports in place of lines it could not give: an unreadable line, the cut
    end of a file closed uncleanly, or compressed data that does not decompress."""

    t: int  # the receive time of the last good line before it
    reason: str


# how every ``Damage`` reason begins (a replay's cache keeps a damaged stretch as a gap line with
# its reason, so the reason alone tells a damaged stretch from a gap the recorder wrote)
DAMAGE_REASONS = ("a line longer than", "compressed data unreadable", "cut short:", "unreadable line",
                  "no end line")


def is_damage(reason: str) -> bool:
    """Whether a gap's ``reason`` is a ``Damage`` of the file (not a gap the recorder wrote)."""
    return reason.startswith(DAMAGE_REASONS)


def recording_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The recording files named: files as given, directories expanded to their ``*.jsonl.zst``
    and ``*.jsonl`` files (sorted by name). A RecordingError for a path that does not exist."""
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found = sorted(q for q in path.iterdir() if q.is_file() and q.name.endswith((SUFFIX, PLAIN_SUFFIX)))
            out.extend(found)
        elif path.is_file():
            out.append(path)
        else:
            raise RecordingError(f"{path}: no such recording file or directory")
    return out


class ReadMeter:
    """How much of a set of recording files has been read, as a fraction of their sizes: what a
    progress bar's ETA stands on.

    Each recording weighs its size; the file actually read for it (the recording or its derived
    cache) counts by its read position over its own size, so a cached file counts as much as the
    recording it stands for. Invariant: ``fraction()`` is within 0..1, does not decrease while
    the files are read in order, and is 1 once every file was read to its end (a file is done
    when its reader closed it)."""

    __slots__ = ("_weights", "_total", "_reading")

    def __init__(self, paths: Iterable[Path]) -> None:
        self._weights: dict[Path, int] = {}
        for p in paths:
            self._weights[Path(p)] = max(1, Path(p).stat().st_size)
        self._total = sum(self._weights.values())
        self._reading: dict[Path, tuple[Any, int]] = {}  # recording -> (open file read for it, its size)

    def reading(self, source: Path, fh: Any) -> None:
        """``fh`` (an open binary file) is read, from its start, for the recording ``source``."""
        if source in self._weights:
            self._reading[source] = (fh, max(1, os.fstat(fh.fileno()).st_size))

    def fraction(self) -> float:
        """The share of the recordings read so far, 0..1."""
        done = 0.0
        for source, (fh, size) in self._reading.items():
            pos = size if fh.closed else fh.tell()
            done += self._weights[source] * min(1.0, pos / size)
        return min(1.0, done / self._total) if self._total else 1.0


def _chunks(path: Path, meter: ReadMeter | None = None) -> Iterator[bytes]:
    """The file's decompressed bytes in chunks (plain JSON lines pass through)."""
    with open(path, "rb") as fh:
        if meter is not None:
            meter.reading(path, fh)
        head = fh.read(4)
        fh.seek(0)
        if head != ZSTD_MAGIC:
            while chunk := fh.read(READ_CHUNK):
                yield chunk
            return
        reader = zstandard.ZstdDecompressor().stream_reader(fh, read_size=READ_CHUNK, read_across_frames=True)
        while chunk := reader.read(READ_CHUNK):
            yield chunk


def raw_lines(path: Path, meter: ReadMeter | None = None) -> Iterator[bytes | Damage]:
    """Every complete line of the file (without its newline), in order; a :class:`Damage` (with
    ``t`` 0) for compressed data that stops decompressing (nothing after it is read) and for an
    unterminated last line. Blank lines are skipped."""
    carry = b""
    try:
        for chunk in _chunks(path, meter):
            data = carry + chunk if carry else chunk
            parts = data.split(b"\n")
            carry = parts.pop()
            for line in parts:
                if line:
                    yield line
            if len(carry) > MAX_LINE_BYTES:
                yield Damage(0, f"a line longer than {MAX_LINE_BYTES} bytes")
                return
    except zstandard.ZstdError as exc:
        yield Damage(0, f"compressed data unreadable: {exc}")
        return
    if carry:
        yield Damage(0, f"cut short: {len(carry)} bytes of an unfinished line")


class FileReader:
    """The typed lines of one file, header first.

    Opening reads the header (a RecordingError when the file is not a recording of a version this
    reader knows). Iterating yields every record after the header, and a :class:`Damage` for each
    unreadable line (skipped; ``strict=True`` raises LineError instead), for compressed data that
    stops decompressing, and for a file that ends without an ``end`` line. Lines of an unknown
    kind are skipped and counted.
    """

    def __init__(self, path: str | os.PathLike[str], *, strict: bool = False, meter: ReadMeter | None = None) -> None:
        self.path = Path(path)
        self.strict = strict
        self.bad_lines = 0
        self.unknown_lines = 0
        self.truncated = False
        self._lines = raw_lines(self.path, meter)
        self.header = self._read_header()

    def _read_header(self) -> Header:
        first = next(self._lines, None)
        if first is None:
            self._lines.close()
            raise RecordingError(f"{self.path}: empty file, not a recording")
        if isinstance(first, Damage):
            self._lines.close()
            raise RecordingError(f"{self.path}: not a recording ({first.reason})")
        try:
            header = decode_line(first)
        except LineError as exc:
            self._lines.close()
            raise RecordingError(f"{self.path}: not a recording (first line: {exc})") from None
        if not isinstance(header, Header) or header.format != FORMAT:
            self._lines.close()
            raise RecordingError(f"{self.path}: not a recording (its first line is not a {FORMAT} header)")
        if header.version != VERSION:
            self._lines.close()
            raise RecordingError(f"{self.path}: format version {header.version}; this reader reads version {VERSION}")
        return header

    def lines(self) -> Iterator[bytes | Damage]:
        """The raw lines after the header (a Damage, with ``t`` 0, where the file is damaged);
        iterate either these or the records, not both."""
        return self._lines

    def __iter__(self) -> Iterator[Line | Damage]:
        """The typed records after the header (see the class invariants)."""
        last_t = self.header.t
        ended = False
        for item in self._lines:
            if isinstance(item, Damage):
                self.truncated = True
                yield Damage(last_t, item.reason)
                continue
            try:
                rec = decode_line(item)
            except UnknownKind:
                self.unknown_lines += 1
                continue
            except LineError as exc:
                self.bad_lines += 1
                if self.strict:
                    raise LineError(f"{self.path}: {exc}") from None
                yield Damage(last_t, f"unreadable line: {exc}"[:300])
                continue
            last_t = rec.t
            ended = isinstance(rec, EndLine)
            yield rec
        if not ended:
            self.truncated = True
            yield Damage(last_t, "no end line: the file was cut short")

    def close(self) -> None:
        self._lines.close()


def read_header(path: str | os.PathLike[str]) -> Header:
    """The header of a recording file (reads only its first block)."""
    reader = FileReader(path)
    reader.close()
    return reader.header

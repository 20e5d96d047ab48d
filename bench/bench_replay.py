"""Replay speed (decode and books only) and peak memory, against a typed decode loop.

A synthetic L2 recording is written with the recorder's own writer (``RecordingWriter``): ten
binary markets, a ``book`` snapshot of each token first, then frames shaped like the venue's
(captured key order, a hash and best bid/ask on every level): three in four are ``price_change``
frames moving one or two levels of a random-walking book (each change echoed on the complement
token, as the venue reports both books of a market in one frame), one in four a
``last_trade_price`` print. A second recording is ten times longer.

Figures (frames per CPU second, median of several runs, the runs interleaved round-robin so a
change in the machine's load touches every figure alike; CPU time, as the machine is shared;
ratios are the median of the per-round ratios, the steadiest figure on a busy machine):

- baseline (a), the typed decode loop: read the recording (zstd, JSON lines), decode each line
  with msgspec into a typed Struct holding the frame as a typed Struct (the fields a book needs,
  strings as on the wire), and set each level in a dict book (one dict per side, keyed by the
  price text) or pop it;
- (a) in memory: the same loop over the frames' bytes held in a list (no file, no line envelope):
  a stricter reference;
- replay from the JSON lines (``replay(cache=False)``: the venue's events, ``Books.apply_event``);
- replay through the derived cache (``replay(cache=True)``, the cache built beforehand; its build,
  a replay that also writes it, is timed once on its own).

Peak memory is the peak resident set size of a fresh process that replays a recording into books
(``VmHWM``, interpreter and libraries included), for both recordings, with and without the cache:
flat when replay streams.

Run: ``.venv/bin/python bench/bench_replay.py [--frames N] [--runs R]`` (defaults 100000 and 5).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec
import zstandard

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bot.backtest.executors import peak_rss  # noqa: E402
from bot.backtest.recording import RecordingWriter, WriterConfig  # noqa: E402
from bot.backtest.replay import replay  # noqa: E402
from bot.compiled import summary  # noqa: E402
from bot.core.book import Books  # noqa: E402

TARGET = 1.5  # replay through the cache, as a multiple of baseline (a)
MEMORY_MB = 150
MARKETS = 10
T0 = 1_795_000_000_000_000_000


def _price(ticks: int) -> str:
    return f"0.{ticks:02d}"


def synthetic_frames(n: int, seed: int = 7) -> list[bytes]:
    """``n`` frames of ``MARKETS`` markets (see the module docstring), deterministic for a seed."""
    rng = random.Random(seed)
    markets = [("0x" + "%064x" % rng.getrandbits(256), str(rng.getrandbits(255)), str(rng.getrandbits(255)))
               for _ in range(MARKETS)]
    mids = [rng.randint(20, 80) for _ in markets]
    books = [({}, {}) for _ in markets]  # yes bids, yes asks: ticks -> size text
    ts = 1_795_000_000_000
    out: list[bytes] = []
    for i, (cond, yes, no) in enumerate(markets):
        bids, asks = books[i]
        for k in range(1, 11):
            bids[mids[i] - k] = f"{rng.randint(5, 900)}.{rng.randint(0, 99):02d}"
            asks[mids[i] + k] = f"{rng.randint(5, 900)}.{rng.randint(0, 99):02d}"
        for token, flip in ((yes, False), (no, True)):
            side_b = asks if flip else bids
            side_a = bids if flip else asks
            conv = (lambda p: 100 - p) if flip else (lambda p: p)
            out.append(json.dumps({
                "event_type": "book", "asset_id": token, "market": cond,
                "bids": [{"price": _price(conv(p)), "size": s} for p, s in sorted(side_b.items(), key=lambda x: conv(x[0]))],
                "asks": [{"price": _price(conv(p)), "size": s} for p, s in sorted(side_a.items(), key=lambda x: -conv(x[0]))],
                "timestamp": str(ts), "hash": "%040x" % rng.getrandbits(160),
            }, separators=(",", ":")).encode())
    while len(out) < n:
        i = rng.randrange(MARKETS)
        cond, yes, no = markets[i]
        bids, asks = books[i]
        ts += rng.randint(1, 40)
        if rng.random() < 0.25:
            out.append(json.dumps({
                "asset_id": yes if rng.random() < 0.5 else no, "event_type": "last_trade_price",
                "fee_rate_bps": "0", "market": cond, "price": _price(mids[i]),
                "side": rng.choice(("BUY", "SELL")), "size": f"{rng.randint(1, 300)}.{rng.randint(0, 99):02d}",
                "timestamp": str(ts),
            }, separators=(",", ":")).encode())
            continue
        if rng.random() < 1 / 6:  # the mid moves
            mids[i] = min(90, max(10, mids[i] + rng.choice((-1, 1))))
        changes = []
        for _ in range(rng.choice((1, 1, 2))):
            is_bid = rng.random() < 0.5
            p = mids[i] - rng.randint(1, 10) if is_bid else mids[i] + rng.randint(1, 10)
            side = bids if is_bid else asks
            size = "0" if rng.random() < 0.2 else f"{rng.randint(5, 900)}.{rng.randint(0, 99):02d}"
            if size == "0":
                side.pop(p, None)
            else:
                side[p] = size
            best_b = max(bids, default=1)
            best_a = min(asks, default=99)
            h = "%040x" % rng.getrandbits(160)
            changes.append({"asset_id": yes, "price": _price(p), "size": size, "side": "BUY" if is_bid else "SELL",
                            "hash": h, "best_bid": _price(best_b), "best_ask": _price(best_a)})
            changes.append({"asset_id": no, "price": _price(100 - p), "size": size,
                            "side": "SELL" if is_bid else "BUY", "hash": h,
                            "best_bid": _price(100 - best_a), "best_ask": _price(100 - best_b)})
        out.append(json.dumps({"market": cond, "price_changes": changes, "timestamp": str(ts),
                               "event_type": "price_change"}, separators=(",", ":")).encode())
    return out


def write_recording(directory: Path, frames: list[bytes], repeat: int = 1) -> Path:
    """One recording file of ``frames`` (``repeat`` times over), a microsecond apart."""
    writer = RecordingWriter(WriterConfig(directory=str(directory), rotate_bytes=2**40, rotate_s=30 * 86_400),
                             source="bench", run="bench")
    t = T0
    for _ in range(repeat):
        for f in frames:
            t += 1_000
            writer.ws(0, f, t)
    writer.close()
    return writer.files[0]


# -- baseline (a): the typed decode loop ----------------------------------------------------------


class BLevel(msgspec.Struct):
    price: str
    size: str


class BChange(msgspec.Struct):
    asset_id: str
    price: str
    side: str
    size: str


class BFrame(msgspec.Struct):
    event_type: str
    asset_id: str = ""
    price: str = ""
    price_changes: list[BChange] = []
    bids: list[BLevel] = []
    asks: list[BLevel] = []


class BLine(msgspec.Struct):
    t: int
    f: BFrame | None = None


_frame = msgspec.json.Decoder(BFrame).decode
_line = msgspec.json.Decoder(BLine).decode


def _apply(books: dict, last: dict, ev: BFrame) -> None:
    kind = ev.event_type
    if kind == "price_change":
        for ch in ev.price_changes:
            sides = books.get(ch.asset_id)
            if sides is None:
                sides = books[ch.asset_id] = ({}, {})
            side = sides[0] if ch.side == "BUY" else sides[1]
            if ch.size == "0":
                side.pop(ch.price, None)
            else:
                side[ch.price] = ch.size
    elif kind == "book":
        books[ev.asset_id] = ({lv.price: lv.size for lv in ev.bids}, {lv.price: lv.size for lv in ev.asks})
    elif kind == "last_trade_price":
        last[ev.asset_id] = ev.price


def baseline_file(path: Path) -> int:
    books: dict = {}
    last: dict = {}
    n = 0
    with open(path, "rb") as fh:
        reader = zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True)
        carry = b""
        while chunk := reader.read(2**20):
            lines = (carry + chunk).split(b"\n")
            carry = lines.pop()
            for line in lines:
                rec = _line(line)
                if rec.f is not None:
                    _apply(books, last, rec.f)
                    n += 1
    return n


def baseline_memory(frames: list[bytes]) -> int:
    books: dict = {}
    last: dict = {}
    for f in frames:
        _apply(books, last, _frame(f))
    return len(frames)


def replay_books(path: Path, cache: bool) -> int:
    books = Books(track_all=True)
    apply = books.apply_event
    n = 0
    for _, ev in replay([path], cache=cache):
        apply(ev)
        n += 1
    return n


def cpu(fn, *args) -> float:
    t0 = time.process_time()
    fn(*args)
    return time.process_time() - t0


def peak_mb(path: Path, cache: bool) -> float:
    """Peak resident MB of a fresh process replaying ``path`` into books."""
    out = subprocess.run([sys.executable, __file__, "--child", str(path)] + (["--cache"] if cache else []),
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def child(path: Path, cache: bool) -> None:
    books = Books(track_all=True)
    for _, ev in replay([path], cache=cache):
        books.apply_event(ev)
    print(peak_rss() / 2**20)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--cache", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args([] if argv is None else argv)
    if args.child:
        child(Path(args.child), args.cache)
        return 0
    print(f"python {sys.version.split()[0]}, msgspec {msgspec.__version__}, {summary()}")
    frames = synthetic_frames(args.frames)
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as tmp:
        one = write_recording(Path(tmp) / "x1", frames)
        mb = one.stat().st_size / 1e6
        print(f"recording: {len(frames):,} frames, {sum(map(len, frames)) / 1e6:.0f} MB of frames, "
              f"{mb:.1f} MB on disk ({mb * 1e6 / len(frames):.0f} B/frame)")
        build = cpu(replay_books, one, True)
        cache_mb = (one.with_name(one.name + ".cache")).stat().st_size / 1e6
        print(f"cache built on first replay: {build:.2f} s CPU for the whole replay, {cache_mb:.1f} MB beside it")
        fns = {
            "base": lambda: cpu(baseline_file, one),
            "mem": lambda: cpu(baseline_memory, frames),
            "json": lambda: cpu(replay_books, one, False),
            "cache": lambda: cpu(replay_books, one, True),
        }
        for fn in fns.values():  # warm-up: string hashes, specialised bytecode, file cache
            fn()
        times: dict[str, list[float]] = {k: [] for k in fns}
        for _ in range(args.runs):
            for k, fn in fns.items():
                times[k].append(fn())
        rate = {k: len(frames) / statistics.median(v) for k, v in times.items()}

        def ratio(key: str, ref: str) -> float:
            """The median of the per-round ratios (each round ran both back to back)."""
            return statistics.median(b / a for a, b in zip(times[key], times[ref]))

        print(f"\nframes per CPU second, median of {args.runs} runs (ratios: median of the per-round ratios):")
        for label, key in (("baseline (a): typed decode loop over the recording", "base"),
                           ("(a) in memory: frames in a list, no file", "mem"),
                           ("replay, JSON lines (venue events)", "json"),
                           ("replay, through the cache", "cache")):
            print(f"  {label:52s} {rate[key] / 1e3:8.0f} k/s   x{ratio(key, 'base'):4.2f} vs (a)"
                  f"   x{ratio(key, 'mem'):4.2f} vs (a) in memory")
        verdict = "meets" if ratio("cache", "base") >= TARGET else "misses"
        print(f"  replay through the cache {verdict} the target of {TARGET}x baseline (a)")

        ten = write_recording(Path(tmp) / "x10", frames, repeat=10)
        print(f"\npeak memory (peak RSS of a fresh process, interpreter included), limit {MEMORY_MB} MB:")
        peaks = []
        for label, path in (("recording", one), ("ten times longer", ten)):
            for cache in (False, True):
                if cache and not path.with_name(path.name + ".cache").exists():
                    peak_mb(path, True)  # builds the cache
                peak = peak_mb(path, cache)
                peaks.append(peak)
                print(f"  {label:18s} {'cache' if cache else 'JSON ':5s} {peak:7.1f} MB"
                      f"   ({path.stat().st_size / 1e6:.1f} MB recording)")
        verdict = "under" if max(peaks) < MEMORY_MB else "over"
        print(f"  every peak is {verdict} {MEMORY_MB} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Book update throughput: decode real-shaped ``price_change`` frames from bytes and apply them.

The corpus replays the captured ``price_change_v2.json`` frame with varied assets, prices, sides and
sizes. Two corpora:

- ``mirrored``: each change on a token is echoed on its complement token (price 1-p, other side,
  same size), as the venue's current schema reports both books of a market in one frame;
- ``distinct``: every level carries its own random size (worst case for the size cache).

Figures, each the median of several runs (the size cache is emptied before every run):

- decode+apply with the production decoder (``decode_market_frame`` + ``Books.apply_event``);
- decode+apply with a lean Struct holding only the fields the book needs;
- apply only (frames decoded beforehand);
- baseline: ``json.loads`` + ``Decimal`` + a dict book, on the same bytes.

Run: ``.venv/bin/python bench/bench_book.py [--levels N] [--runs R]``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from decimal import Decimal
from pathlib import Path

import msgspec

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bot.core import book as book_mod  # noqa: E402
from bot.core.book import Books  # noqa: E402
from bot.venue.models.ws import decode_market_frame  # noqa: E402

CAPTURE = ("data/realworld/nautechsystems__nautilus_trader/tests/integration_tests/adapters/"
           "polymarket/resources/ws_messages/price_change_v2.json")


class LeanChange(msgspec.Struct, gc=False):
    asset_id: str
    price: str
    side: str
    size: str
    hash: str = ""


class LeanPriceChange(msgspec.Struct, gc=False):
    price_changes: list[LeanChange]
    timestamp: str = ""


def shared_dir() -> Path:
    import os

    return Path(os.environ.get("BOT_SHARED_DIR", REPO.parent / "shared"))


def _fmt(units: int) -> str:
    whole, frac = divmod(units, 1_000_000)
    return f"{whole}.{frac:06d}".rstrip("0").rstrip(".") if frac else str(whole)


def build_corpus(n_levels: int, *, mirrored: bool, seed: int = 7, n_markets: int = 100) -> tuple[list[bytes], list[str], int]:
    """Frames (bytes) of about ``n_levels`` level changes over ``2 * n_markets`` tokens."""
    template = json.loads((shared_dir() / CAPTURE).read_bytes())
    proto = template["price_changes"][0]
    rng = random.Random(seed)
    base = int(proto["asset_id"])
    markets = [(str(base + 2 * i), str(base + 2 * i + 1)) for i in range(n_markets)]
    tokens = [t for m in markets for t in m]
    frames: list[bytes] = []
    total = 0
    ts = int(template["timestamp"])
    while total < n_levels:
        yes, no = markets[rng.randrange(n_markets)]
        changes = []
        for _ in range(rng.randint(1, 5)):
            tick = rng.randint(1, 999)  # 0.001 grid
            side = rng.choice(("BUY", "SELL"))
            size = 0 if rng.random() < 0.25 else rng.randint(1, 200_000) * 10_000  # 2 decimals
            h = "%040x" % rng.getrandbits(160)
            entry = dict(proto, asset_id=yes, price=_fmt(tick * 1_000), side=side, size=_fmt(size), hash=h)
            changes.append(entry)
            if mirrored:
                changes.append(dict(proto, asset_id=no, price=_fmt((1000 - tick) * 1_000),
                                    side="SELL" if side == "BUY" else "BUY", size=_fmt(size), hash=h))
        ts += rng.randint(1, 50)
        frame = {"market": template["market"], "price_changes": changes,
                 "event_type": "price_change", "timestamp": str(ts)}
        frames.append(json.dumps(frame, separators=(",", ":")).encode())
        total += len(changes)
    return frames, tokens, total


def _fresh() -> None:
    book_mod._SIZE_CACHE.clear()


def run_production(frames: list[bytes], tokens: list[str]) -> float:
    _fresh()
    books = Books(tokens)
    t0 = time.perf_counter()
    for f in frames:
        for ev in decode_market_frame(f):
            books.apply_event(ev)
    return time.perf_counter() - t0


_lean = msgspec.json.Decoder(LeanPriceChange)


def run_lean(frames: list[bytes], tokens: list[str]) -> float:
    _fresh()
    books = Books(tokens)
    dec = _lean.decode
    apply = books.apply_changes
    t0 = time.perf_counter()
    for f in frames:
        ev = dec(f)
        apply(ev.price_changes, int(ev.timestamp))
    return time.perf_counter() - t0


def run_apply_only(decoded: list, tokens: list[str]) -> float:
    _fresh()
    books = Books(tokens)
    apply = books.apply_changes
    t0 = time.perf_counter()
    for ev in decoded:
        apply(ev.price_changes, int(ev.timestamp))
    return time.perf_counter() - t0


def run_decode_only(frames: list[bytes]) -> float:
    t0 = time.perf_counter()
    for f in frames:
        decode_market_frame(f)
    return time.perf_counter() - t0


def run_baseline(frames: list[bytes], tokens: list[str]) -> float:
    """The naive way: parse to dicts, Decimal prices and sizes, dict book per side."""
    books = {t: ({}, {}) for t in tokens}
    t0 = time.perf_counter()
    for f in frames:
        msg = json.loads(f)
        for ch in msg["price_changes"]:
            bids, asks = books[ch["asset_id"]]
            side = bids if ch["side"] == "BUY" else asks
            price, size = Decimal(ch["price"]), Decimal(ch["size"])
            if size:
                side[price] = size
            else:
                side.pop(price, None)
    return time.perf_counter() - t0


def median_rate(fn, levels: int, runs: int) -> float:
    return statistics.median(levels / fn() for _ in range(runs))


def check_equivalence(frames: list[bytes], tokens: list[str]) -> None:
    """The fast paths build exactly the books the production path builds."""
    a, b = Books(tokens), Books(tokens)
    for f in frames:
        for ev in decode_market_frame(f):
            a.apply_event(ev)
        ev = _lean.decode(f)
        b.apply_changes(ev.price_changes, int(ev.timestamp))
    for t in tokens:
        assert (a[t].bids, a[t].asks, a[t].hash) == (b[t].bids, b[t].asks, b[t].hash), t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    print(f"python {sys.version.split()[0]}, msgspec {msgspec.__version__}, "
          f"{args.levels:,} level changes per corpus, median of {args.runs} runs")
    for mirrored in (True, False):
        frames, tokens, n = build_corpus(args.levels, mirrored=mirrored)
        check_equivalence(frames[:2000], tokens)
        decoded = [_lean.decode(f) for f in frames]
        mb = sum(map(len, frames)) / 1e6
        name = "mirrored" if mirrored else "distinct"
        base = median_rate(lambda: run_baseline(frames, tokens), n, args.runs)
        prod = median_rate(lambda: run_production(frames, tokens), n, args.runs)
        lean = median_rate(lambda: run_lean(frames, tokens), n, args.runs)
        dec = median_rate(lambda: run_decode_only(frames), n, args.runs)
        apply = median_rate(lambda: run_apply_only(decoded, tokens), n, args.runs)
        print(f"\ncorpus {name}: {len(frames):,} frames, {n:,} levels, {mb:.1f} MB, {len(tokens)} tokens")
        rows = [
            ("baseline json.loads+Decimal+dict", base),
            ("decode only (decode_market_frame)", dec),
            ("decode+apply (decode_market_frame)", prod),
            ("decode+apply (lean Struct)", lean),
            ("apply only (pre-decoded)", apply),
        ]
        for label, rate in rows:
            print(f"  {label:38s} {rate / 1e6:6.2f} M levels/s   x{rate / base:5.1f} vs baseline")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Book update throughput: decode real-shaped ``price_change`` frames from bytes and apply them.

The corpus replays the captured ``price_change_v2.json`` frame with varied assets, prices, sides and
sizes. Prices are those a live book holds: bids change at the bid prices of the captured ``book.json``
snapshot and asks at its ask prices (76 and 86 levels, 0.001 to 0.999, uncrossed), so the books the
corpus builds are as large as a live one. Three corpora:

- ``mirrored``: each change on a token is echoed on its complement token (price 1-p, other side,
  same size), as the venue's current schema reports both books of a market in one frame;
- ``distinct``: no echo; every level carries its own random size (the worst case for the
  interpreted path's size cache) and frames are half as long (more per-frame work per level);
- ``full-grid stress`` (no target): as ``distinct`` but prices drawn from the whole 0.001 grid on both
  sides, so books grow toward 1,000 levels a side, far beyond live ones, and stop fitting in cache.

Every level carries its own random price, side, size and hash, and its own ``best_bid``/``best_ask``
(the captured template's values are not reused), so the frames are as varied as live ones.

Figures, each the median of several runs of CPU time (``time.process_time``: the machine is shared,
so wall time would count other processes), the runs of all figures interleaved round-robin, the
interpreted path's size cache emptied before every run:

- decode+apply on the production path (``decode_market_frame`` + ``Books.apply_event``, what the
  live stream does per frame): the headline figure;
- decode only and apply only (``Books.apply_event`` on events decoded beforehand) of that path;
- decode+apply with a lean Struct holding only the fields the book needs (reference, not used live);
- the typed-decode floor: the same bytes decoded into that lean Struct and nothing else (no book),
  with decode+apply as a fraction of it in frames per second: what the production path keeps of a
  bare typed decode; and decode+apply with the depth scan (``too_deep``) before every frame, as
  the typed path ran before it went unscanned;
- baseline: ``json.loads`` + ``Decimal`` + a dict book, on the same bytes, measured in the same run;
  every figure is also given as a multiple of it.

The first line says whether ``bot.core.book`` runs compiled (the normal build, see ``setup.py``) or
interpreted (no C compiler at install time).

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
from bot.venue.models.decoding import too_deep  # noqa: E402
from bot.venue.models.ws import decode_market_frame  # noqa: E402

WS_MESSAGES = "data/realworld/nautechsystems__nautilus_trader/tests/integration_tests/adapters/polymarket/resources/ws_messages"
CAPTURE = f"{WS_MESSAGES}/price_change_v2.json"
SNAPSHOT = f"{WS_MESSAGES}/book.json"


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


def captured_prices() -> tuple[list[int], list[int]]:
    """The bid and ask price points (0.001 units) of the captured ``book.json`` snapshot."""
    book = json.loads((shared_dir() / SNAPSHOT).read_bytes())
    ticks = lambda levels: sorted(round(float(lv["price"]) * 1000) for lv in levels)  # noqa: E731
    return ticks(book["bids"]), ticks(book["asks"])


def build_corpus(n_levels: int, *, mirrored: bool, grid: bool = False, seed: int = 7,
                 n_markets: int = 100) -> tuple[list[bytes], list[str], int]:
    """Frames (bytes) of about ``n_levels`` level changes over ``2 * n_markets`` tokens.

    Bids change at the captured snapshot's bid prices and asks at its ask prices, so each book
    holds what a live one holds (at most 76 bids and 86 asks, never crossed); ``grid`` draws every
    price from the whole 0.001 grid instead (books fill toward 1,000 levels a side: a stress case).
    """
    template = json.loads((shared_dir() / CAPTURE).read_bytes())
    proto = template["price_changes"][0]
    bid_ticks, ask_ticks = captured_prices()
    if grid:
        bid_ticks = ask_ticks = list(range(1, 1000))
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
            side = rng.choice(("BUY", "SELL"))
            tick = rng.choice(bid_ticks if side == "BUY" else ask_ticks)
            size = 0 if rng.random() < 0.25 else rng.randint(1, 200_000) * 10_000  # 2 decimals
            h = "%040x" % rng.getrandbits(160)
            bid = rng.choice(bid_ticks)
            ask = rng.choice(ask_ticks)
            entry = dict(proto, asset_id=yes, price=_fmt(tick * 1_000), side=side, size=_fmt(size), hash=h,
                         best_bid=_fmt(bid * 1_000), best_ask=_fmt(ask * 1_000))
            changes.append(entry)
            if mirrored:
                changes.append(dict(proto, asset_id=no, price=_fmt((1000 - tick) * 1_000),
                                    side="SELL" if side == "BUY" else "BUY", size=_fmt(size), hash=h,
                                    best_bid=_fmt((1000 - ask) * 1_000), best_ask=_fmt((1000 - bid) * 1_000)))
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
    apply = books.apply_event
    decode = decode_market_frame
    t0 = time.process_time()
    for f in frames:
        for ev in decode(f):
            apply(ev)
    return time.process_time() - t0


_lean = msgspec.json.Decoder(LeanPriceChange)


def run_lean(frames: list[bytes], tokens: list[str]) -> float:
    _fresh()
    books = Books(tokens)
    dec = _lean.decode
    apply = books.apply_changes
    t0 = time.process_time()
    for f in frames:
        ev = dec(f)
        apply(ev.price_changes, int(ev.timestamp))
    return time.process_time() - t0


def run_floor(frames: list[bytes]) -> float:
    """The typed-decode floor: each frame decoded into the lean Struct, nothing applied."""
    dec = _lean.decode
    t0 = time.process_time()
    for f in frames:
        dec(f)
    return time.process_time() - t0


def run_scanned(frames: list[bytes], tokens: list[str]) -> float:
    """The production decode+apply with the depth scan before every frame."""
    _fresh()
    books = Books(tokens)
    apply = books.apply_event
    decode = decode_market_frame
    t0 = time.process_time()
    for f in frames:
        if too_deep(f):
            continue
        for ev in decode(f):
            apply(ev)
    return time.process_time() - t0


def run_apply_only(decoded: list, tokens: list[str]) -> float:
    """``Books.apply_event`` on the production decoder's events, decoded beforehand (they sit in
    memory all at once, so this is colder in cache than the per-frame production loop)."""
    _fresh()
    books = Books(tokens)
    apply = books.apply_event
    t0 = time.process_time()
    for ev in decoded:
        apply(ev)
    return time.process_time() - t0


def run_decode_only(frames: list[bytes]) -> float:
    decode = decode_market_frame
    t0 = time.process_time()
    for f in frames:
        decode(f)
    return time.process_time() - t0


def run_baseline(frames: list[bytes], tokens: list[str]) -> float:
    """The naive way: parse to dicts, Decimal prices and sizes, dict book per side."""
    books = {t: ({}, {}) for t in tokens}
    t0 = time.process_time()
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
    return time.process_time() - t0


def median_rates(fns: dict, levels: int, runs: int) -> dict:
    """Median rate (levels per CPU second) of each function; the runs are interleaved round-robin
    so that a change in the machine's load touches every figure alike."""
    times: dict = {k: [] for k in fns}
    for _ in range(runs):
        for k, fn in fns.items():
            times[k].append(fn())
    return {k: levels / statistics.median(v) for k, v in times.items()}


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
    how = "compiled" if book_mod.COMPILED else "interpreted (no compiled module was built)"
    print(f"python {sys.version.split()[0]}, msgspec {msgspec.__version__}, bot.core.book {how}, "
          f"{args.levels:,} level changes per corpus, median of {args.runs} runs")
    target = 1_000_000
    corpora = [("mirrored", True, False), ("distinct", False, False), ("full-grid stress", False, True)]
    for name, mirrored, grid in corpora:
        frames, tokens, n = build_corpus(args.levels, mirrored=mirrored, grid=grid)
        check_equivalence(frames[:2000], tokens)
        decoded = [ev for f in frames for ev in decode_market_frame(f)]
        mb = sum(map(len, frames)) / 1e6
        rates = median_rates({
            "base": lambda: run_baseline(frames, tokens),
            "prod": lambda: run_production(frames, tokens),
            "dec": lambda: run_decode_only(frames),
            "apply": lambda: run_apply_only(decoded, tokens),
            "lean": lambda: run_lean(frames, tokens),
            "floor": lambda: run_floor(frames),
            "scanned": lambda: run_scanned(frames, tokens),
        }, n, args.runs)
        base = rates["base"]
        print(f"\ncorpus {name}: {len(frames):,} frames, {n:,} levels, {mb:.1f} MB, {len(tokens)} tokens")
        rows = [
            ("baseline json.loads+Decimal+dict", "base"),
            ("decode+apply, production path", "prod"),
            ("  decode only (decode_market_frame)", "dec"),
            ("  apply only (apply_event, pre-decoded)", "apply"),
            ("decode+apply, lean Struct (reference)", "lean"),
            ("decode+apply, depth scan on every frame", "scanned"),
            ("typed-decode floor (lean Struct, no apply)", "floor"),
        ]
        for label, key in rows:
            rate = rates[key]
            print(f"  {label:40s} {rate / 1e6:6.2f} M levels/s   x{rate / base:5.1f} vs baseline")
        fps = {k: rates[k] * len(frames) / n for k in ("prod", "scanned", "floor")}  # frames per CPU second
        print(f"  frames/s: decode+apply {fps['prod'] / 1e3:.0f} k, typed-decode floor {fps['floor'] / 1e3:.0f} k:"
              f" decode+apply at {fps['prod'] / fps['floor']:.2f}x the floor"
              f" (with the depth scan on every frame {fps['scanned'] / 1e3:.0f} k, {fps['scanned'] / fps['floor']:.2f}x)")
        if not grid:
            verdict = "meets" if rates["prod"] >= target else "misses"
            print(f"  production decode+apply {verdict} the {target / 1e6:.0f} M levels/s target")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

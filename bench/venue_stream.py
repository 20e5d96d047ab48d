"""The generated venue stream of ``../shared/bench`` (``gen_book.py`` then ``to_venue_ws.py``) as a
recording a backtest replays.

``to_venue_ws.py`` writes one token's frames, one ``{"recv_ns": ..., "frame": {...}}`` a line. The
venue reports both books of a market, so each frame gains the second token's mirror here: a
``book`` snapshot is followed by the NO token's (price ``1 - p``, bids and asks swapped), each
``price_change`` level by its NO level (``1 - p``, the other side, best bid and ask mirrored);
trade prints stay on the YES token. The frames keep their receive times and exchange timestamps.

``stream_recording(frames, directory)`` generates (once; kept under ``directory``) and converts.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bot.backtest.recording import MarketMeta, RecordingWriter, WriterConfig  # noqa: E402

YES = "71321045679252212594626385532706912750332728571942532289631379312455583992563"  # to_venue_ws.TOKEN
NO = "71321045679252212594626385532706912750332728571942532289631379312455583992564"
MARKET = "0x" + "ab" * 32  # to_venue_ws.MARKET
META = MarketMeta(condition_id=MARKET, tokens=[YES, NO], outcomes=["Yes", "No"], tick_size="0.01",
                  min_order_size="5")
SEED = 20251122


def shared_bench() -> Path:
    import os

    return Path(os.environ.get("BOT_SHARED_DIR", REPO.parent / "shared")) / "bench"


def _mirror(price: str) -> str:
    """``1 - price`` in the generator's spelling (two decimals at most, no trailing zeros)."""
    cents = round(float(price) * 100)
    text = f"{(100 - cents) / 100:.2f}".rstrip("0").rstrip(".")
    return text or "0"


class _Line(msgspec.Struct):
    recv_ns: int
    frame: msgspec.Raw


class _Kind(msgspec.Struct):
    event_type: str


_line = msgspec.json.Decoder(_Line).decode
_kind = msgspec.json.Decoder(_Kind).decode
_any = msgspec.json.Decoder().decode
_enc = msgspec.json.Encoder().encode


def both_books(frame: bytes) -> list[bytes]:
    """The frames the venue sends for one generated frame (see the module doc)."""
    kind = _kind(frame).event_type
    if kind == "book":
        f = _any(frame)
        no = dict(f, asset_id=NO,
                  bids=[{"price": _mirror(lv["price"]), "size": lv["size"]} for lv in f["asks"]],
                  asks=[{"price": _mirror(lv["price"]), "size": lv["size"]} for lv in f["bids"]])
        return [frame, _enc(no)]
    if kind == "price_change":
        f = _any(frame)
        out = []
        for ch in f["price_changes"]:
            out.append(ch)
            out.append(dict(ch, asset_id=NO, price=_mirror(ch["price"]),
                            side="SELL" if ch["side"] == "BUY" else "BUY",
                            best_bid=_mirror(ch["best_ask"]), best_ask=_mirror(ch["best_bid"])))
        return [_enc(dict(f, price_changes=out))]
    return [frame]


def generate(events: int, directory: Path) -> Path:
    """``market.jsonl`` of ``events`` generated events under ``directory`` (made once)."""
    market = directory / "market.jsonl"
    if market.exists():
        return market
    directory.mkdir(parents=True, exist_ok=True)
    bench = shared_bench()
    subprocess.run([sys.executable, str(bench / "gen_book.py"), "--events", str(events), "--seed", str(SEED),
                    "--out-dir", str(directory)], check=True, stdout=subprocess.DEVNULL)
    tmp = market.with_suffix(".partial")
    subprocess.run([sys.executable, str(bench / "to_venue_ws.py"), str(directory / "book.jsonl"), str(tmp)], check=True)
    tmp.rename(market)
    (directory / "book.jsonl").unlink()
    (directory / "book.npz").unlink(missing_ok=True)
    return market


def convert(market: Path, directory: Path) -> Path:
    """The recording of ``market`` (``to_venue_ws.py`` lines), one file under ``directory``."""
    with market.open("rb") as fh:
        start = _line(fh.readline()).recv_ns  # the header's time: the first frame's
        fh.seek(0)
        writer = RecordingWriter(WriterConfig(directory=str(directory), rotate_bytes=2**40, rotate_s=30 * 86_400,
                                              flush_s=3600, flush_bytes=4 * 2**20),
                                 source="gen_book", tokens=[YES, NO], markets=[META], run="stream",
                                 clock_ns=lambda: start)
        for raw in fh:
            rec = _line(raw)
            for frame in both_books(bytes(rec.frame)):
                writer.ws(0, frame, rec.recv_ns)
    writer.close()
    return writer.files[0]


def stream_recording(events: int, directory: Path) -> Path:
    """The recording of ``events`` generated events, made once under ``directory/<events>``."""
    where = directory / str(events)
    done = where / "recording"
    found = sorted(done.glob("*.jsonl.zst")) if done.is_dir() else []
    if found:
        return found[0]
    market = generate(events, where)
    partial = where / "recording.partial"
    if partial.exists():
        for p in partial.iterdir():
            p.unlink()
    path = convert(market, partial)
    partial.rename(done)
    market.unlink()
    return done / path.name


if __name__ == "__main__":
    print(stream_recording(int(sys.argv[1]), Path(sys.argv[2])))

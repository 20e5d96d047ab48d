"""Backtest core: market events per second through the engine (books, the shipped market maker,
risk, router, reconciler, portfolio) and the simulated venue in ``bot.backtest.runner.Backtest``,
against a naive market-making loop fed the same stream in the same run.

The stream (seeded, generated here): one binary market whose YES book starts ten levels deep on
each side of 0.48/0.52; every ``price_change`` carries a YES level and its NO mirror, as the venue
sends them. On about a sixth of events the touch moves (a better level appears or the best one
empties), on about a tenth a trade prints at the best bid (YES), and the rest set a level one to
ten ticks behind the touch to a new size. Events are 5 ms apart.

Ours: ``build_engine`` with ``MarketMaker(tokens=(YES,), half_spread_ticks=1)``, the default risk
limits and the venue's rate limits on the simulated clock, a ``SimVenue`` with the default latency
and queue models, 500 shares of each token held, the engine timer every 0.5 s. Its events are
decoded before timing and handed over as a replay through the recording's cache hands them (a
``price_change`` as ``PriceLevels``, its levels already in micro-units): **decoding is excluded on
our side**. The decoded events, held in memory only because of that, are frozen out of the cyclic
collector's view before timing (``gc.freeze``): a replay streams its events, and a full collection
here would otherwise walk the whole recording, which no backtest holds.

The baseline (b) is ``../shared/bench/naive_mm.py``'s loop in exact integers on the same frames,
decoded before timing too (its own typed msgspec decode, levels in micro-units, as ours are): both
tokens' books in dicts, one bid and one ask on YES one tick from the mid (ours quotes YES one tick
out as well), a side cancelled and replaced when its target moves, a resting order filled in full
and gone when a print or the other side's touch reaches it, the position and cash kept. What it
leaves out: queue position, latency, risk, throttles, order records and their states.

Timing is CPU time (``time.process_time``); one untimed warm-up, then runs alternating ours and
the baseline; figures are medians with the min..max spread, and the ratio is the median of the
per-run ratios (our rate / baseline rate).

Run: ``.venv/bin/python bench/bench_backtest_core.py [n_events] [runs]`` (defaults 60000 and 5).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import msgspec

from bench.naive_frames import Book, Frame, PriceChange
from bot.backtest.runner import Backtest
from bot.core.book import price_levels_of
from bot.core.clock import SimClock
from bot.core.markets import MarketInfo
from bot.engine.assembly import Signing, build_engine, simulated_throttles
from bot.risk import RiskLimits
from bot.sim.venue import SimVenue, SimVenueConfig
from bot.venue.limits import LimitsConfig
from bot.venue.models.ws import PriceChangeEvent, decode_market_frame
from strategies.market_maker import MarketMaker, Params

YES, NO = "1111", "2222"
COND = "0x" + "ab" * 32
MARKET = MarketInfo(COND, (YES, NO))
HOLDINGS = 500_000_000  # 500 shares of each token: the market maker quotes both sides
STEP_NS = 5_000_000  # receive times 5 ms apart
SEED = 1


def _px(milli: int) -> str:
    return f"{milli / 1000:.2f}"


def _change(token: str, milli: int, size: int, side: str) -> dict:
    return {"asset_id": token, "price": _px(milli), "size": str(size), "side": side, "hash": "h"}


def _mirrored(milli: int, size: int, side: str) -> list[dict]:
    """A YES level and the NO level that mirrors it (1 - price, other side)."""
    return [_change(YES, milli, size, side), _change(NO, 1000 - milli, size, "SELL" if side == "BUY" else "BUY")]


def make_frames(n: int, seed: int = SEED) -> list[bytes]:
    """Two snapshots (YES, NO) then ``n`` frames as the venue sends them (see the module doc)."""
    rng = random.Random(seed)
    bid, ask = 480, 520  # the touch, in thousandths
    ts = 1_700_000_000_000
    out = []
    for token in (YES, NO):
        out.append(json.dumps({
            "event_type": "book", "market": COND, "asset_id": token, "timestamp": "1", "hash": "h",
            "bids": [{"price": _px(bid - 10 * k), "size": "100"} for k in range(10, -1, -1)],
            "asks": [{"price": _px(ask + 10 * k), "size": "100"} for k in range(10, -1, -1)]}).encode())
    for _ in range(n):
        ts += rng.randint(1, 50)
        r = rng.random()
        if r < 1 / 6:  # the touch moves: a better level appears, or the best one empties
            if rng.random() < 0.5:
                if rng.random() < 0.5 and bid + 10 < ask or bid <= 400:
                    bid += 10
                    changes = _mirrored(bid, rng.randint(1, 500), "BUY")
                else:
                    changes = _mirrored(bid, 0, "BUY")
                    bid -= 10
            else:
                if rng.random() < 0.5 and ask - 10 > bid or ask >= 600:
                    ask -= 10
                    changes = _mirrored(ask, rng.randint(1, 500), "SELL")
                else:
                    changes = _mirrored(ask, 0, "SELL")
                    ask += 10
            out.append(json.dumps({"event_type": "price_change", "market": COND, "timestamp": str(ts),
                                   "price_changes": changes}).encode())
        elif r < 1 / 6 + 1 / 10:  # a print at the best bid
            out.append(json.dumps({"event_type": "last_trade_price", "market": COND, "asset_id": YES,
                                   "price": _px(bid), "side": "SELL", "size": str(rng.randint(1, 50)),
                                   "fee_rate_bps": "0", "timestamp": str(ts)}).encode())
        else:  # a level behind the touch changes size
            side = rng.choice(("BUY", "SELL"))
            milli = bid - 10 * rng.randint(1, 10) if side == "BUY" else ask + 10 * rng.randint(1, 10)
            out.append(json.dumps({"event_type": "price_change", "market": COND, "timestamp": str(ts),
                                   "price_changes": _mirrored(milli, rng.randint(1, 500), side)}).encode())
    return out


# --- ours: the engine and the simulated venue in the backtest loop ---------------------------------


def run_core(events: list[tuple[int, object]]) -> tuple[float, int, int]:
    """CPU seconds of ``Backtest.run`` over the decoded events; orders sent and fills."""
    clock = SimClock(0.0)
    engine = build_engine(MarketMaker(Params(tokens=(YES,), half_spread_ticks=1)), [MARKET], clock=clock,
                          signing=Signing(None, SEED), throttles=simulated_throttles(LimitsConfig(), clock),
                          risk=RiskLimits())
    for token in MARKET.tokens:
        engine.portfolio.seed(token, HOLDINGS, 0)
    venue = SimVenue([MARKET], SimVenueConfig(seed=SEED, collateral=10**12, holdings=HOLDINGS))
    run = Backtest(engine, venue, clock, timer_s=0.5, feed_delay=True)
    t0 = time.process_time()
    run.run(events)
    return time.process_time() - t0, engine.stats.orders_sent, engine.stats.fills


def decoded(frames: list[bytes]) -> list[tuple[int, object]]:
    """``(receive ns, event)`` of every frame, decoded once, a ``price_change`` as ``PriceLevels``
    (what a replay through the cache hands the runner)."""
    ns = 1_700_000_000 * 10**9
    out = []
    for f in frames:
        for ev in decode_market_frame(f):
            ns += STEP_NS
            if type(ev) is PriceChangeEvent:
                ev = price_levels_of(ev) or ev
            out.append((ns, ev))
    return out


# --- baseline (b): the naive market-making loop --------------------------------------------------


_decoder = msgspec.json.Decoder(Frame)


def _units(text: str) -> int:
    whole, _, frac = text.partition(".")
    return int(whole) * 1_000_000 + (int((frac + "000000")[:6]) if frac else 0)


def baseline_events(frames: list[bytes]) -> list[tuple]:
    """The frames decoded for the naive loop before timing, as ours are: levels already in
    micro-units. ``(0, [(token, is_bid, price, size), ...])`` a price change, ``(1, token, bids,
    asks)`` a snapshot (lists of ``(price, size)``), ``(2, token, is_sell, price)`` a print."""
    out: list[tuple] = []
    for frame in frames:
        ev = _decoder.decode(frame)
        kind = type(ev)
        if kind is PriceChange:
            out.append((0, [(c.asset_id, c.side == "BUY", _units(c.price), _units(c.size)) for c in ev.price_changes]))
        elif kind is Book:
            out.append((1, ev.asset_id, [(_units(lv.price), _units(lv.size)) for lv in ev.bids],
                        [(_units(lv.price), _units(lv.size)) for lv in ev.asks]))
        else:
            out.append((2, ev.asset_id, ev.side == "SELL", _units(ev.price)))
    return out


def run_baseline(events: list[tuple]) -> tuple[float, int, int]:
    """CPU seconds of the naive loop over the decoded events; orders placed and fills.

    ``../shared/bench/naive_mm.py``'s loop in exact integers: both tokens' books (dicts by
    price), one bid and one ask on YES one tick from the mid, a side cancelled and replaced when
    its target moves, a resting order filled in full (and gone) when a print or the other side's
    touch reaches it, the position and cash kept. It leaves out what ours does beyond that:
    queue position and latency, risk, throttles, order records and states, the results."""
    books: dict[str, tuple[dict[int, int], dict[int, int]]] = {YES: ({}, {}), NO: ({}, {})}
    yes_bids, yes_asks = books[YES]
    tick = 10_000
    size = 10_000_000
    my_bid = my_ask = None
    placed = cancelled = fills = 0
    position = cash = 0
    t0 = time.process_time()
    for ev in events:
        kind = ev[0]
        if kind == 2:
            if ev[1] != YES:
                continue
            price = ev[3]
            if ev[2]:
                if my_bid is not None and price <= my_bid:
                    fills += 1
                    position += size
                    cash -= size * my_bid // 1_000_000
                    my_bid = None
            elif my_ask is not None and price >= my_ask:
                fills += 1
                position -= size
                cash += size * my_ask // 1_000_000
                my_ask = None
            continue
        if kind == 0:
            for token, is_bid, price, level in ev[1]:
                book = books[token][0 if is_bid else 1]
                if level:
                    book[price] = level
                else:
                    book.pop(price, None)
        else:
            bids, asks = books[ev[1]]
            bids.clear()
            asks.clear()
            bids.update(ev[2])
            asks.update(ev[3])
        if not yes_bids or not yes_asks:
            continue
        best_bid, best_ask = max(yes_bids), min(yes_asks)
        if my_bid is not None and best_ask <= my_bid:
            fills += 1
            position += size
            cash -= size * my_bid // 1_000_000
            my_bid = None
        if my_ask is not None and best_bid >= my_ask:
            fills += 1
            position -= size
            cash += size * my_ask // 1_000_000
            my_ask = None
        mid = (best_bid + best_ask) // 2
        bid, ask = (mid - tick) // tick * tick, -(-(mid + tick) // tick) * tick
        if bid != my_bid:
            if my_bid is not None:
                cancelled += 1
            my_bid = bid
            placed += 1
        if ask != my_ask:
            if my_ask is not None:
                cancelled += 1
            my_ask = ask
            placed += 1
    return time.process_time() - t0, placed, fills


def _rate(n: int, times: list[float]) -> str:
    rates = sorted(n / t for t in times)
    return f"{statistics.median(rates):>10,.0f} events/s  ({rates[0]:,.0f}..{rates[-1]:,.0f})"


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # command-line arguments only when run as a script, not via ``-m bench``
        argv = sys.argv[1:] if __name__ == "__main__" else []
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=60_000, help="events per run")
    parser.add_argument("runs", nargs="?", type=int, default=5, help="runs (the median is printed)")
    args = parser.parse_args(argv)
    n, runs = args.n, args.runs
    if n <= 0 or runs <= 0:
        raise SystemExit("n_events and runs must be positive")
    from bot.compiled import summary
    from bot.ops.logging import configure

    configure(level="warning")  # as in production: debug lines are filtered, not rendered
    frames = make_frames(n)
    events = decoded(frames)
    plain = baseline_events(frames)
    gc.collect()
    gc.freeze()  # the pre-decoded recordings: not the backtest's to collect (see the module doc)
    _, sent, filled = run_core(events)  # warm-up, untimed
    _, base_orders, base_fills = run_baseline(plain)
    ours, base, ratios = [], [], []
    for _ in range(runs):
        t, _, _ = run_core(events)
        b, _, _ = run_baseline(plain)
        ours.append(t)
        base.append(b)
        ratios.append(b / t)
    print(f"python {sys.version.split()[0]}, {summary()}")
    print(f"events: {len(events)}, runs: {runs} (+1 warm-up); per run our engine sent {sent} orders and had"
          f" {filled} fills; timer: CPU time (process_time)")
    print(f"engine + simulated venue + market maker + risk (decoding excluded): {_rate(len(events), ours)}")
    print(f"baseline (b), naive market-making loop (decoding excluded):     {_rate(len(plain), base)}"
          f"; it placed {base_orders} orders and had {base_fills} fills")
    print(f"the backtest core runs at {statistics.median(ratios):.3f}x the naive loop's rate in the same run"
          f" (median of per-run ratios; {min(ratios):.3f}x..{max(ratios):.3f}x; target 0.5x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Market events per second through the simulated venue's ``on_market`` with a few of our orders
resting, against a plain dict-book update loop fed the same events in the same run.

The stream (seeded): one binary market, one token's L2 book on the 0.01 grid around a mid that
takes a one-tick random step on about a sixth of events (the levels that leave and join are
sent); the other events set a level within ten ticks of the mid to a new total (a quarter of
them remove it), and one in eight is a trade print at the best bid or ask followed by that
level's decrease. Frames are ``price_change`` / ``last_trade_price`` JSON as the venue sends
them, decoded once before timing (``decode_market_frame``), so the figures are the book work
only: the venue's feed book (``bot.core.book.Books``), its depletion view and the queues of our
orders, against the baseline's ``dict`` set/pop per level with cached price parsing.

Our orders: a bid and an ask two ticks behind the best and one more at each best, placed
through the venue (zero latency) whenever fewer than four rest; their fills, queue moves and
replacements are part of the venue's figure.

Timing is CPU time (``time.process_time``); one untimed warm-up, then runs alternating venue
and baseline; figures are medians with the min..max spread, and the ratio is the median of the
per-run ratios (venue rate / baseline rate).

Run: ``.venv/bin/python bench/bench_sim_venue.py [n_events] [runs]`` (defaults 200000 and 5).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

import msgspec

from bot.core.markets import MarketInfo
from bot.execution.orders import OwnOrder
from bot.execution.router import PlaceBatch
from bot.sim.latency import LatencyConfig
from bot.sim.venue import SimVenue, SimVenueConfig
from bot.venue.enums import Side
from bot.venue.models.ws import LastTradePriceEvent, LevelChange, PriceChangeEvent, decode_market_frame
from bot.venue.units import UNIT, format_units

MARKET = MarketInfo("0xbench", ("YES", "NO"), tick=10_000, min_size=1_000_000)
TOKEN = "YES"
TICK = 10_000
_enc = msgspec.json.Encoder()


def make_frames(n: int, seed: int = 11) -> list[bytes]:
    """``n`` market frames over one token whose book stays uncrossed (see the module doc)."""
    rng = random.Random(seed)
    mid = 50  # in ticks; the book is bids at mid-1.. and asks at mid+1..
    bids = {mid - k: rng.randint(1, 500) for k in range(1, 11)}
    asks = {mid + k: rng.randint(1, 500) for k in range(1, 11)}
    frames: list[bytes] = []
    ts = 1_700_000_000_000

    def level(side: str, tick: int, shares: int) -> LevelChange:
        return LevelChange(asset_id=TOKEN, price=format_units(tick * TICK), side=side,
                           size=format_units(shares * UNIT))

    def changes(levels: list[LevelChange]) -> bytes:
        return _enc.encode(PriceChangeEvent(market=MARKET.condition_id, timestamp=str(ts),
                                            price_changes=levels))

    while len(frames) < n:
        ts += rng.randint(1, 200)
        r = rng.random()
        if r < 1 / 6 and 15 < mid < 85:  # the mid steps one tick: a level leaves, one joins
            step = rng.choice((-1, 1))
            mid += step
            if step > 0:
                gone = min(asks)
                del asks[gone]
                bids[mid - 1] = rng.randint(1, 500)
                frames.append(changes([level("SELL", gone, 0), level("BUY", mid - 1, bids[mid - 1])]))
            else:
                gone = max(bids)
                del bids[gone]
                asks[mid + 1] = rng.randint(1, 500)
                frames.append(changes([level("BUY", gone, 0), level("SELL", mid + 1, asks[mid + 1])]))
        elif r < 1 / 6 + 1 / 8 and bids and asks:  # a print at the touch, then its decrease
            buy = rng.random() < 0.5
            book, tick = (asks, min(asks)) if buy else (bids, max(bids))
            qty = rng.randint(1, book[tick])
            frames.append(_enc.encode(LastTradePriceEvent(
                asset_id=TOKEN, market=MARKET.condition_id, price=format_units(tick * TICK),
                side="BUY" if buy else "SELL", size=format_units(qty * UNIT), timestamp=str(ts))))
            book[tick] -= qty
            if not book[tick]:
                del book[tick]
            frames.append(changes([level("SELL" if buy else "BUY", tick, book.get(tick, 0))]))
        else:
            bid = rng.random() < 0.5
            book = bids if bid else asks
            tick = mid - rng.randint(1, 10) if bid else mid + rng.randint(1, 10)
            shares = 0 if rng.random() < 0.25 else rng.randint(1, 500)
            if shares:
                book[tick] = shares
            else:
                book.pop(tick, None)
            frames.append(changes([level("BUY" if bid else "SELL", tick, shares)]))
    return frames[:n]


def run_venue(events: list, n_frames: int) -> tuple[float, int]:
    """CPU seconds for ``on_market`` over the events, keeping four of our orders resting."""
    venue = SimVenue([MARKET], SimVenueConfig(latency=LatencyConfig(entry=0.0, response=0.0)))
    venue.fund(10**9 * UNIT)
    venue.grant(TOKEN, 10**7 * UNIT)
    books = venue.books
    placed = 0
    t0 = time.process_time()
    for i, ev in enumerate(events):
        now = i * 0.001
        venue.on_market(ev, now)
        if i % 64 == 0 and len(venue._orders) < 4:
            book = books[TOKEN]
            bb, ba = book.best_bid, book.best_ask
            if bb is not None and ba is not None:
                orders = []
                for side, price in ((Side.BUY, bb), (Side.BUY, bb - 2 * TICK),
                                    (Side.SELL, ba), (Side.SELL, ba + 2 * TICK)):
                    if TICK <= price <= UNIT - TICK:
                        placed += 1
                        orders.append(OwnOrder(f"o{placed}", TOKEN, side, price, 10 * UNIT))
                venue.place(PlaceBatch(tuple(orders)), now)
        if venue._out or venue._work:
            venue.due(now)
    return time.process_time() - t0, placed


def run_baseline(events: list) -> float:
    """CPU seconds for a plain dict book fed the same events: price strings parsed once and
    cached, sizes parsed each time, a set or a pop per level; prints noted."""
    bids: dict[int, int] = {}
    asks: dict[int, int] = {}
    cache: dict[str, int] = {}
    last = 0
    t0 = time.process_time()
    for ev in events:
        if type(ev) is PriceChangeEvent:
            for ch in ev.price_changes:
                p = ch.price
                price = cache.get(p)
                if price is None:
                    whole, _, frac = p.partition(".")
                    price = cache[p] = int(whole) * UNIT + int((frac + "000000")[:6])
                whole, _, frac = ch.size.partition(".")
                size = int(whole) * UNIT + int((frac + "000000")[:6])
                book = bids if ch.side == "BUY" else asks
                if size:
                    book[price] = size
                else:
                    book.pop(price, None)
        else:
            last = ev.price
    del last
    return time.process_time() - t0


def _rate(n: int, times: list[float]) -> str:
    rates = sorted(n / t for t in times)
    return (f"{statistics.median(rates):>12,.0f} events/s  "
            f"({rates[0]:,.0f}..{rates[-1]:,.0f})")


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # command-line arguments only when run as a script, not via ``-m bench``
        argv = sys.argv[1:] if __name__ == "__main__" else []
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=200_000, help="events per run")
    parser.add_argument("runs", nargs="?", type=int, default=5, help="runs (the median is printed)")
    args = parser.parse_args(argv)
    n, runs = args.n, args.runs
    if n <= 0 or runs <= 0:
        raise SystemExit("n_events and runs must be positive")
    frames = make_frames(n)
    events = [ev for f in frames for ev in decode_market_frame(f)]
    _, placed = run_venue(events, n)  # warm-up, untimed
    run_baseline(events)
    venue_t, base_t, ratios = [], [], []
    for _ in range(runs):
        vt, _ = run_venue(events, n)
        bt = run_baseline(events)
        venue_t.append(vt)
        base_t.append(bt)
        ratios.append(bt / vt)
    print(f"events: {len(events)}, runs: {runs} (+1 warm-up), our orders placed per run: {placed},"
          f" timer: CPU time (process_time)")
    print(f"simulated venue on_market:  {_rate(len(events), venue_t)}")
    print(f"plain dict-book loop:       {_rate(len(events), base_t)}")
    print(f"the simulated venue runs at {statistics.median(ratios):.2f}x the plain dict-book loop's"
          f" rate in the same run (median of per-run ratios; {min(ratios):.2f}x..{max(ratios):.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Orders per second through the matching engine on a prepared mix of simple limit orders,
against a naive sorted-list book fed the same orders and checked to make the same fills.

The mix (seeded): GTC limit orders on one binary market, 80% on YES and 20% on NO, prices
uniform in 0.45..0.55 on the 0.01 grid, sizes 5..50 shares, 50 accounts; about half of them cross
and match (partly across the complement), the rest rest on the book. Requests are built before
timing; the engine runs with events off (``MatchingConfig.emit_events=False``) and settlement off,
so the figure is validation, matching, balances, reservations, order and trade records. A second
figure with events on is printed too.

The baseline is a naive book: one sorted Python list of resting entries per side, matched from the
front, with every order in YES terms (a NO order at ``p`` is the YES order on the other side at
``1 - p``), so the complement needs no second book. It leaves out everything but the matching
itself: no validation (tick, lot, minimum size, duplicate ids), no balances and no reservations,
no mint or merge across the complement, no order records (status, matched size, trade ids) and
no trade records (ids, maker fills, per-account trade lists), no result per order, no market data
(last trade price) and no tick-size check. It only counts its fills and their total size.

Same fills: before timing, both are run once with every fill written down (the baseline by a
copy of its ``place`` that logs instead of counting), and the run stops unless the engine's
fills, read from its trade records in YES terms (a maker fill on the NO book at ``q`` is a YES
fill at ``1 - q``), are the baseline's, one for one in the same order: the same maker order,
size and price. Every timed run is checked again on its fill count and total filled size, and
every engine order must have been accepted.

Timing is CPU time of this process (``time.process_time``), so other load on the machine
inflates the figures less than wall time would. The untimed checking pass and one untimed pass
of each timed measurement are the warm-up (string hashes of the prepared requests and the
interpreter's specialised bytecode are then the same for every timed run); the timed runs
interleave engine, baseline and events-on passes, so slow drift in machine speed hits all three
alike. Figures are medians over the runs, with the min..max spread. The last line is the
engine's rate over the baseline's (>= 1.0 when the engine is at least as fast): the median of
the per-run ratios (each pair ran back to back, the steadiest figure when the machine is busy),
with their min..max.

Run: ``.venv/bin/python bench/bench_matching.py [n_orders] [runs]`` (defaults 100000 and 7).
"""

from __future__ import annotations

import argparse
import bisect
import gc
import random
import statistics
import sys
import time

from bot.core.markets import MarketInfo
from bot.sim.matching import MatchingConfig, MatchingEngine
from bot.sim.orders import NewOrder
from bot.sim.settlement import SettlementConfig
from bot.venue.enums import Side
from bot.venue.units import UNIT

MARKET = MarketInfo("0xbench", ("YES", "NO"), tick=10_000, min_size=1_000_000)
ACCOUNTS = [f"acct{i}" for i in range(50)]


def make_orders(n: int, seed: int = 7) -> list[NewOrder]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        side = Side.BUY if rng.random() < 0.5 else Side.SELL
        price = rng.randint(45, 55) * 10_000
        size = rng.randint(5, 50) * 1_000_000
        if rng.random() < 0.2:  # same economic order expressed on the complement
            token, side, price = "NO", side.opposite, UNIT - price
        else:
            token = "YES"
        out.append(NewOrder(f"o{i}", rng.choice(ACCOUNTS), token, side, price, size))
    return out


def new_engine(events: bool) -> MatchingEngine:
    cfg = MatchingConfig(emit_events=events, settlement=SettlementConfig(enabled=False))
    eng = MatchingEngine(cfg)
    eng.add_market(MARKET)
    for a in ACCOUNTS:
        eng.fund(a, 10**15)
        eng.split(a, MARKET.condition_id, 10**13)
    return eng


Fill = tuple[str, int, int]  # (maker order id, size, price in YES terms)


def run_engine(orders: list[NewOrder], events: bool) -> tuple[float, MatchingEngine]:
    eng = new_engine(events)
    place = eng.place
    gc.collect()
    t0 = time.process_time()
    for i, req in enumerate(orders):
        place(req, 1.0)
        if events and i & 63 == 0:
            eng.drain()
    dt = time.process_time() - t0
    return dt, eng


def engine_fills(eng: MatchingEngine, n: int) -> list[Fill]:
    """The engine's maker fills in match order, in YES terms; every order must have been taken."""
    if len(eng.orders) != n:
        raise SystemExit(f"the engine refused {n - len(eng.orders)} of {n} orders")
    yes = MARKET.tokens[0]
    return [(m.order_id, m.size, m.price if m.token == yes else UNIT - m.price)
            for t in eng.trades.values() for m in t.makers]


class NaiveBook:
    """Baseline: a sorted list of (key, seq, [remaining], id) per side, matching from the front;
    every order in YES terms. Counts its fills and their total size; with a ``log``, also writes
    each fill down as (maker id, size, price) (the untimed check pass; the timed runs keep none)."""

    def __init__(self, log: list[Fill] | None = None) -> None:
        self.bids: list = []  # key = -price (best first)
        self.asks: list = []  # key = price
        self.seq = 0
        self.fills = 0
        self.filled = 0
        self.log = log

    def place(self, oid: str, side: Side, price: int, size: int) -> None:
        if side is Side.BUY:
            book, opp, crosses = self.bids, self.asks, lambda p: p <= price
            key = -price
        else:
            book, opp, crosses = self.asks, self.bids, lambda p: -p >= price
            key = price
        log = self.log
        while size and opp and crosses(opp[0][0]):
            entry = opp[0]
            x = min(size, entry[2][0])
            entry[2][0] -= x
            size -= x
            self.fills += 1
            self.filled += x
            if log is not None:
                log.append((entry[3], x, abs(entry[0])))
            if not entry[2][0]:
                opp.pop(0)
        if size:
            self.seq += 1
            bisect.insort(book, (key, self.seq, [size], oid))


def yes_terms(orders: list[NewOrder]) -> list[tuple[str, Side, int, int]]:
    """(id, side, price, size) of each order as the same order on YES."""
    return [(r.order_id, r.side if r.token == "YES" else r.side.opposite,
             r.price if r.token == "YES" else UNIT - r.price, r.size) for r in orders]


def run_baseline(simple: list[tuple[str, Side, int, int]], book: NaiveBook) -> float:
    place = book.place
    gc.collect()
    t0 = time.process_time()
    for oid, side, price, size in simple:
        place(oid, side, price, size)
    return time.process_time() - t0


def check_same_fills(engine: list[Fill], baseline: list[Fill]) -> None:
    """Stop unless the two fill sequences are equal, naming the first difference."""
    if engine == baseline:
        return
    for i, (a, b) in enumerate(zip(engine, baseline)):
        if a != b:
            raise SystemExit(f"fill {i} differs: engine {a}, baseline {b}")
    raise SystemExit(f"the engine made {len(engine)} fills, the baseline {len(baseline)}")


def _rate(n: int, times: list[float]) -> str:
    med = statistics.median(times)
    return (f"{n / med:,.0f} orders/s (median; runs {n / max(times):,.0f}..{n / min(times):,.0f},"
            f" spread {(max(times) - min(times)) / med:.1%})")


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # command-line arguments only when run as a script, not via ``-m bench``
        argv = sys.argv[1:] if __name__ == "__main__" else []
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=100_000, help="orders per run")
    parser.add_argument("runs", nargs="?", type=int, default=7, help="runs (the median is printed)")
    args = parser.parse_args(argv)
    n, runs = args.n, args.runs
    if n <= 0 or runs <= 0:
        raise SystemExit("n_orders and runs must be positive")
    orders = make_orders(n)
    simple = yes_terms(orders)
    # the check, untimed, doubling as the warm-up: the same work as a timed run
    _, eng = run_engine(orders, events=False)
    fills = engine_fills(eng, n)
    logged = NaiveBook(log=[])
    run_baseline(simple, logged)
    check_same_fills(fills, logged.log)
    trades, filled = len(eng.trades), sum(f[1] for f in fills)
    del eng, logged
    run_baseline(simple, NaiveBook())  # warm-up of the timed baseline's own code
    run_engine(orders, events=True)
    eng_t, base_t, ev_t, ratios = [], [], [], []
    for _ in range(runs):
        dt, eng = run_engine(orders, events=False)
        made = [f[1] for f in engine_fills(eng, n)]
        del eng
        book = NaiveBook()
        bt = run_baseline(simple, book)
        checked = (len(fills), filled)
        if (len(made), sum(made)) != checked or (book.fills, book.filled) != checked:
            raise SystemExit(f"a timed run made other fills: engine {len(made)} ({sum(made)} units),"
                             f" baseline {book.fills} ({book.filled} units),"
                             f" checked {len(fills)} ({filled} units)")
        eng_t.append(dt)
        base_t.append(bt)
        ratios.append(bt / dt)  # engine rate / baseline rate: >= 1 when the engine is as fast
        ev_t.append(run_engine(orders, events=True)[0])
    print(f"orders: {n}, runs: {runs} (+1 checking warm-up), trades per run: {trades}, "
          f"fills: {len(fills)} ({filled // UNIT:,} shares), the same in the engine and the baseline; "
          f"timer: CPU time (process_time)")
    print(f"engine (events off): {_rate(n, eng_t)}")
    print(f"engine (events on):  {_rate(n, ev_t)}")
    print(f"naive sorted-list baseline: {_rate(n, base_t)}")
    print(f"engine rate / baseline rate (events off, same run): {statistics.median(ratios):.2f}x"
          f" (median of per-run ratios; {min(ratios):.2f}x..{max(ratios):.2f}x; >= 1.0 is the target)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

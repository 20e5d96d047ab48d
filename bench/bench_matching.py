"""Orders per second through the matching engine on a prepared mix of simple limit orders.

The mix (seeded): GTC limit orders on one binary market, 80% on YES and 20% on NO, prices
uniform in 0.45..0.55 on the 0.01 grid, sizes 5..50 shares; about half of them cross and match
(partly across the complement), the rest rest on the book. Requests are built before timing;
the engine runs with events off (``MatchingConfig.emit_events=False``) and settlement off, so the
figure is matching, balances, reservations and trade records. A second figure with events on
is printed too. The baseline is a naive book (one sorted Python list per side, no balances, no
complement) fed the same orders, measured in the same run.

Timing is CPU time of this process (``time.process_time``), so other load on the machine
inflates the figures less than wall time would. One untimed warm-up pass of each measurement
comes first (string hashes of the prepared requests and the interpreter's specialised bytecode
are then the same for every timed run); the timed runs interleave engine, baseline and
events-on passes, so slow drift in machine speed hits all three alike. Figures are medians over
the runs, with the min..max spread. The last line says how many times faster the naive baseline
runs than the engine (it does far less: no balances, reservations, complement or trade records):
the median of the per-run ratios of engine time to baseline time (each pair ran back to back),
which is the steadiest figure when the machine is busy.

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


def run_engine(orders: list[NewOrder], events: bool) -> tuple[float, int]:
    eng = new_engine(events)
    place = eng.place
    gc.collect()
    t0 = time.process_time()
    for i, req in enumerate(orders):
        place(req, 1.0)
        if events and i & 63 == 0:
            eng.drain()
    dt = time.process_time() - t0
    return dt, len(eng.trades)


class NaiveBook:
    """Baseline: a sorted list of (key, seq, [remaining]) per side, matching from the front."""

    def __init__(self) -> None:
        self.bids: list = []  # key = -price (best first)
        self.asks: list = []  # key = price
        self.seq = 0
        self.fills = 0

    def place(self, side: Side, price: int, size: int) -> None:
        if side is Side.BUY:
            book, opp, crosses = self.bids, self.asks, lambda p: p <= price
            key = -price
        else:
            book, opp, crosses = self.asks, self.bids, lambda p: -p >= price
            key = price
        while size and opp and crosses(opp[0][0]):
            entry = opp[0]
            x = min(size, entry[2][0])
            entry[2][0] -= x
            size -= x
            self.fills += 1
            if not entry[2][0]:
                opp.pop(0)
        if size:
            self.seq += 1
            bisect.insort(book, (key, self.seq, [size]))


def run_baseline(orders: list[NewOrder]) -> float:
    simple = [(r.side if r.token == "YES" else r.side.opposite,
               r.price if r.token == "YES" else UNIT - r.price, r.size) for r in orders]
    book = NaiveBook()
    gc.collect()
    t0 = time.process_time()
    for side, price, size in simple:
        book.place(side, price, size)
    return time.process_time() - t0


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
    # warm-up, untimed: the same work as a timed run
    _, trades = run_engine(orders, events=False)
    run_baseline(orders)
    run_engine(orders, events=True)
    eng_t, base_t, ev_t, ratios = [], [], [], []
    for _ in range(runs):
        dt, t = run_engine(orders, events=False)
        if t != trades:
            raise SystemExit(f"engine is not deterministic: {t} trades, expected {trades}")
        bt = run_baseline(orders)
        eng_t.append(dt)
        base_t.append(bt)
        ratios.append(dt / bt)  # engine time / baseline time: how many times faster the baseline ran
        ev_t.append(run_engine(orders, events=True)[0])
    print(f"orders: {n}, runs: {runs} (+1 warm-up), trades per run: {trades}, "
          f"timer: CPU time (process_time)")
    print(f"engine (events off): {_rate(n, eng_t)}")
    print(f"engine (events on):  {_rate(n, ev_t)}")
    print(f"naive sorted-list baseline: {_rate(n, base_t)}")
    print(f"the naive sorted-list baseline (no balances, no complement) runs {statistics.median(ratios):.2f}x"
          f" faster than the engine (events off) in the same run (median of per-run ratios;"
          f" {min(ratios):.2f}x..{max(ratios):.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

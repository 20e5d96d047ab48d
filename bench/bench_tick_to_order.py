"""Tick to order: a book update handed to the engine until the POST body bytes of the two-sided
requote it causes are ready (strategy, risk, router diff, signing with a real ``OrderBuilder``,
reconciler journaling, body serialization), in-process.

Run: ``.venv/bin/python bench/bench_tick_to_order.py``. Prints the median and p99 per update over
several runs, and the ratio against the in-run baseline: signing and serializing the same two
orders alone. Targets: median <= 150 µs, p99 <= 500 µs.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.core.clock import SimClock
from bot.engine.assembly import Signing, build_engine
from bot.engine.engine import Engine, EngineConfig
from bot.execution.protocol import CancelsAnswered, SendCancels, SendPlaces, all_live
from bot.execution.records import CancelResult
from bot.core.markets import MarketInfo
from bot.risk import RiskLimits
from bot.venue.eip712 import Wallet
from bot.venue.enums import Side
from bot.venue.models.ws import decode_market_frame
from bot.venue.orders import OrderBuilder, orders_body
from bot.venue.throttle import RateWindow, Throttle
from strategies.market_maker import MarketMaker, Params

KEY = "0x" + "0123456789abcdef" * 4  # the public throwaway test key of the vectors
COND = "0x" + "ab" * 32
YES = "71321045679252212594626385532706912750332728571942532289631379312455583992563"
NO = "52114319501245915516055106046884209969926127482827954674443846427813813222426"
OWNER = "00000000-1111-2222-3333-444444444444"
RUNS = 5
UPDATES = 2000


def _frame(kind: str, **kw) -> object:
    return decode_market_frame(json.dumps([{"event_type": kind, "market": COND, **kw}]).encode())[0]


def build() -> tuple[Engine, SimClock]:
    clock = SimClock(1_767_225_600.0)
    huge = [RateWindow(10**9, 10.0)]
    throttles = {"place_throttle": Throttle(huge, clock.now), "cancel_throttle": Throttle(huge, clock.now)}
    eng = build_engine(MarketMaker(Params(tokens=(YES,), half_spread_ticks=1)), [MarketInfo(COND, (YES, NO))],
                       clock=clock, signing=Signing(OrderBuilder(Wallet(KEY), 137)), throttles=throttles,
                       risk=RiskLimits(max_orders_per_window=None), engine=EngineConfig(forget_closed_after_s=0.01))
    eng.portfolio.seed(YES, 50_000_000, 500_000)  # holdings: the ask side is quoted too
    eng.on_connection(type("Up", (), {"kind": "connected", "channel": "market", "shard": 0,
                                      "subscriptions": (YES, NO)})())
    levels = lambda ps: [{"price": p, "size": "100"} for p in ps]  # noqa: E731
    for t in (YES, NO):
        answer(eng, eng.on_market([_frame("book", asset_id=t, timestamp="1", hash="h",
                                         bids=levels(["0.47", "0.48"]), asks=levels(["0.52", "0.53"]))]))
    return eng, clock


def answer(eng: Engine, actions: list) -> None:
    """The venue's answers (outside the timed region): places live, cancels done."""
    for a in actions:
        if isinstance(a, SendPlaces):
            eng.on_result(all_live(a.batch))
        elif isinstance(a, SendCancels):
            eng.on_result(CancelsAnswered(a.batch, CancelResult(canceled=a.batch.order_ids)))


def updates() -> list[object]:
    """Alternately add and remove a better bid: the mid moves a tick each time."""
    add = _frame("price_change", timestamp="2", price_changes=[
        {"asset_id": YES, "price": "0.50", "size": "100", "side": "BUY", "hash": "x"}])
    remove = _frame("price_change", timestamp="3", price_changes=[
        {"asset_id": YES, "price": "0.50", "size": "0", "side": "BUY", "hash": "y"}])
    return [add, remove]


def tick_to_order(n: int) -> list[float]:
    eng, clock = build()
    evs = updates()
    perf = time.perf_counter
    out: list[float] = []
    for i in range(n):
        clock.advance(0.001)
        t0 = perf()
        actions = eng.on_market([evs[i & 1]], [t0])
        bodies = [orders_body([o.signed for o in a.batch.orders], OWNER) for a in actions if isinstance(a, SendPlaces)]
        t1 = perf()
        assert bodies and sum(len(a.batch.orders) for a in actions if isinstance(a, SendPlaces)) == 2
        out.append(t1 - t0)
        answer(eng, actions)
        if i % 10 == 9:
            answer(eng, eng.on_timer())  # the live timer: closed orders leave memory
    return out


def signing_alone(n: int) -> list[float]:
    builder = OrderBuilder(Wallet(KEY), 137)
    perf = time.perf_counter
    out: list[float] = []
    for i in range(n):
        t0 = perf()
        a = builder.limit(YES, Side.BUY, 480_000 + (i & 1) * 10_000, 10_000_000, 10_000, False, condition_id=COND)
        b = builder.limit(YES, Side.SELL, 520_000 + (i & 1) * 10_000, 10_000_000, 10_000, False, condition_id=COND)
        orders_body([a, b], OWNER)
        out.append(perf() - t0)
    return out


def p99(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(len(s) * 0.99))]


def main() -> None:
    from bot.ops.logging import configure

    from bot.compiled import summary

    configure(level="warning")  # as in production: debug lines are filtered, not rendered
    print(f"python {sys.version.split()[0]}, {summary()}")
    tick_to_order(200)  # warm caches
    meds, p99s, base = [], [], []
    for _ in range(RUNS):
        xs = tick_to_order(UPDATES)
        meds.append(statistics.median(xs))
        p99s.append(p99(xs))
        base.append(statistics.median(signing_alone(UPDATES)))
    med, tail, b = statistics.median(meds), statistics.median(p99s), statistics.median(base)
    print(f"tick-to-order (two-sided requote, signed, body bytes ready): median {med * 1e6:.1f} µs, "
          f"p99 {tail * 1e6:.1f} µs  (median of {RUNS} runs x {UPDATES} updates; targets 150 / 500 µs)")
    print(f"baseline, signing + body of the same two orders alone: median {b * 1e6:.1f} µs")
    print(f"ratio tick-to-order / signing alone: {med / b:.2f}x  (core overhead {(med - b) * 1e6:.1f} µs)")


if __name__ == "__main__":
    main()

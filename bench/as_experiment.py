"""The experiment of Avellaneda and Stoikov's section 3.3, rerun: the inventory strategy against the
symmetric one, and the paper's table beside ours.

    python -m bench.as_experiment [--paths 1000] [--seed 1]

Setting (the paper's): s = 100, T = 1, sigma = 2, dt = 0.005, k = 1.5, A = 140, q0 = 0, gamma in
{0.1, 0.01, 1}. The mid moves up or down by ``sigma * sqrt(dt)`` with equal probability each step.
The inventory strategy quotes ``r -+ spread / 2`` with ``r`` and the spread from
``strategies.avellaneda_stoikov`` (the strategy's own formulas); the symmetric one quotes the mid
``-+`` half the inventory strategy's average spread. In each step a quote at distance ``delta``
from the mid is hit with probability ``A * exp(-k * delta) * dt``: both strategies meet the same
takers (``bot.backtest.synthetic.taker_reach``, the synthetic market's model) and the same mid
path, so the comparison is paired. Profit is cash plus the inventory at the final mid.

This experiment is scale-free (the mid is 100, not a price in [0, 1]): it is its own small
simulation, pure Python, deterministic for a seed.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys

import msgspec

from bot.backtest.synthetic import taker_reach
from strategies.avellaneda_stoikov import optimal_spread, reservation_price

# The paper's Tables (section 3.3): gamma -> strategy -> (average spread, mean profit, std profit,
# mean final q, std final q), as printed.
PAPER: dict[float, dict[str, tuple[float, float, float, float, float]]] = {
    0.1: {"inventory": (1.29, 62.94, 5.89, 0.10, 2.80), "symmetric": (1.29, 67.21, 13.43, -0.018, 8.66)},
    0.01: {"inventory": (1.33, 66.78, 8.76, -0.02, 4.70), "symmetric": (1.33, 67.36, 13.40, -0.31, 8.65)},
    1.0: {"inventory": (1.15, 33.92, 4.72, -0.02, 1.88), "symmetric": (1.15, 66.20, 14.53, 0.25, 9.06)},
}


class Setting(msgspec.Struct, frozen=True, kw_only=True):
    s0: float = 100.0
    horizon: float = 1.0
    sigma: float = 2.0
    dt: float = 0.005
    k: float = 1.5
    a: float = 140.0
    q0: int = 0


class Outcome(msgspec.Struct, frozen=True):
    """One strategy over all paths: the figures of the paper's table."""

    average_spread: float
    profit_mean: float
    profit_std: float
    q_mean: float
    q_std: float


def _paths(setting: Setting, paths: int, seed: int) -> list[list[tuple[int, float | None, float | None]]]:
    """Per path and step: the mid's move (+1/-1) and how far the step's buyer and seller reached."""
    rng = random.Random(seed)
    n = round(setting.horizon / setting.dt)
    a, k, dt = setting.a, setting.k, setting.dt
    return [[(1 if rng.random() < 0.5 else -1, taker_reach(rng, a, k, dt), taker_reach(rng, a, k, dt))
             for _ in range(n)] for _ in range(paths)]


def _run(setting: Setting, draws: list, quotes) -> tuple[Outcome, float]:
    """Every path with ``quotes(s, q, tau) -> (bid, ask)``; returns the outcome and the average
    quoted spread."""
    step = setting.sigma * math.sqrt(setting.dt)
    profits, finals = [], []
    spread_sum, spread_n = 0.0, 0
    for path in draws:
        s, q, cash = setting.s0, setting.q0, 0.0
        for i, (move, buyer, seller) in enumerate(path):
            tau = setting.horizon - i * setting.dt
            bid, ask = quotes(s, q, tau)
            spread_sum += ask - bid
            spread_n += 1
            if seller is not None and seller >= s - bid:  # a seller reached our bid
                q += 1
                cash -= bid
            if buyer is not None and buyer >= ask - s:  # a buyer reached our ask
                q -= 1
                cash += ask
            s += move * step
        profits.append(cash + q * s)
        finals.append(q)
    avg = spread_sum / spread_n
    return Outcome(avg, statistics.fmean(profits), statistics.stdev(profits), statistics.fmean(finals),
                   statistics.stdev(finals)), avg


def experiment(gamma: float, paths: int = 1000, seed: int = 1, setting: Setting | None = None) -> dict[str, Outcome]:
    """The inventory and the symmetric strategies on the same ``paths`` paths for ``gamma``."""
    st = setting or Setting()
    draws = _paths(st, paths, seed)
    sig, k = st.sigma, st.k

    def inventory(s: float, q: int, tau: float) -> tuple[float, float]:
        r = reservation_price(s, q, gamma, sig, tau)
        half = optimal_spread(gamma, sig, tau, k) / 2.0
        return r - half, r + half

    inv, avg = _run(st, draws, inventory)

    def symmetric(s: float, q: int, tau: float) -> tuple[float, float]:
        return s - avg / 2.0, s + avg / 2.0

    sym, _ = _run(st, draws, symmetric)
    return {"inventory": inv, "symmetric": sym}


def table(results: dict[float, dict[str, Outcome]]) -> str:
    """The paper's table, ours beside the published figures, row by row."""
    head = f"{'gamma':>6} {'strategy':<10} {'spread':>14} {'profit':>16} {'std(profit)':>16} {'final q':>16} {'std(final q)':>16}"
    lines = [head, f"{'':>6} {'':<10} {'ours | paper':>14} {'ours | paper':>16} {'ours | paper':>16} "
             f"{'ours | paper':>16} {'ours | paper':>16}"]
    for gamma, rows in results.items():
        for name, o in rows.items():
            p = PAPER.get(gamma, {}).get(name)
            ours = (o.average_spread, o.profit_mean, o.profit_std, o.q_mean, o.q_std)
            cells = [f"{x:7.2f} | {y:6.2f}" if p else f"{x:7.2f} |   -   " for x, y in zip(ours, p or ours)]
            lines.append(f"{gamma:>6g} {name:<10} {cells[0]:>14} {cells[1]:>16} {cells[2]:>16} {cells[3]:>16} {cells[4]:>16}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.as_experiment", description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if not 2 <= args.paths <= 1_000_000:
        print("--paths must be within 2..1000000", file=sys.stderr)
        return 2
    results = {g: experiment(g, args.paths, args.seed) for g in (0.1, 0.01, 1.0)}
    print(f"Avellaneda-Stoikov section 3.3: {args.paths} paths, seed {args.seed}")
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The experiment of Avellaneda and Stoikov's section 3.3, rerun through the trading path: the
shipped inventory strategy against the symmetric one on the synthetic market, and the paper's table
beside ours.

    python -m bench.as_experiment [--paths 1000] [--seed 1] [--jobs 2]

Every path is one backtest (``bot.backtest.runner.run_backtest``): the strategy object the bot
loads (``strategies.avellaneda_stoikov:AvellanedaStoikov``), the engine, risk, the router and the
simulated venue, on the synthetic market (``bot.backtest.synthetic``), as ``bot backtest
--synthetic`` runs them. The paper's setting (s = 100, T = 1, sigma = 2, dt = 0.005, k = 1.5,
A = 140, q0 = 0) maps onto the venue's prices in [0, 1] and its seconds by two scales:

- a price scale ``PRICE = 0.01``: the paper's price unit is 0.01 USDC, so s = 100 is the mid 0.50
  (the mid starts at 0.5; only its changes matter), sigma = 2 is 0.02, k = 1.5 is 150 per price
  unit, gamma is ``gamma / PRICE`` per price unit, and a tick of 0.0001 is 0.01 of the paper's unit;
- a time scale ``TIME = 100``: the paper's time unit is 100 seconds, so T = 100 s, dt = 0.5 s,
  A = 1.4 takers per second and sigma = 0.002 per square root of a second (the synthetic market's
  default dt and k, the sigma of ``config/synthetic.toml``; the venue's rate limits allow a
  requote every step).

The paper's unit trade is a lot of ``LOT`` = 100 shares, so one unit of the paper's cash (a unit
trade times a price unit) is ``PRICE * LOT`` = 1 USDC: a profit in USDC is the paper's profit.

A quote at distance ``delta`` from the mid is reached in a step with probability ``min(1, A *
exp(-k * delta) * dt)``, through the mid too (the synthetic market's ``takers_through_mid``). The
symmetric strategy (``Symmetric`` here, a model maker like the shipped one) quotes the mid ``-+``
half the inventory strategy's average spread, the time-average of ``optimal_spread`` over the
steps. Both meet the
same market (the same seed per path: the same mid path and the same takers), so the comparison is
paired. Profit is the backtest's PnL (cash plus the position at the final mid) in the paper's units.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import msgspec

from bot.backtest.runner import run_backtest
from bot.backtest.synthetic import SyntheticConfig, SyntheticMarket
from bot.ops.config import BotConfig
from bot.sim.latency import LatencyConfig
from bot.venue.units import UNIT
from strategies.avellaneda_stoikov import optimal_spread
from strategies.model_maker import ModelInputs, ModelMaker, ModelParams, quote_at_distances
from strategies.pairs import Holdings, Pair, YesQuotes

PRICE = 0.01  # venue price units per paper price unit
TIME = 100.0  # venue seconds per paper time unit
LOT = 100 * UNIT  # the paper's unit trade, share micro-units
TICK = 100  # 0.0001: a hundredth of the paper's price unit
INVENTORY = "strategies.avellaneda_stoikov:AvellanedaStoikov"
SYMMETRIC = "bench.as_experiment:Symmetric"
GAMMAS = (0.1, 0.01, 1.0)

# The published tables (section 3.3): gamma -> strategy -> (average spread, mean profit, std profit,
# mean final q, std final q), as printed.
PAPER: dict[float, dict[str, tuple[float, float, float, float, float]]] = {
    0.1: {"inventory": (1.29, 62.94, 5.89, 0.10, 2.80), "symmetric": (1.29, 67.21, 13.43, -0.018, 8.66)},
    0.01: {"inventory": (1.33, 66.78, 8.76, -0.02, 4.70), "symmetric": (1.33, 67.36, 13.40, -0.31, 8.65)},
    1.0: {"inventory": (1.15, 33.92, 4.72, -0.02, 1.88), "symmetric": (1.15, 66.20, 14.53, 0.25, 9.06)},
}


class Setting(msgspec.Struct, frozen=True, kw_only=True):
    """The paper's setting, in its own units."""

    s0: float = 100.0
    horizon: float = 1.0
    sigma: float = 2.0
    dt: float = 0.005
    k: float = 1.5
    a: float = 140.0

    @property
    def steps(self) -> int:
        return round(self.horizon / self.dt)


class Outcome(msgspec.Struct, frozen=True):
    """One strategy over all paths: the figures of the paper's table."""

    average_spread: float
    profit_mean: float
    profit_std: float
    q_mean: float
    q_std: float


class SymmetricParams(ModelParams, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The benchmark's one parameter: its half spread (price units)."""

    half_spread: float = 0.01


class Symmetric(ModelMaker):
    """The paper's benchmark: the mid ``-+ half_spread`` whatever the inventory, on the shared grid
    rules of every model maker (bid floored, ask ceiled)."""

    Params = SymmetricParams

    def model_quote(self, pair: Pair, holdings: Holdings, inputs: ModelInputs, now: float) -> YesQuotes:
        h = self.params.half_spread
        return quote_at_distances(pair, holdings, self.params, lambda q: (h, h))


def average_spread(setting: Setting, gamma: float) -> float:
    """The inventory strategy's spread averaged over the steps where it quotes (paper units)."""
    n = setting.steps
    return sum(optimal_spread(gamma, setting.sigma, setting.horizon - i * setting.dt, setting.k)
               for i in range(n)) / n


def market(setting: Setting, seed: int) -> SyntheticConfig:
    """The synthetic market of one path: the paper's mid and takers at the two scales, 200 steps
    of takers (the last at T - dt), a tick of 0.0001 and a background book far enough from the
    mid (0.29, 29 of the paper's units) that no quote of either strategy meets it."""
    return SyntheticConfig(
        seed=seed, duration_s=(setting.horizon - setting.dt) * TIME, dt=setting.dt * TIME, start=0.5,
        sigma=setting.sigma * PRICE / math.sqrt(TIME), a=setting.a / TIME, k=setting.k / PRICE, tick=TICK,
        half_spread_ticks=2900, levels=1, level_size=LOT, taker_size=LOT, takers_through_mid=True)


def bot_config(setting: Setting, path: str, params: dict[str, Any]) -> BotConfig:
    """A backtest config for the paper's market maker: fixed inputs (the model's own), a horizon
    every ``T``, no inventory limit the paper has not (100 lots), risk limits that bind nothing the
    paper has not, no latency (the paper's quotes are in place for the step they are set in), the
    engine's timer once per ``T`` (the strategy requotes on every book)."""
    c = BotConfig()
    r = msgspec.structs.replace
    # a config's params table, as a file writes it: sizes in shares
    model = {"sigma": setting.sigma * PRICE / math.sqrt(TIME), "a": setting.a / TIME, "k": setting.k / PRICE,
             "estimate": False, "order_size": LOT // UNIT, "max_inventory": 100 * LOT // UNIT, "requote_ticks": 1}
    c = r(c, strategy=r(c.strategy, path=path, params={**model, **params}))
    c = r(c, risk=r(c.risk, max_order_size=None, max_position=None, max_market_notional=None,
                    max_event_notional=None, max_net_exposure=None, max_event_loss=None, max_open_orders=None,
                    max_orders_per_window=None))
    c = r(c, sim=r(c.sim, latency=LatencyConfig(entry=0.0, response=0.0), fee_rate_bps=0, collateral=10**12))
    return r(c, shell=r(c.shell, timer_interval_s=setting.horizon * TIME))


def strategies(setting: Setting, gamma: float) -> dict[str, BotConfig]:
    """The two configs for ``gamma``: the shipped strategy and the benchmark at its average spread."""
    inventory = bot_config(setting, INVENTORY, {"gamma": gamma / PRICE, "horizon": "session",
                                                "session_s": setting.horizon * TIME})
    half = average_spread(setting, gamma) * PRICE / 2.0
    symmetric = bot_config(setting, SYMMETRIC, {"gamma": gamma / PRICE, "half_spread": half})
    return {"inventory": inventory, "symmetric": symmetric}


def path_seed(seed: int, path: int) -> int:
    return seed * 1_000_000 + path


def run_path(setting: Setting, config: BotConfig, seed: int) -> tuple[float, float]:
    """One path through the trading path: ``(profit, final q)`` in the paper's units."""
    source = SyntheticMarket(market(setting, seed))
    summary = run_backtest(config, [], source=source)
    yes, no = source.markets[0].tokens
    q = (summary.final_position.get(yes, 0) - summary.final_position.get(no, 0)) / LOT
    return summary.pnl / (PRICE * LOT), q


def _chunk(job: tuple[Setting, BotConfig, list[int]]) -> list[tuple[float, float]]:
    setting, config, seeds = job
    return [run_path(setting, config, s) for s in seeds]


def run_all(gammas: tuple[float, ...], paths: int, seed: int, setting: Setting | None = None,
            jobs: int = 1) -> dict[float, dict[str, Outcome]]:
    """Every ``gamma`` and both strategies on paths ``0 .. paths - 1`` of ``seed``, over ``jobs``
    processes (the figures do not depend on ``jobs``: every path is its own seeded backtest)."""
    st = setting or Setting()
    seeds = [path_seed(seed, i) for i in range(paths)]
    size = max(1, min(100, paths // (4 * jobs) or 1))
    work = [(g, name, cfg) for g in gammas for name, cfg in strategies(st, g).items()]
    chunks = [(st, cfg, seeds[i:i + size]) for _, _, cfg in work for i in range(0, paths, size)]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            done = list(pool.map(_chunk, chunks))
    else:
        done = [_chunk(c) for c in chunks]
    per = len(range(0, paths, size))
    out: dict[float, dict[str, Outcome]] = {}
    for n, (g, name, _) in enumerate(work):
        results = [r for c in done[n * per:(n + 1) * per] for r in c]
        profits, finals = [p for p, _ in results], [q for _, q in results]
        out.setdefault(g, {})[name] = Outcome(average_spread(st, g), statistics.fmean(profits),
                                              statistics.stdev(profits), statistics.fmean(finals),
                                              statistics.stdev(finals))
    return out


def table(results: dict[float, dict[str, Outcome]]) -> str:
    """The paper's table, ours beside the published figures, each row under its own gamma."""
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
    parser.add_argument("--jobs", type=int, default=1, help="processes (the figures do not depend on it)")
    args = parser.parse_args(argv)
    if not 2 <= args.paths <= 1_000_000:
        print("--paths must be within 2..1000000", file=sys.stderr)
        return 2
    if not 1 <= args.jobs <= 64:
        print("--jobs must be within 1..64", file=sys.stderr)
        return 2
    wall = time.perf_counter()
    results = run_all(GAMMAS, args.paths, args.seed, jobs=args.jobs)
    wall = time.perf_counter() - wall
    print(f"Avellaneda-Stoikov section 3.3 through the trading path: {args.paths} paths, seed {args.seed}")
    print(table(results))
    print(f"{6 * args.paths} backtests in {wall:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A seeded synthetic market for research backtests: the model of the market-making papers, as the
market events a recording would hold (``bot backtest --synthetic``, or ``run_backtest(...,
source=SyntheticMarket(config))``).

- The mid follows a Brownian motion of volatility ``sigma`` (price units per square root of a
  second), with optional jumps (``jump_rate`` per second, normal of std ``jump_sd``), reflected
  into the range where the background book fits.
- In every step of ``dt`` seconds, on each side of the market, a taker arrives with probability
  ``a * dt`` and reaches a distance from the mid drawn from an exponential law of rate ``k``
  (``taker_reach``). A resting quote at distance ``delta >= 0`` is thus reached in a step with
  probability exactly ``a * dt * exp(-k * delta)``: the intensity ``A * exp(-k * delta)`` of
  Avellaneda and Stoikov, one step at a time. With ``takers_through_mid`` the law holds for every
  ``delta``: one taker per side and step, reaching a quote at distance ``delta`` with probability
  ``min(1, a * dt * exp(-k * delta))``, so a quote through the mid (``delta < 0``) is reached more
  often than one at the mid, and surely once ``delta <= ln(a * dt) / k`` (the paper's literal rule;
  without it such a quote is reached with probability ``a * dt``). A taker that stops short of the
  mid prints there, through the mid.
- A taker is a trade print at the farthest grid price it reached (floored for a buyer of YES,
  ceiled for a seller) of ``taker_size`` plus what the background shows there, and its mirror on
  the NO book (the other side, at ``1 - p``, the same ``transaction_hash``): the venue's two books
  are one market, so a quote reaches the same takers on either token. The simulated venue fills
  every order of ours within a print's reach (``bot.sim.venue``: through our price at once, at our
  price through the queue). A print inside the spread stands for a taker that would have met a
  quote there; the feed's own books never change for it.
- The background book has ``levels`` levels of ``level_size`` per side, the best
  ``half_spread_ticks`` ticks from the mid (floored and ceiled to the grid); each book's snapshot
  is sent every step, so the background replenishes what takers (our takes included) removed.
  The NO book mirrors the YES book at ``1 - p``, its mid shifted by an independent normal offset
  of std ``complement_gap_sd`` in every step when that is set (a complement mispricing, for
  arbitrage research).

Scale-free: every parameter is in price units and seconds, so the model is the same at any tick the
venue supports (``tick``) and at any step. Deterministic: the same config gives the same events
(each market draws from its own ``random.Random`` seeded from ``seed`` and its index). Prices and
sizes are integer micro-units; floats only drive the model (the mid, the reaches), with the
rounding rules above. Memory does not grow with the duration: events are generated as they are read.
"""

from __future__ import annotations

import hashlib
import math
import random
from typing import Iterator

import msgspec

from bot.core.markets import MarketInfo
from bot.core.quantities import Price, Shares
from bot.venue.amounts import TICK_RULES
from bot.venue.models.book import Level
from bot.venue.models.ws import BookEvent, LastTradePriceEvent
from bot.venue.units import UNIT, format_units

START_TS = 1_767_225_600.0  # 2026-01-01T00:00:00Z, where synthetic time begins by default


class SyntheticConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The synthetic market: its model (price units and seconds) and its book (in a config file,
    ``tick`` is a price and sizes are shares: ``tick = 0.01``, ``min_size = 5``)."""

    seed: int = 1
    markets: int = 1
    duration_s: float = 3600.0
    dt: float = 0.5
    start: float = 0.5  # the mid at time 0
    sigma: float = 0.001  # per sqrt(second)
    jump_rate: float = 0.0  # jumps per second
    jump_sd: float = 0.0
    a: float = 1.0  # takers per second on each side of the market
    k: float = 150.0  # per price unit
    tick: Price = 10_000
    min_size: Shares = 5_000_000
    half_spread_ticks: int = 2
    levels: int = 3
    level_size: Shares = 100_000_000
    taker_size: Shares = 100_000_000
    complement_gap_sd: float = 0.0
    takers_through_mid: bool = False  # the intensity a * exp(-k * delta) for delta < 0 too
    start_ts: float = START_TS

    def __post_init__(self) -> None:
        if self.tick not in TICK_RULES:
            raise ValueError(f"tick must be one the venue supports ({sorted(TICK_RULES)} units), got {self.tick}")
        if not 1 <= self.markets <= 100:
            raise ValueError(f"markets must be within 1..100, got {self.markets}")
        for name in ("duration_s", "dt", "sigma", "jump_rate", "jump_sd", "a", "k", "complement_gap_sd",
                     "start", "start_ts"):
            v = getattr(self, name)
            if not math.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {v}")
        if not 0 < self.dt <= 60 or not 0 < self.duration_s <= 30 * 86_400:
            raise ValueError("need 0 < dt <= 60 and 0 < duration_s <= 2592000 seconds")
        if self.duration_s / self.dt > 50_000_000:
            raise ValueError("duration_s / dt must be at most 50,000,000 steps")
        if self.a * self.dt > 1:
            raise ValueError(f"a * dt must be at most 1 (one taker per side and step), got {self.a * self.dt}")
        if self.k <= 0:
            raise ValueError("k must be positive")
        if self.half_spread_ticks < 1 or not 1 <= self.levels <= 50:
            raise ValueError("need half_spread_ticks >= 1 and 1 <= levels <= 50")
        if min(self.min_size, self.level_size, self.taker_size) <= 0:
            raise ValueError("min_size, level_size and taker_size must be positive")
        lo, hi = self.bounds
        if not lo < self.start * UNIT < hi:
            raise ValueError(f"start must be within ({lo / UNIT}, {hi / UNIT}) for this book, got {self.start}")

    @property
    def bounds(self) -> tuple[int, int]:
        """Where the mid may go (micro-units): the whole background book stays on the price range."""
        edge = (self.half_spread_ticks + self.levels) * self.tick
        return edge, UNIT - edge


def taker_reach(rng: random.Random, a: float, k: float, dt: float, through_mid: bool = False) -> float | None:
    """One side's taker in one step of ``dt``: the distance from the mid it reaches (price units),
    or ``None`` when none came.

    Invariant: ``P(reach >= delta) = a dt e^(-k delta)`` for ``delta >= 0`` (a taker comes with
    probability ``a dt``; its reach is exponential of rate ``k``). With ``through_mid``,
    ``P(reach >= delta) = min(1, a dt e^(-k delta))`` for every ``delta``: the reach is ``(ln(a dt)
    - ln u) / k`` for ``u`` uniform on ``(0, 1]``, never below ``ln(a dt) / k``, below 0 when the
    taker stops short of the mid (``None`` only when ``a = 0``)."""
    if through_mid:
        if a * dt <= 0.0:
            return None
        u = 1.0 - rng.random()  # (0, 1]
        return (math.log(a * dt) - math.log(u)) / k
    if rng.random() >= a * dt:
        return None
    return rng.expovariate(k)


def _ids(seed: int, index: int) -> tuple[str, tuple[str, str]]:
    h = hashlib.sha256(f"synthetic|{seed}|{index}".encode()).digest()
    token = [str(int.from_bytes(hashlib.sha256(h + bytes([i])).digest(), "big")) for i in (0, 1)]
    return "0x" + h.hex(), (token[0], token[1])


def _floor(x: int, tick: int) -> int:
    return x // tick * tick


def _ceil(x: int, tick: int) -> int:
    return -(-x // tick) * tick


class _Market:
    """One market's state: its mid, its rng, the levels last sent per token."""

    def __init__(self, config: SyntheticConfig, index: int) -> None:
        self.config = config
        cid, tokens = _ids(config.seed, index)
        self.info = MarketInfo(cid, tokens, tick=config.tick, min_size=config.min_size)
        self.rng = random.Random(f"{config.seed}|{index}")
        self.index = index
        self.mid = config.start
        self.prints = 0
        self.sent: dict[str, tuple] = {}

    def step(self, t: float, first: bool) -> list[object]:
        """The events of one step at time ``t`` (seconds): books that changed, then prints."""
        c, rng = self.config, self.rng
        if not first:
            m = self.mid + c.sigma * math.sqrt(c.dt) * rng.gauss(0.0, 1.0)
            if c.jump_rate and rng.random() < c.jump_rate * c.dt:
                m += rng.gauss(0.0, c.jump_sd)
            self.mid = _reflect(m, *(b / UNIT for b in c.bounds))
        gap = rng.gauss(0.0, c.complement_gap_sd) if c.complement_gap_sd else 0.0
        lo, hi = c.bounds
        yes_mid = round(self.mid * UNIT)
        no_mid = min(hi, max(lo, round((1.0 - self.mid + gap) * UNIT)))
        ms = str(int(round(t * 1000)))
        out: list[object] = []
        for token, mid in zip(self.info.tokens, (yes_mid, no_mid)):
            bids, asks = self.levels(mid)
            self.sent[token] = (bids, asks)  # sent every step: the background replenishes what was taken
            out.append(BookEvent(market=self.info.condition_id, asset_id=token, timestamp=ms,
                                 bids=[Level(price=format_units(p), size=format_units(z)) for p, z in reversed(bids)],
                                 asks=[Level(price=format_units(p), size=format_units(z)) for p, z in reversed(asks)],
                                 tick_size=format_units(c.tick), min_order_size=format_units(c.min_size)))
        yes, no = self.info.tokens
        for buyer in (True, False):  # a buyer of YES is a seller of NO at 1 - p, and the other way
            reach = taker_reach(rng, c.a, c.k, c.dt, c.takers_through_mid)
            if reach is None:
                continue
            d = math.floor(min(reach, 1.0) * UNIT)
            price = _floor(yes_mid + d, c.tick) if buyer else _ceil(yes_mid - d, c.tick)
            price = min(UNIT - c.tick, max(c.tick, price))
            self.prints += 1
            tx = f"0x{self.index:016x}{self.prints:048x}"
            for token, p, buys in ((yes, price, buyer), (no, UNIT - price, not buyer)):
                bids, asks = self.sent[token]
                shown = dict(asks if buys else bids).get(p, 0)
                out.append(LastTradePriceEvent(asset_id=token, market=self.info.condition_id, price=format_units(p),
                                               side="BUY" if buys else "SELL", size=format_units(c.taker_size + shown),
                                               fee_rate_bps="0", timestamp=ms, transaction_hash=tx))
        return out

    def levels(self, mid: int) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
        """The background's bids and asks (best first) around ``mid`` (micro-units)."""
        c = self.config
        tick = c.tick
        best_bid = _floor(mid - 1, tick) - (c.half_spread_ticks - 1) * tick
        best_ask = _ceil(mid + 1, tick) + (c.half_spread_ticks - 1) * tick
        bids = tuple((best_bid - i * tick, c.level_size) for i in range(c.levels) if best_bid - i * tick >= tick)
        asks = tuple((best_ask + i * tick, c.level_size) for i in range(c.levels) if best_ask + i * tick <= UNIT - tick)
        return bids, asks


def _reflect(x: float, lo: float, hi: float) -> float:
    """``x`` folded back into ``[lo, hi]`` (a Brownian motion reflected at both ends)."""
    span = hi - lo
    y = (x - lo) % (2 * span)
    return lo + (y if y <= span else 2 * span - y)


class SyntheticMarket:
    """The backtest data source: ``markets`` (the core's ``MarketInfo``) and ``events()``, the
    ``(receive ns, event)`` pairs in time order (received when sent: no feed delay)."""

    def __init__(self, config: SyntheticConfig | None = None) -> None:
        self.config = config or SyntheticConfig()
        self.markets = [_Market(self.config, i).info for i in range(self.config.markets)]

    def events(self) -> Iterator[tuple[int, object]]:
        c = self.config
        markets = [_Market(c, i) for i in range(c.markets)]
        steps = int(round(c.duration_s / c.dt))
        for i in range(steps + 1):
            t = c.start_ts + i * c.dt
            ns = int(round(t * 1e9))
            for m in markets:
                for ev in m.step(t, i == 0):
                    yield ns, ev

"""Seeded background traders that keep one binary market's books alive (the local exchange's flow).

* A hidden fair value (the YES probability) follows a random walk in logit space with Poisson
  jumps. The markets of one neg-risk event share an ``EventValue`` instead: each outcome's latent
  score walks on its own and its fair value is its softmax share, so the event's fair values sum
  to exactly 1 at every instant (its books, quoted around them, sum near 1; each market's own
  traders move them apart for a while: arbitrage windows open and close).
* Liquidity providers requote a ladder around the fair value (BUY YES below it, BUY NO at
  ``1 - p`` above it, so they only need collateral) and merge YES+NO pairs they accumulate.
* Noise takers send FAK orders of random side and size, with a bounded slippage.
* An informed trader buys the side the fair value favours when the book is off by more than its
  edge, so a market maker that quotes there earns the spread from noise and loses to it.

Invariants: every random draw comes from ``random.Random(seed)``; actions happen at Poisson
times drawn from that generator; the fair value moves only at action times. So the same engine
configuration, seed and sequence of ``step(now)`` calls give the identical event stream.
Floats are used only for the fair value and the decisions; orders are integer units.
"""

from __future__ import annotations

import heapq
import math
import random

import msgspec

from bot.core.markets import MarketInfo
from bot.sim.matching import MatchingEngine
from bot.sim.orders import LOT, NewOrder
from bot.venue.enums import OrderType, Side
from bot.venue.units import UNIT

_LP, _NOISE, _INFORMED = 0, 1, 2


class FlowConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    start_price: float = 0.5  # initial fair YES probability
    volatility: float = 0.01  # logit std per sqrt(second)
    jump_rate: float = 0.005  # jumps per second
    jump_size: float = 0.4  # logit std of a jump
    lp_count: int = 3
    lp_rate: float = 0.2  # requotes per second, per provider
    lp_half_spread: int = 20_000  # 0.02 from fair to the first level
    lp_levels: int = 3
    lp_level_step: int = 10_000  # between ladder levels (rounded up to the tick)
    lp_size: int = 20_000_000  # shares per level
    noise_rate: float = 0.3  # orders per second
    noise_min: int = 5_000_000  # USDC (BUY) or shares (SELL) per order
    noise_max: int = 40_000_000
    noise_slippage: int = 30_000  # worst price this far past the best
    informed_rate: float = 0.5  # looks per second
    informed_edge: int = 10_000  # acts when fair is this far through the best price
    informed_amount: int = 30_000_000  # USDC per informed order
    funding: int = 1_000_000_000_000  # collateral each synthetic account starts with (and refills)
    name: str = "sim"  # account prefix
    # the providers' quotes dislocate from the fair value now and then (a jump, decaying back):
    # in a neg-risk event, the windows in which a whole set is mispriced
    dislocation_rate: float = 0.0  # jumps per second (0: never; the default draws nothing)
    dislocation_size: float = 0.06  # std of a jump, in probability
    dislocation_half_life_s: float = 4.0

    def faster(self, speed: float) -> "FlowConfig":
        """The same traders with time running ``speed`` times faster: every rate (actions, jumps)
        times ``speed``, the fair value's volatility per sqrt(second) times sqrt(speed)."""
        if speed == 1.0:
            return self
        return msgspec.structs.replace(
            self, volatility=self.volatility * math.sqrt(speed), jump_rate=self.jump_rate * speed,
            lp_rate=self.lp_rate * speed, noise_rate=self.noise_rate * speed, informed_rate=self.informed_rate * speed,
            dislocation_rate=self.dislocation_rate * speed, dislocation_half_life_s=self.dislocation_half_life_s / speed,
        )

    def __post_init__(self) -> None:
        if not 0 < self.start_price < 1:
            raise ValueError("start_price must be within (0, 1)")
        if min(self.lp_rate, self.noise_rate, self.informed_rate, self.dislocation_rate) < 0:
            raise ValueError("rates must be >= 0")
        if self.dislocation_half_life_s <= 0 or self.dislocation_size < 0:
            raise ValueError("dislocation_half_life_s must be > 0 and dislocation_size >= 0")
        if self.noise_min <= 0 or self.noise_max < self.noise_min:
            raise ValueError("need 0 < noise_min <= noise_max")


def walk(x: float, dt: float, cfg: FlowConfig, rng: random.Random, bound: float) -> float:
    """A hidden value ``x`` (logit space) ``dt`` seconds on: a Gaussian step of ``volatility``
    per sqrt(second), a jump of ``jump_size`` with probability ``1 - exp(-jump_rate dt)``, then
    held within ``[-bound, bound]``; the draws come from ``rng`` in that order."""
    x += cfg.volatility * math.sqrt(dt) * rng.gauss(0.0, 1.0)
    if cfg.jump_rate and rng.random() < 1.0 - math.exp(-cfg.jump_rate * dt):
        x += rng.gauss(0.0, cfg.jump_size)
    return max(-bound, min(bound, x))


class EventValue:
    """The hidden values of one neg-risk event's outcomes (exactly one wins), moved together.

    Each outcome has a latent score on a random walk with Poisson jumps (the ``FlowConfig``'s
    volatility and jumps); an outcome's fair YES probability is ``exp(score) / sum(exp(scores))``.
    Invariants: the fair values sum to 1 (to float rounding) at every instant; the scores move only
    forward in time, at the times the event's markets act, from this object's own seeded generator.
    """

    def __init__(self, starts: list[float], config: FlowConfig, seed: int | str = 0) -> None:
        if len(starts) < 2 or min(starts) <= 0:
            raise ValueError("an event needs at least two outcomes, each with a positive start")
        total = sum(starts)
        self.scores = [math.log(p / total) for p in starts]
        self.config = config
        self.rng = random.Random(seed)
        self.time: float | None = None

    def evolve(self, t: float) -> None:
        if self.time is None:
            self.time = t
            return
        dt = t - self.time
        if dt <= 0:
            return
        scores = self.scores
        for i in range(len(scores)):
            scores[i] = walk(scores[i], dt, self.config, self.rng, 8.0)
        self.time = t

    def fair(self, outcome: int) -> float:
        """Outcome ``outcome``'s fair YES probability now."""
        scores = self.scores
        top = max(scores)
        weights = [math.exp(x - top) for x in scores]
        return weights[outcome] / sum(weights)


class BackgroundTraders:
    """Drives the background traders of one market on the caller's clock (unix seconds)."""

    def __init__(self, engine: MatchingEngine, market: MarketInfo,
                 config: FlowConfig | None = None, seed: int = 0, value: EventValue | None = None,
                 outcome: int = 0) -> None:
        """``value``: the event's shared values (a neg-risk market), of which this market is
        outcome ``outcome``; ``None``: the market's own fair value, from ``start_price``."""
        self.engine = engine
        self.value = value
        self.outcome = outcome
        self.market = market
        self.config = cfg = config or FlowConfig()
        self.rng = random.Random(seed)
        engine.add_market(market)
        tag = f"{cfg.name}-{market.condition_id[:10]}"
        self.lps = [f"{tag}-lp{i}" for i in range(cfg.lp_count)]
        self.noise = f"{tag}-noise"
        self.informed = f"{tag}-informed"
        for acct in (*self.lps, self.noise, self.informed):
            engine.fund(acct, cfg.funding)
        self.logit = math.log(cfg.start_price / (1 - cfg.start_price))
        self.time: float | None = None  # time the fair value was last moved to
        self.dislocation = 0.0  # how far the providers quote from the fair value (decays to 0)
        self._quotes: dict[str, list[str]] = {lp: [] for lp in self.lps}
        self._agenda: list[tuple[float, int, int, int]] = []  # (time, seq, kind, index)
        self._seq = 0

    # the hidden value --------------------------------------------------------------------
    @property
    def fair(self) -> float:
        if self.value is not None:
            return self.value.fair(self.outcome)
        return 1.0 / (1.0 + math.exp(-self.logit))

    def _evolve(self, t: float) -> None:
        last = self.time
        value = self.value
        if value is not None:  # the event's values move, this market's own does not
            value.evolve(t)
            if last is None or t > last:
                self.time = t
        elif last is None:
            self.time = t
        elif t > last:
            self.logit = walk(self.logit, t - last, self.config, self.rng, 6.0)  # within about 0.0025..0.9975
            self.time = t
        if last is not None and t > last and self.config.dislocation_rate:
            self._dislocate(t - last)

    def _dislocate(self, dt: float) -> None:
        """The providers' dislocation over ``dt`` seconds: halved every half-life, and a jump with
        the configured rate."""
        cfg = self.config
        rng = self.rng
        self.dislocation *= 0.5 ** (dt / cfg.dislocation_half_life_s)
        if rng.random() < 1.0 - math.exp(-cfg.dislocation_rate * dt):
            self.dislocation += rng.gauss(0.0, cfg.dislocation_size)

    # scheduling --------------------------------------------------------------------------
    def _schedule(self, t: float, kind: int, index: int, rate: float) -> None:
        if rate <= 0:
            return
        self._seq += 1
        heapq.heappush(self._agenda, (t + self.rng.expovariate(rate), self._seq, kind, index))

    def _start(self, now: float) -> None:
        cfg = self.config
        self._evolve(now)
        for i in range(cfg.lp_count):
            self._requote(i, now)
            self._schedule(now, _LP, i, cfg.lp_rate)
        self._schedule(now, _NOISE, 0, cfg.noise_rate)
        self._schedule(now, _INFORMED, 0, cfg.informed_rate)

    def next_due(self) -> float | None:
        """When the next trader acts (``None`` before the first ``step`` places the quotes)."""
        if self.time is None or not self._agenda:
            return None
        return self._agenda[0][0]

    def step(self, now: float) -> list:
        """Run every action due up to ``now`` (in time order, each at its own time) and return
        the engine's events (``engine.drain()``). The first call places the initial quotes."""
        if self.time is None:
            self._start(now)
        agenda = self._agenda
        cfg = self.config
        while agenda and agenda[0][0] <= now:
            t, _, kind, index = heapq.heappop(agenda)
            self._evolve(t)
            if kind == _LP:
                self._requote(index, t)
                self._schedule(t, _LP, index, cfg.lp_rate)
            elif kind == _NOISE:
                self._noise(t)
                self._schedule(t, _NOISE, 0, cfg.noise_rate)
            else:
                self._inform(t)
                self._schedule(t, _INFORMED, 0, cfg.informed_rate)
        self._evolve(now)
        return self.engine.drain()

    # helpers -----------------------------------------------------------------------------
    def _oid(self) -> str:
        return f"0x{self.rng.getrandbits(256):064x}"

    def _tick(self) -> int:
        return self.engine.tick_size(self.market.tokens[0])

    def _grid(self, price: float, up: bool) -> int:
        """A probability as units on the current grid, inside [tick, 1 - tick]."""
        tick = self._tick()
        units = price * UNIT
        steps = math.ceil(units / tick) if up else math.floor(units / tick)
        return min(max(steps * tick, tick), UNIT - tick)

    def _refill(self, account: str) -> None:
        bal = self.engine.ledger.get(account)
        if bal.collateral - bal.reserved < self.config.funding // 2:
            self.engine.fund(account, self.config.funding)

    def _place(self, account: str, token: str, side: Side, price: int, size: int,
               order_type: OrderType = OrderType.GTC, post_only: bool = False, now: float = 0.0):
        return self.engine.place(
            NewOrder(self._oid(), account, token, side, price, size, order_type, post_only),
            now,
        )

    # agents ------------------------------------------------------------------------------
    def _requote(self, i: int, now: float) -> None:
        cfg = self.config
        eng = self.engine
        lp = self.lps[i]
        yes, no = self.market.tokens
        old = self._quotes[lp]
        if old:
            eng.cancel_orders(old, lp, now)
        acct = eng.ledger.get(lp)
        # (a balance can be below zero: a FAILED trade reversed after its tokens were merged)
        pairs = min(acct.free_tokens(yes), acct.free_tokens(no)) // LOT * LOT
        if pairs > 0:
            eng.merge(lp, self.market.condition_id, pairs)
        self._refill(lp)
        tick = self._tick()
        step = max(tick, -(-cfg.lp_level_step // tick) * tick)
        fair = min(0.99, max(0.01, self.fair + self.dislocation))
        offset = self.rng.randint(0, 2) * tick  # providers differ a little
        size = max(cfg.lp_size, self.market.min_size) // LOT * LOT
        ids = []
        for k in range(cfg.lp_levels):
            gap = (cfg.lp_half_spread + offset + k * step) / UNIT
            bid = self._grid(fair - gap, up=False)
            ask = self._grid(fair + gap, up=True)
            r = self._place(lp, yes, Side.BUY, bid, size, post_only=True, now=now)
            if r.success:
                ids.append(r.order_id)
            r = self._place(lp, no, Side.BUY, UNIT - ask, size, post_only=True, now=now)
            if r.success:
                ids.append(r.order_id)
        self._quotes[lp] = ids

    def _noise(self, now: float) -> None:
        cfg = self.config
        eng = self.engine
        rng = self.rng
        token = self.market.tokens[rng.randrange(2)]
        amount = rng.randint(cfg.noise_min // LOT, cfg.noise_max // LOT) * LOT
        bid, ask = eng.best_bid_ask(token)
        held = eng.ledger.get(self.noise).free_tokens(token) // LOT * LOT
        if held and rng.random() < 0.5:
            if not bid:
                return
            worst = max(self._tick(), bid - cfg.noise_slippage)
            self._place(self.noise, token, Side.SELL, worst, min(amount, held), OrderType.FAK,
                        now=now)
            return
        if not ask:
            return
        self._refill(self.noise)
        worst = min(UNIT - self._tick(), ask + cfg.noise_slippage)
        self._place(self.noise, token, Side.BUY, worst, amount, OrderType.FAK, now=now)

    def _inform(self, now: float) -> None:
        cfg = self.config
        eng = self.engine
        yes, no = self.market.tokens
        fair = int(self.fair * UNIT)
        bid, ask = eng.best_bid_ask(yes)
        self._refill(self.informed)
        if ask and fair - ask > cfg.informed_edge:  # YES too cheap
            worst = self._grid((fair - cfg.informed_edge // 2) / UNIT, up=False)
            self._place(self.informed, yes, Side.BUY, worst, cfg.informed_amount, OrderType.FAK,
                        now=now)
        elif bid and bid - fair > cfg.informed_edge:  # YES too dear: buy NO
            worst = self._grid((UNIT - fair - cfg.informed_edge // 2) / UNIT, up=False)
            self._place(self.informed, no, Side.BUY, worst, cfg.informed_amount, OrderType.FAK,
                        now=now)

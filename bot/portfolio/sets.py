"""Complete sets: outcome tokens of which one share each pays a fixed amount at resolution whatever
happens, so the shares that form them are worth that amount, not their legs' mids.

Kinds: a market's YES + NO (a ``pair``: pays 1 USDC, and can be merged back into 1 USDC at any
time); the YES of every market of a neg-risk event (``yes``: exactly one resolves YES, 1 USDC);
the NO of every market of such an event (``no``: all but one resolve NO, ``k - 1`` USDC for ``k``
markets). An event's sets take its markets in the index as all of them (as the strategies and the
risk groups do); ``set_groups(..., events=False)`` counts pairs only.

Invariants: every figure is exact integer micro-units. A share is in at most one set: pairs take
first, then an event's YES or NO sets take what the pairs left (which locks the most value those
kinds can). A set's cost is its legs' average cost of the shares it holds (``cost_e12 * n //
size`` per leg) and the rest of each leg's cost stays with the leg's remainder, so sets and
remainder together cost exactly what the positions cost; valued at their payout, sets add
``payout - cost`` to the PnL whatever the mids, and only the remainder is marked at the mids.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Protocol

import msgspec

from bot.core.markets import MarketInfo
from bot.venue.units import UNIT


class Holding(Protocol):
    """What counting sets reads of a position: shares held and their cost (micro-units x UNIT)."""

    @property
    def size(self) -> int: ...

    @property
    def cost_e12(self) -> int: ...


PAIR, YES, NO = "pair", "yes", "no"


class SetGroup(msgspec.Struct, frozen=True):
    """Tokens of which one share each pays ``payout`` USDC at resolution, whatever the outcome."""

    key: str  # the market's condition id (a pair), or the event id (its YES or NO set)
    kind: str  # PAIR, YES or NO
    tokens: tuple[str, ...]
    payout: int = 1  # whole USDC a set pays

    @property
    def mergeable(self) -> bool:
        """A pair can be merged back into 1 USDC before resolution."""
        return self.kind == PAIR


class CompleteSets(msgspec.Struct, frozen=True):
    """``sets`` share units of every token of ``group`` held; ``leg_costs_e12`` what each leg's
    shares of them cost (its average cost of ``sets`` shares), in micro-units times ``UNIT``."""

    group: SetGroup
    sets: int
    leg_costs_e12: tuple[int, ...]

    @property
    def cost_e12(self) -> int:
        return sum(self.leg_costs_e12)

    @property
    def value(self) -> int:
        """The locked value: USDC micro-units the sets pay whatever happens."""
        return self.sets * self.group.payout

    @property
    def cost(self) -> int:
        """What the sets cost, micro-units (floored)."""
        return self.cost_e12 // UNIT

    @property
    def edge_e12(self) -> int:
        return self.value * UNIT - self.cost_e12

    @property
    def edge(self) -> int:
        """Locked value less cost, micro-units (floored): the edge realized on the sets held."""
        return self.edge_e12 // UNIT


class SetTotals(msgspec.Struct, frozen=True):
    """Complete sets summed over groups (micro-units): ``sets`` shares held in sets, their locked
    ``value`` and ``edge``; ``mergeable`` pair shares and the capital they lock (``mergeable_cost``)."""

    sets: int = 0
    value: int = 0
    edge: int = 0
    mergeable: int = 0
    mergeable_cost: int = 0


def set_groups(markets: Iterable[MarketInfo], *, events: bool = True) -> tuple[SetGroup, ...]:
    """Every market's pair, then (``events``) the YES and the NO set of each neg-risk event of at
    least two markets, events by id and their markets by condition id."""
    ms = list(markets)
    out = [SetGroup(m.condition_id, PAIR, m.tokens) for m in ms]
    if events:
        by_event: dict[str, list[MarketInfo]] = {}
        for m in ms:
            if m.neg_risk and m.event_id:
                by_event.setdefault(m.event_id, []).append(m)
        for event_id in sorted(by_event):
            group = sorted(by_event[event_id], key=lambda m: m.condition_id)
            if len(group) >= 2:
                out.append(SetGroup(event_id, YES, tuple(m.tokens[0] for m in group)))
                out.append(SetGroup(event_id, NO, tuple(m.tokens[1] for m in group), len(group) - 1))
    return tuple(out)


def held_sets(positions: Mapping[str, Holding], groups: Iterable[SetGroup]) -> list[CompleteSets]:
    """The complete sets ``positions`` hold of ``groups`` (in order; a share goes to the first
    group that takes it), those of none left out."""
    left: dict[str, int] = {}
    out: list[CompleteSets] = []
    for g in groups:
        n: int | None = None
        for t in g.tokens:
            held = left.get(t)
            if held is None:
                p = positions.get(t)
                held = left[t] = p.size if p is not None else 0
            if n is None or held < n:
                n = held
        if n is None or n <= 0:
            continue
        costs = []
        for t in g.tokens:
            p = positions[t]
            costs.append(p.cost_e12 * n // p.size)
            left[t] -= n
        out.append(CompleteSets(g, n, tuple(costs)))
    return out


def complete_sets(positions: Mapping[str, Holding], markets: Iterable[MarketInfo], *,
                  events: bool = True) -> list[CompleteSets]:
    """The complete sets held over ``markets`` (``set_groups``): per market and event, the sets
    (the fewest shares of a leg), their locked value, cost and edge."""
    return held_sets(positions, set_groups(markets, events=events))


def totals(held: Iterable[CompleteSets]) -> SetTotals:
    """``held`` summed: every set, and the mergeable pairs apart."""
    sets = value = edge = merge = merge_cost = 0
    for h in held:
        sets += h.sets
        value += h.value
        edge += h.edge_e12
        if h.group.mergeable:
            merge += h.sets
            merge_cost += h.cost_e12
    return SetTotals(sets, value, edge // UNIT, merge, merge_cost // UNIT)


def unrealized_e12(positions: Mapping[str, Holding], groups: Iterable[SetGroup],
                   marks: Mapping[str, int | None]) -> tuple[int, int]:
    """Open PnL in micro-units times ``UNIT``, as ``(sets, rest)``: the sets held valued at their
    payout (no mark needed), and each token's remainder at its mark (0 for an unmarked token)."""
    held = held_sets(positions, groups)
    in_sets: dict[str, tuple[int, int]] = {}
    sets = 0
    for h in held:
        sets += h.edge_e12
        for t, cost in zip(h.group.tokens, h.leg_costs_e12):
            n, c = in_sets.get(t, (0, 0))
            in_sets[t] = (n + h.sets, c + cost)
    rest = 0
    for t, p in positions.items():
        mark = marks.get(t)
        if mark is None or not p.size:
            continue
        n, c = in_sets.get(t, (0, 0))
        rest += mark * (p.size - n) - (p.cost_e12 - c)
    return sets, rest

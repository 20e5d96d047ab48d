"""Positions per token, built only from fills: size, average entry, realized PnL and fees.

Invariants: every amount is exact integer arithmetic. Internally cost and PnL are kept in
``price * size`` units (micro-USDC times a million, ``_E12``) so no division ever loses money;
the public figures are those values floored to micro-units. A fill is applied at most once
(keyed by ``Fill.key``) and its reversal restores exactly the state without it.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import msgspec

from bot.core.events import Fill, FillReversal
from bot.portfolio.sets import CompleteSets, SetGroup, held_sets, unrealized_e12
from bot.venue.enums import Side, TradeStatus
from bot.venue.units import UNIT


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


class Position(msgspec.Struct, frozen=True):
    """One token's holding. ``size`` is signed share units (the venue never lets it go below 0;
    a negative size means our books disagree with the venue). ``cost_e12`` is the entry cost of
    the open size (``avg_price * size``) with the sign of ``size``; ``realized_e12`` the PnL of
    closed size, both in micro-units times ``UNIT``; ``fees`` in micro-units, net of the maker
    rebates that ``rebates`` sums (so fees paid are ``fees + rebates``).
    """

    token_id: str
    size: int = 0
    cost_e12: int = 0
    realized_e12: int = 0
    fees: int = 0
    cash_e12: int = 0  # USDC flow from trading this token (sells +, buys -), fees excluded
    fills: int = 0
    rebates: int = 0

    @property
    def avg_price(self) -> int:
        """Average entry price of the open size in micro-units (floored); 0 when flat."""
        if self.size == 0:
            return 0
        return abs(self.cost_e12) // abs(self.size)

    @property
    def cost(self) -> int:
        """Entry cost of the open size in micro-units (floored)."""
        return self.cost_e12 // UNIT

    @property
    def realized_pnl(self) -> int:
        """Realized PnL in micro-units, before fees (floored)."""
        return self.realized_e12 // UNIT

    def unrealized_e12(self, mark: int) -> int:
        return mark * self.size - self.cost_e12

    def unrealized_pnl(self, mark: int | None) -> int:
        """PnL of the open size valued at ``mark`` (micro-units, floored); 0 without a mark."""
        if mark is None or self.size == 0:
            return 0
        return self.unrealized_e12(mark) // UNIT

    def trade(self, side: Side, price: int, size: int, fee: int = 0, notional_e12: int | None = None) -> "Position":
        """The position after trading ``size`` shares at ``price`` (average-cost method);
        ``notional_e12``, when given, is what the shares cost or fetched in ``price * size`` units
        (``Fill.notional_e12``: a price off the 6-decimal grid) and is booked instead."""
        if notional_e12 is None:
            notional_e12 = price * size
        if size < 0 or price < 0 or notional_e12 < 0:
            raise ValueError(f"negative fill: price={price} size={size}")
        delta = size if side is Side.BUY else -size
        flow = notional_e12 if side is Side.BUY else -notional_e12  # ``price * delta``
        pos, cost, realized = self.size, self.cost_e12, self.realized_e12
        if pos == 0 or _sign(delta) == _sign(pos):
            pos, cost = pos + delta, cost + flow
        else:
            closed = min(abs(delta), abs(pos))
            if closed == abs(pos):
                removed = cost
            else:
                removed = _sign(pos) * (abs(cost) * closed // abs(pos))
            part = notional_e12 if closed == size else notional_e12 * closed // size  # ``price * closed``
            realized += _sign(pos) * part - removed
            cost -= removed
            pos += _sign(delta) * closed
            rest = abs(delta) - closed
            if rest:  # crossed through zero: the remainder opens the other way
                pos, cost = _sign(delta) * rest, _sign(delta) * (notional_e12 - part)
        return Position(
            token_id=self.token_id,
            size=pos,
            cost_e12=cost,
            realized_e12=realized,
            fees=self.fees + fee,
            cash_e12=self.cash_e12 - flow,
            fills=self.fills + 1,
            rebates=self.rebates - fee if fee < 0 else self.rebates,
        )


class Drift(msgspec.Struct, frozen=True):
    """Our size for ``token_id`` differs from the venue's by ``diff = venue - ours`` units."""

    token_id: str
    ours: int
    venue: int

    @property
    def diff(self) -> int:
        return self.venue - self.ours


class Portfolio:
    """All positions, fed fills and reversals by the reconciler (its only writer).

    Invariant: applying a fill twice changes nothing; a reversal of an applied fill leaves the
    portfolio exactly as if the fill had never been seen (the token is replayed without it).
    What is remembered stays bounded by the fills not yet final: ``compact`` folds each token's
    oldest fills whose trades are CONFIRMED (``settle``; they can never be reversed) into its
    starting position, which the replay then starts from. A folded fill is no longer known by its
    key: its source delivers each fill once (``bot.execution.reconciler``).

    The complete sets of ``value_sets``' groups are valued at what they pay (``bot.portfolio.sets``):
    the unrealized and total PnL mark only the shares outside them at the marks.
    """

    __slots__ = ("_seeds", "_positions", "_fills", "_by_token", "_reversed", "_by_trade", "_final", "_sets")

    def __init__(self) -> None:
        self._seeds: dict[str, Position] = {}
        self._positions: dict[str, Position] = {}
        self._fills: dict[tuple[str, str], Fill] = {}
        self._by_token: dict[str, list[tuple[str, str]]] = {}
        self._reversed: set[tuple[str, str]] = set()
        self._by_trade: dict[str, list[tuple[str, str]]] = {}  # trade id -> its fills not final
        self._final: set[tuple[str, str]] = set()  # fills of CONFIRMED trades, not folded yet
        self._sets: tuple[SetGroup, ...] = ()  # the complete sets valued at their payout

    def value_sets(self, groups: tuple[SetGroup, ...]) -> None:
        """Value the complete sets of ``groups`` (``bot.portfolio.sets.set_groups``) at their payout."""
        self._sets = tuple(groups)

    # -- writes ---------------------------------------------------------------------------

    def seed(self, token_id: str, size: int, avg_price: int = 0) -> None:
        """Start ``token_id`` from a known holding (e.g. the venue's after a restart), before
        ``compact`` has folded any of its fills (the seed replaces what they did)."""
        base = Position(token_id, size=size, cost_e12=avg_price * size)
        self._seeds[token_id] = base
        self._rebuild(token_id)

    def apply_fill(self, fill: Fill) -> bool:
        """Book ``fill`` once; returns False when its key was already seen (or reversed)."""
        key = fill.key
        if key in self._fills or key in self._reversed:
            return False
        self._fills[key] = fill
        self._by_token.setdefault(fill.token_id, []).append(key)
        self._by_trade.setdefault(fill.trade_id, []).append(key)
        pos = self.position(fill.token_id)
        self._positions[fill.token_id] = pos.trade(fill.side, fill.price, fill.size, fill.fee, fill.notional_e12)
        return True

    def apply_reversal(self, reversal: FillReversal) -> bool:
        """Undo a fill whose trade FAILED; returns False when there was nothing to undo.

        A reversal seen before its fill is remembered, so the late fill is then ignored.
        """
        key = reversal.fill.key
        if key in self._reversed:
            return False
        self._reversed.add(key)
        fill = self._fills.pop(key, None)
        if fill is None:
            return False
        self._by_token[fill.token_id].remove(key)
        keys = self._by_trade.get(fill.trade_id)
        if keys is not None:
            if key in keys:
                keys.remove(key)
            if not keys:
                del self._by_trade[fill.trade_id]
        self._rebuild(fill.token_id)
        return True

    def settle(self, trade_id: str, status: TradeStatus) -> None:
        """A trade of ours reached ``status``: once CONFIRMED its fills are final (``compact``
        may fold them); FAILED ones are taken back by their reversals."""
        if status is TradeStatus.CONFIRMED:
            self._final.update(self._by_trade.pop(trade_id, ()))
        elif status is TradeStatus.FAILED:
            self._by_trade.pop(trade_id, None)

    def compact(self) -> int:
        """Fold each token's oldest final fills, in the order they were booked, into its starting
        position (positions, cash and PnL are unchanged); returns how many were folded."""
        final, fills = self._final, self._fills
        if not final:
            return 0
        n = 0
        for token, keys in self._by_token.items():
            i = 0
            while i < len(keys) and keys[i] in final:
                i += 1
            if not i:
                continue
            pos = self._seeds.get(token) or Position(token)
            for key in keys[:i]:
                f = fills.pop(key)
                final.discard(key)
                pos = pos.trade(f.side, f.price, f.size, f.fee, f.notional_e12)
            self._seeds[token] = pos
            del keys[:i]
            n += i
        return n

    def apply(self, event: Fill | FillReversal) -> bool:
        if isinstance(event, Fill):
            return self.apply_fill(event)
        if isinstance(event, FillReversal):
            return self.apply_reversal(event)
        raise TypeError(f"not a portfolio event: {type(event).__name__}")

    def _rebuild(self, token_id: str) -> None:
        pos = self._seeds.get(token_id) or Position(token_id)
        for key in self._by_token.get(token_id, ()):
            f = self._fills[key]
            pos = pos.trade(f.side, f.price, f.size, f.fee, f.notional_e12)
        if pos == Position(token_id):
            self._positions.pop(token_id, None)
        else:
            self._positions[token_id] = pos

    # -- reads ----------------------------------------------------------------------------

    def position(self, token_id: str) -> Position:
        return self._positions.get(token_id) or Position(token_id)

    def size(self, token_id: str) -> int:
        pos = self._positions.get(token_id)
        return pos.size if pos is not None else 0

    def cost(self, token_id: str) -> int:
        pos = self._positions.get(token_id)
        return pos.cost if pos is not None else 0

    def sizes(self) -> dict[str, int]:
        """Token -> signed share units for every non-flat token."""
        return {t: p.size for t, p in self._positions.items() if p.size}

    def positions(self) -> dict[str, Position]:
        """Every token ever traded or seeded (a copy)."""
        return dict(self._positions)

    def has_fill(self, key: tuple[str, str]) -> bool:
        return key in self._fills

    @property
    def realized_pnl(self) -> int:
        return sum(p.realized_e12 for p in self._positions.values()) // UNIT

    @property
    def fees(self) -> int:
        return sum(p.fees for p in self._positions.values())

    @property
    def rebates(self) -> int:
        """Maker rebates earned (micro-units); ``fees + rebates`` is what was paid in fees."""
        return sum(p.rebates for p in self._positions.values())

    @property
    def cash(self) -> int:
        """USDC flow from all trading, fees included (micro-units, floored)."""
        return sum(p.cash_e12 for p in self._positions.values()) // UNIT - self.fees

    def _unrealized_e12(self, marks: Mapping[str, int | None]) -> int:
        if self._sets:
            sets, rest = unrealized_e12(self._positions, self._sets, marks)
            return sets + rest
        total = 0
        for t, p in self._positions.items():
            mark = marks.get(t)
            if mark is not None and p.size:
                total += p.unrealized_e12(mark)
        return total

    def unrealized_pnl(self, marks: Mapping[str, int | None]) -> int:
        """Open PnL valued at ``marks`` (token -> price, e.g. the mids), complete sets at their
        payout; unmarked tokens outside sets count 0."""
        return self._unrealized_e12(marks) // UNIT

    def total_pnl(self, marks: Mapping[str, int | None]) -> int:
        """Realized + unrealized - fees, in micro-units."""
        total = self._unrealized_e12(marks)
        for p in self._positions.values():
            total += p.realized_e12 - p.fees * UNIT
        return total // UNIT

    def complete_sets(self) -> list[CompleteSets]:
        """The complete sets held of ``value_sets``' groups (``bot.portfolio.sets.held_sets``)."""
        return held_sets(self._positions, self._sets)

    def reconcile(
        self, venue_positions: Mapping[str, int], *, tolerance: int = 0, size_threshold: int = 0
    ) -> list[Drift]:
        """Compare our sizes with the venue's (token id -> share units, e.g. GET /positions).

        A token missing on one side counts as 0 there; a token we hold below ``size_threshold``
        that the venue omits (its listing filters small balances) is not drift. Sorted by token.
        """
        out: list[Drift] = []
        for t in sorted(set(venue_positions) | set(self._positions)):
            ours = self.size(t)
            if t not in venue_positions and abs(ours) < size_threshold:
                continue
            venue = venue_positions.get(t, 0)
            if abs(venue - ours) > tolerance:
                out.append(Drift(t, ours, venue))
        return out


def fills_of(events: Iterable[Fill | FillReversal]) -> Portfolio:
    """A portfolio built from a sequence of fills and reversals (replays, tests)."""
    pf = Portfolio()
    for e in events:
        pf.apply(e)
    return pf

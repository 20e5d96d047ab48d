"""From risk-accepted intents to request batches that never exceed a rate limit.

Invariants:

- a batch is emitted only when every throttle it spends from grants it *now* (``try_take``), so
  no sliding window of any limit is ever exceeded, whatever the intent flood; the router reports
  when it next can send (``next_ready``) instead of queuing requests;
- in each ``poll`` cancels come before places; under pressure the order is cancels, then
  risk-reducing orders, then the rest, each by the token whose target was set last first (the
  quote from the newest book goes first; the budget sheds the older ones, which a newer book of
  their own replaces), a token just served from a short budget going behind the others (tokens
  take turns);
- desired quotes are state, not a queue: only the latest target per token matters, and the diff
  is recomputed from it whenever the target or the token's orders changed, so a reprice whose
  target has since changed is dropped, never sent late (a token whose last diff found nothing to
  do is not diffed again until one of them changes); a token whose cancels could not all be sent
  gets no new non-reducing order;
- one order per token, side and price: no order is placed where one of ours is being cancelled,
  or is to be (its cancel may yet come back refused or "not found", or fail, and the order stand);
  the quote is placed once that cancel is answered, if still wanted, or the order that stayed
  stands for it;
- a cancel goes out at once, even for an order whose submit is not answered yet; once emitted it
  is not emitted again within ``cancel_retry_after`` (a refused or failed cancel is paced), except
  when the venue has answered the order's submit since: that earlier cancel may have overtaken
  its place ("not found"), so the order is cancelled again at once; a cancel request that failed
  as a whole (``cancels_failed``: 5xx, 425, 429) goes again after ``failed_cancel_retry_after``;
- a SELL quote or take of a 6-decimal holding (the whole of an off-lot position, say) goes out
  as its whole lots (``bot.core.intents.whole_lots``), the most an order may sell (venue.md 3.2, 3.5), so it is
  diffed against live orders as it will rest; one under a lot is dropped (dust, that no order
  can close);
- a POST batch holds at most ``max_batch`` (<= 15) orders, a DELETE batch at most
  ``max_cancel_ids``; each order is signed only when its batch is granted, and its hash is its
  id from then on.

Contract with the shell: pass each emitted batch to the reconciler (``on_places_sent`` /
``on_cancels_sent``) before the next ``poll``. Plain object: no clock, no I/O.
"""

from __future__ import annotations

from itertools import chain
from typing import Any, Callable, Iterable, Protocol, Sequence

import msgspec

from bot.core.intents import CancelAll, CancelOrder, Intent, Quote, QuoteTarget, Take, whole_lots
from bot.core.quantities import Price, Shares
from bot.execution.diff import diff, on_tick
from bot.execution.orders import OrderState, OwnOrder
from bot.venue.enums import OrderType, Side
from bot.venue.units import LOT, MAX_BATCH, UNIT  # MAX_BATCH: POST /orders carries 1 to 15 orders

_PENDING_CANCEL = OrderState.PENDING_CANCEL
_SELL = Side.SELL
_BUY = Side.BUY
_GTC, _GTD = OrderType.GTC, OrderType.GTD
_NEVER = float("inf")
_FREE = float("-inf")  # a cancel no pacing holds back
_NOTHING: tuple[list, list, dict] = ([], [], {})  # a plan with no work (never mutated)
MAX_CANCEL_IDS = 3000  # DELETE /orders
_PRUNE_MIN = 4096  # emitted-cancel memory swept once it grows past this


class Throttle(Protocol):
    """Linked rate windows (``bot.venue.throttle.Throttle`` satisfies it)."""

    def delay(self, n: int, now: float) -> float: ...
    def try_take(self, n: int, now: float) -> bool: ...
    def take_up_to(self, n: int, now: float) -> int: ...
    def available(self, now: float) -> int: ...


class OrderView(Protocol):
    """Read-only own order state (``OrderStore`` satisfies it)."""

    versions: dict[str, int]  # token -> bumped on any change of its orders
    quoting_versions: dict[str, int]  # token -> bumped when the orders its diff reads change
    quoting_revision: int  # the same, for all tokens at once
    revision: int  # bumped on any change of any order

    def working(self, token_id: str | None = None) -> list[OwnOrder]: ...
    def get(self, order_id: str) -> OwnOrder | None: ...


class Signed(Protocol):
    @property
    def hash(self) -> str: ...


class RouterConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    max_batch: int = MAX_BATCH
    max_cancel_ids: int = MAX_CANCEL_IDS
    count_per_order: bool = True  # trading-write tokens: one per order (venue) or one per request
    size_tolerance: Shares = 0  # a live order whose remaining is this close to the target is kept
    take_ttl: float = 1.0  # seconds a throttled Take may wait before it is dropped as stale
    cancel_retry_after: float = 5.0  # seconds before an emitted cancel may be emitted again
    failed_cancel_retry_after: float = 0.5  # the same, for a cancel request that failed as a whole
    default_tick: Price = 10_000

    def __post_init__(self) -> None:
        if not 1 <= self.max_batch <= MAX_BATCH:
            raise ValueError(f"max_batch must be within 1..{MAX_BATCH}, got {self.max_batch}")
        if not 1 <= self.max_cancel_ids <= MAX_CANCEL_IDS:
            raise ValueError(f"max_cancel_ids must be within 1..{MAX_CANCEL_IDS}, got {self.max_cancel_ids}")
        if self.size_tolerance < 0 or self.take_ttl < 0 or self.cancel_retry_after < 0:
            raise ValueError("size_tolerance, take_ttl and cancel_retry_after must be >= 0")
        if not 0 <= self.failed_cancel_retry_after <= self.cancel_retry_after:
            raise ValueError("failed_cancel_retry_after must be within 0..cancel_retry_after")


class OrderRequest(msgspec.Struct, frozen=True):
    """What the signer needs to build one order.

    Limit (GTC/GTD): ``size`` shares at ``price``. Market (FOK/FAK): ``amount`` (BUY: USDC units,
    SELL: share units) with ``price`` the worst acceptable price; ``size`` is then the share
    estimate used for bookkeeping.
    """

    token_id: str
    side: Side
    price: int
    size: int
    order_type: OrderType = OrderType.GTC
    post_only: bool = False
    expiration: int = 0
    amount: int = 0
    reducing: bool = False
    group: str = ""  # a take's set (``Take.group``): its legs go in one POST, granted whole


class CancelBatch(msgspec.Struct, frozen=True):
    """``DELETE /orders`` with these ids (``DELETE /order`` when there is one)."""

    order_ids: tuple[str, ...]


class PlaceBatch(msgspec.Struct, frozen=True):
    """``POST /orders`` with these orders, in this order (their results come back in it)."""

    orders: tuple[OwnOrder, ...]

    @property
    def order_ids(self) -> tuple[str, ...]:
        return tuple([o.order_id for o in self.orders])


Batch = CancelBatch | PlaceBatch


class _Target:
    __slots__ = ("target", "reducing", "any_reducing", "_flags", "refused")

    def __init__(self, target: QuoteTarget, reducing: tuple[bool, ...]) -> None:
        self.target = target
        self.reducing = reducing
        self.any_reducing = True in reducing
        self._flags: dict[int, bool] | None = None
        self.refused: set[tuple[Side, int]] | None = None  # (side, price) the venue refused as crossing

    def flags(self) -> dict[int, bool]:
        """The reducing flag of each quote of the target, by quote identity (built once)."""
        f = self._flags
        if f is None:
            f = self._flags = {id(q): r for q, r in zip(self.target.quotes, self.reducing)}
        return f


class _PlanMemo:
    """What past plans found, so that no plan is made again while nothing it reads has changed.

    Invariant: each fact is noted with the state it was found in (the targets' revision, the
    orders' revision and quoting revision, the ticks) and is believed only while that state
    stands; whatever else a plan reads changing (a tick, a failed cancel request) ``forget``s them.

    - empty: the whole plan was empty at (``empty_targets``, ``empty_orders``, ``empty_quoting``)
      until ``empty_until``, its first paced cancel; a plan that waits for no paced cancel
      (``empty_until`` never) read the orders only through their quoting revision, so it stays
      empty while that does (``-1``: no plan is known empty);
    - ``work``: the last plan that found work but read no clock (no take, explicit or held-back
      cancel): the same plan while its state stands and no batch went out since. A place held
      behind a cancel in flight is held by the orders' states alone (its wake is a fallback: only
      whether one is set is read, by ``poll``);
    - ``settled``: token -> (target, version of the orders its diff reads, tick) where the diff
      found nothing to do;
    - ``drained``: the last poll sent all its plan's work (targets revision, its cancels' tokens by
      id, its places); ``drained_at``: the orders' revision once ``sent`` says its batches are
      recorded (-1: not yet), from which the plan is known empty (``Router._settle_drained``).
    """

    def __init__(self) -> None:
        self.settled: dict[str, tuple[_Target, int, int]] = {}
        self.empty_targets = -1
        self.empty_orders = -1
        self.empty_quoting = -1
        self.empty_until = 0.0
        self.wake = _NEVER  # the last plan's first paced cancel to come due
        self.work: tuple[int, int, int, list[int], tuple, float] | None = None
        self.drained: tuple[int, dict[str, str], list[tuple[OrderRequest, bool]]] | None = None
        self.drained_at = -1

    def forget(self) -> None:
        """Something a plan reads beyond targets and orders changed: no plan is known."""
        self.empty_targets = -1
        self.drained = None
        self.work = None

    def empty(self, targets_rev: int, orders: OrderView, now: float) -> bool:
        """A plan found nothing to do in this state and its first paced cancel is not due at ``now``."""
        return now < self.empty_until and self.empty_targets == targets_rev and (
            self.empty_orders == orders.revision
            or (self.empty_until == _NEVER and self.empty_quoting == orders.quoting_revision))

    def empty_for_good(self, targets_rev: int, orders: OrderView) -> bool:
        """A plan found nothing to do in this state and waits for no paced cancel."""
        return self.empty_until == _NEVER and self.empty_targets == targets_rev \
            and self.empty_quoting == orders.quoting_revision

    def found_empty(self, targets_rev: int, orders: OrderView, wake: float) -> None:
        self.empty_targets, self.empty_orders, self.empty_until = targets_rev, orders.revision, wake
        self.empty_quoting = orders.quoting_revision

    def replay(self, targets_rev: int, orders: OrderView, targets: dict, tick_of: Callable[[str], int]) -> Any:
        """The last plan with work, if it read no clock and nothing it read changed (else ``None``)."""
        work = self.work
        if work is not None and work[0] == targets_rev and work[1] == orders.revision \
                and work[2] == orders.quoting_revision and work[3] == [tick_of(t) for t in targets]:
            self.empty_targets = -1
            self.wake = work[5]
            return work[4]
        return None

    def found_work(self, plan: tuple, wake: float, targets_rev: int, orders: OrderView, ticks: Any) -> None:
        """A plan with work; ``ticks``: its targets' ticks when it read no clock (``None``: it
        did, and is not replayed)."""
        self.empty_targets = -1
        self.wake = wake
        if ticks is not None:
            self.work = (targets_rev, orders.revision, orders.quoting_revision, ticks, plan, wake)

    def settle(self, token: str, tgt: _Target, version: int, tick: int) -> None:
        self.settled[token] = (tgt, version, tick)

    def unchanged(self, token: str, tgt: _Target, version: int, tick: int) -> bool:
        """``token``'s diff found nothing to do for this target, orders' version and tick."""
        s = self.settled.get(token)
        return s is not None and s[0] is tgt and s[1] == version and s[2] == tick


class Router:
    """Diffs targets against live orders and packs the work into throttled batches."""

    def __init__(
        self,
        orders: OrderView,
        sign: Callable[[OrderRequest], Any],
        *,
        place_throttle: Throttle,
        cancel_throttle: Throttle,
        route_throttles: Sequence[Throttle] = (),
        config: RouterConfig | None = None,
        tick_of: Callable[[str], int] | None = None,
    ) -> None:
        self.config = config or RouterConfig()
        self._orders = orders
        self._sign = sign
        self._place = place_throttle
        self._cancel = cancel_throttle
        self._routes = tuple(route_throttles)
        self._tick_of = tick_of or (lambda _t: self.config.default_tick)
        self._targets: dict[str, _Target] = {}
        self._versions = orders.quoting_versions
        self._targets_rev = 0
        self.refusing: set[str] = set()  # tokens whose target holds quotes refused for crossing (``refused``)
        self._memo = _PlanMemo()  # what past plans found (``_PlanMemo``)
        self._cancels: dict[str, None] = {}  # explicit cancels, insertion ordered
        self._takes: list[tuple[Take, bool, float]] = []
        self._emitted_cancels: dict[str, float] = {}
        self._retry_soon: dict[str, float] = {}  # failed cancel requests: id -> when it may go again
        self._prune_at = _PRUNE_MIN  # size of _emitted_cancels that triggers the next sweep

    # --- intents ---------------------------------------------------------------------------
    def submit(self, intent: Intent, now: float, reducing: bool | Sequence[bool] = False) -> None:
        """Take one risk-accepted intent; ``reducing`` per quote (sequence) or for all (bool)."""
        if isinstance(intent, QuoteTarget):
            self.set_target(intent, reducing)
        elif isinstance(intent, Take):
            self.take(intent, now, bool(reducing))
        elif isinstance(intent, CancelOrder):
            self.cancel(intent.order_id)
        elif isinstance(intent, CancelAll):
            self.cancel_all(intent.token_id)
        else:  # pragma: no cover - closed union
            raise TypeError(f"not an intent: {intent!r}")

    def set_target(self, target: QuoteTarget, reducing: bool | Sequence[bool] = False) -> None:
        """Replace the desired quotes of ``target.token_id`` (the previous target is forgotten)."""
        if isinstance(reducing, bool):
            flags = (reducing,) * len(target.quotes)
        else:
            flags = reducing if type(reducing) is tuple else tuple(bool(x) for x in reducing)
            if len(flags) != len(target.quotes):
                raise ValueError("one reducing flag per quote")
        if any(q.side is _SELL and q.size % LOT for q in target.quotes):
            target, flags = _whole_lots(target, flags)
        targets = self._targets
        targets.pop(target.token_id, None)  # the newest target is the last (``_plan`` reads them newest first)
        self.refusing.discard(target.token_id)
        targets[target.token_id] = _Target(target, flags)
        self._targets_rev += 1

    def refused(self, token_id: str, side: Side, price: int) -> None:
        """A post-only order of ``token_id`` at ``side`` / ``price`` was refused for crossing the
        book: the current target's quote there is not placed again while the book still crosses
        it (placed again, it would be refused again, a streak that halts). ``recheck`` lets it go
        once the book has moved off it; the token's next target places what it asks for."""
        tgt = self._targets.get(token_id)
        if tgt is None:
            return
        if tgt.refused is None:
            tgt.refused = set()
        tgt.refused.add((side, price))
        self.refusing.add(token_id)
        self._memo.forget()

    def recheck(self, token_id: str, book: Any) -> None:
        """``token_id``'s book changed: its refused quotes the book no longer crosses
        (``book.crosses(is_buy, price)``) may be placed again (``refusing``: the tokens that hold any)."""
        tgt = self._targets.get(token_id)
        held = tgt.refused if tgt is not None else None
        if held:
            still = {(side, price) for side, price in held if book.crosses(side is _BUY, price)}
            if still == held:
                return
            tgt.refused = still
            memo = self._memo
            memo.forget()
            memo.settled.pop(token_id, None)  # its diff found nothing to place: it may now
            if still:
                return
        self.refusing.discard(token_id)

    def take(self, take: Take, now: float, reducing: bool = False) -> None:
        if take.side is _SELL:  # a 6-decimal holding: its whole lots (none under a lot)
            take = whole_lots(take)
            if not take.amount:
                return
        self._takes.append((take, reducing, now))
        self._memo.work = None

    def cancel(self, order_id: str) -> None:
        self._cancels[order_id] = None
        self._memo.work = None

    def cancel_all(self, token_id: str | None = None) -> None:
        """Cancel every working own order (on one token) and forget the targets and takes there."""
        tokens = list(self._targets) if token_id is None else [token_id]
        for t in tokens:
            self._targets[t] = _Target(QuoteTarget(t), ())
        self._targets_rev += 1
        self._memo.work = None
        self._takes = [x for x in self._takes if token_id is not None and x[0].token_id != token_id]
        for o in self._orders.working(token_id):
            if o.state is not OrderState.PENDING_CANCEL:
                self._cancels[o.order_id] = None

    def cancels_failed(self, order_ids: Sequence[str], now: float) -> None:
        """A cancel request failed as a whole (5xx, 425, 429, a reset): the venue refused none of
        it, so the cancels the router still wants go again after ``failed_cancel_retry_after``
        (an order it meant to cancel must not rest the full ``cancel_retry_after`` beside its
        replacement)."""
        soon = now + self.config.failed_cancel_retry_after
        for oid in order_ids:
            if oid in self._emitted_cancels:
                self._retry_soon[oid] = soon
        self._memo.forget()

    def targets(self) -> dict[str, QuoteTarget]:
        return {t: x.target for t, x in self._targets.items()}

    def invalidate(self) -> None:
        """Something the plan depends on beyond targets and orders changed (a token's tick)."""
        self._memo.forget()

    def settled(self) -> bool:
        """True when a plan would find nothing to do, now and later, until targets, the orders
        that can stand for quotes (``quoting_revision``) or a tick change (no paced cancel comes
        due): ``poll`` would return no batch, ``next_ready`` ``None``. One look at counters, so a
        caller may ask on every event."""
        memo = self._memo
        if memo.drained is not None and memo.drained_at >= 0:
            self._settle_drained()
        return memo.empty_for_good(self._targets_rev, self._orders) and not self._cancels and not self._takes

    def idle(self, now: float) -> bool:
        """True when ``poll(now)`` would send nothing and ``next_ready(now)`` be ``None``, known
        without planning: the router is ``settled``, or nothing a plan reads changed since one
        found nothing to do and its first paced cancel is not due yet. One look at counters."""
        return self.settled() or self._quiet(now)

    def _quiet(self, now: float) -> bool:
        """Nothing changed since a plan found nothing to do (targets, explicit cancels, takes, the
        orders: any change, or only a change of those that can stand for quotes when no paced
        cancel was waiting), and its first paced cancel is not due at ``now``."""
        return not self._cancels and not self._takes and self._memo.empty(self._targets_rev, self._orders, now)

    # --- planning --------------------------------------------------------------------------
    def _plan(self, now: float) -> tuple[list[str], list[tuple[OrderRequest, bool]], dict[str, str]]:
        """All work wanted now: cancel ids (explicit first), ``(request, is_take)`` by priority,
        and the token of each diff cancel still to send. What the memo knows is not looked at
        again: a plan found empty, the last plan with work, the tokens whose diff found nothing."""
        orders, memo = self._orders, self._memo
        memo.drained = None  # a new plan: the last poll's conclusion waits for the next one
        if self._quiet(now):
            return _NOTHING
        again = memo.replay(self._targets_rev, orders, self._targets, self._tick_of)
        if again is not None:
            return again
        if self._takes:
            self._takes = [x for x in self._takes if now - x[2] <= self.config.take_ttl]
        cancels: dict[str, None] = {}
        wake = _NEVER  # the first paced cancel to come due
        done: list[str] = []
        for oid in self._cancels:
            o = orders.get(oid)
            if o is not None and (o.state.terminal or o.state is OrderState.PENDING_CANCEL):
                if o.state.terminal:
                    done.append(oid)
                continue
            until = self._paced_until(oid)
            if until > now:  # paced: the plan wakes when it comes due
                wake = min(wake, until)
                continue
            cancels[oid] = None
        for oid in done:
            del self._cancels[oid]
        places_reducing: list[tuple[OrderRequest, bool]] = []
        places_other: list[tuple[OrderRequest, bool]] = []
        cancel_tokens: dict[str, str] = {}
        sets: dict[str, list[tuple[OrderRequest, bool]]] = {}
        for take, reducing, _t in self._takes:
            req = (_take_request(take, reducing), True)
            if take.group:  # a set's legs stay together, where its first leg goes
                legs = sets.get(take.group)
                if legs is not None:
                    legs.append(req)
                    continue
                legs = sets[take.group] = [req]
                (places_reducing if reducing else places_other).append(legs)  # expanded below
                continue
            (places_reducing if reducing else places_other).append(req)
        if sets:
            for group, legs in sets.items():
                if len(legs) > self.config.max_batch:  # it can never go in one POST: dropped
                    legs.clear()
                    self._takes = [x for x in self._takes if x[0].group != group]
            places_reducing, places_other = _expand(places_reducing), _expand(places_other)
        tokens = list(self._targets)
        tokens.reverse()  # newest target first
        targets, tick_of, tolerance = self._targets, self._tick_of, self.config.size_tolerance
        retry_after = self.config.cancel_retry_after
        pending_cancel = _PENDING_CANCEL
        versions = self._versions
        held = False  # a diff cancel held back: the plan read the clock
        for token in tokens:
            tgt = targets[token]
            version = versions.get(token, 0)
            tick = tick_of(token)
            if memo.unchanged(token, tgt, version, tick):
                continue  # nothing changed since its last diff found nothing to do
            working = orders.working(token)
            live = [o for o in working if o.state is not pending_cancel and not o.order_type.is_market]
            to_cancel, to_place = diff(tgt.target, live, tick, tolerance)
            if to_place and tgt.refused is not None:
                to_place = [q for q in to_place if (q.side, q.price) not in tgt.refused]
            if not to_cancel and not to_place:
                memo.settle(token, tgt, version, tick)
                continue
            for oid in to_cancel:
                until = self._paced_until(oid)
                if until > now:  # paced: the plan wakes when it comes due
                    wake = min(wake, until)
                    held = True
                    continue
                cancels[oid] = None
                cancel_tokens[oid] = token
            if not to_place:
                continue
            n = len(to_place)
            to_place = _not_cancelling(to_place, working, to_cancel, tick)
            if len(to_place) < n:  # planned again when that cancel is answered (an order change)
                wake = min(wake, now + retry_after)
                if not to_place:
                    continue
            if not tgt.any_reducing:
                places_other += [(_quote_request(q, False), False) for q in to_place]
                continue
            flags = tgt.flags()
            for q in to_place:
                reducing = flags.get(id(q), False)
                (places_reducing if reducing else places_other).append((_quote_request(q, reducing), False))
        places = places_reducing + places_other
        if cancels or places:
            plan = (list(cancels), places, cancel_tokens)
            clockless = not held and not self._takes and not self._cancels
            memo.found_work(plan, wake, self._targets_rev, orders, [tick_of(t) for t in targets] if clockless else None)
            return plan
        memo.found_empty(self._targets_rev, orders, wake)
        return list(cancels), places, cancel_tokens

    def _paced_until(self, oid: str) -> float:
        """When a cancel of ``oid`` may go: ``cancel_retry_after`` after the last one went out
        (``failed_cancel_retry_after`` after its request failed as a whole, when sooner), or at
        any time (``_FREE``) when none went out or the venue answered the order's place after it
        left (that cancel may have overtaken the place). A plan sends it when this is not after its
        ``now``, and wakes at it when it is."""
        t = self._emitted_cancels.get(oid)
        if t is None:
            return _FREE
        o = self._orders.get(oid)
        if o is not None and o.answered_at > t:
            return _FREE
        soon = self._retry_soon.get(oid)
        until = t + self.config.cancel_retry_after
        return until if soon is None else min(until, soon)

    # --- emission --------------------------------------------------------------------------
    def poll(self, now: float) -> list[Batch]:
        """The batches the throttles grant now: cancels first, then places by priority."""
        cancels, places, cancel_tokens = self._plan(now)
        if not cancels and not places:
            return []
        out: list[Batch] = []
        i = 0
        while i < len(cancels):
            k = self._grant(self._cancel, min(len(cancels) - i, self.config.max_cancel_ids), now)
            if k == 0:
                break
            ids = tuple(cancels[i:i + k])
            i += k
            for oid in ids:
                self._emitted_cancels[oid] = now
                if self._retry_soon:
                    self._retry_soon.pop(oid, None)
                self._cancels.pop(oid, None)
            out.append(CancelBatch(ids))
        # cancels first: a token whose cancels could not all go gets no new non-reducing order
        if i < len(cancels):
            blocked = {cancel_tokens[oid] for oid in cancels[i:] if oid in cancel_tokens}
            eligible = [(r, is_take) for r, is_take in places if r.reducing or r.token_id not in blocked]
            if self._takes:  # a set one of whose legs must wait waits whole
                waiting = {r.group for r, is_take in places
                           if is_take and r.group and not r.reducing and r.token_id in blocked}
                if waiting:
                    eligible = [(r, t) for r, t in eligible if not (t and r.group in waiting)]
        else:
            eligible = places
        sets = False  # a set among the places (only takes can be one)
        if self._takes:
            for r, is_take in eligible:
                if is_take and r.group:
                    sets = True
                    break
        j = 0
        while j < len(eligible):
            want = min(len(eligible) - j, self.config.max_batch)
            if sets:  # a set goes in one POST, when the budget takes all of it: never cut
                if self.config.count_per_order:
                    want = min(want, self._place.available(now))
                want = _whole_sets(eligible, j, want) if want > 0 else 0
                if want <= 0:
                    break
            k = self._grant(self._place, want, now)
            if k == 0:
                break
            chunk = eligible[j:j + k]
            j += k
            for req, is_take in chunk:  # taken off first: a take signing refuses is not tried again
                if is_take:
                    self._drop_take(req)
            out.append(PlaceBatch(tuple([self._build(req, now) for req, _ in chunk])))
        if j < len(eligible):  # a short budget: the tokens served now wait behind the others next time
            self._served([r.token_id for r, _ in eligible[:j]])
        self._forget_old_cancels(now)
        memo = self._memo
        if out:  # what went out changes what a plan reads (cancels emitted, throttles spent)
            memo.work = None
        if i == len(cancels) == len(cancel_tokens) and j == len(eligible) == len(places) \
                and memo.wake == _NEVER:  # all sent; no explicit or paced cancel in the plan
            memo.drained = (self._targets_rev, cancel_tokens, places)
            memo.drained_at = -1
        return out

    def _served(self, tokens: list[str]) -> None:
        """Tokens given orders from a short budget go behind every other target (``_plan`` reads
        the last first), so the tokens wanting orders take turns until a new target comes."""
        targets = self._targets
        first = {t: targets[t] for t in dict.fromkeys(tokens) if t in targets}
        if first:
            self._targets = first | {t: v for t, v in targets.items() if t not in first}

    def sent(self) -> None:
        """The batches of the last ``poll`` are recorded (the reconciler has them). When that poll
        sent all the work its plan found (diff cancels and places only: no explicit cancel, no
        cancel held back), the orders changed since by their recording only when ``settled`` is
        next asked, and every order it cancelled is pending cancel or closed then, a plan would
        find nothing to do (the diff leaves one working order per desired quote): ``settled``
        knows it without diffing again. Only the orders' revision is noted here (this runs
        between a book update and its orders' requests)."""
        memo = self._memo
        if memo.drained is not None:
            memo.drained_at = self._orders.revision

    def _settle_drained(self) -> None:
        """``sent``'s conclusion, drawn when ``settled`` is asked: the plan is known empty."""
        memo = self._memo
        drained = memo.drained
        memo.drained = None
        if memo.drained_at != self._orders.revision:
            return  # the orders changed since the batches were recorded: a plan must look
        rev, cancel_tokens, places = drained
        if rev != self._targets_rev or self._cancels or self._takes:
            return
        orders = self._orders
        for oid in cancel_tokens:
            o = orders.get(oid)
            if o is not None and not (o.state is _PENDING_CANCEL or o.state.terminal):
                return  # still working: a plan would hold its cancel back or send it again
        tick_of, settled, versions, targets = self._tick_of, memo.settled, self._versions, self._targets
        last = None
        for token in chain(cancel_tokens.values(), [req.token_id for req, _ in places]):
            if token != last:  # a plan lists one token's work together
                last = token
                tgt = targets.get(token)
                if tgt is not None:
                    settled[token] = (tgt, versions.get(token, 0), tick_of(token))
        memo.found_empty(rev, orders, _NEVER)

    def wakeup(self, now: float) -> float | None:
        """When to poll next: when a batch could be sent (``now`` if at once), else when the first
        paced cancel of a plan that found nothing to send comes due (a cancel the venue left
        standing goes again on time, not at the next event or timer); ``None``: nothing waits."""
        if self.settled():
            return None
        if not self._quiet(now):
            ready = self.next_ready(now)
            if ready is not None:
                return ready
        # the plan just made, or the quiet one, found nothing to send: its wake is after ``now``
        until = self._memo.empty_until
        return until if until < _NEVER else None

    def next_ready(self, now: float) -> float | None:
        """When the next batch could be sent (``now`` if at once), or ``None`` with no work."""
        cancels, places, cancel_tokens = self._plan(now)
        if not cancels and not places:
            return None  # nothing to send: the throttles are not asked
        # each throttle is asked only when its answer can matter: the cancel throttle for
        # cancels, or for places waiting behind a cancel of their token
        blocked = set(cancel_tokens.values()) if places and cancel_tokens else None
        t_cancel = now + self._wait(self._cancel, now) if cancels or blocked is not None else _NEVER
        ready = t_cancel if cancels else _NEVER
        if places:
            t_place = now + self._wait(self._place, now)
            # a place waits for its token's cancel unless it reduces or no cancel blocks its token
            t = t_place if t_place > t_cancel else t_cancel
            for r, _ in places:
                if r.reducing or blocked is None or r.token_id not in blocked:
                    t = t_place
                    break
            if t < ready:
                ready = t
        return ready  # finite: there are cancels or places

    # --- internals -------------------------------------------------------------------------
    def _grant(self, throttle: Throttle, want: int, now: float) -> int:
        """Spend tokens for one request of up to ``want`` items; returns how many were granted."""
        if want <= 0:
            return 0
        for r in self._routes:
            if r.available(now) < 1:
                return 0
        if self.config.count_per_order:  # k tokens: one per order
            k = throttle.take_up_to(want, now)  # min(want, available), taken in one pass
            if k <= 0:
                return 0
        else:  # one token per request
            if throttle.available(now) < 1 or not throttle.try_take(1, now):
                return 0
            k = want
        for r in self._routes:
            if not r.try_take(1, now):  # cannot happen single-threaded; stays conservative
                return 0
        return k

    def _wait(self, throttle: Throttle, now: float) -> float:
        """Seconds until ``throttle`` and every route throttle have room for one request."""
        wait = throttle.delay(1, now)
        for r in self._routes:
            d = r.delay(1, now)
            if d > wait:
                wait = d
        return wait

    def _build(self, req: OrderRequest, now: float) -> OwnOrder:
        signed = self._sign(req)
        return OwnOrder(
            signed.hash, req.token_id, req.side, req.price, req.size,
            order_type=req.order_type, post_only=req.post_only, expiration=req.expiration,
            reducing=req.reducing, signed=signed, sent_at=now, updated_at=now,
        )

    def _drop_take(self, req: OrderRequest) -> None:
        for idx, (take, reducing, _t) in enumerate(self._takes):
            if _take_request(take, reducing) == req:
                del self._takes[idx]
                return

    def _forget_old_cancels(self, now: float) -> None:
        # Entries past the retry horizon no longer matter to ``_paced_until``; sweeping them
        # is only a memory bound. The threshold doubles with what survives a sweep, so a burst of
        # still-recent cancels is not rescanned on every poll (amortised O(1) per emitted cancel).
        if len(self._emitted_cancels) > self._prune_at:
            horizon = self.config.cancel_retry_after
            self._emitted_cancels = {k: t for k, t in self._emitted_cancels.items() if now - t < horizon}
            self._retry_soon = {k: t for k, t in self._retry_soon.items() if k in self._emitted_cancels}
            self._prune_at = max(_PRUNE_MIN, 2 * len(self._emitted_cancels))


def _not_cancelling(quotes: list[Quote], working: Iterable[OwnOrder], cancels: Sequence[str],
                    tick: int) -> list[Quote]:
    """``quotes`` less those at the side and price (on the ``tick`` grid) of an order in
    ``working`` whose cancel is in flight, or among ``cancels`` (to be sent)."""
    busy = {(o.side, on_tick(o.price, tick)) for o in working
            if (o.state is _PENDING_CANCEL or o.order_id in cancels) and not o.order_type.is_market}
    if not busy:
        return quotes
    return [q for q in quotes if (q.side, on_tick(q.price, tick)) not in busy]


def _whole_lots(target: QuoteTarget, flags: tuple) -> tuple[QuoteTarget, tuple]:
    """``target`` with each SELL quote cut to its whole lots and those left with none dropped,
    and the reducing flags of the quotes kept."""
    quotes, kept = [], []
    for q, flag in zip(target.quotes, flags):
        if q.side is _SELL:
            q = whole_lots(q)
        if q.size:
            quotes.append(q)
            kept.append(flag)
    return QuoteTarget(target.token_id, tuple(quotes)), tuple(kept)


def _quote_request(q: Quote, reducing: bool) -> OrderRequest:
    expiration = q.expiration
    return OrderRequest(q.token_id, q.side, q.price, q.size, _GTD if expiration else _GTC, q.post_only,
                        expiration, 0, reducing)  # every field, in order (amount 0: a limit order)


def _take_request(t: Take, reducing: bool) -> OrderRequest:
    size = t.amount if t.side is Side.SELL else (t.amount * UNIT // t.price if t.price > 0 else 0)
    return OrderRequest(
        t.token_id, t.side, t.price, size, order_type=t.order_type, amount=t.amount, reducing=reducing,
        group=t.group,
    )


def _expand(places: list) -> list:
    """``places`` with each set (a list of its legs) spread in place, its legs side by side."""
    out: list = []
    for p in places:
        if type(p) is list:
            out += p
        else:
            out.append(p)
    return out


def _whole_sets(places: list, j: int, n: int) -> int:
    """The most of ``places[j:j + n]`` (``n`` >= 1) that cuts no set in two: ``n``, or fewer, so
    that the set it would cut waits whole for the next request (0 when the set at ``j`` is longer
    than ``n``). Only takes are in a set: a quote's request has no group."""
    end = j + n
    if end >= len(places):
        return n
    g = places[end][0].group
    if not g:
        return n
    while end > j and places[end - 1][0].group == g:
        end -= 1
    return end - j


"""The executor interface (``bot.execution.executor``): the simulated venue and the live executor
take the engine's actions through ``execute(actions, now)``, answer every send once, and stop
with nothing of ours left resting."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import anyio

from bot.core.markets import MarketIndex
from bot.execution.executor import Executor
from bot.execution.protocol import (
    CancelsAnswered, CancelsFailed, CheckPositions, FetchTrades, LookupOrder, PlacesAnswered, PlacesFailed,
    ResendOrder, SendCancels, SendPlaces, SyncOrders, TradeBooked, VenueCancelAll,
)
from bot.execution.router import CancelBatch, PlaceBatch
from bot.live.executor import LiveExecutor
from bot.sim.latency import LatencyConfig
from bot.sim.venue import SimVenue, SimVenueConfig
from tests.unit.sim_feed import BUY, C, M, S, SELL, book, limit

INF = float("inf")


def venue() -> SimVenue:
    v = SimVenue([M], SimVenueConfig(latency=LatencyConfig(entry=0.1, response=0.1), collateral=1_000 * S,
                                     holdings=100 * S))
    v.on_market(book({50 * C: 100 * S}, {52 * C: 100 * S}), 1.0)
    return v


def test_the_simulated_venue_answers_each_send_once_and_leaves_the_reads_it_does_not_need():
    v = venue()
    assert isinstance(v, Executor)
    places = PlaceBatch((limit("b1", BUY, 49 * C, 5 * S), limit("a1", SELL, 53 * C, 5 * S)))
    cancels = CancelBatch(("b1",))
    v.execute([SendPlaces(places), SyncOrders(), LookupOrder("b1"), FetchTrades(), CheckPositions(1.0),
               ResendOrder("b1"), TradeBooked("t")], 1.0)
    v.execute([SendCancels(cancels)], 1.5)
    assert v.next_due() == 1.1  # the places arrive after the entry latency
    answers = v.due(INF)
    assert [type(r) for r in answers] == [PlacesAnswered, CancelsAnswered]
    assert answers[0].batch is places and [r.status for r in answers[0].results] == ["live", "live"]
    assert answers[1].batch is cancels and answers[1].result.canceled == ("b1",)
    assert [o.id for o in v.open_orders()] == ["a1"] and v.next_due() is None


def test_the_simulated_venue_stops_with_nothing_resting_and_every_answer_delivered():
    v = venue()
    v.execute([SendPlaces(PlaceBatch((limit("b1", BUY, 49 * C, 5 * S),)))], 1.0)
    delivered: list[Any] = []

    def deliver(result: Any) -> list[Any]:
        delivered.append(result)
        return []

    assert v.in_flight() == 0 and v.withdraw() == []
    assert anyio.run(v.stop, [VenueCancelAll("stop")], 2.0, deliver) is True
    assert [type(r) for r in delivered] == [PlacesAnswered, CancelsAnswered]  # the place, then the cancel-all
    assert delivered[1].result.canceled == ("b1",) and v.open_orders() == [] and v.next_due() is None


class Writes:
    """A task group that only records what was started in it."""

    def __init__(self) -> None:
        self.started: list[tuple[Any, ...]] = []

    def start_soon(self, fn: Any, *args: Any) -> None:
        self.started.append(args)


def live_executor() -> tuple[LiveExecutor, Writes]:
    engine = SimpleNamespace(markets=MarketIndex([M]), reconciler=SimpleNamespace(orders={}), metrics=None,
                             stamp_sends=False)
    venue = SimpleNamespace(writes=SimpleNamespace(start_post_orders=lambda *a, **k: None))
    ex = LiveExecutor(engine, venue)
    writes = Writes()

    async def post(_msg: Any) -> None:
        raise AssertionError("nothing is answered here")

    ex.open(None, writes, post)
    return ex, writes


def test_the_live_executor_holds_a_cancel_behind_its_post_and_answers_it_as_never_sent_at_stop():
    ex, writes = live_executor()
    assert ex.engine.stamp_sends  # tick-to-order is observed where the request is written
    assert isinstance(ex, Executor) and ex.next_due() is None and ex.due(INF) == []
    places = PlaceBatch((limit("b1", BUY, 49 * C, 5 * S),))
    cancels = CancelBatch(("b1",))
    ex.execute([SendPlaces(places), SendCancels(cancels)], 1.0)
    assert [args[0].batch for args in writes.started] == [places]  # the cancel waits for the POST's answer
    assert ex.in_flight() == 2
    unsent = ex.withdraw()
    assert len(unsent) == 1 and type(unsent[0]) is CancelsFailed and unsent[0].batch is cancels
    assert unsent[0].kind == "stopped" and ex.in_flight() == 1  # the POST on the wire is still to be answered


def test_the_live_executor_answers_a_held_place_as_never_sent_with_nothing_placed():
    ex, writes = live_executor()
    resting = SimpleNamespace(token_id="Y", side=SELL, price=50 * C)
    ex.engine.reconciler.orders["a0"] = resting
    ex.execute([SendCancels(CancelBatch(("a0",)))], 1.0)
    crossing = PlaceBatch((limit("b1", BUY, 50 * C, 5 * S),))  # would trade with a0, whose cancel is on the wire
    ex.execute([SendPlaces(crossing)], 1.0)
    assert len(writes.started) == 1  # only the cancel
    (unsent,) = ex.withdraw()
    assert type(unsent) is PlacesFailed and unsent.batch is crossing and not unsent.outcome_unknown


def test_a_place_waits_for_the_cancel_of_an_order_it_would_cross_even_while_that_cancel_waits_for_its_post():
    """Requoting fast: our ask a0 is still on its way (its POST unanswered), the engine replaces it
    (its cancel held behind that POST) with a bid at its price. The bid must not overtake the
    cancel: it waits for it, and goes once the POST and then the cancel are answered."""
    ex, writes = live_executor()
    ex.engine.reconciler.orders["a0"] = SimpleNamespace(token_id="Y", side=SELL, price=50 * C)
    ex.execute([SendPlaces(PlaceBatch((limit("a0", SELL, 50 * C, 5 * S),)))], 1.0)
    ex.execute([SendCancels(CancelBatch(("a0",))), SendPlaces(PlaceBatch((limit("b1", BUY, 50 * C, 5 * S),)))], 1.1)
    assert [a[0].batch.order_ids for a in writes.started] == [("a0",)]  # the cancel and the bid wait
    ex._placing.pop("a0")
    ex._release_held({("place", "a0")})  # the POST of a0 answered: its cancel goes, the bid still waits
    assert [a[0].batch.order_ids for a in writes.started] == [("a0",), ("a0",)]
    assert type(writes.started[1][0]) is SendCancels
    ex._cancelling.pop("a0")
    ex._release_held({("cancel", "a0")})  # the cancel answered: now the bid
    assert [a[0].batch.order_ids for a in writes.started][-1] == ("b1",)


def test_a_held_place_whose_orders_are_cancelled_before_it_went_out_is_never_sent_and_answered_withdrawn():
    """Requoting fast: a bid held behind the cancel of an ask it would cross is itself replaced
    before that cancel is answered. Sent later, it could land after the newer quotes and cross
    one of them: it never goes out, and its answer says it was withdrawn (nothing placed)."""
    from bot.execution.protocol import WITHDRAWN

    ex, writes = live_executor()
    ex.engine.reconciler.orders["a0"] = SimpleNamespace(token_id="Y", side=SELL, price=50 * C)
    ex.execute([SendCancels(CancelBatch(("a0",)))], 1.0)
    held = PlaceBatch((limit("b1", BUY, 50 * C, 5 * S),))
    ex.execute([SendPlaces(held)], 1.0)
    assert len(writes.started) == 1 and ex.in_flight() == 2  # the bid waits for a0's cancel
    ex.engine.reconciler.orders["b1"] = SimpleNamespace(token_id="Y", side=BUY, price=50 * C)
    ex.execute([SendCancels(CancelBatch(("b1",)))], 1.1)
    (answer,) = [a[0] for a in writes.started if type(a[0]) is PlacesFailed]
    assert answer.batch is held and answer.kind == WITHDRAWN and not answer.outcome_unknown
    ex._cancelling.pop("a0")
    ex._release_held({("cancel", "a0")})
    assert not any(type(a[0]) is SendPlaces for a in writes.started)  # the bid never went out
    assert ex.in_flight() == 2 and ex.withdraw() == []  # the two cancels on the wire; nothing held


def test_a_held_batch_goes_out_whole_when_only_some_of_its_orders_are_cancelled():
    ex, writes = live_executor()
    ex.engine.reconciler.orders["a0"] = SimpleNamespace(token_id="Y", side=SELL, price=50 * C)
    ex.execute([SendCancels(CancelBatch(("a0",)))], 1.0)
    held = PlaceBatch((limit("b1", BUY, 50 * C, 5 * S), limit("b2", BUY, 40 * C, 5 * S)))
    ex.execute([SendPlaces(held)], 1.0)
    ex.execute([SendCancels(CancelBatch(("b1",)))], 1.1)  # b2 is still wanted: the batch stays held
    assert not any(type(a[0]) is PlacesFailed for a in writes.started)
    assert len(writes.started) == 1  # b1's cancel waits for b1's POST, itself still held
    ex._cancelling.pop("a0")
    ex._release_held({("cancel", "a0")})
    assert [type(a[0]) for a in writes.started] == [SendCancels, SendPlaces] and writes.started[1][0].batch is held
    ex._placing.clear()
    ex._release_held({("place", "b1"), ("place", "b2")})  # the POST answered: now b1's cancel
    assert [a[0].batch.order_ids for a in writes.started][-1] == ("b1",) and type(writes.started[-1][0]) is SendCancels


def test_the_live_executor_writes_every_post_of_a_turn_before_it_makes_any_task():
    """Making a task (a cancel's, a read's, a POST's answer) costs time; none is made before the
    turn's last POST is written, whatever the actions' order."""
    log: list[str] = []
    ex, writes = live_executor()
    ex.venue.writes.start_post_orders = lambda orders, **k: log.append("POST")
    start_soon = writes.start_soon

    def noting(fn: Any, *args: Any) -> None:
        log.append("task")
        start_soon(fn, *args)

    writes.start_soon = noting
    first = PlaceBatch((limit("p1", BUY, 40 * C, 5 * S),))
    second = PlaceBatch((limit("p2", SELL, 60 * C, 5 * S),))
    ex.execute([SendCancels(CancelBatch(("old1",))), SendPlaces(first), SendCancels(CancelBatch(("old2",))),
                SendPlaces(second)], 1.0)
    assert log == ["POST", "POST", "task", "task", "task", "task"], log
    kinds = [type(args[0]).__name__ for args in writes.started]
    assert kinds == ["SendCancels", "SendPlaces", "SendCancels", "SendPlaces"]  # the actions' order kept

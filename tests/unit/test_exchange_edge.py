"""The local exchange's rate-limit tables stay bounded however many clients come
(``bot.exchange.edge.EdgeLimits``): idle clients' limiters go first, then the least recently
seen; an active client keeps its spent budget."""

from __future__ import annotations

import anyio
import pytest

import bot.exchange.edge as edge
from bot.exchange.edge import EdgeLimits
from bot.exchange.replies import Reply


class Clock:
    def __init__(self) -> None:
        self.t = 1_000.0

    def __call__(self) -> float:
        return self.t


def ask(limits: EdgeLimits, client: str) -> None:
    anyio.run(limits.request, "clob", "GET", "/book", client)


def test_a_thousand_clients_leave_at_most_the_tables_bound_and_the_idle_go_first(monkeypatch):
    monkeypatch.setattr(edge, "MAX_CLIENTS", 8)
    clock = Clock()
    limits = EdgeLimits(1.0, True, clock)
    for i in range(1_000):
        ask(limits, f"10.0.{i // 256}.{i % 256}")
        assert len(limits._per_ip) <= 8
    # the newest clients are the ones kept
    assert {c for _, c in limits._per_ip} == {f"10.0.3.{i}" for i in range(224, 232)}
    # past the longest window every one of them is idle: a new client makes room by dropping them all
    clock.t += limits._memory_s + 1
    ask(limits, "192.168.0.1")
    assert [c for _, c in limits._per_ip] == ["192.168.0.1"]


def test_an_active_client_keeps_what_it_spent_while_others_come_and_go(monkeypatch):
    monkeypatch.setattr(edge, "MAX_CLIENTS", 4)
    clock = Clock()
    limits = EdgeLimits(0.01, True, clock, queue_s=0.0)  # a small budget: a few requests a window
    budget = 0
    with pytest.raises(Reply) as refused:
        while True:
            ask(limits, "busy")
            budget += 1
    assert refused.value.status == 429
    for i in range(3):
        ask(limits, f"other{i}")
        with pytest.raises(Reply):  # the busy client is still out of budget: its limiter was kept
            ask(limits, "busy")
    assert budget >= 1 and ("clob", "busy") in limits._per_ip

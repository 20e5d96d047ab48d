"""Every order live at the exchange is one the bot counts as working, throughout a run.

The synthetic traders run twenty times faster than by default, so the market maker requotes
many times a second and its cancels race their own places (separate connections, no ordering
promise), with and without the exchange's latency injection. The exchange's own listing is
sampled during the run and compared with the bot's order store (``bench.audit.untracked``).
Then, at a quiet moment (the traders paused), both hold the very same orders.
"""

from __future__ import annotations

import time

import pytest

from bench.audit import store_view, untracked
from bot.exchange.config import FaultConfig, ServerFlowConfig
from bot.venue.enums import Side
from tests.integration.exchange_fixture import start_exchange, wait_for
from tests.integration.test_live_trading import TICK, counterparty_order, open_orders, running_bot

pytestmark = pytest.mark.integration

RUN_S = 8.0


@pytest.mark.parametrize("latency_ms", [(0.0, 0.0), (5.0, 300.0)], ids=["no-latency", "latency"])
def test_no_order_lives_at_the_exchange_untracked(latency_ms):
    lo, hi = latency_ms
    ex = start_exchange(flow=ServerFlowConfig(enabled=True, speed=20.0),
                        faults=FaultConfig(latency_ms_min=lo, latency_ms_max=hi))
    acct = ex.demo_account
    try:
        with running_bot(ex) as bot:
            eng = bot.engine
            wait_for(lambda: len(open_orders(ex, acct)) >= 4, what="the first quotes")
            samples, bad = 0, []
            end = time.monotonic() + RUN_S
            while time.monotonic() < end:
                asked_at = bot.read(eng.clock.now)
                listed = [o["id"] for o in open_orders(ex, acct)]
                bad += untracked(listed, bot.read(lambda: store_view(eng.orders)), asked_at)
                samples += 1
            sent = bot.read(lambda: eng.stats.orders_sent)
            assert samples >= 10 and sent >= 50, (samples, sent)  # the run did requote, many times
            assert not bad, f"{len(set(bad))} orders live at the exchange but not working in the bot"

            # a quiet moment (the book holds still): the bot's working orders are the exchange's
            ex.pause_flow()

            last: list = []

            def same() -> bool:
                listed = {o["id"] for o in open_orders(ex, acct)}
                working = bot.read(lambda: {o.order_id: (o.state.value, o.reason) for o in eng.working_orders()})
                last[:] = [sorted(listed - set(working)), {k: v for k, v in working.items() if k not in listed}]
                return listed == set(working)

            try:
                wait_for(same, deadline_s=10, what="the bot's working orders to equal the exchange's open orders")
            except AssertionError as exc:
                raise AssertionError(f"{exc}: only at the exchange {last[0]}, only in the bot {last[1]}") from None
            assert bot.read(lambda: eng.state.value) == "ACTIVE"
    finally:
        ex.stop()


def test_the_order_sync_cancels_an_order_live_at_the_venue_that_the_bot_never_sent():
    # user-channel events come late: the periodic listing is what finds the stray order
    ex = start_exchange(faults=FaultConfig(user_event_delay_ms=20_000))
    acct = ex.demo_account
    try:
        with running_bot(ex, orders_sync_s=0.3) as bot:
            m = bot.markets[0]
            wait_for(lambda: len(open_orders(ex, acct)) >= 4, what="the first quotes")
            # the same account places an order behind the bot's back (another process, a person)
            stray = counterparty_order(ex, acct, m.tokens[0], m.condition_id, Side.BUY, TICK, 5_000_000)
            assert stray["success"], stray
            wait_for(lambda: stray["orderID"] not in {o["id"] for o in open_orders(ex, acct)}, deadline_s=5,
                     what="the stray order cancelled by the order sync")
            assert bot.read(lambda: bot.engine.stats.orphans) >= 1
            assert bot.read(lambda: bot.engine.orders.get(stray["orderID"])) is None  # cancelled, not adopted
    finally:
        ex.stop()


def test_a_stop_in_the_middle_of_requotes_leaves_nothing_resting():
    # writes are on the wire when the stop comes; each takes up to 0.3 s, part of it before the
    # exchange processes it: a cancel-all sent at once could pass a place still on its way in
    ex = start_exchange(flow=ServerFlowConfig(enabled=True, speed=20.0),
                        faults=FaultConfig(latency_ms_min=50.0, latency_ms_max=300.0))
    acct = ex.demo_account
    try:
        for _ in range(2):
            with running_bot(ex) as bot:
                wait_for(lambda: bot.read(lambda: bot.engine.stats.orders_sent) >= 30, deadline_s=15,
                         what="requotes under way")
            assert open_orders(ex, acct) == [], "orders left resting after the stop"
    finally:
        ex.stop()

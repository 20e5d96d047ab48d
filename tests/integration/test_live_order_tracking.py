"""Every order live at the exchange is one the bot counts as working, throughout a run.

Another trader keeps moving the best bid of the bot's market, so the market maker requotes every
few tens of milliseconds and its cancels race their own places (separate connections, no
ordering promise), with and without the exchange's latency injection. The exchange's own listing
is sampled during the run and compared with the bot's order store: an order listed live that the
bot does not know, or had closed before the listing was asked for, is an order the bot no longer
tracks. Then, at a quiet moment, both hold the very same orders.
"""

from __future__ import annotations

import random
import threading
import time

import pytest

from bot.exchange.config import FaultConfig
from bot.venue.enums import Side
from tests.integration.exchange_fixture import start_exchange, wait_for
from tests.integration.test_live_trading import TICK, counterparty_order, open_orders, running_bot, signed

pytestmark = pytest.mark.integration

RUN_S = 8.0
MOVERS = 4


def untracked(listed: list[dict], known: dict[str, tuple[bool, float]], asked_at: float) -> list[str]:
    """Ids listed live that the bot does not know, or knew closed before the listing was asked for."""
    out = []
    for o in listed:
        state = known.get(o["id"])
        if state is None or (state[0] and state[1] < asked_at):
            out.append(o["id"])
    return out


class BookMover(threading.Thread):
    """Toggles a bid one tick above the best bid of ``token``, every 5-40 ms (seeded)."""

    def __init__(self, ex, acct, token: str, cond: str, bid: int, seed: int) -> None:
        super().__init__(daemon=True)
        self.ex, self.acct, self.token, self.cond, self.bid, self.seed = ex, acct, token, cond, bid, seed
        self.stopped = threading.Event()
        self.moves = 0

    def run(self) -> None:
        rng = random.Random(self.seed)
        while not self.stopped.is_set():
            counterparty_order(self.ex, self.acct, self.token, self.cond, Side.BUY, self.bid + TICK, 5_000_000)
            self.stopped.wait(rng.uniform(0.005, 0.04))
            signed("DELETE", self.ex.urls.clob, "/cancel-all", self.acct)
            self.moves += 1
            self.stopped.wait(rng.uniform(0.005, 0.04))


@pytest.mark.parametrize("latency_ms", [(0.0, 0.0), (5.0, 300.0)], ids=["no-latency", "latency"])
def test_no_order_lives_at_the_exchange_untracked(latency_ms):
    lo, hi = latency_ms
    ex = start_exchange(faults=FaultConfig(latency_ms_min=lo, latency_ms_max=hi))
    acct = ex.demo_account
    try:
        with running_bot(ex) as bot:
            eng = bot.engine
            m = bot.markets[0]
            wait_for(lambda: len(open_orders(ex, acct)) >= 4, what="the first quotes")
            movers = []
            for i in range(MOVERS):  # each outcome token's best bid moved by two traders
                token = m.tokens[i % 2]
                bid = bot.read(lambda: eng.books[token].best_bid)
                movers.append(BookMover(ex, ex.new_account(30 + i), token, m.condition_id, bid, seed=i))

            def orders() -> dict[str, tuple[bool, float]]:
                return {o.order_id: (o.state.terminal, o.updated_at) for o in eng.orders}

            samples, bad = 0, []
            for mover in movers:
                mover.start()
            try:
                end = time.monotonic() + RUN_S
                while time.monotonic() < end:
                    asked_at = bot.read(eng.clock.now)
                    listed = open_orders(ex, acct)
                    bad += untracked(listed, bot.read(orders), asked_at)
                    samples += 1
            finally:
                for mover in movers:
                    mover.stopped.set()
                for mover in movers:
                    mover.join(5)
            moves = sum(mover.moves for mover in movers)
            sent = bot.read(lambda: eng.stats.orders_sent)
            assert samples >= 10 and moves >= 30 and sent >= 30, (samples, moves, sent)
            assert not bad, f"{len(set(bad))} orders live at the exchange but not working in the bot"

            # a quiet moment (the book holds still): the bot's working orders are the exchange's
            def same() -> bool:
                listed = {o["id"] for o in open_orders(ex, acct)}
                working = bot.read(lambda: {o.order_id for o in eng.working_orders()})
                return listed == working and len(listed) >= 4

            wait_for(same, deadline_s=10, what="the bot's working orders to equal the exchange's open orders")
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

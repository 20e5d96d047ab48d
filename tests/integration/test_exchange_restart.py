"""The exchange dies and comes back empty (same ports, same accounts, none of the bot's orders or
trades): the bot sends nothing new after its user channel reconnects until the venue's holdings
are the booked ones; they are not, so it halts (``position_unreconciled``), says why, and stays
halted: it never trades on a position it cannot reconcile."""

from __future__ import annotations

import socket

import pytest

from bot.risk import HaltReason
from tests.integration.exchange_fixture import start_in_thread, wait_for
from tests.integration.exchange_fixture import test_config as exchange_config
from tests.integration.test_live_faults import sell_at_our_bid
from tests.integration.test_live_trading import running_bot

pytestmark = pytest.mark.integration


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def account_orders(ex) -> list[str]:
    holder = ex.demo_account.address
    return ex.call(lambda: [o.id for o in ex.exchange.state.engine.orders.values() if o.account == holder])


def test_an_exchange_restarted_empty_halts_the_bot_until_an_operator_steps_in():
    catalog, clob, data = free_ports(3)
    # the same demo account (key and credentials) on both runs: the bot keeps the ones it has
    config = exchange_config(catalog_port=catalog, clob_port=clob, data_port=data, demo_credentials="deterministic")
    first = start_in_thread(config)
    second = None
    try:
        other = first.new_account(41)
        with running_bot(first) as bot:
            sell_at_our_bid(first, bot, other)
            wait_for(lambda: bot.read(lambda: bot.engine.stats.fills) >= 1, 10, "our fill")
            first.stop()  # the exchange dies, and comes back at once with none of it
            second = start_in_thread(config)
            eng = bot.engine

            def halted() -> bool:
                return bot.read(lambda: eng.risk.status.has_reason(HaltReason.POSITION_UNRECONCILED))

            wait_for(halted, 45, "the halt on the unreconciled position")
            assert bot.read(lambda: eng.state.value) == "HALTED"
            assert bot.read(lambda: [d.token_id for d in eng.drifts]) != []  # what it says, and why
            assert account_orders(second) == []  # it sent nothing to the empty exchange
            # it stays halted: a later positions check finds the same difference, still nothing sent
            bot.read(lambda: setattr(eng, "drifts", None))
            bot.portal.call(bot.shell.submit, "positions")
            wait_for(lambda: bot.read(lambda: eng.drifts) is not None, 10, "another positions check")
            assert bot.read(lambda: eng.state.value) == "HALTED"
            assert account_orders(second) == []
    finally:
        for ex in (first, second):
            if ex is not None:
                try:
                    ex.stop()
                except Exception:  # noqa: BLE001 - the first one is stopped already
                    pass

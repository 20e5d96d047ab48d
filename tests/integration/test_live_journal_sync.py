"""The live loop's journal sync: a commit that fsyncs is made in a worker thread (the loop keeps
serving the sockets), one that does not is made inline, on the loop's own thread."""

from __future__ import annotations

import threading

import pytest

from bot.execution.journal import Journal
from tests.integration.exchange_fixture import exchange, wait_for  # noqa: F401  (pytest fixture)
from tests.integration.test_live_trading import ours_on, running_bot

pytestmark = pytest.mark.integration


class Recorded(Journal):
    """A journal that notes the thread of each commit the live loop owed it."""

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.synced_on: list[int] = []

    def release(self) -> None:
        if self.due:
            self.synced_on.append(threading.get_ident())
        super().release()


@pytest.mark.parametrize(("level", "in_thread"), [("NORMAL", False), ("FULL", True)])
def test_a_turns_sync_runs_in_a_worker_thread_only_when_it_fsyncs(exchange, tmp_path, level, in_thread):
    journal = Recorded(tmp_path / "j.sqlite", synchronous=level)
    try:
        with running_bot(exchange, journal=journal) as bot:
            yes = bot.markets[0].tokens[0]
            wait_for(lambda: ours_on(exchange, yes), what="quotes placed (each journaled first)")
            loop_thread = bot.read(threading.get_ident)
            synced_on = list(journal.synced_on)
        assert synced_on  # the placed orders were committed by the loop's syncs
        assert all((t != loop_thread) is in_thread for t in synced_on), (level, loop_thread, set(synced_on))
    finally:
        journal.close()

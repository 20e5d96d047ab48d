"""The operator's controls of a running ``bot run``: SIGUSR1 switches it to REDUCING (every order
cancelled, then only exposure-shrinking ones), SIGUSR2 resumes ACTIVE quoting, SIGTERM stops it
with nothing left resting. The exchange's own listing is the evidence."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.integration.exchange_fixture import start_exchange, wait_for
from tests.integration.test_live_restart import config_text, start_bot
from tests.integration.test_live_trading import open_orders

pytestmark = pytest.mark.integration


def test_sigusr1_reduces_sigusr2_resumes_sigterm_stops(tmp_path: Path):
    ex = start_exchange()
    acct = ex.demo_account
    try:
        cond = ex.exchange.state.catalog.markets[0].condition_id
        cfg = tmp_path / "bot.toml"
        cfg.write_text(config_text(ex, cond, tmp_path / "journal.sqlite"))
        env = dict(os.environ, BOT_PRIVATE_KEY=acct.private_key, BOT_API_KEY=acct.creds.apiKey,
                   BOT_API_SECRET=acct.creds.secret, BOT_API_PASSPHRASE=acct.creds.passphrase)
        bot = start_bot(cfg, env, tmp_path / "bot.log")
        try:
            def sides() -> set[str]:
                return {o["side"] for o in open_orders(ex, acct)}

            wait_for(lambda: sides() == {"BUY", "SELL"}, deadline_s=20, what="two-sided quotes")
            bot.send_signal(signal.SIGUSR1)
            # flat but holding both outcome tokens: nothing shrinks the net exposure, so nothing rests
            wait_for(lambda: not open_orders(ex, acct), deadline_s=10, what="every order cancelled in REDUCING")
            bot.send_signal(signal.SIGUSR2)
            wait_for(lambda: sides() == {"BUY", "SELL"}, deadline_s=10, what="quotes back after resume")
            bot.send_signal(signal.SIGTERM)
            assert bot.wait(timeout=20) == 0
        finally:
            if bot.poll() is None:
                bot.kill()
        assert open_orders(ex, acct) == []
        log = (tmp_path / "bot.log").read_text()
        assert '"reduce_only"' in log and '"resume"' in log
    finally:
        ex.stop()

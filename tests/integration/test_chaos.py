"""Forty-five seconds of the chaos run (``bench/chaos.py``): the market maker as a real ``bot run`` process
against the local exchange with every fault on at once, then the audit. Every error figure is 0."""

from __future__ import annotations

import anyio
import pytest

from bench.chaos import chaos, chaos_faults, describe

pytestmark = pytest.mark.integration

SEED = 3


@pytest.mark.timeout(240)
def test_45_seconds_of_every_fault_at_once_audit_clean(tmp_path):
    report = anyio.run(chaos, 45.0, SEED, tmp_path)
    shown = describe(report, chaos_faults(SEED))
    assert report.errors() == [], shown + "\n" + (tmp_path / "bot.log").read_text()[-3000:]
    # the faults did happen, and the bot traded through them
    assert report.answered_429 > 0 and report.answered_5xx > 0, shown
    assert report.orders_sent >= 100 and report.fills >= 5 and report.samples >= 45, shown

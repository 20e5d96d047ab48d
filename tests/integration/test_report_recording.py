"""A journal's report with the books of a recording: the sample recording (``data/sample``) read
through the replay gives the rebuilt series its best bid and ask, marks and markouts."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.backtest.read import read_journal
from bot.backtest.report import build_report
from bot.core.events import Fill
from bot.execution.journal import Journal
from bot.execution.orders import OrderState, OwnOrder
from bot.venue.enums import Side

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"


def test_a_journal_gets_its_books_from_a_recording(tmp_path):
    replay = pytest.importorskip("bot.backtest.replay", reason="recordings cannot be replayed in this checkout")
    if not SAMPLE.is_dir():
        pytest.skip(f"no sample recording at {SAMPLE}")
    token = replay.markets([SAMPLE])[0].tokens[0]
    start = next(iter(replay.replay([SAMPLE], cache=False)))[0] / 1e9
    journal = Journal(tmp_path / "journal.paper.sqlite", signed_type=None)
    o = OwnOrder("o1", token, Side.BUY, 10_000, 5_000_000, sent_at=start + 20.0, updated_at=start + 20.0)
    journal.order(o)
    o.state, o.updated_at = OrderState.LIVE, start + 20.1
    journal.order(o)
    journal.fill(Fill("t1", "o1", token, Side.BUY, 10_000, 5_000_000, ts=start + 30.0))
    o.state, o.filled, o.updated_at = OrderState.FILLED, 5_000_000, start + 30.0
    journal.order(o)
    journal.close()

    results = read_journal(tmp_path / "journal.paper.sqlite", recording=[SAMPLE])
    assert results.mode == "paper" and not any("recording" in n for n in results.notes)
    at_fill = [s for s in results.series if s.t <= start + 30.0][-1].tokens[token]
    assert at_fill.bid is not None and at_fill.ask is not None and at_fill.bid < at_fill.ask
    assert at_fill.mark == (at_fill.bid + at_fill.ask) // 2
    assert results.series[-1].total is not None
    assert results.series[-1].t >= start + 90.0  # the books a minute past the fill, for its markouts
    report = build_report(results)
    assert "fig-markouts" in report.figure_ids and "fig-drawdown" in report.figure_ids

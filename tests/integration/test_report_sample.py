"""Reports of the sample recording (``data/sample``): ``bot backtest --report`` writes the page of
the run into its results folder, ``bot report`` rebuilds the same page from the files alone, and a
journal's report takes its books (best bid and ask, marks, markouts) from the recording."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

from bot.backtest.replay import recorded
from bot.results.read import read_journal, read_run
from bot.results.report import build_report, summary_from_files
from bot.core.events import Fill
from bot.execution.journal import Journal
from bot.execution.orders import OrderState, OwnOrder
from bot.venue.enums import Side

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample"


def bot(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300)


def test_a_backtest_report_is_rebuilt_from_the_results_files_alone(tmp_path):
    out = tmp_path / "results"
    args = ["backtest", "--config", str(REPO / "config" / "bot.example.toml"), "--data", str(SAMPLE), "--no-progress",
            "--seed", "3"]
    proc = bot(*args, "--out", str(out), "--report")
    assert proc.returncode == 0, proc.stderr
    assert f"report: {out / 'report.html'}" in proc.stdout
    page = (out / "report.html").read_text()
    results = read_run(out)
    ids = build_report(results).figure_ids
    assert {"fig-pnl", "fig-drawdown", "fig-inventory", "fig-markouts", "fig-fill-rate", "fig-queue-wait"} <= set(ids)
    assert json.loads(re.search(r'id="report-figures">(.*?)</script>', page).group(1)) == ids
    computed, written = summary_from_files(results), results.summary
    same = ("orders_sent", "fills", "maker_fills", "volume", "notional", "maker_share", "realized", "fees",
            "max_drawdown", "inventory")
    assert {k: getattr(computed, k) for k in same} == {k: getattr(written, k) for k in same}
    assert computed.fill_rate == pytest.approx(written.fill_rate, abs=0.02)  # the files do not hold the acks
    proc = bot("report", str(out), "--out", str(tmp_path / "again.html"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "again.html").read_text() == page  # nothing but the files went into it
    assert bot(*args, "--out", str(tmp_path / "plain")).returncode == 0
    assert not (tmp_path / "plain" / "report.html").exists()  # only when asked


def test_a_journal_gets_its_books_from_a_recording(tmp_path):
    from bot.backtest import replay

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

    results = read_journal(tmp_path / "journal.paper.sqlite", recording=recorded([SAMPLE]))
    assert results.mode == "paper" and not any("recording" in n for n in results.notes)
    at_fill = [s for s in results.series if s.t <= start + 30.0][-1].tokens[token]
    assert at_fill.bid is not None and at_fill.ask is not None and at_fill.bid < at_fill.ask
    assert at_fill.mark == (at_fill.bid + at_fill.ask) // 2
    assert results.series[-1].total is not None
    assert results.series[-1].t >= start + 90.0  # the books a minute past the fill, for its markouts
    report = build_report(results)
    assert "fig-markouts" in report.figure_ids and "fig-drawdown" in report.figure_ids

    page = tmp_path / "journal.html"  # the command reads the same books from the recording
    proc = bot("report", str(tmp_path / "journal.paper.sqlite"), "--recording", str(SAMPLE), "--out", str(page))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"report: {page}\n" and 'id="fig-markouts"' in page.read_text()
    proc = bot("report", str(tmp_path), "--recording", str(SAMPLE))
    assert proc.returncode == 2 and "a results folder holds its own books" in proc.stderr, proc.stderr

"""The report: which figures and tables a run gets, their numbers (from the files only), what is
said when the files lack something, the page's safety and size, and the ``bot report`` and
``bot backtest --report`` commands."""

from __future__ import annotations

import json
import re

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot import cli
from bot.results import report as rp
from bot.results.read import FillRecord, OrderChange, RunOrder, RunResults, Sample, TokenSample, read_run
from bot.results.folder import ResultsSink, Summary
from bot.execution.orders import OrderState as S
from bot.venue.enums import Side, TradeStatus
from tests.results_fixture import NO, T0, YES, write_journal, write_results


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("run")
    return write_results(d / "results"), write_journal(d / "journal.sqlite")


def parts(report: rp.Report, kind: type) -> dict[str, object]:
    return {p.id: p for s in report.sections for p in s.parts if isinstance(p, kind)}


def notes(report: rp.Report) -> list[str]:
    return [p.text for s in report.sections for p in s.parts if isinstance(p, rp.Note)]


def trace(fig: rp.Figure, name: str) -> dict:
    [t] = [t for t in fig.figure["data"] if t["name"] == name]
    return t


def test_a_backtest_gets_every_chart_and_table(files):
    report = rp.build_report(read_run(files[0]))
    # its files hold no summary.json, as a run that never finished leaves them: said first
    assert [s.id for s in report.sections] == ["summary", "partial", "pnl", "inventory", "quotes", "markouts", "fills",
                                               "notes"]
    assert report.figure_ids == ["fig-pnl", "fig-drawdown", "fig-inventory", "fig-quotes-0", "fig-quotes-1",
                                 "fig-markouts", "fig-fill-rate", "fig-queue-wait"]
    assert notes(report) == ["no summary.json: the run did not finish (killed or failed); every figure covers only "
                             "what it wrote", "1 fill(s) reversed (their trade failed): left out of every figure"]


def test_the_summary_is_computed_from_the_files_by_hand(files):
    rows = dict(parts(rp.build_report(read_run(files[0])), rp.Table)["summary-table"].rows)
    assert rows["PnL (USDC)"] == "-0.15" and rows["unrealized (USDC)"] == "-0.1" and rows["fees (USDC)"] == "0.05"
    assert rows["realized (USDC)"] == "0" and rows["max drawdown (USDC)"] == "0.26"
    assert (rows["orders sent"], rows["orders rejected"], rows["cancels sent"], rows["fills"]) == ("7", "1", "1", "4")
    # volume 10 + 4 + 5 + 6 shares, 20 of them as maker; notional 5 + 2 + 2.6 + 3 USDC
    assert (rows["volume (shares)"], rows["maker share of volume"], rows["notional (USDC)"]) == ("25", "80.0%", "12.6")
    assert rows["fill rate (orders with a fill)"] == "66.7%"
    assert rows[f"inventory …{YES[-8:]} (shares)"] == "0 .. 10" and rows[f"inventory …{NO[-8:]} (shares)"] == "0 .. 5"
    assert "events" not in rows and "events/s" not in rows  # the files cannot say


def test_the_charts_hold_the_files_numbers(files):
    run = read_run(files[0])
    figs = parts(rp.build_report(run), rp.Figure)
    assert trace(figs["fig-pnl"], "total")["y"] == [s.total / 1e6 for s in run.series]
    assert min(trace(figs["fig-drawdown"], "drawdown")["y"]) == -0.26
    assert trace(figs["fig-inventory"], f"…{NO[-8:]}")["y"][-1] == 5.0
    yes = figs["fig-quotes-0"]
    assert trace(yes, "maker buy")["y"] == [0.5] and trace(yes, "maker sell")["y"] == [0.5, 0.5]
    assert trace(yes, "maker buy")["marker"]["symbol"] == "triangle-up"
    assert trace(figs["fig-quotes-1"], "taker buy")["marker"]["symbol"] == "triangle-up-open"
    assert {t["name"] for t in yes.figure["data"]} == {"best bid", "best ask", "our bid", "our ask", "maker buy",
                                                       "maker sell"}
    assert trace(yes, "our bid")["y"][10] == 0.5 and trace(yes, "our bid")["y"][60] is None
    table = parts(rp.build_report(run), rp.Table)["markout-table"]
    assert table.rows[:3] == (("buy", "1 s", "-1.333", "2"), ("buy", "10 s", "-1.333", "2"), ("buy", "60 s", "-1.000", "1"))


def test_a_journal_without_books_says_what_it_cannot_draw(files):
    report = rp.build_report(read_run(files[1]))
    assert report.title == "live run: journal.sqlite"
    assert report.figure_ids == ["fig-pnl", "fig-inventory", "fig-quotes-0", "fig-quotes-1", "fig-fill-rate",
                                 "fig-queue-wait"]
    said = " | ".join(notes(report))
    assert "no marks: unrealized and total PnL, and their drawdown, need the books" in said
    assert "no mid after any fill: markouts need the books" in said
    assert "no books in the files: only our quotes and fills are drawn" in said
    assert "no recording given" in said
    assert {t["name"] for t in parts(report, rp.Figure)["fig-pnl"].figure["data"]} == {"realized", "fees paid",
                                                                                        "realized − fees"}


def test_a_run_with_a_summary_shows_it_and_its_assumptions(tmp_path):
    folder = write_results(tmp_path / "r")
    summary = Summary(mode="backtest", events=1234, seconds=7200.0, wall_seconds=2.0, events_per_s=617.0,
                      orders_sent=7, orders_rejected=1, cancels_sent=1, fills=4, maker_fills=3, volume=25_000_000,
                      notional=12_600_000, fill_rate=0.5, maker_share=0.8, realized=0, unrealized=-100_000,
                      fees=50_000, pnl=-150_000, max_drawdown=260_000, inventory={}, final_position={}, seed=7,
                      assumptions=("a touch is not a fill",))
    (folder / "summary.json").write_bytes(msgspec.json.encode(summary))
    report = rp.build_report(read_run(folder))
    rows = dict(parts(report, rp.Table)["summary-table"].rows)
    assert (rows["events"], rows["events/s"], rows["seed"], rows["market time"]) == ("1,234", "617", "7", "2.00 h")
    assert [rp.market_time(s) for s in (42.0, 150.0, 11_160.0)] == ["42.0 s", "2.5 min", "3.10 h"]
    assert "assumption: a touch is not a fill" in notes(report)


def test_an_empty_run_is_notes_not_empty_charts():
    report = rp.build_report(RunResults(source="x", mode="paper", orders=(), fills=()))
    assert report.figure_ids == []
    assert len(notes(report)) == 5
    assert "<h2>Markouts</h2>" in rp.render_html(report)


def test_series_and_markers_are_thinned_to_a_bounded_page(files, monkeypatch):
    monkeypatch.setattr(rp, "MAX_POINTS", 10)
    run = read_run(files[0])
    total = trace(parts(rp.build_report(run), rp.Figure)["fig-pnl"], "total")
    assert len(total["y"]) == 11 and total["y"][-1] == run.series[-1].total / 1e6  # every 13th, and the last
    monkeypatch.setattr(rp, "MAX_MARKERS", 1)
    fig = parts(rp.build_report(run), rp.Figure)["fig-quotes-0"]
    assert trace(fig, "maker sell")["y"] == [0.5] and "(every 3th fill drawn)" in fig.figure["layout"]["title"]["text"]


def test_a_section_can_be_added_to_a_report(files):
    report = rp.build_report(read_run(files[0]))
    extra = rp.Section("compare", "Backtest against live", (
        rp.Figure("fig-compare", {"data": [{"type": "bar", "x": ["a"], "y": [1]}], "layout": {}}),
        rp.Table("compare-table", ("cause", "USDC"), (("latency", "0.1"),)),
    ))
    page = rp.render_html(msgspec.structs.replace(report, sections=report.sections + (extra,)))
    assert '<a href="#compare">Backtest against live</a>' in page and 'id="compare-table"' in page
    manifest = re.search(r'id="report-figures">(.*?)</script>', page).group(1)
    assert json.loads(manifest)[-1] == "fig-compare"


def test_text_from_the_files_cannot_break_out_of_the_page(tmp_path):
    evil = "</script><script>alert(1)</script><b>"
    sink = ResultsSink(tmp_path / evil.replace("/", "_"))
    from bot.core.events import Fill
    from bot.execution.orders import OwnOrder

    o = OwnOrder("o", evil, Side.BUY, 500_000, 1_000_000, sent_at=T0, updated_at=T0, reason=evil)
    sink.order(o)
    sink.fill(Fill("t", "o", evil, Side.BUY, 500_000, 1_000_000, ts=T0 + 1))
    sink.sample({"t": T0, "realized": 0, "unrealized": 0, "fees": 0, "total": 0,
                 "tokens": {evil: {"position": 0, "bid": 1, "ask": 2}}})
    sink.close()
    page = rp.render_html(rp.build_report(read_run(sink.folder)))
    assert "<script>alert" not in page and "<b>" not in page
    assert page.count("<script") == 2 + len(rp.build_report(read_run(sink.folder)).figure_ids)


_t = st.floats(T0, T0 + 300, allow_nan=False)
_side = st.sampled_from(list(Side))
_fills = st.lists(st.builds(FillRecord, trade_id=st.text("abc", min_size=1, max_size=2), order_id=st.sampled_from(["a", "b"]),
                            token_id=st.sampled_from(["x", "y"]), side=_side, price=st.integers(0, 1_000_000),
                            size=st.integers(0, 10**9), fee=st.integers(-10**6, 10**6), is_maker=st.booleans(),
                            status=st.just(TradeStatus.MATCHED), ts=_t), max_size=8)
_orders = st.lists(st.builds(
    RunOrder, order_id=st.sampled_from(["a", "b", "c"]), token_id=st.sampled_from(["x", "y"]), side=_side,
    price=st.integers(0, 1_000_000), size=st.integers(0, 10**9), sent_at=_t,
    changes=st.lists(st.builds(OrderChange, st.sampled_from(list(S)), st.integers(0, 10**9), _t), max_size=4).map(tuple)),
    max_size=6)
_amount = st.integers(-10**12, 10**12)
_series = st.lists(st.builds(Sample, t=_t, realized=_amount, fees=_amount, unrealized=st.none() | _amount,
                             total=st.none() | _amount,
                             tokens=st.dictionaries(st.sampled_from(["x", "y"]), st.builds(
                                 TokenSample, position=_amount, mark=st.none() | st.integers(0, 10**6),
                                 bid=st.none() | st.integers(0, 10**6), ask=st.none() | st.integers(0, 10**6),
                                 our_bid=st.none() | st.integers(0, 10**6), our_ask=st.none() | st.integers(0, 10**6)))),
                   max_size=12).map(lambda xs: tuple(sorted(xs, key=lambda s: s.t)))


@settings(max_examples=40, deadline=None)
@given(orders=_orders, fills=_fills, series=_series)
def test_any_results_make_a_report_of_valid_figures(orders, fills, series):
    import plotly.graph_objects as go

    report = rp.build_report(RunResults(source="r", mode="backtest", orders=tuple(orders), fills=tuple(fills),
                                        series=series))
    for s in report.sections:
        for p in s.parts:
            if isinstance(p, rp.Figure):
                go.Figure(p.figure)  # plotly validates every trace and layout key
    assert len(set(report.figure_ids)) == len(report.figure_ids)


# --- the commands ------------------------------------------------------------------------------


def test_bot_report_writes_the_page_of_a_folder_and_of_a_journal(files, tmp_path, capsys):
    assert cli.main(["report", str(files[0])]) == 0
    assert capsys.readouterr().out == f"report: {files[0] / 'report.html'}\n"
    page = (files[0] / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "Plotly.newPlot" in page
    assert not re.findall(r"<(?:script|link|img)\b[^>]*\b(?:src|href)=", page)  # nothing to fetch: opens offline
    out = tmp_path / "j" / "journal.html"
    assert cli.main(["report", str(files[1]), "--out", str(out), "--every", "5"]) == 0
    assert out.is_file() and capsys.readouterr().out == f"report: {out}\n"


@pytest.mark.parametrize("args, says", [
    (["report", "/nonexistent/run"], "error: /nonexistent/run: no such results folder or journal\n"),
    (["report", "RUN", "--every", "0"], "got '0', expected a number in [0.001, 86400]"),
    (["report", "RUN/orders.parquet"], "not a journal (file is not a database)\n"),
])
def test_bot_report_bad_input_is_one_line_and_exit_2(files, capsys, args, says):
    args = [a.replace("RUN", str(files[0])) for a in args]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_a_final_position_off_the_lot_grid_shows_its_dust():
    """Fills have 6 decimals and orders sell whole lots: a final position's part under one lot is
    named as dust no order can sell; a whole-lot position gets no such row."""
    summary = Summary(mode="backtest", events=0, seconds=1.0, wall_seconds=0.0, events_per_s=0.0,
                      orders_sent=3, orders_rejected=0, cancels_sent=0, fills=3, maker_fills=0, volume=23_371_898,
                      notional=12_600_000, fill_rate=1.0, maker_share=0.0, realized=0, unrealized=0,
                      fees=0, pnl=0, max_drawdown=0, inventory={},
                      final_position={"tok-aaaaaaaa": 11_371_898, "tok-bbbbbbbb": 12_000_000, "tok-cccccccc": 1_818})
    rows = dict(rp.summary_rows(summary))
    assert rows["final position …aaaaaaaa (shares)"] == "11.371898 (dust 0.001898: under one lot, no order can sell it)"
    assert rows["final position …cccccccc (shares)"] == "0.001818 (dust 0.001818: under one lot, no order can sell it)"
    assert "final position …bbbbbbbb (shares)" not in rows


def test_a_results_folder_is_claimed_when_new_or_empty_refused_when_it_holds_results_and_cleared_when_forced(tmp_path):
    from bot.results.folder import claim

    assert claim(tmp_path / "new", "bot backtest", force=False) is None
    (tmp_path / "only-lock").mkdir()
    (tmp_path / "only-lock" / ".lock").write_text("1")
    assert claim(tmp_path / "only-lock", "bot backtest", force=False) is None
    (tmp_path / "file").write_text("x")
    assert "is a file" in claim(tmp_path / "file", "bot backtest", force=True)
    held = tmp_path / "held"
    (held / "runs" / "00001-seed1").mkdir(parents=True)
    for name in ("summary.json", "orders.parquet", "results.json", "keep.txt"):
        (held / name).write_text("x")
    line = claim(held, "bot sweep", force=False)
    assert line.startswith("bot sweep: ") and "already holds results" in line and "\n" not in line
    assert claim(held, "bot sweep", force=True, names=("results.json", "runs")) is None
    assert sorted(p.name for p in held.iterdir()) == ["keep.txt", "orders.parquet", "summary.json"]
    assert claim(held, "bot backtest", force=True) is None
    assert sorted(p.name for p in held.iterdir()) == ["keep.txt"]

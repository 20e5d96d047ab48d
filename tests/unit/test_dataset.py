"""A top-of-book dataset as a backtest's source: its files found under a folder, markets chosen by
slug, pattern, category and rank, its polling cadence and pauses, and the notes a summary carries."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bot.backtest.dataset import Dataset, choose_markets, ranked
from bot.backtest.recording import RecordingError
from bot.backtest.sources import split_sources, table_files

DATASET = "realworld/DineshKumar8399__polymarket-orderbook-dataset"


def write_quotes(path: Path, rows: list[tuple]) -> Path:
    """Rows (minute, slug, category, bid, ask) of a day as a quotes file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    ts = [pa.scalar(1_780_000_000_000_000 + m * 60_000_000, pa.timestamp("us")) for m, *_ in rows]
    pq.write_table(pa.table({
        "ts": pa.array([t.as_py() for t in ts], pa.timestamp("us")),
        "slug": [r[1] for r in rows], "category": [r[2] for r in rows],
        "bid": pa.array([r[3] for r in rows], pa.float64()), "ask": pa.array([r[4] for r in rows], pa.float64()),
        "segment": pa.array([1] * len(rows), pa.int32()),
    }), path)
    return path


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    rows = []
    for m in range(0, 20, 2):  # every 2 minutes, a pause of the whole source from 20 to 40
        rows += [(m, "wide", "sports", 0.40, 0.50), (m, "tight", "politics", 0.40, 0.41)]
        if m < 6:
            rows.append((m, "short", "politics", 0.45, 0.46))  # polled three times only
    for m in range(40, 50, 2):
        rows += [(m, "wide", "sports", 0.40, 0.50), (m, "tight", "politics", 0.40, 0.41)]
    write_quotes(tmp_path / "quotes" / "dt=2026-07-01" / "data_0.parquet", rows)
    pq.write_table(pa.table({"slug": ["wide", "tight", "short"], "y": [1, 0, 1],  # not quotes
                             "source": ["api", "convergence", "api"]}), tmp_path / "labels.parquet")
    return tmp_path


def test_a_folder_stands_for_the_quotes_files_under_it(folder: Path, tmp_path: Path) -> None:
    recordings, tables = split_sources([folder])
    assert recordings == [] and tables == [folder / "quotes" / "dt=2026-07-01" / "data_0.parquet"]
    assert table_files(folder) == tables
    empty = tmp_path / "empty"
    empty.mkdir()
    for bad, words in ((empty, "holds no recording"), (tmp_path / "nope", "no such recording")):
        with pytest.raises(RecordingError) as err:
            split_sources([bad])
        assert words in str(err.value) and "\n" not in str(err.value)


def test_markets_are_chosen_by_slug_pattern_category_and_rank(folder: Path) -> None:
    files = table_files(folder)
    assert choose_markets(files) == ["tight"]  # most polls, then the narrower spread
    assert choose_markets(files, count=3) == ["tight", "wide", "short"]
    assert choose_markets(files, count=3, rank="spread") == ["tight", "wide", "short"]  # short: too few polls
    assert choose_markets(files, slugs=["wide", "short"]) == ["wide", "short"]  # every slug named
    assert choose_markets(files, slugs=["*t"]) == ["tight", "short"]
    assert choose_markets(files, slugs=["*t"], count=1, rank="spread") == ["tight"]
    assert choose_markets(files, category="politics", count=5) == ["tight", "short"]
    for choice, words in (({"slugs": ["nothing-*"]}, "no market matches slug 'nothing-*'"),
                          ({"slugs": ["wide"], "category": "politics"}, "no market of category 'politics' matches"),
                          ({"category": "weather"}, "no market of category 'weather' in")):
        with pytest.raises(RecordingError) as err:
            choose_markets(files, **choice)
        assert words in str(err.value) and "\n" not in str(err.value), err.value
    assert "categories: politics, sports" in str(err.value)


def test_ranking_by_spread_keeps_rarely_polled_markets_last() -> None:
    stats = {"a": (100, 100, 100 * 20_000), "b": (100, 100, 100 * 10_000), "c": (50, 50, 50 * 1_000),
             "d": (95, 0, 0)}
    assert ranked(stats, "spread") == ["b", "a", "d", "c"]
    assert ranked(stats, "snapshots") == ["b", "a", "d", "c"]


def test_cadence_pauses_and_notes_come_from_the_files(folder: Path) -> None:
    ds = Dataset(table_files(folder), count=2, depth=500)
    assert ds.slugs == ["tight", "wide"] and ds.cadence_s == 120.0
    assert ds.stale_after_s(60.0) == 360.0 and ds.stale_after_s(1000.0) == 1000.0
    start, end = 1_780_000_000 + 18 * 60, 1_780_000_000 + 40 * 60
    assert ds.pauses(360.0) == [(start, end)] and ds.pauses(2000.0) == []
    l1, depth, stale = ds.notes(360.0)
    assert l1.startswith("books are L1 only") and "no depth" in l1
    assert "500 shares" in depth and "crosses its price" in depth
    assert "every 120 s" in stale and "no poll for 360 s is stale" in stale and "1 time(s)" in stale


def test_the_real_dataset_folder_holds_its_two_days(data_dir: Path) -> None:
    root = data_dir / DATASET
    _, tables = split_sources([root])
    assert [p.parent.name for p in tables] == ["dt=2026-07-10", "dt=2026-08-01"]
    day = tables[:1]
    chosen = choose_markets(day, category="politics", count=2)
    assert len(chosen) == 2
    ds = Dataset(day, slugs=chosen)
    assert 100 <= ds.cadence_s <= 130 and ds.rows >= 190  # a sweep about every two minutes
    assert len(ds.pauses(ds.stale_after_s(60.0))) == 1  # the collector stopped once that evening
    later = Dataset(tables[1:], slugs=choose_markets(tables[1:], count=2))
    longest = max(b - a for a, b in later.pauses(later.stale_after_s(60.0)))
    assert round(longest / 3600, 1) == 10.6  # docs/real-data.md: 2026-08-01's 10.6-hour collector stop


def test_a_journals_books_come_from_quotes_of_the_markets_it_traded(folder: Path) -> None:
    from bot.backtest.replay import recording_events

    events = list(recording_events([folder], tokens=["wide:yes", "wide:yes", "0xabc"]))
    assert {ev.asset_id for _, ev in events} == {"wide:yes", "wide:no"} and len(events) == 2 * 15
    assert list(recording_events([folder], tokens=["0xabc"])) == []  # no dataset market traded


def test_the_command_lines_choice_replaces_the_configs_and_a_sweep_checks_it_first(folder: Path) -> None:
    from argparse import Namespace

    from bot.backtest.cli import dataset_choice
    from bot.backtest.sweep import check_data
    from bot.ops.config import BotConfig

    base = BotConfig()
    assert dataset_choice(base, Namespace()) is base
    chosen = dataset_choice(base, Namespace(market_slug=["w*"], category="sports", markets=2, rank="spread",
                                               data=[folder]))
    bt = chosen.backtest
    assert (bt.dataset_slugs, bt.dataset_category, bt.dataset_markets, bt.dataset_rank) == (("w*",), "sports", 2,
                                                                                             "spread")
    check_data([folder], chosen)
    with pytest.raises(RecordingError, match="no market of category 'sports' matches slug 'x'"):
        check_data([folder], dataset_choice(chosen, Namespace(market_slug=["x"], data=[folder])))


class Held:
    """A portfolio's two figures the settlement reads: sizes, and total PnL at given marks."""

    def __init__(self, sizes: dict[str, int]) -> None:
        self.sizes = sizes
        self.marks: dict[str, int] = {}

    def size(self, token: str) -> int:
        return self.sizes.get(token, 0)

    def total_pnl(self, marks: dict[str, int]) -> int:
        self.marks = marks
        return -1_500_000


def test_positions_held_at_the_end_settle_on_the_authoritative_labels_only(folder: Path) -> None:
    ds = Dataset(table_files(folder), count=3)
    assert ds.outcomes == {"wide": 1, "short": 1}  # tight's label is inferred: not used
    assert ds.settlement(Held({}), 0) == ""
    held = Held({"wide:no": 10_000_000, "short:yes": 5_000_000})
    note = ds.settlement(held, -2_000_000)
    assert held.marks == {"short:yes": 1_000_000, "short:no": 0, "wide:yes": 1_000_000, "wide:no": 0}
    assert note.startswith("settlement: the 2 market(s) held at the end resolved (2 YES, 0 NO")
    assert "PnL is -1.5 USDC, against -2 at the last books" in note
    unlabelled = ds.settlement(Held({"tight:yes": 1}), 0)
    assert "1 of the 1 market(s) held at the end have no authoritative label" in unlabelled


def test_the_report_says_what_the_books_were_before_any_figure(folder: Path) -> None:
    import msgspec

    from bot.results.read import RunResults
    from bot.results.report import build_report, summary_from_files
    from bot.backtest.runner import ASSUMPTIONS

    ds = Dataset(table_files(folder), count=2)
    empty = RunResults(source="r", mode="backtest", orders=(), fills=())
    summary = msgspec.structs.replace(summary_from_files(empty), assumptions=ASSUMPTIONS + ds.notes(360.0),
                                      data_notes=ds.notes(360.0))
    report = build_report(msgspec.structs.replace(empty, summary=summary))
    ids = [s.id for s in report.sections]
    assert ids[:2] == ["summary", "data"] and ids[-1] == "notes"
    data, notes = report.sections[1], report.sections[-1]
    assert [p.text for p in data.parts] == list(ds.notes(360.0))
    assert len(notes.parts) == len(ASSUMPTIONS)  # the simulation's assumptions stay in the notes
    plain = build_report(msgspec.structs.replace(empty, summary=msgspec.structs.replace(
        summary, assumptions=ASSUMPTIONS, data_notes=())))
    assert "data" not in [s.id for s in plain.sections]

"""The importer replays the real top-of-book dataset (Parquet) and CSV of the same shape as L1 books."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from bot.backtest.importer import TopOfBook, quote_events, tokens_of
from bot.backtest.recording import Gap, RecordingError
from bot.core.book import Books
from bot.venue.models.ws import BookEvent

DATASET = "realworld/DineshKumar8399__polymarket-orderbook-dataset/quotes"


@pytest.fixture(scope="module")
def days(data_dir: Path) -> list[Path]:
    found = sorted((data_dir / DATASET).glob("dt=*/data_0.parquet"))
    assert len(found) >= 2
    return found


def rows_of(path: Path, slugs: list[str]) -> list[dict]:
    table = pq.read_table(path, columns=["ts", "slug", "bid", "ask"])
    table = table.filter(pc.is_in(table["slug"], pa.array(slugs)))
    return table.to_pylist()


def test_real_parquet_rows_become_l1_books_of_both_tokens(days: list[Path]) -> None:
    tob = TopOfBook(days[0], limit=4)
    chosen = [m.slug for m in tob.markets()]
    assert len(chosen) == 4 and all(m.info().tokens == tokens_of(m.slug) for m in tob.markets())
    events = list(tob)
    assert len(events) == 2 * tob.rows and tob.rows > 100
    assert [t for t, _ in events] == sorted(t for t, _ in events)
    books = Books(track_all=True)
    source = {(int(r["ts"].timestamp()) * 10**9, r["slug"]): r for r in rows_of(days[0], chosen)}
    for t, ev in events:
        assert isinstance(ev, BookEvent) and int(ev.timestamp) * 1_000_000 == t
        book = books.apply_event(ev)
        slug, outcome = ev.asset_id.rsplit(":", 1)
        row = source[(t, slug)]
        bid = None if row["bid"] is None else round(row["bid"] * 1e6)
        ask = None if row["ask"] is None else round(row["ask"] * 1e6)
        if outcome == "yes":
            assert (book.best_bid, book.best_ask) == (bid, ask)
        else:  # the complement: bid 1 - ask, ask 1 - bid
            assert (book.best_bid, book.best_ask) == (None if ask is None else 1_000_000 - ask,
                                                      None if bid is None else 1_000_000 - bid)
        assert book.best_bid_size in (0, 1000 * 1_000_000)


def test_choosing_slugs_reads_only_the_row_groups_that_hold_them(days: list[Path]) -> None:
    everything = TopOfBook(days[0], limit=30)
    some = [m.slug for m in everything.markets()][10:13]
    chosen = TopOfBook(days[0], slugs=some)
    assert [m.slug for m in chosen.markets()] == some
    expected = [(t, ev) for t, ev in everything if ev.market in some]
    assert list(chosen) == expected


def test_csv_of_the_same_shape_replays_the_same(tmp_path: Path, days: list[Path]) -> None:
    slugs = [m.slug for m in TopOfBook(days[0], limit=3).markets()]
    table = pq.read_table(days[0])
    table = table.filter(pc.is_in(table["slug"], pa.array(slugs)))
    csv = tmp_path / "quotes.csv"
    pacsv.write_csv(table, csv)
    from_csv = TopOfBook(csv)
    from_parquet = TopOfBook(days[0], slugs=slugs)
    assert from_csv.markets() == from_parquet.markets()
    assert list(from_csv) == list(from_parquet)


def test_days_merge_by_time(days: list[Path]) -> None:
    slugs = [m.slug for m in TopOfBook(days[0], limit=40).markets()]
    markets, events = quote_events(days, slugs=slugs)
    times = [t for t, _ in events]
    assert times == sorted(times) and len(times) > 0
    assert {m.slug for m in markets} <= set(slugs)


def write_csv(path: Path, rows: list[tuple]) -> Path:
    lines = ["ts,slug,bid,ask,segment"] + [",".join("" if v is None else str(v) for v in r) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_new_segment_is_a_gap_and_bad_rows_are_counted_never_replayed(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "q.csv", [
        ("2026-07-10 20:00:00", "a", 0.40, 0.45, 1),
        ("2026-07-10 20:00:00", "b", 0.10, 0.125, 1),  # three decimals: tick 0.001
        ("2026-07-10 20:02:00", "a", None, None, 1),  # no price
        ("2026-07-10 20:04:00", "a", 1.5, 0.45, 1),  # a bid above 1: only the ask is usable
        ("2026-07-10 20:06:00", "a", 0.0, None, 1),  # 0 is no price
        ("2026-07-10 20:08:00", "a", 0.3333333, None, 1),  # more than six decimals
        ("2026-07-22 10:00:00", "a", 0.50, 0.48, 2),  # after the outage, crossed
    ])
    tob = TopOfBook(path)
    assert (tob.rows, tob.skipped, tob.crossed) == (4, 3, 1)
    assert [(m.slug, m.tick_size) for m in tob.markets()] == [("a", "0.01"), ("b", "0.001")]
    events = list(tob)
    kinds = [(type(ev).__name__, getattr(ev, "asset_id", None)) for _, ev in events]
    assert kinds == [("BookEvent", "a:yes"), ("BookEvent", "a:no"), ("BookEvent", "b:yes"), ("BookEvent", "b:no"),
                     ("BookEvent", "a:yes"), ("BookEvent", "a:no"),
                     ("Gap", None), ("BookEvent", "a:yes"), ("BookEvent", "a:no")]
    gap = events[6][1]
    assert isinstance(gap, Gap) and gap.tokens == ("a:yes", "a:no") and "segment 1 ended" in gap.reason
    one_sided = events[4][1]
    assert one_sided.bids == [] and one_sided.asks[0].price == "0.45"
    assert events[5][1].bids[0].price == "0.55" and events[5][1].asks == []


def test_files_of_another_shape_are_refused_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "x.parquet").write_bytes(b"not parquet at all")
    pq.write_table(pa.table({"ts": [1], "slug": ["a"]}), tmp_path / "narrow.parquet")
    write_csv(tmp_path / "bad.csv", [("yesterday", "a", 0.4, 0.5, 1)])
    for name, words in (("x.parquet", "not a readable top-of-book file"), ("narrow.parquet", "no column bid, ask"),
                        ("bad.csv", "not a readable top-of-book file"), ("missing.parquet", "not a readable")):
        with pytest.raises(RecordingError) as err:
            TopOfBook(tmp_path / name)
        assert words in str(err.value) and "\n" not in str(err.value)

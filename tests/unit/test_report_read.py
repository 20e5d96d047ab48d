"""Reading a run's results: a results folder and a live/paper journal of the same run give the same
orders, fills and (with the books) the same series; bad input is one ``ResultsError``."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.results import read as rd
from bot.results.read import ResultsError, journal_results, journal_rows, read_journal, read_results, read_run
from bot.execution.orders import OrderState as S
from bot.venue.enums import Side
from bot.venue.models.book import OrderBook
from bot.venue.models.ws import decode_market_frame
from tests.results_fixture import NO, T0, YES, book_samples, write_journal, write_results


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("run")
    return write_results(d / "results"), write_journal(d / "journal.sqlite")


def test_results_folder_holds_orders_with_their_history_and_standing_fills(files):
    r = read_run(files[0])
    assert r.mode == "backtest" and r.summary is None and r.notes == ()
    assert [o.order_id for o in r.orders] == ["o1", "o2", "o3", "o4", "o5", "o6", "o7"]
    o3 = r.orders[2]
    assert (o3.side, o3.price, o3.size, o3.sent_at) == (Side.SELL, 500_000, 10_000_000, T0 + 42.5)
    assert [(c.state, c.filled) for c in o3.changes] == [
        (S.PENDING_SUBMIT, 0), (S.LIVE, 0), (S.PARTIALLY_FILLED, 4_000_000), (S.FILLED, 10_000_000)]
    assert o3.ended_at == T0 + 70.5 and r.orders[6].ended_at == T0 + 115.5
    assert [f.trade_id for f in r.fills] == ["t1", "t2", "t3", "t4"]
    assert [(f.trade_id, f.reversed) for f in r.reversed] == [("t5", True)]
    assert len(r.series) == 121 and r.series[0].t == T0 and r.series[-1].t == T0 + 120
    assert r.tokens == [YES, NO]


def test_the_results_as_parquet_tables_and_as_json_lines_read_back_the_same(files, tmp_path):
    """Either format holds the whole run; Parquet in several row groups, each table one read away."""
    import pyarrow.parquet as pq

    jsonl = write_results(tmp_path / "jsonl", format="jsonl")
    assert {p.name for p in jsonl.iterdir()} == {"orders.jsonl", "fills.jsonl", "series.jsonl"}
    assert {p.name for p in files[0].iterdir()} == {"orders.parquet", "fills.parquet", "series.parquet"}
    a, b = read_results(files[0]), read_results(jsonl)
    assert (a.orders, a.fills, a.reversed, a.series) == (b.orders, b.fills, b.reversed, b.series)
    orders = pq.ParquetFile(files[0] / "orders.parquet")
    assert orders.metadata.num_row_groups > 1
    rows = pq.read_table(files[0] / "orders.parquet").to_pylist()
    assert rows[0]["order_id"] == "o1" and rows[0]["state"] == "PENDING_SUBMIT"
    series = pq.read_table(files[0] / "series.parquet")
    assert series.num_rows == 2 * len(a.series) and set(series.column("token_id").to_pylist()) == {YES, NO}


def test_a_damaged_parquet_table_is_a_results_error_naming_it(files, tmp_path):
    import shutil

    folder = shutil.copytree(files[0], tmp_path / "copy")
    (folder / "fills.parquet").write_bytes(b"PAR1 not a table")
    with pytest.raises(ResultsError, match=r"fills.parquet: not a readable Parquet table"):
        read_results(folder)


def test_a_journal_gives_the_same_orders_and_fills(files):
    folder, journal = read_run(files[0]), read_run(files[1])
    assert journal.mode == "live"
    assert journal.orders == folder.orders
    assert journal.fills == folder.fills and journal.reversed == folder.reversed


def test_a_journal_with_the_books_gives_the_series_the_run_sampled(files):
    """Every sample equal, but between the reversed fill and its reversal: the journal does not say
    when a fill was reversed, so the rebuilt series never counts it."""
    folder = read_results(files[0])
    rebuilt = journal_results(files[1], journal_rows(files[1]), book_samples())
    assert [s.t for s in rebuilt.series] == [s.t for s in folder.series]
    differ = [s.t - T0 for s, r in zip(rebuilt.series, folder.series) if s != r]
    assert differ == [96, 97, 98, 99, 100]
    assert rebuilt.notes == ("positions and PnL count from the journal's first fill: holdings from before it "
                             "(a wallet's, paper holdings) are not journaled",)


def test_a_journal_without_books_has_positions_and_realized_pnl_but_no_marks(files):
    j = read_journal(files[1])
    assert "no recording given" in j.notes[1]
    assert j.series[0].t == T0 + 1.5 and j.series[-1].t == T0 + 115.5  # its own span, every second
    last = j.series[-1]
    assert (last.realized, last.fees, last.unrealized, last.total) == (0, 50_000, None, None)
    assert {t: s.position for t, s in last.tokens.items()} == {YES: 0, NO: 5_000_000}
    assert all(s.bid is None and s.mark is None for x in j.series for s in x.tokens.values())
    working = [x for x in j.series if x.t == T0 + 110.5][0]
    assert working.tokens[NO].our_bid == 490_000 and working.tokens[YES].our_ask is None


def test_a_stale_book_keeps_its_last_mid_for_unrealized_pnl_but_shows_no_quote(files):
    orders, fills, _ = journal_rows(files[1])
    books = book_samples()
    books[50:] = [rd.BookSample(b.t, {YES: (None, None), NO: (None, 490_000)}) for b in books[50:]]
    s = rd.rebuild_series(orders, fills, books)[60]  # at 60 s: long 6 YES bought at .50
    assert s.tokens[YES].position == 6_000_000 and s.tokens[YES].bid is None and s.tokens[YES].mark is None
    # YES valued at its last mid .49 (at 49 s): 6 * (.49 - .50) = -.06; NO not held yet
    assert (s.unrealized, s.total) == (-60_000, -60_000)


def test_a_paper_journal_is_named_so(tmp_path):
    assert read_run(write_journal(tmp_path / "journal.paper.sqlite")).mode == "paper"


def test_a_journal_is_read_without_being_changed(files, tmp_path):
    path = write_journal(tmp_path / "j.sqlite")
    before = sqlite3.connect(path).execute("SELECT COUNT(*) FROM order_states").fetchone()
    path.chmod(0o444)
    try:
        assert len(read_run(path).orders) == 7
    finally:
        path.chmod(0o644)
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM order_states").fetchone() == before


def test_a_long_journal_is_sampled_at_most_max_samples_times(files, monkeypatch):
    monkeypatch.setattr(rd, "MAX_SAMPLES", 50)
    s = read_journal(files[1]).series
    assert len(s) <= 50 and s[0].t == T0 + 1.5 and s[-1].t >= T0 + 115.5


def _frame(token: str, bid: str, ask: str, ms: int) -> bytes:
    return msgspec.json.encode({"event_type": "book", "asset_id": token, "market": "0xm", "timestamp": str(ms),
                                "hash": "0x", "bids": [{"price": bid, "size": "10"}], "asks": [{"price": ask, "size": "10"}]})


def test_books_from_market_events_are_sampled_on_the_receive_clock():
    ns = int(T0 * 1e9)
    events = [(ns + 200_000_000, ev) for ev in decode_market_frame(_frame(YES, "0.5", "0.52", 1))]
    events += [(ns + 2_500_000_000, ev) for ev in decode_market_frame(_frame(YES, "0.48", "0.5", 2))]
    gap = type("Gap", (), {"tokens": (YES,)})()
    events.append((ns + 3_100_000_000, gap))
    events += [(ns + 4_000_000_000, ev) for ev in decode_market_frame(_frame(YES, "0.49", "0.51", 3))]
    got = [(b.t - T0, b.quotes[YES]) for b in rd.sample_books(events, 1.0)]
    assert got == [(1, (500_000, 520_000)), (2, (500_000, 520_000)), (3, (480_000, 500_000)),
                   (4, (490_000, 510_000))]
    events.insert(3, (ns + 3_500_000_000, gap))
    assert [q for b in rd.sample_books(events, 1.0) for q in [b.quotes[YES]]][3] == (490_000, 510_000)
    assert [b.quotes[YES] for b in rd.sample_books(events[:3], 1.0)][-1] == (None, None)  # stale after a gap


class RestBook(OrderBook, kw_only=True):
    """A recorded REST snapshot, as the replay gives it (no ``event_type``)."""


def test_a_rest_snapshot_ends_a_gap_and_a_window_bounds_the_samples():
    ns = int(T0 * 1e9)
    gap = type("Gap", (), {"tokens": (YES,)})()
    rest = msgspec.json.decode(_frame(YES, "0.3", "0.4", 5), type=RestBook)
    events = [(ns + 200_000_000, ev) for ev in decode_market_frame(_frame(YES, "0.5", "0.52", 1))]
    events += [(ns + 1_500_000_000, gap), (ns + 2_500_000_000, rest)]
    events += [(ns + k * 1_000_000_000 + 1, ev) for k in range(3, 100) for ev in decode_market_frame(_frame(NO, "0.1", "0.2", k))]
    got = [(b.t - T0, b.quotes[YES]) for b in rd.sample_books(events, 1.0)][:3]
    assert got == [(1, (500_000, 520_000)), (2, (None, None)), (3, (300_000, 400_000))]
    window = [b.t - T0 for b in rd.sample_books(events, 2.0, start=T0 + 4.5, end=T0 + 9.5)]
    assert window == [4, 6, 8, 10]


@pytest.mark.parametrize("content, says", [
    (b"not json\n", "orders.jsonl:1"),
    (b'{"order_id": "o"}\n', "orders.jsonl:1"),
    (b'\n{"order_id":"o","token_id":"t","side":"BUY","price":0.5,"size":1,"state":"LIVE","filled":0,'
     b'"sent_at":1,"updated_at":1}\n', "orders.jsonl:2: Expected `int`, got `float`"),
    (b'{"order_id":"o","token_id":"t","side":"HOLD","price":1,"size":1,"state":"LIVE","filled":0,'
     b'"sent_at":1,"updated_at":1}\n', "Invalid enum value 'HOLD'"),
])
def test_a_bad_results_line_is_named_by_file_and_line(tmp_path, content, says):
    (tmp_path / "orders.jsonl").write_bytes(content)
    with pytest.raises(ResultsError, match=says.replace("`", ".").replace("(", r"\(")):
        read_run(tmp_path)


def test_a_series_time_no_calendar_shows_is_refused(tmp_path):
    (tmp_path / "series.jsonl").write_bytes(b'{"t": 1e300, "realized": 0, "fees": 0}\n')
    with pytest.raises(ResultsError, match=r"series.jsonl:1: Expected .float. <= 100000000000.0 - at .\$.t."):
        read_run(tmp_path)


@pytest.mark.parametrize("sql, says", [
    ("UPDATE order_states SET state = 'EXPIRED' WHERE seq = 1", "Invalid enum value 'EXPIRED'"),
    ("UPDATE orders SET price = '0.5'", "Expected `int`, got `float` - at .\\$\\[3\\]"),
    ("UPDATE fills SET is_maker = 7", "Expected `bool`, got `int`"),
    ("DROP TABLE order_states", "not a journal \\(no order_states table\\)"),
])
def test_a_journal_value_this_version_cannot_read_is_refused(tmp_path, sql, says):
    path = write_journal(tmp_path / "j.sqlite")
    db = sqlite3.connect(path)
    db.execute(sql)
    db.commit()
    db.close()
    with pytest.raises(ResultsError, match=says.replace("`", ".")):
        read_run(path)


def test_paths_that_are_not_results_are_refused(tmp_path):
    with pytest.raises(ResultsError, match="no such results folder or journal"):
        read_run(tmp_path / "missing")
    with pytest.raises(ResultsError, match="not a results folder"):
        read_run(tmp_path)
    (tmp_path / "x.sqlite").write_bytes(b"hello, not a database" * 100)
    with pytest.raises(ResultsError, match="not a journal"):
        read_run(tmp_path / "x.sqlite")
    sqlite3.connect(tmp_path / "other.sqlite").execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(ResultsError, match="no fills, order_states, orders table"):
        read_run(tmp_path / "other.sqlite")
    (tmp_path / "summary.json").write_bytes(b'{"mode": 3}')
    with pytest.raises(ResultsError, match="summary.json"):
        read_run(tmp_path)
    with pytest.raises(ResultsError, match="--recording is for journals"):
        read_run(tmp_path, recording=lambda tokens: iter(()))
    with pytest.raises(ResultsError, match="positive number of seconds"):
        read_journal(tmp_path / "x.sqlite", every_s=0)


@settings(max_examples=60)
@given(lines=st.lists(st.one_of(st.binary(max_size=40), st.dictionaries(
    st.sampled_from(["t", "realized", "fees", "unrealized", "total", "tokens"]),
    st.one_of(st.integers(), st.floats(), st.text(max_size=3), st.none(), st.dictionaries(st.text(max_size=2), st.integers())),
).map(msgspec.json.encode)), max_size=5), name=st.sampled_from(["orders", "fills", "series"]))
def test_any_results_line_is_read_or_refused_with_a_results_error(lines, name):
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / f"{name}.jsonl").write_bytes(b"\n".join(ln.replace(b"\n", b" ") for ln in lines))
        try:
            read_run(d)
        except ResultsError as exc:
            assert f"{name}.jsonl:" in str(exc) and "\n" not in str(exc)


def test_a_series_tables_token_columns_are_the_fields_a_sample_reads():
    from bot.results.read import TokenSample
    from bot.results.folder import TOKEN_FIELDS

    assert TOKEN_FIELDS == tuple(TokenSample.__struct_fields__)

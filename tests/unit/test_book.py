"""L2 book and feed behaviour: real captured frames, ordering, epochs, staleness, REST fallback."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from bot.core import book as book_mod
from bot.core.book import Book, BookError, Books, price_units, size_units
from bot.core.feed import Feed, FeedConfig, PollBudget
from bot.venue.models.book import OrderBook
from bot.venue.models.ws import decode_market_frame

WS = "realworld/nautechsystems__nautilus_trader/tests/integration_tests/adapters/polymarket/resources/ws_messages"
HTTP = "realworld/nautechsystems__nautilus_trader/tests/integration_tests/adapters/polymarket/resources/http_responses"


def frame(data_dir: Path, name: str, sub: str = WS) -> bytes:
    return (data_dir / sub / name).read_bytes()


# -- parsing -------------------------------------------------------------------------------


def test_price_and_size_units_are_exact() -> None:
    assert price_units("0.52") == 520_000
    assert price_units("0.001") == 1_000
    assert price_units("1") == 1_000_000
    assert size_units("21574.08") == 21_574_080_000
    assert size_units("3300") == 3_300_000_000
    assert size_units("0") == 0
    assert size_units(".5") == 500_000
    assert size_units("0.000001") == 1


@pytest.mark.parametrize("bad", ["-1", "1.0000001", "abc", "", "NaN", "1e-9"])
def test_bad_sizes_raise_book_error(bad: str) -> None:
    with pytest.raises(BookError):
        size_units(bad)


@pytest.mark.parametrize("bad", ["1.5", "-0.1", "x"])
def test_bad_prices_raise_book_error(bad: str) -> None:
    with pytest.raises(BookError):
        price_units(bad)


# -- snapshots from real frames ------------------------------------------------------------


def test_ws_book_snapshot_best_levels_are_max_and_min(data_dir: Path) -> None:
    (ev,) = decode_market_frame(frame(data_dir, "book.json"))
    books = Books([ev.asset_id])
    book = books.apply_event(ev)
    assert book is books[ev.asset_id]
    assert len(book.bids) == len({lv.price for lv in ev.bids})
    assert len(book.asks) == len({lv.price for lv in ev.asks})
    assert book.best_bid == max(price_units(lv.price) for lv in ev.bids)
    assert book.best_ask == min(price_units(lv.price) for lv in ev.asks)
    assert not book.crossed
    assert book.hash == ev.hash
    assert book.timestamp_ms == int(ev.timestamp)
    assert book.epoch == 1 and not book.stale and book.snapshots == 1


def test_rest_book_with_unsorted_asks(data_dir: Path) -> None:
    snap = msgspec.json.decode(frame(data_dir, "book.json", HTTP), type=OrderBook)
    books = Books([snap.asset_id])
    book = books.apply_book(snap)
    # asks arrive 0.98, 0.5, ... 0.14: the best is the minimum, not an end of the list
    assert book.best_ask == 140_000
    assert book.best_bid == 100_000
    assert book.best_bid_size == 125_000_000
    assert book.spread == 40_000
    assert book.mid == 120_000
    assert book.levels(False, 2) == [(140_000, 705_000_000), (200_000, 70_000_000)]
    assert book.depth_to(False, 200_000) == 775_000_000
    assert book.depth_to(True, 90_000) == 419_000_000


def test_price_change_v2_frame_sets_levels_and_hash(data_dir: Path) -> None:
    (ev,) = decode_market_frame(frame(data_dir, "price_change_v2.json"))
    token = ev.price_changes[0].asset_id
    books = Books([token])
    book = books[token]
    book.apply_snapshot([(500_000, 1)], [(700_000, 5)], timestamp_ms=1)
    books.apply_event(ev)
    assert book.bids == {600_000: 3_300_000_000, 500_000: 3_400_000_000, 700_000: 3_400_000_000}
    assert book.best_bid == 700_000
    assert book.crossed  # the capture itself crosses: a bid at the ask
    assert book.hash == ev.price_changes[-1].hash
    assert book.updates == 3
    assert book.timestamp_ms == int(ev.timestamp)


def test_legacy_price_change_is_applied_as_ask(data_dir: Path) -> None:
    (ev,) = decode_market_frame(frame(data_dir, "price_change.json"))
    token = ev.price_changes[0].asset_id
    books = Books([token])
    books.apply_event(ev)
    assert books[token].asks == {514_000: 21_574_080_000}
    assert books[token].best_ask == 514_000


def test_tick_size_change_starts_new_epoch(data_dir: Path) -> None:
    (ev,) = decode_market_frame(frame(data_dir, "tick_size_change.json"))
    books = Books([ev.asset_id])
    book = books[ev.asset_id]
    book.apply_snapshot([], [])
    epoch = book.epoch
    books.apply_event(ev)
    assert book.tick == 1_000
    assert book.epoch == epoch + 1


def test_last_trade_price(data_dir: Path) -> None:
    (ev,) = decode_market_frame(frame(data_dir, "last_trade_price.json"))
    books = Books([ev.asset_id])
    books.apply_event(ev)
    assert books[ev.asset_id].last_trade_price == 491_000


def test_untracked_tokens_are_ignored_and_counted(data_dir: Path) -> None:
    (ev,) = decode_market_frame(frame(data_dir, "price_change_v2.json"))
    books = Books(["other"])
    assert books.apply_event(ev) is None
    assert books.ignored == 3
    tracking = Books(track_all=True)
    tracking.apply_event(ev)
    assert ev.price_changes[0].asset_id in tracking


# -- level updates and the best-price cache -------------------------------------------------


def test_removing_best_level_recomputes_best() -> None:
    book = Book("t")
    book.apply_snapshot([(100, 1), (300, 2), (200, 3)], [(900, 1), (700, 1), (800, 1)])
    assert (book.best_bid, book.best_ask) == (300, 700)
    book.set_level(True, 300, 0)
    book.set_level(False, 700, 0)
    assert (book.best_bid, book.best_ask) == (200, 800)
    book.set_level(True, 250, 5)
    assert book.best_bid == 250
    book.set_level(True, 400, 0)  # removing an absent level is a no-op
    assert book.bids == {100: 1, 200: 3, 250: 5}
    for p in (100, 200, 250):
        book.set_level(True, p, 0)
    assert book.best_bid is None and book.mid is None and book.spread is None


def test_cost_to_fill_walks_levels_best_first() -> None:
    book = Book("t")
    book.apply_snapshot([(400_000, 10_000_000)], [(600_000, 5_000_000), (500_000, 2_000_000)])
    assert book.cost_to_fill(True, 4_000_000) == (4_000_000, 1_000_000 + 1_200_000)
    assert book.cost_to_fill(True, 99_000_000) == (7_000_000, 1_000_000 + 3_000_000)
    assert book.cost_to_fill(False, 1_000_000) == (1_000_000, 400_000)


def test_bad_level_raises_without_touching_later_levels() -> None:
    class C(msgspec.Struct):
        asset_id: str
        price: str
        side: str
        size: str
        hash: str = ""

    books = Books(["t"])
    with pytest.raises(BookError):
        books.apply_changes([C("t", "0.5", "BUY", "10"), C("t", "0.6", "BUY", "-3"), C("t", "0.7", "BUY", "1")])
    assert books["t"].bids == {500_000: 10_000_000}
    with pytest.raises(BookError):
        books.apply_changes([C("t", "0.5", "HOLD", "10")])


@pytest.mark.parametrize("text", [
    "0", "3300", "21574.08", "0.000001", "00012.50", ".5", "5.", "1.2.3", "1e3", "-1", " 1", "1_0",
    "+1", "1.0000001", "", "NaN", "12345678901234567890.123456",
])
def test_apply_changes_parses_sizes_exactly_like_size_units(text: str) -> None:
    class C(msgspec.Struct):
        asset_id: str
        price: str
        side: str
        size: str
        hash: str = ""

    try:
        expected = size_units(text)
    except BookError:
        expected = None
    book_mod._SIZE_CACHE.clear()
    for _ in range(2):  # parsed, then from the size cache
        books = Books(["t"])
        if expected is None:
            with pytest.raises(BookError):
                books.apply_changes([C("t", "0.5", "BUY", text)])
        else:
            books.apply_changes([C("t", "0.5", "BUY", "7"), C("t", "0.5", "BUY", text)])
            assert books["t"].bids == ({500_000: expected} if expected else {})


def test_apply_changes_keeps_book_state_across_interleaved_runs_and_errors() -> None:
    class C(msgspec.Struct):
        asset_id: str
        price: str
        side: str
        size: str
        hash: str = ""

    books = Books(["a", "b"])
    n = books.apply_changes([
        C("a", "0.4", "BUY", "1", "h1"), C("a", "0.6", "SELL", "2", ""), C("b", "0.3", "BUY", "5", "h2"),
        C("x", "0.3", "BUY", "5", "hx"), C("a", "0.45", "BUY", "3", "h3"), C("a", "0.4", "BUY", "0", ""),
    ], timestamp_ms=7)
    a, b = books["a"], books["b"]
    assert n == 5 and books.ignored == 1
    assert (a.bids, a.asks, a.best_bid, a.best_ask, a.hash, a.updates, a.timestamp_ms) == (
        {450_000: 3_000_000}, {600_000: 2_000_000}, 450_000, 600_000, "h3", 4, 7)
    assert (b.best_bid, b.hash, b.updates) == (300_000, "h2", 1)
    with pytest.raises(BookError):
        books.apply_changes([C("b", "0.35", "BUY", "1", "h4"), C("b", "0.2", "BUY", "-1", "h5")])
    assert (b.best_bid, b.hash, b.updates) == (350_000, "h4", 2)  # the level before the bad one counts
    assert books.apply_event(decode_market_frame(
        b'{"market":"m","price_changes":[{"asset_id":"a","price":"0.5","size":"1","side":"SELL"},'
        b'{"asset_id":"z","price":"0.5","size":"1","side":"SELL"}],"event_type":"price_change","timestamp":"9"}'
    )[0]) is None  # the last change's token is not tracked
    assert a.best_ask == 500_000 and a.timestamp_ms == 9


# -- epochs and staleness -----------------------------------------------------------------


def test_reconnect_snapshot_starts_new_epoch_but_live_snapshot_does_not() -> None:
    book = Book("t")
    book.apply_snapshot([(1, 1)], [(2, 1)], timestamp_ms=10)
    assert book.epoch == 1
    book.apply_snapshot([(1, 2)], [(2, 1)], timestamp_ms=20)  # venue resends after a trade
    assert book.epoch == 1
    book.mark_stale()
    assert book.stale
    book.apply_snapshot([(1, 3)], [(2, 1)], timestamp_ms=30)
    assert book.epoch == 2 and not book.stale


def test_older_snapshot_is_ignored_while_live_but_accepted_when_resyncing() -> None:
    book = Book("t")
    book.apply_snapshot([(1, 1)], [], timestamp_ms=100)
    assert not book.apply_snapshot([(1, 9)], [], timestamp_ms=50)
    assert book.bids == {1: 1}
    book.mark_stale()
    assert book.apply_snapshot([(1, 9)], [], timestamp_ms=50)
    assert book.bids == {1: 9}


# -- feed ----------------------------------------------------------------------------------


CFG = FeedConfig(stale_after_s=10.0, rest_fresh_s=3.0, poll_interval_s=2.0, batch_size=2,
                 route_limit=4, route_window_s=10.0, budget_share=0.5)


def test_feed_config_rejects_unknown_fields() -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"stale_after_s": 1.0, "bogus": 1}, FeedConfig)
    assert CFG.poll_capacity == 2 and CFG.poll_rate == pytest.approx(0.2)


def test_token_is_fresh_only_after_snapshot_on_a_live_stream() -> None:
    feed = Feed(CFG, ["a"])
    assert feed.is_stale("a", 0.0)
    feed.on_stream_up(["a"], 0.0)
    feed.on_update("a", 0.5)
    assert feed.is_stale("a", 0.5)  # a delta before the snapshot proves nothing
    feed.on_snapshot("a", 1.0)
    assert not feed.is_stale("a", 1.0)
    feed.on_update("a", 5.0)
    assert not feed.is_stale("a", 15.0)
    assert feed.is_stale("a", 15.1)  # silent for more than stale_after_s
    feed.on_update("a", 16.0)
    feed.on_stream_down(["a"], 16.5)
    assert feed.is_stale("a", 16.5)  # stream down: stale at once
    assert feed.is_stale("zzz", 0.0)


def test_a_pause_of_the_source_does_not_age_the_data_from_before_it() -> None:
    feed = Feed(CFG, ["a", "b", "c"])
    feed.on_stream_up(["a", "b", "c"], 0.0)
    feed.on_snapshot("a", 2.0)  # before the pause
    feed.on_snapshot("b", 5.0)  # at its start
    feed.on_snapshot("c", 6.0)  # after its start: not moved
    feed.pause(5.0, 105.0)
    assert not feed.is_stale("a", 112.0) and feed.is_stale("a", 112.1)  # 2 + 100 + 10
    assert not feed.is_stale("b", 115.0) and feed.is_stale("b", 115.1)
    assert feed.is_stale("c", 16.1)
    feed.pause(200.0, 200.0)  # no time: nothing moves
    assert feed.tokens["a"].last_ws == 102.0
    assert feed.is_stale("zzz", 0.0) and "zzz" not in feed.tokens


def test_due_polls_batches_oldest_first_within_budget() -> None:
    feed = Feed(CFG, ["a", "b", "c", "d", "e"])
    for t, at in zip("abcde", (5.0, 1.0, 4.0, 2.0, 3.0)):
        feed.on_stream_up([t], 0.0)
        feed.on_snapshot(t, at)
    feed.on_stream_down(list("abcde"), 6.0)
    batches = feed.due_polls(6.0)
    assert batches == [["b", "d"], ["e", "c"]]  # budget 2 requests x 2 tokens, oldest first
    assert feed.due_polls(6.0) == []  # budget spent
    # 5 s later one request refills: the never-polled token goes first, then the oldest data
    assert feed.due_polls(11.0) == [["a", "b"]]
    feed2 = Feed(CFG, list("abcde"))
    assert feed2.due_polls(0.0) == [["a", "b"], ["c", "d"]]
    assert feed2.due_polls(4.9) == []  # refill 0.2 request/s: not yet a whole request
    assert feed2.due_polls(5.0) == [["e", "a"]]
    assert feed2.polls == 3


def test_due_polls_respects_poll_interval_and_skips_fresh_tokens() -> None:
    cfg = FeedConfig(poll_interval_s=2.0, batch_size=10, route_limit=80, budget_share=1.0)
    feed = Feed(cfg, ["a", "b"])
    feed.on_stream_up(["a"], 0.0)
    feed.on_snapshot("a", 0.0)
    assert feed.due_polls(0.0) == [["b"]]
    assert feed.due_polls(1.9) == []
    assert feed.due_polls(2.0) == [["b"]]


def test_poll_budget_refills_to_capacity() -> None:
    b = PollBudget(4, 1.0, now=0.0)
    b.spend(4, 0.0)
    assert b.available(0.0) == 0
    assert b.available(2.5) == 2
    assert b.available(100.0) == 4


def test_rest_snapshot_applies_as_new_epoch_unless_stream_fresher(data_dir: Path) -> None:
    snap = msgspec.json.decode(frame(data_dir, "book.json", HTTP), type=OrderBook)
    token = snap.asset_id
    books = Books([token])
    feed = Feed(CFG, [token])
    book = books[token]
    book.apply_snapshot([(1, 1)], [], timestamp_ms=1)
    e0 = book.epoch
    feed.on_stream_down([token], 1.0)
    assert feed.apply_rest_books(books, [snap], 2.0) == [book]
    assert book.epoch == e0 + 1 and book.best_ask == 140_000 and not book.stale
    assert not feed.is_stale(token, 4.9) and feed.is_stale(token, 5.1)  # rest_fresh_s = 3
    feed.apply_rest_books(books, [snap], 7.0)
    assert book.epoch == e0 + 2  # every poll is a continuity break
    # the stream came back with a snapshot before the poll answered: the poll is dropped
    feed.on_stream_up([token], 8.0)
    feed.on_snapshot(token, 8.5)
    assert feed.apply_rest_books(books, [snap], 9.0) == []
    assert feed.rest_dropped == 1 and book.epoch == e0 + 2


def test_publish_marks_books_stale_and_fresh() -> None:
    books = Books(["a"])
    feed = Feed(CFG, ["a"])
    feed.on_stream_up(["a"], 0.0)
    books["a"].apply_snapshot([(1, 1)], [], timestamp_ms=1)
    feed.on_snapshot("a", 0.0)
    assert feed.publish(books, 1.0) == ([], ["a"])
    assert feed.publish(books, 11.0) == (["a"], [])
    assert books["a"].stale and books["a"].resync
    epoch = books["a"].epoch
    books["a"].apply_snapshot([(1, 2)], [], timestamp_ms=2)
    assert books["a"].epoch == epoch + 1


def test_apply_event_counts_bad_input_and_marks_the_book_stale(data_dir: Path) -> None:
    bad = frame(data_dir, "price_change_v2.json").replace(b'"size": "3400"', b'"size": "-1"', 1)
    (ev,) = decode_market_frame(bad)
    token = ev.price_changes[0].asset_id
    books = Books([token])
    book = books[token]
    book.apply_snapshot([(100_000, 1)], [(900_000, 1)])
    assert books.apply_event(ev) is None
    assert books.errors == 1 and book.stale and book.resync
    assert book.bids[600_000] == 3_300_000_000  # the level before the bad one was applied
    epoch = book.epoch
    book.apply_snapshot([(100_000, 1)], [(900_000, 1)])
    assert book.epoch == epoch + 1 and not book.stale


@pytest.mark.parametrize("size", ["9" * 5000, "1" * 19, "1" * 19 + ".5"])
def test_a_size_too_large_to_be_one_is_bad_input_not_a_crash(data_dir: Path, size: str) -> None:
    bad = frame(data_dir, "price_change_v2.json").replace(b'"size": "3400"', f'"size": "{size}"'.encode(), 1)
    (ev,) = decode_market_frame(bad)
    token = ev.price_changes[0].asset_id
    books = Books([token])
    books[token].apply_snapshot([(100_000, 1)], [(900_000, 1)])
    assert books.apply_event(ev) is None
    assert books.errors == 1 and books[token].stale

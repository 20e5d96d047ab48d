"""The live-scale bench's wire-to-wire over the orders a book update caused: a request counts
when the bot noted one of its orders as caused by an update, measured from the latest frame of
its tokens written before that update came off the bot's socket; each update counts once; a
request no update caused (a fill, an answer, a timer) counts nowhere, however old its token's
last frame."""

from __future__ import annotations

from bench.bench_live_scale import book_caused_latencies, with_event_loop


def test_only_caused_requests_count_from_the_frame_that_caused_them():
    frames = [(1.000, ["A", "B"]), (1.100, ["A"]), (2.000, ["B"])]
    requests = [
        (1.105, [11], ["A"]),  # caused by the frame at 1.100 (received at 1.1002)
        (1.108, [12], ["A"]),  # the same update's second POST: counted once, by the first
        (1.900, [13], ["B"]),  # a fill's requote: no update behind it, not matched to 1.000
        (2.004, [14, 15], ["B", "A"]),  # caused by 2.000 through its order 15
    ]
    caused = {11: (1.1002, 1.104), 12: (1.1002, 1.107), 14: (2.0003, 2.003), 15: (2.0003, 2.003)}
    wire, way_in, way_out = book_caused_latencies(frames, requests, caused)
    assert [round(x, 4) for x in wire] == [0.005, 0.004]
    assert [round(x, 4) for x in way_in] == [0.0002, 0.0003]
    assert [round(x, 4) for x in way_out] == [0.001, 0.001]


def test_a_request_whose_update_the_exchange_never_wrote_is_not_counted():
    wire, _, _ = book_caused_latencies([(5.0, ["A"])], [(1.0, [1], ["A"])], {1: (0.9, 0.95)})
    assert wire == []


def test_the_event_loop_goes_into_the_shell_table_of_the_extra_config():
    assert with_event_loop("", None) == ""
    assert with_event_loop("", "uvloop") == '\n[shell]\nevent_loop = "uvloop"\n'
    merged = with_event_loop('[shell]\norders_sync_s = 2\n[risk]\nx = 1\n', "asyncio")
    assert merged == '[shell]\nevent_loop = "asyncio"\norders_sync_s = 2\n[risk]\nx = 1\n'

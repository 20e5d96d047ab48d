"""The audit's comparisons: fills, holdings and duplicates, as values (``bench.audit``)."""

from __future__ import annotations

from bench.audit import FillLine, compare_fills, duplicate_groups, holdings_change, lasting_duplicates

U = 1_000_000


def line(tid, oid="o1", side="BUY", price=400_000, size=10 * U, token="t"):
    return FillLine(tid, oid, token, side, price, size)


def test_fills_missed_double_counted_and_pending_at_stop():
    venue = {
        ("a", "o1"): (line("a"), "CONFIRMED"),  # booked: fine
        ("b", "o1"): (line("b"), "CONFIRMED"),  # never booked: missed
        ("c", "o1"): (line("c"), "FAILED"),  # failed after the bot's last word (MINED): pending
        ("d", "o1"): (line("d"), "FAILED"),  # failed, the bot read CONFIRMED: double-counted
        ("e", "o1"): (line("e"), "CONFIRMED"),  # the bot reversed it: missed
        ("f", "o1"): (line("f", size=5 * U), "MINED"),  # booked larger: double-counted
        ("g", "o1"): (line("g"), "FAILED"),  # failed and reversed: fine
    }
    booked = {
        ("a", "o1"): (line("a"), False, "CONFIRMED"),
        ("c", "o1"): (line("c"), False, "MINED"),
        ("d", "o1"): (line("d"), False, "CONFIRMED"),
        ("e", "o1"): (line("e"), True, "FAILED"),
        ("f", "o1"): (line("f"), False, "MINED"),
        ("g", "o1"): (line("g"), True, "FAILED"),
        ("h", "o1"): (line("h"), False, "MATCHED"),  # the venue has no such fill: double-counted
    }
    fa = compare_fills(venue, booked)
    assert fa.missed == (("b", "o1"), ("e", "o1"))
    assert fa.double_counted == (("d", "o1"), ("f", "o1"), ("h", "o1"))
    assert fa.pending_at_stop == (("c", "o1"),)


def test_holdings_change_follows_the_venue_arithmetic():
    cash, shares = holdings_change([
        line("a", side="BUY", price=333_333, size=3 * U),  # pays 999_999
        line("b", side="SELL", price=600_000, size=U, token="u"),
        FillLine("c", "o2", "t", "BUY", 500_000, 2 * U, fee=10_000, is_maker=False),  # taker fee in tokens
        FillLine("d", "o3", "u", "SELL", 500_000, 2 * U, fee=10_000, is_maker=False),  # and in USDC
    ])
    assert cash == -999_999 + 600_000 - 1_000_000 + 1_000_000 - 10_000
    assert shares == {"t": 3 * U + 2 * U - 10_000, "u": -U - 2 * U}


def test_only_duplicates_that_last_two_samples_count():
    # c is being cancelled: its cancel may come back "not found" and c stand beside a and b, so it
    # counts; d closed and x never journaled are orphans, counted apart
    states = {"a": "LIVE", "b": "LIVE", "c": "PENDING_CANCEL", "d": "CANCELED", "e": "LIVE"}
    live = [("t", "BUY", 1, "a"), ("t", "BUY", 1, "b"), ("t", "BUY", 1, "c"), ("t", "BUY", 1, "d"),
            ("t", "SELL", 2, "e"), ("t", "SELL", 2, "x")]
    groups = duplicate_groups(live, states)
    assert groups == [frozenset({"a", "b", "c"})]
    assert duplicate_groups([("t", "BUY", 1, "a"), ("t", "BUY", 1, "c")], states) == [frozenset({"a", "c"})]
    assert lasting_duplicates([], groups) == 0  # seen once: the next sample decides
    assert lasting_duplicates(groups, groups) == 2
    assert lasting_duplicates([frozenset({"a", "z"})], groups) == 0  # not the same pair


def test_the_soak_judge_flags_a_trend_not_noise():
    import random

    from bench.soak import Sample, judge

    rng = random.Random(1)

    def run(rss):
        return [Sample(float(t), rss(t), 20 + rng.choice((-1, 0, 1)), 30, 0.0, 100 + t, 2000.0) for t in range(60)]

    flat = judge(run(lambda t: 80 + rng.gauss(0, 2) + (40 if t % 17 == 0 else 0)))  # noise, and spikes
    assert all(v.ok for v in flat)
    leaking = {v.series: v for v in judge(run(lambda t: 80 + 0.5 * t + rng.gauss(0, 2)))}
    assert not leaking["rss_mb"].ok and 1500 < leaking["rss_mb"].slope_per_hour < 2100
    assert leaking["fds"].ok and leaking["tasks"].ok

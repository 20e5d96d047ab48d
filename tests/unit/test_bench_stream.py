"""The plain loop ``bench/bench_backtest_stream.py`` measures ``bot backtest`` against is
``../shared/bench/naive_mm.py``'s own work: on the same generated stream, read from the
recording (with the NO token's mirrored book) rather than from the single-token frames, it quotes,
fills and ends exactly as naive_mm.py does."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from bench.bench_backtest_stream import plain_loop
from bench.venue_stream import convert, generate


def _naive_mm(shared_dir):
    spec = importlib.util.spec_from_file_location("naive_mm", shared_dir / "bench" / "naive_mm.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["naive_mm"] = module  # its Structs' annotations are read from its module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def stream(tmp_path_factory, shared_dir):
    where = tmp_path_factory.mktemp("stream")
    market = generate(20_000, where)
    recording = convert(market, where / "recording")
    return market, recording


def test_the_plain_loop_over_the_recording_does_what_naive_mm_does_over_its_frames(stream, shared_dir):
    market, recording = stream
    theirs = _naive_mm(shared_dir).run_mm(str(market))
    ours = plain_loop(str(recording))
    assert theirs["orders_placed"] > 1000 and theirs["fills"] > 50  # the stream makes it work
    assert (ours["orders"], ours["cancels"], ours["fills"]) == (
        theirs["orders_placed"], theirs["orders_cancelled"], theirs["fills"])
    assert ours["position"] == theirs["position"] and ours["cash"] == theirs["cash"]
    # every generated frame, and the NO token's snapshot beside each YES one
    snapshots = sum(1 for line in market.open("rb") if b'"event_type":"book"' in line)
    assert ours["events"] == theirs["events"] + snapshots


def test_the_bench_refuses_a_stream_too_short_to_time():
    done = subprocess.run([sys.executable, "bench/bench_backtest_stream.py", "--frames", "10"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0 and "--frames" in done.stderr


def test_the_counts_are_the_engines_calls_per_event_of_the_interpreted_backtest(stream):
    from bench.bench_backtest_stream import COUNTED, counts

    _, recording = stream
    got = counts(recording, 2_000)
    assert got["events"] == 2_000
    per = got["per_event"]
    assert list(per) == [label for label, _, _ in COUNTED]
    # every event is a poll's chance at least once and each frame touches both tokens' books
    assert per["engine polls"] >= 1 and per["next_wakeup"] >= 1 and per["book applications"] > 1
    assert per["Router.settled"] >= per["Router.idle"] == per["engine polls"]  # each poll asks idle once

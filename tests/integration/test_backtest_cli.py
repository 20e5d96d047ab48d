"""``bot backtest`` on the shipped sample recording: a summary, a complete results folder, the same
results for the same seed, and one-line errors for what cannot run; `bot compare` on the shipped
sample session."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample"


def backtest(tmp_path: Path, *args: str, config: str = "config/bot.example.toml") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot.cli", "backtest", "--config", config, "--no-progress", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=300)


def test_sample_backtest_writes_its_results_and_repeats_for_a_seed(tmp_path: Path):
    runs = []
    for name in ("a", "b"):
        out = tmp_path / name
        proc = backtest(tmp_path, "--data", str(SAMPLE), "--out", str(out), "--seed", "7", "--json")
        assert proc.returncode == 0, proc.stderr
        summary = json.loads(proc.stdout)
        assert summary["events"] > 2000 and summary["orders_sent"] > 0 and summary["fills"] > 0
        assert {p.name for p in out.iterdir()} >= {"orders.parquet", "fills.parquet", "series.parquet", "summary.json"}
        assert json.loads((out / "summary.json").read_text())["pnl"] == summary["pnl"]
        # the recording ends in a gap (stale books): what is held is valued at the last marks seen
        assert any(summary["final_position"].values()) and summary["unrealized"] != 0
        runs.append((summary, pq.read_table(out / "fills.parquet").to_pylist(),
                     pq.read_table(out / "orders.parquet").to_pylist()))
    (a, fills_a, orders_a), (b, fills_b, orders_b) = runs
    assert fills_a == fills_b and orders_a == orders_b and fills_a
    assert {k: v for k, v in a.items() if "wall" not in k and k != "events_per_s"} == \
        {k: v for k, v in b.items() if "wall" not in k and k != "events_per_s"}


def test_jsonl_writes_the_same_rows_as_json_lines(tmp_path: Path):
    tables = {}
    for fmt in ("parquet", "jsonl"):
        out = tmp_path / fmt
        proc = backtest(tmp_path, "--data", str(SAMPLE), "--out", str(out), "--seed", "7", "--json",
                        *(["--jsonl"] if fmt == "jsonl" else []))
        assert proc.returncode == 0, proc.stderr
        if fmt == "jsonl":
            assert not list(out.glob("*.parquet"))
            tables[fmt] = [json.loads(line) for line in (out / "fills.jsonl").read_text().splitlines()]
        else:
            tables[fmt] = pq.read_table(out / "fills.parquet").to_pylist()
    assert [{**f, "reversed": f.get("reversed", False)} for f in tables["jsonl"]] == tables["parquet"]


def test_what_cannot_run_is_one_line_and_exit_2(tmp_path: Path):
    junk = tmp_path / "junk.jsonl.zst"
    junk.write_bytes(b"not a recording")
    proc = backtest(tmp_path, "--data", str(junk))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    cfg = tmp_path / "bot.toml"
    cfg.write_text('[strategy]\npath = "strategies.market_maker:MarketMaker"\nmarkets = ["0x' + "ab" * 32 + '"]\n')
    proc = backtest(tmp_path, "--data", str(SAMPLE), "--out", str(tmp_path / "r"), config=str(cfg))
    assert proc.returncode == 2 and "none of those configured" in proc.stderr, proc.stderr


def test_the_real_top_of_book_dataset_backtests_as_l1_books(tmp_path: Path, data_dir: Path):
    quotes = data_dir / "realworld" / "DineshKumar8399__polymarket-orderbook-dataset" / "quotes"
    day = next(iter(sorted(quotes.glob("dt=*/*.parquet"))))
    cfg = tmp_path / "bot.toml"
    cfg.write_text('[strategy]\npath = "strategies.market_maker:MarketMaker"\n'
                   "[feed]\nstale_after_s = 600.0\n[risk]\nstale_halt_s = 600.0\n[backtest]\ndataset_markets = 2\n")
    proc = backtest(tmp_path, "--data", str(day), "--out", str(tmp_path / "r"), "--json", config=str(cfg))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["events"] > 100 and summary["orders_sent"] > 0
    assert len(summary["final_position"]) == 4  # two markets, two tokens each


def test_a_run_without_a_results_folder_counts_the_same(tmp_path: Path):
    from bot.backtest.runner import run_backtest
    from bot.ops.config import load_bot_config

    config = load_bot_config(REPO / "config" / "bot.example.toml")
    written = run_backtest(config, [SAMPLE], out=tmp_path / "r", seed=3)
    counted = run_backtest(config, [SAMPLE], out=None, seed=3)
    assert written.fills > 0
    same = ("fills", "maker_fills", "volume", "fill_rate", "maker_share", "pnl", "orders_sent", "max_drawdown")
    assert {k: getattr(counted, k) for k in same} == {k: getattr(written, k) for k in same}


def test_the_sample_session_compares_with_its_backtest(tmp_path: Path):
    """The shipped session (journal, config, recording) goes through ``bot compare``: most of its
    fills have a twin in the backtest, and the report carries the comparison section."""
    session = REPO / "data" / "sample-session"
    done = subprocess.run([sys.executable, "-m", "bot.cli", "compare", "--config", str(session / "bot.toml"),
                           "--journal", str(session / "journal.sqlite"), "--recording", str(session),
                           "--out", str(tmp_path / "cmp")], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    agreement = re.search(r"fill agreement\s*│\s*([\d.]+)%", done.stdout)
    assert agreement and float(agreement.group(1)) >= 50.0, done.stdout
    assert "comparison" in (tmp_path / "cmp" / "report.html").read_text().lower()


def test_a_truncated_recording_backtests_and_says_how_much_it_could_not_read(tmp_path: Path):
    """A recording cut short mid-file (a recorder killed, a copy interrupted) replays up to the cut;
    the run says so: one line on stdout, and the summary's data notes, which the report shows."""
    data = tmp_path / "data"
    data.mkdir()
    for f in sorted(SAMPLE.glob("*.jsonl.zst")):
        raw = f.read_bytes()
        (data / f.name).write_bytes(raw[: len(raw) // 2] if f.name.endswith("00000.jsonl.zst") else raw)
    proc = backtest(tmp_path, "--data", str(data), "--out", str(tmp_path / "r"), "--seed", "7")
    assert proc.returncode == 0, proc.stderr
    notes = [line for line in proc.stdout.splitlines() if line.startswith("data: ")]
    assert len(notes) == 1 and notes[0].startswith("data: 1 unreadable stretch(es) of the recordings skipped"), notes
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["data_notes"] == [notes[0][len("data: "):]]
    whole = backtest(tmp_path, "--data", str(SAMPLE), "--out", str(tmp_path / "w"), "--seed", "7")
    assert whole.returncode == 0 and "data: " not in whole.stdout  # a whole recording has nothing to say


def test_an_out_folder_holding_results_is_refused_unless_forced(tmp_path: Path):
    out = tmp_path / "r"
    first = backtest(tmp_path, "--data", str(SAMPLE), "--out", str(out), "--seed", "7", "--jsonl")
    assert first.returncode == 0, first.stderr
    again = backtest(tmp_path, "--data", str(SAMPLE), "--out", str(out), "--seed", "7")
    assert again.returncode == 2 and len(again.stderr.strip().splitlines()) == 1, again.stderr
    assert "already holds results" in again.stderr and "--force" in again.stderr
    assert (out / "fills.jsonl").exists() and not (out / "fills.parquet").exists()  # nothing touched
    (out / "notes.txt").write_text("mine")
    forced = backtest(tmp_path, "--data", str(SAMPLE), "--out", str(out), "--seed", "7", "--force")
    assert forced.returncode == 0, forced.stderr
    # the run's files replaced (no stale JSON lines beside the new Parquet), the user's file kept
    assert (out / "fills.parquet").exists() and not (out / "fills.jsonl").exists()
    assert (out / "notes.txt").read_text() == "mine"


def _shifted(folder: Path, out: Path, seconds: int, run: str) -> None:
    """The sample recording as if recorded ``seconds`` later by another run: every receive time
    and venue timestamp moved, the run renamed (and the files after it)."""
    import zstandard

    out.mkdir(parents=True, exist_ok=True)
    old_run = None
    for f in sorted(folder.glob("*.jsonl.zst")):
        text = zstandard.ZstdDecompressor().stream_reader(f.open("rb")).read().decode()
        old_run = old_run or re.search(r'"run":"([^"]+)"', text).group(1)
        text = re.sub(r'"t":(\d+)', lambda m: f'"t":{int(m.group(1)) + seconds * 10**9}', text)
        text = re.sub(r'"timestamp":"(\d+)"', lambda m: f'"timestamp":"{int(m.group(1)) + seconds * 1000}"', text)
        text = text.replace(old_run, run)
        (out / f.name.replace(old_run, run)).write_bytes(zstandard.ZstdCompressor().compress(text.encode()))


def test_recordings_of_two_days_are_two_sessions_and_the_run_trades_on_both(tmp_path: Path):
    """A day between two recordings is a session break, not 24 hours of a stale feed: nothing
    halts, no timer runs in it, the second day's books come from its own snapshots and the
    strategy trades there as on the first; the summary says so."""
    from bot.backtest.runner import run_backtest
    from bot.ops.config import BotConfig, load_config

    day2 = tmp_path / "day2"
    _shifted(SAMPLE, day2, 86_400, "20261124T195355Z-b2aa")
    config = load_config(REPO / "config" / "bot.example.toml", BotConfig)
    first = run_backtest(config, [SAMPLE], out=tmp_path / "one", seed=3)
    both = run_backtest(config, [SAMPLE, day2], out=tmp_path / "two", seed=3)
    assert both.halts == () and first.halts == ()
    assert [n for n in both.data_notes if "session break" in n] == [both.data_notes[-1]]
    assert both.data_notes[-1].startswith("1 session break(s) between recordings (the longest 24.0 h")
    assert both.orders_sent > 1.5 * first.orders_sent and both.fills > first.fills  # it traded on the second day
    sent = [r["sent_at"] for r in pq.read_table(tmp_path / "two" / "orders.parquet").to_pylist() if r["sent_at"]]
    day_two = min(sent) + 80_000
    assert sum(1 for t in sent if t > day_two) > 0.3 * len(sent)  # orders on the second day as on the first
    times = sorted({r["t"] for r in pq.read_table(tmp_path / "two" / "series.parquet").to_pylist()})
    assert max(b - a for a, b in zip(times, times[1:])) > 80_000  # no sample (no timer) inside the break

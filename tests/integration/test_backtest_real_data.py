"""``bot backtest`` over the real top-of-book dataset: markets chosen by slug and by filter, the
shipped market maker trading from the first third of the day to the last without a stale-data
halt (staleness judged against the dataset's two-minute polls), the summary and the report saying
the books are L1 only and what the fill model assumes about depth, and a slug that matches
nothing refused in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
CONFIG = "config/bot.example.toml"  # the shipped market maker
MOVERS = "asc-mlb-mil-pit-2026-07-10-neg-*"  # three markets of one game, repriced all evening


@pytest.fixture(scope="module")
def dataset(data_dir: Path) -> Path:
    return data_dir / "realworld" / "DineshKumar8399__polymarket-orderbook-dataset"


@pytest.fixture(scope="module")
def day(dataset: Path) -> Path:
    return dataset / "quotes" / "dt=2026-07-10" / "data_0.parquet"


def backtest(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot.cli", "backtest", "--config", CONFIG, "--no-progress", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=300)


def thirds(times: list[float], start: float, span: float) -> list[int]:
    return [sum(1 for t in times if k * span / 3 <= t - start < (k + 1) * span / 3) for k in range(3)]


def test_the_market_maker_trades_real_markets_chosen_by_slug_throughout_the_day(tmp_path: Path, day: Path):
    out = tmp_path / "r"
    proc = backtest("--data", str(day), "--market-slug", MOVERS, "--out", str(out), "--json", "--report")
    assert proc.returncode == 0, proc.stderr
    assert "stale_data" not in proc.stderr and "risk_halt" not in proc.stderr, proc.stderr
    summary = json.loads(proc.stdout)
    slugs = {t.rsplit(":", 1)[0] for t in summary["final_position"]}
    assert slugs == {f"asc-mlb-mil-pit-2026-07-10-neg-{n}pt5" for n in (1, 2, 3)}

    table = pq.read_table(day, columns=["ts", "slug"])
    table = table.filter(pc.match_like(table["slug"], MOVERS.replace("*", "%")))
    start = pc.min(table["ts"]).as_py().timestamp()
    span = pc.max(table["ts"]).as_py().timestamp() - start
    assert summary["seconds"] == span > 3 * 3600

    from bot.results.read import read_results

    results = read_results(out)  # the tables as written (Parquet by default)
    sent = [o.sent_at for o in results.orders]
    assert min(thirds(sent, start, span)) > 50, thirds(sent, start, span)
    filled = [f.ts for f in results.fills]
    assert min(thirds(filled, start, span)) > 20, thirds(filled, start, span)
    assert max(sent) > start + span - 600  # quoting until the last polls

    notes = [a for a in summary["assumptions"] if a.startswith(("books are L1 only", "depth:", "staleness"))]
    assert len(notes) == 3, summary["assumptions"]
    assert "no depth" in notes[0] and "1,000 shares" in notes[1] and "every 122 s" in notes[2]
    settled = [a for a in summary["assumptions"] if a.startswith("settlement: ")]
    assert len(settled) == 1 and "resolved" in settled[0] and "source api" in settled[0], summary["assumptions"]
    report = (out / "report.html").read_text()
    assert "books are L1 only" in report and "1,000 shares" in report


def test_the_table_says_l1_only_and_a_filter_chooses_the_markets(tmp_path: Path, dataset: Path, day: Path):
    proc = backtest("--data", str(dataset / "quotes" / "dt=2026-07-10"), "--category", "politics",
                    "--markets", "2", "--out", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stderr
    data = [line for line in proc.stdout.splitlines() if line.startswith("data: ")]
    assert data[0].startswith("data: books are L1 only: 2 market(s)") and "depth:" in data[1], proc.stdout
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    chosen = {t.rsplit(":", 1)[0] for t in summary["final_position"]}
    table = pq.read_table(day, columns=["slug", "category"])
    categories = set(table.filter(pc.is_in(table["slug"], value_set=pa.array(sorted(chosen))))["category"].to_pylist())
    assert len(chosen) == 2 and categories == {"politics"}


def test_a_slug_that_matches_nothing_is_one_line_and_exit_2(tmp_path: Path, day: Path):
    proc = backtest("--data", str(day), "--market-slug", "no-such-market", "--out", str(tmp_path / "r"))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "no market matches slug 'no-such-market'" in proc.stderr
    assert not (tmp_path / "r").exists()

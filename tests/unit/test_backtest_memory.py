"""A backtest's memory does not grow with its length: every per-order (and per-fill) structure of
the results sink, the engine's order store, reconciler and router, and the simulated venue is
pruned or capped. Sizes are counted (entries), not measured (RSS), so the test is steady."""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

from bot.backtest import runner
from bot.results import folder as results
from bot.results.folder import CLOSED_KEPT, ResultsSink
from bot.backtest.synthetic import SyntheticConfig, SyntheticMarket
from bot.engine import engine as engine_module
from bot.execution import router as router_module
from bot.core.events import Fill
from bot.execution.orders import OrderState, OwnOrder
from bot.ops.config import BotConfig, StrategyConfig
from bot.venue.enums import Side, TradeStatus

S = OrderState
TOKEN = "t1"


def _order(i: int) -> OwnOrder:
    return OwnOrder(f"o{i}", TOKEN, Side.BUY, 500_000, 10_000_000, sent_at=1.0, updated_at=1.0)


def _fill(i: int) -> Fill:
    return Fill(f"x{i}", f"o{i}", TOKEN, Side.BUY, 500_000, 10_000_000, fee=0, is_maker=True,
                status=TradeStatus.CONFIRMED, ts=1.0)


@pytest.mark.parametrize("folder", [False, True])
def test_the_sink_counts_each_order_once_and_holds_only_open_and_recent_ones(tmp_path, folder):
    sink = ResultsSink(tmp_path / "r" if folder else None)
    n = 3 * CLOSED_KEPT
    for i in range(n):
        o = _order(i)
        sink.order(o)  # sent, not answered
        o.state, o.answered_at = S.LIVE, 2.0
        sink.order(o)
        sink.order(o)  # the same order again: counted once
        if i % 3 == 0:
            sink.fill(_fill(i))
            sink.fill(_fill(i))  # a second fill of one order: one order filled
            o.state, o.filled = S.FILLED, o.size
        elif i % 3 == 1:
            o.state = S.CANCELED
        sink.order(o)  # every third order stays open
        if i % 3 == 0:
            sink.fill(_fill(i))  # a late fill of a closed order: still one order
        assert sink.held <= CLOSED_KEPT + i // 3 + 1
    sink.close()
    assert sink.accepted_orders == n and sink.filled_orders == n // 3
    assert sink.held == CLOSED_KEPT + n // 3  # the open orders, and the last closed ones
    assert sink.fill_count == n  # three fills of every third order
    reopened = _order(n - 2)  # a recently closed order listed open again is not counted twice
    reopened.state, reopened.answered_at = S.LIVE, 3.0
    sink.order(reopened)
    assert sink.accepted_orders == n


def _containers(root: Any, name: str, seen: set[int], out: dict[str, int], depth: int = 0) -> None:
    """The size of every dict, set, list and deque reachable from ``root`` through attributes of
    the project's objects (compiled ones expose theirs as public attributes)."""
    if id(root) in seen or depth > 5:
        return
    seen.add(id(root))
    for attr in dir(root):
        if attr.startswith("__"):
            continue
        try:
            value = getattr(root, attr)
        except Exception:  # noqa: BLE001 - a property that needs state the run did not make
            continue
        if isinstance(value, (dict, set, list, deque)):
            out[f"{name}.{attr}"] = len(value)
        elif type(value).__module__.startswith(("bot.", "strategies.")) and not callable(value):
            _containers(value, f"{name}.{attr}", seen, out, depth + 1)


def _sizes(monkeypatch, tmp_path, duration_s: float) -> tuple[dict[str, int], Any]:
    """Backtest the market maker on the synthetic market for ``duration_s``; the sizes of the
    structures of its sink, engine and simulated venue at the end, and its summary."""
    made: dict[str, Any] = {}
    real_backtest, real_sink = runner.Backtest, results.ResultsSink

    def backtest(engine: Any, venue: Any, *args: Any, **kw: Any) -> Any:
        made["engine"], made["venue"] = engine, venue
        return real_backtest(engine, venue, *args, **kw)

    def sink(*args: Any, **kw: Any) -> Any:
        made["sink"] = real_sink(*args, **kw)
        return made["sink"]

    monkeypatch.setattr(runner, "Backtest", backtest)
    monkeypatch.setattr(results, "ResultsSink", sink)
    # the caps small, so that a short run meets them; the runner caps the order store's forgotten
    # orders and the simulated venue's closed ones (the config's defaults hold ten times as many)
    monkeypatch.setattr(runner, "FORGOTTEN_KEPT", 100)
    monkeypatch.setattr(results, "CLOSED_KEPT", 100)
    monkeypatch.setattr(engine_module, "SETTLEMENTS_KEPT", 100)
    monkeypatch.setattr(router_module, "_PRUNE_MIN", 16)
    source = SyntheticMarket(SyntheticConfig(seed=3, duration_s=duration_s, a=2.0))
    config = BotConfig(strategy=StrategyConfig(path="strategies.market_maker:MarketMaker"))
    summary = runner.run_backtest(config, [], source=source, out=tmp_path / f"run{duration_s:g}")
    sizes: dict[str, int] = {}
    seen: set[int] = set()
    for name in ("sink", "engine", "venue"):
        _containers(made[name], name, seen, sizes)
    return sizes, summary


def test_no_per_order_structure_grows_with_the_length_of_a_backtest(monkeypatch, tmp_path):
    short, s1 = _sizes(monkeypatch, tmp_path, 1200.0)
    long, s4 = _sizes(monkeypatch, tmp_path, 4800.0)
    assert s4.orders_sent >= 3.5 * s1.orders_sent and s1.orders_sent > 800  # four times the orders...
    assert s4.fills >= 3 * s1.fills and s1.fills > 0  # ...and the fills
    # the walk reached the per-order structures it is about (else an empty comparison would pass)
    for name in ("orders._orders", "orders._forgotten", "._trades", "sink._open", "sink._closed", "venue._orders",
                 "venue._closed", "router._emitted_cancels", "portfolio._fills"):
        assert any(k.endswith(name) for k in short), name
    grew = {k: (short.get(k, 0), v) for k, v in long.items() if v > max(2 * short.get(k, 0), 64)}
    assert grew == {}  # ...and no structure twice as large (counted once: old name, short, long)


def test_a_table_gathered_in_arrow_chunks_writes_the_bytes_of_one_gathered_whole(monkeypatch, tmp_path):
    """The sink holds a row group's rows as Arrow columns, ``CHUNK`` Python rows at a time; the
    files are those of a group held whole as Python values (the same row groups, the same bytes)."""
    import pyarrow.parquet as pq

    from tests.results_fixture import write_results

    monkeypatch.setattr(results, "CHUNK", 10**9)  # a whole row group as Python values
    whole = write_results(tmp_path / "whole", row_group=16)
    monkeypatch.setattr(results, "CHUNK", 3)  # a row group of 16 in chunks of 3 (the last one short)
    chunked = write_results(tmp_path / "chunked", row_group=16)
    for name in results.COLUMNS:
        a, b = (whole / f"{name}.parquet").read_bytes(), (chunked / f"{name}.parquet").read_bytes()
        meta = pq.ParquetFile(chunked / f"{name}.parquet").metadata
        assert a == b, name
        assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)][:-1] == [16] * (meta.num_row_groups - 1)
        assert meta.num_rows > 16 or name == "fills", name  # several row groups, the last one short


_BARE_RUN = """
import sys
from bot.backtest.runner import run_backtest
from bot.ops.config import BotConfig, load_config
summary = run_backtest(load_config("config/bot.example.toml", BotConfig), ["data/sample"], out=None, seed=3)
print(summary.orders_sent > 0, sorted(m for m in ("pyarrow", "numpy") if m in sys.modules))
"""


def test_a_backtest_of_recordings_with_no_results_folder_loads_no_table_library() -> None:
    """pyarrow and numpy (about 60 MB resident once imported) load only for top-of-book files or
    Parquet results: a backtest of recordings alone, counting only, never imports them."""
    import subprocess
    import sys

    from tests.conftest import REPO

    done = subprocess.run([sys.executable, "-c", _BARE_RUN], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-800:]
    assert done.stdout.split("\n")[-2] == "True []"

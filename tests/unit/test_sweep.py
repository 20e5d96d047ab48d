"""Sweeps without running a backtest: the grid file (keys, values, seeds, metric, study ranges)
checked before anything runs, parameter sets applied by rebuilding the config, exact ranking,
the results files and the best config written back as a config file."""

from __future__ import annotations

import csv
import sys
import json
from fractions import Fraction
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.backtest.executors import Outcome
from bot.results.folder import Summary
from bot.backtest.sweep import (
    MAX_RUNS, Metric, SweepError, SweepResult, apply_params, config_toml, parse_grid, parse_metric, rank,
    ranking_table, short_names, write_results,
)
from bot.ops.config import BotConfig, decode_bot_config, load_bot_config
from bot.venue.units import format_units

REPO = Path(__file__).resolve().parents[2]
BASE = load_bot_config(REPO / "config" / "bot.example.toml")


def summary(pnl: int = 0, **figures) -> Summary:
    fields = dict(mode="backtest", events=10, seconds=1.0, wall_seconds=0.1, events_per_s=100.0, orders_sent=4,
                  orders_rejected=0, cancels_sent=1, fills=2, maker_fills=2, volume=5_000_000, notional=2_500_000,
                  fill_rate=0.5, maker_share=1.0, realized=pnl, unrealized=0, fees=0, pnl=pnl, max_drawdown=0,
                  inventory={}, final_position={}, seed=1)
    fields.update(figures)
    return Summary(**fields)


# --- the grid file ---------------------------------------------------------------------------


def test_quoted_dotted_keys_and_nested_tables_name_the_same_axes_first_axis_slowest():
    quoted = parse_grid('"strategy.params.half_spread_ticks" = [1, 2]\n"sim.latency.entry" = [0.01, 0.05, 0.1]\n',
                        BASE)
    nested = parse_grid("[strategy.params]\nhalf_spread_ticks = [1, 2]\n[sim.latency]\nentry = [0.01, 0.05, 0.1]\n",
                        BASE)
    assert quoted.axes == nested.axes
    sets = list(quoted.sets())
    assert quoted.size == len(sets) == 6
    assert [s["strategy.params.half_spread_ticks"] for s in sets] == [1, 1, 1, 2, 2, 2]
    assert [s["sim.latency.entry"] for s in sets[:3]] == [0.01, 0.05, 0.1]
    assert quoted.seeds == (BASE.backtest.seed,) and quoted.metric == Metric("pnl", 1)


def test_sweep_table_sets_seeds_and_metric():
    grid = parse_grid('"risk.max_position" = [1000]\n[sweep]\nseeds = [3, 4]\nmetric = "-max_drawdown"\n', BASE)
    assert grid.seeds == (3, 4) and grid.metric == Metric("max_drawdown", -1)
    assert list(parse_grid("[sweep]\nseeds = [5]\n", BASE).sets()) == [{}]  # no axis: the base config


@pytest.mark.parametrize("text, words", [
    ('"sim.latency.entyr" = [0.1]', ["unknown config key `sim.latency.entyr`", "[sim.latency] has", "entry"]),
    ('"simm.latency.entry" = [0.1]', ["unknown config key `simm.latency.entry`", "the config has", "sim"]),
    ('"risk.max_position.low" = [1]', ["`risk.max_position` is a value, not a table"]),
    ('"sim.latency" = [1]', ["`sim.latency` is a table"]),
    ('"sim.latency.entry" = 0.1', ["`sim.latency.entry` must be a non-empty list", "got 0.1"]),
    ('"sim.latency.entry" = []', ["must be a non-empty list"]),
    ('"sim.latency.entry" = [0.1, "fast"]', ["sim.latency.entry", "Expected `float`", "fast"]),
    ('"strategy.params.half_spread_tick" = [1]', ["half_spread_tick", "unknown field"]),
    ('"strategy.params.half_spread_ticks" = [2, 0]', ["half_spread_ticks=0", "at least 1"]),
    ('"risk.max_position" = [1]\n[sweep]\nmetric = "wall_seconds"', ["wall_seconds", "not of the run"]),
    ('"risk.max_position" = [1]\n[sweep]\nmetric = "-nope"', ["'-nope' is not a summary figure", "pnl"]),
    ('[sweep]\nseeds = [1, 1]', ["repeat a seed"]),
    ('[sweep]\nseed = [1]', ["[sweep]", "unknown field `seed`"]),
    ('[sweep]\nseeds = [-1]', ["[sweep]", ">= 0"]),
    ("# nothing yet\n", ["nothing to sweep", "[sweep] seeds"]),
    ('[sweep]\nmetric = "pnl"', ["nothing to sweep"]),
])
def test_what_cannot_run_is_one_line_naming_it_before_anything_runs(text, words):
    with pytest.raises(SweepError) as err:
        parse_grid(text, BASE, source="grid.toml")
    message = str(err.value)
    assert "\n" not in message and message.startswith("grid.toml"), message
    for word in words:
        assert word in message, message


def test_a_grid_larger_than_a_sweep_runs_is_refused():
    side = int(MAX_RUNS ** 0.5) + 1
    text = f'"risk.max_position" = {list(range(1, side + 1))}\n"risk.max_open_orders" = {list(range(1, side + 1))}\n'
    with pytest.raises(SweepError, match=f"at most {MAX_RUNS:,}"):
        parse_grid(text, BASE)


def test_study_ranges_are_checked_like_the_grid():
    grid = parse_grid('"strategy.params.half_spread_ticks" = [1, 2]\n[sweep.optuna]\ntrials = 6\nbatch = 2\n'
                      '[sweep.optuna.ranges]\n"sim.latency.entry" = { low = 0.01, high = 0.5, log = true }\n', BASE)
    assert grid.size == 6 and grid.study is not None and not grid.study.ranges["sim.latency.entry"].integer
    for text, word in [
        ('[sweep.optuna]\ntrials = 2\n[sweep.optuna.ranges]\n"sim.latency.entyr" = { low = 1, high = 2 }', "entyr"),
        ('[sweep.optuna]\ntrials = 2\n[sweep.optuna.ranges]\n"risk.max_position" = { low = 2, high = 1 }', "low < high"),
        ('[sweep.optuna]\ntrials = 2\n[sweep.optuna.ranges]\n"strategy.params.half_spread_ticks" = '
         '{ low = 0, high = 3 }', "at least 1"),
        ('[sweep.optuna]\ntrials = 2\n', "nothing to search"),
        ('"sim.latency.samples" = [[[0.0, 0.1, 0.1]]]\n[sweep.optuna]\ntrials = 2\n', "chooses among numbers"),
        ('"risk.max_position" = [1]\n[sweep.optuna]\ntrials = 2\n[sweep.optuna.ranges]\n'
         '"risk.max_position" = { low = 1, high = 2 }', "both a list of choices and a range"),
    ]:
        with pytest.raises(SweepError, match=word):
            parse_grid(text, BASE)


# --- parameter sets applied to the config ------------------------------------------------------


def test_a_set_rebuilds_the_config_and_leaves_the_base_alone():
    applied = apply_params(BASE, {"strategy.params.half_spread_ticks": 3, "sim.latency.entry": 1,
                                  "risk.max_daily_loss": "off", "risk.max_total_loss": 50})
    assert applied.strategy.params["half_spread_ticks"] == 3 and BASE.strategy.params["half_spread_ticks"] == 2
    assert applied.sim.latency.entry == 1.0 and type(applied.sim.latency.entry) is float
    assert applied.risk.max_daily_loss is None and applied.risk.max_total_loss == 50_000_000  # USDC as written
    assert applied.risk.max_position == BASE.risk.max_position  # the rest, already micro-units, is not scaled again
    assert apply_params(BASE, {"risk.max_position": "2.5"}).risk.max_position == 2_500_000
    assert applied.strategy.params["order_size"] == BASE.strategy.params["order_size"]
    assert apply_params(BASE, {}) is BASE
    assert apply_params(BASE, {"risk.max_position": BASE.risk.max_position // 1_000_000}) == BASE


@settings(max_examples=40, deadline=None)
@given(half_spread=st.integers(1, 9), entry=st.floats(0.0, 5.0, allow_nan=False), ttl=st.integers(0, 10_000),
       loss=st.one_of(st.just("off"), st.integers(0, 999_999), st.integers(0, 10**15).map(format_units)),
       fair=st.sampled_from(["mid", "micro"]),
       ping=st.sampled_from([2.0, 5.0, 10.0]))
def test_the_best_config_file_decodes_back_to_the_config_it_was_written_from(half_spread, entry, ttl, loss, fair,
                                                                             ping):
    config = apply_params(BASE, {"strategy.params.half_spread_ticks": half_spread, "sim.latency.entry": entry,
                                 "strategy.params.order_ttl_s": ttl, "risk.max_daily_loss": loss,
                                 "strategy.params.fair": fair, "shell.stream.ping_interval_s": ping})
    text = config_toml(config, "the best set\nsecond line")
    assert text.startswith("# the best set\n# second line\n")
    assert decode_bot_config(text) == config


def test_the_default_config_writes_an_empty_file_that_decodes_to_it():
    assert decode_bot_config(config_toml(BotConfig())) == BotConfig()
    assert "[venue.limits" not in config_toml(BASE)  # only what differs from the defaults


# --- ranking ---------------------------------------------------------------------------------


def outcomes_of(pnls: list[list[int | None]]) -> list[Outcome]:
    """One outcome per (set, seed): None stands for a run that failed."""
    out = []
    seeds = len(pnls[0])
    for i, row in enumerate(pnls):
        for k, pnl in enumerate(row):
            out.append(Outcome(run=i * seeds + k, params={"set": i}, seed=k,
                               summary=summary(pnl, max_drawdown=abs(pnl) % 7) if pnl is not None else None,
                               error=None if pnl is not None else "no market"))
    return out


def test_sets_rank_by_the_exact_mean_over_seeds_ties_in_grid_order_failures_last():
    pnls = [[1, 2], [3, 0], [None, 9], [2, 1], [-5, 10]]  # means 3/2, 3/2, failed, 3/2, 5/2
    ranking = rank([{"set": i} for i in range(5)], outcomes_of(pnls), Metric("pnl"), 2)
    assert [r.set for r in ranking] == [4, 0, 1, 3, 2]
    assert ranking[0].score == Fraction(5, 2) and ranking[-1].score is None and ranking[-1].failed == 1
    assert [r.rank for r in ranking] == [1, 2, 3, 4, 5] and ranking[0].runs == (8, 9)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3).flatmap(lambda seeds: st.lists(
    st.lists(st.integers(-10**15, 10**15), min_size=seeds, max_size=seeds), min_size=1, max_size=12)),
    st.sampled_from([Metric("pnl", 1), Metric("pnl", -1), Metric("max_drawdown", -1)]))
def test_ranking_is_the_exact_mean_order(pnls, metric):
    seeds = len(pnls[0])
    outs = outcomes_of(pnls)
    ranking = rank([{"set": i} for i in range(len(pnls))], outs, metric, seeds)

    def mean(i: int) -> Fraction:
        return Fraction(sum(getattr(o.summary, metric.field) for o in outs[i * seeds:(i + 1) * seeds]), seeds)

    expected = sorted(range(len(pnls)), key=lambda i: (-metric.sign * mean(i), i))
    assert [r.set for r in ranking] == expected
    assert all(r.score == metric.sign * mean(r.set) for r in ranking)


def test_metric_names():
    assert parse_metric("fill_rate") == Metric("fill_rate", 1)
    assert parse_metric("-fees").name == "-fees"


# --- results files ---------------------------------------------------------------------------


def test_results_files_hold_every_run_and_the_ranking(tmp_path: Path):
    grid = parse_grid('"strategy.params.half_spread_ticks" = [1, 2, 3]\n[sweep]\nseeds = [7, 8]\n', BASE,
                      source="g.toml")
    sets = list(grid.sets())
    outs = outcomes_of([[10, 11], [30, 31], [None, 5]])
    outs = [msgspec.structs.replace(o, params=sets[o.run // 2], seed=grid.seeds[o.run % 2]) for o in outs]
    result = SweepResult(grid=grid, sets=sets, outcomes=outs, ranking=rank(sets, outs, grid.metric, 2))
    write_results(tmp_path, result, data=["data/sample"], executor="process pool", workers=2)
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["metric"] == "pnl" and doc["seeds"] == [7, 8] and doc["data"] == ["data/sample"]
    assert [r["set"] for r in doc["ranking"]] == [1, 0, 2]
    assert doc["ranking"][0]["score"] == "30.500000"  # (30 + 31) / 2, exact
    assert doc["ranking"][2]["score"] is None and doc["ranking"][2]["failed"] == 1
    assert len(doc["runs"]) == 6 and doc["runs"][4]["error"] == "no market" and doc["runs"][5]["summary"]["pnl"] == 5
    rows = list(csv.DictReader((tmp_path / "results.csv").open()))
    assert len(rows) == 6
    assert [r["strategy.params.half_spread_ticks"] for r in rows] == ["1", "1", "2", "2", "3", "3"]
    assert [r["seed"] for r in rows] == ["7", "8"] * 3 and rows[3]["pnl"] == "31" and rows[4]["pnl"] == ""
    assert rows[4]["error"] == "no market"
    table = ranking_table(result)
    assert table.row_count == 3


def test_table_headers_are_the_shortest_unique_endings_of_the_keys():
    assert short_names(["sim.latency.entry", "strategy.params.half_spread_ticks", "a.entry"]) == {
        "sim.latency.entry": "latency.entry", "strategy.params.half_spread_ticks": "half_spread_ticks",
        "a.entry": "a.entry"}


def test_without_ray_or_optuna_installed_the_sweep_says_what_to_install(monkeypatch):
    from bot.backtest.executors import ExecutorError, open_executor
    from bot.backtest.sweep import _optuna

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    monkeypatch.setitem(sys.modules, "optuna", None)
    with pytest.raises(ExecutorError, match=r"pip install 'pmbot\[ray\]'"):
        open_executor(2, "local")
    with pytest.raises(SweepError, match=r"pip install 'pmbot\[optuna\]'"):
        _optuna()


def test_seeds_that_cannot_change_a_result_are_said_so_and_random_latency_draws_from_each_seed():
    from bot.backtest.sweep import seeds_note

    note = seeds_note(BASE, parse_grid('"sim.latency.entry" = [0.05, 0.5]\n[sweep]\nseeds = [1, 2]\n', BASE))
    assert note is not None and note.startswith("note: seeds 1, 2 give the same results") and "lognormal" in note
    for text in ('"sim.latency.kind" = ["constant", "lognormal"]\n[sweep]\nseeds = [1, 2]\n',
                 '"sim.settlement.fail_share" = [0.1]\n[sweep]\nseeds = [1, 2]\n',
                 '"sim.latency.entry" = [0.05]\n[sweep]\nseeds = [1]\n'):
        assert seeds_note(BASE, parse_grid(text, BASE)) is None, text
    assert seeds_note(BASE, parse_grid((REPO / "config" / "sweep.example.toml").read_text(), BASE)) is None


def test_a_random_latency_model_draws_other_delays_for_another_run_seed():
    from bot.sim.latency import LatencyConfig, latency_model

    config = LatencyConfig(kind="lognormal", entry=0.05, response=0.05, seed=7)
    models = {run: latency_model(config, run) for run in (0, 1, 2)}
    draws = {run: [m.entry(0.0) for _ in range(5)] for run, m in models.items()}
    assert len({tuple(d) for d in draws.values()}) == 3
    again = latency_model(config, 1)
    assert draws[1] == [again.entry(0.0) for _ in range(5)]  # the same seeds, the same draws
    alone = latency_model(config)  # run seed 0: the model's own seed alone, as before run seeds counted
    assert draws[0] == [alone.entry(0.0) for _ in range(5)]


def test_two_seeds_of_a_backtest_with_random_latency_give_different_runs(tmp_path):
    from bot.backtest.runner import run_backtest

    config = apply_params(BASE, {"sim.latency.kind": "lognormal", "sim.latency.entry": 0.2, "sim.latency.sigma": 1.0})
    sample = REPO / "data" / "sample"
    one = run_backtest(config, [sample], out=tmp_path / "s1", seed=1)
    again = run_backtest(config, [sample], out=tmp_path / "s1b", seed=1)
    two = run_backtest(config, [sample], out=tmp_path / "s2", seed=2)
    assert (one.orders_sent, one.fills, one.pnl) == (again.orders_sent, again.fills, again.pnl)
    assert (one.orders_sent, one.fills, one.pnl) != (two.orders_sent, two.fills, two.pnl)

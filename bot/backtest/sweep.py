"""``bot sweep --config FILE --grid GRID.toml --data PATH...``: backtests of many parameter sets,
ranked.

The grid file maps dotted config keys to lists of values, and may say how the sweep runs::

    "strategy.params.half_spread_ticks" = [1, 2, 3]
    "sim.latency.entry" = [0.01, 0.05]

    [sweep]
    seeds = [1, 2]              # every set runs once per seed (default: [backtest] seed)
    metric = "pnl"              # what ranks: a numeric Summary field; "-max_drawdown": lower is better

    [sweep.optuna]              # instead of the whole grid: an Optuna study of `trials` sets
    trials = 20                 # (the lists above become choices; ranges below are searched)
    seed = 1
    batch = 4                   # sets asked of the study at once, run in parallel, told in order
    ranges = { "risk.max_position" = { low = 1000000, high = 9000000, step = 1000000 } }

A sweep runs every set (the whole grid, or the study's trials) once per seed on an executor
(``bot.backtest.executors``: a local process pool, or Ray), ranks the sets by the mean of the
metric over their seeds, and writes ``results.json`` (every run's parameters, seed and summary,
and the ranking), ``results.csv`` (one row per run) and ``best.toml`` (the base config with the
best set applied, a config file ``bot backtest`` and ``bot run`` read as they are).

Invariants: a set is applied by rebuilding the config from its values (``decode_config``), so a
swept config is validated exactly as a config file is; every key, value and strategy parameter
of the grid is checked before anything runs (one line naming the key); a run's result depends
only on (config, parameters, seed, data), so a sweep gives the same results on every executor
and for any number of workers (a study asks and tells in fixed batches for that reason); ranking
is exact (integer metrics are averaged as fractions) and ties keep the grid's order.
"""

from __future__ import annotations

import csv
import itertools
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, TypeVar

import msgspec
import msgspec.inspect as mi

from bot.backtest.executors import Executor, Job, Outcome
from bot.ops.arguments import EXIT_INTERRUPTED
from bot.results.folder import Summary, claim
from bot.venue.units import MICRO

T = TypeVar("T")

MAX_RUNS = 10_000
"""At most this many backtests in one sweep: its results stay in memory until they are ranked."""

UNMEASURED = ("wall_seconds", "events_per_s")
"""Summary figures of the machine, not of the run: they cannot rank (a ranking must repeat)."""

MICRO_FIELDS = ("volume", "notional", "realized", "unrealized", "fees", "pnl", "max_drawdown", "sets", "sets_value",
                "sets_edge", "mergeable", "mergeable_cost")
"""Summary figures in micro-units, shown as exact decimals."""


class SweepError(ValueError):
    """A grid that cannot run, explained in one line."""


# --------------------------------------------------------------------------------------------
# The grid file


class StudyRange(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A study's range of one key: integers when ``low``, ``high`` (and ``step``) are integers,
    else floats; ``log`` samples on a log scale (``low > 0``, no ``step``)."""

    low: int | float
    high: int | float
    step: int | float | None = None
    log: bool = False

    def __post_init__(self) -> None:
        if not self.low < self.high:
            raise ValueError(f"a range needs low < high, got {self.low} .. {self.high}")
        if self.step is not None and (self.step <= 0 or self.log):
            raise ValueError("a range's step must be positive, and a log range has none")
        if self.log and self.low <= 0:
            raise ValueError("a log range needs low > 0")

    @property
    def integer(self) -> bool:
        return all(type(v) is int for v in (self.low, self.high, self.step if self.step is not None else 1))


class StudyConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """``[sweep.optuna]``: an Optuna study of ``trials`` parameter sets (TPE sampler seeded with
    ``seed``), asked and told ``batch`` sets at a time."""

    trials: Annotated[int, msgspec.Meta(ge=1, le=MAX_RUNS)]
    seed: Annotated[int, msgspec.Meta(ge=0, le=2**32 - 1)] = 1
    batch: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 4
    ranges: dict[str, StudyRange] = {}


class SweepConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """``[sweep]``: the seeds each set runs with, the metric that ranks, an optional study."""

    seeds: tuple[Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)], ...] = ()
    metric: str = "pnl"
    optuna: StudyConfig | None = None


class Metric(msgspec.Struct, frozen=True):
    """A numeric ``Summary`` field; ``sign`` -1 when lower is better (``-max_drawdown``)."""

    field: str
    sign: int = 1

    @property
    def name(self) -> str:
        return ("-" if self.sign < 0 else "") + self.field


class Grid(msgspec.Struct, frozen=True, kw_only=True):
    """A parsed grid file: the axes (dotted key -> values, in file order), the seeds, the metric,
    and the study when there is one."""

    axes: dict[str, tuple[Any, ...]]
    seeds: tuple[int, ...]
    metric: Metric
    study: StudyConfig | None = None
    source: str = "grid"

    def sets(self) -> Iterator[dict[str, Any]]:
        """Every parameter set of the grid, the first axis varying slowest (one empty set when
        there is no axis: the base config itself)."""
        keys = list(self.axes)
        for values in itertools.product(*(self.axes[k] for k in keys)):
            yield dict(zip(keys, values))

    @property
    def size(self) -> int:
        """How many sets the sweep runs: the grid's, or the study's trials."""
        return self.study.trials if self.study is not None else math.prod(len(v) for v in self.axes.values())


def numeric_fields() -> tuple[str, ...]:
    """The ``Summary`` fields a sweep can rank by."""
    return tuple(f.name for f in mi.type_info(Summary).fields
                 if isinstance(f.type, (mi.IntType, mi.FloatType)) and f.name not in UNMEASURED)


def parse_metric(text: str, source: str = "grid") -> Metric:
    """``pnl`` (higher is better) or ``-max_drawdown`` (lower is better)."""
    sign, name = (-1, text[1:]) if text.startswith("-") else (1, text)
    if name not in numeric_fields():
        why = " (a figure of the machine, not of the run)" if name in UNMEASURED else ""
        raise SweepError(f"{source}: [sweep] metric {text!r} is not a summary figure{why}; "
                         f"one of: {', '.join(numeric_fields())}")
    return Metric(name, sign)


def parse_grid(text: str | bytes, config: Any, source: str = "grid") -> Grid:
    """The grid of ``text`` over the base ``config``: keys checked against the config's type,
    values and strategy parameters checked by applying them, before anything runs."""
    from bot.ops.config import ConfigError, decode_config, decode_toml

    table = decode_toml(text, source)
    try:
        sweep = decode_config(table.pop("sweep", {}), SweepConfig, source=f"{source} [sweep]")
    except ConfigError as exc:
        raise SweepError(str(exc)) from None
    axes: dict[str, tuple[Any, ...]] = {}
    for key, values in _leaves(table):
        if not isinstance(values, list) or not values:
            raise SweepError(f"{source}: `{key}` must be a non-empty list of values, got {_text(values)}")
        check_key(key, type(config), source)
        axes[key] = tuple(values)
    seeds = sweep.seeds or (config.backtest.seed,)
    if len(set(seeds)) != len(seeds):
        raise SweepError(f"{source}: [sweep] seeds repeat a seed: {list(seeds)}")
    grid = Grid(axes=axes, seeds=tuple(seeds), metric=parse_metric(sweep.metric, source), study=sweep.optuna, source=source)
    if not axes and not sweep.seeds and sweep.optuna is None:
        raise SweepError(f"{source}: nothing to sweep: no dotted config key with a list of values "
                         "(config/sweep.example.toml), nor [sweep] seeds to run the base config over")
    if grid.study is not None:
        _check_study(grid, type(config))
    runs = grid.size * len(grid.seeds)
    if runs > MAX_RUNS:
        raise SweepError(f"{source}: {grid.size:,} sets x {len(seeds)} seeds make {runs:,} backtests; "
                         f"a sweep runs at most {MAX_RUNS:,}")
    for key, values in axes.items():  # each value alone, so a bad one is named by itself
        for value in values:
            prepare(config, {key: value}, source)
    if grid.study is not None:
        for key, r in grid.study.ranges.items():
            for value in (r.low, r.high):
                prepare(config, {key: value}, source)
    else:
        for params in grid.sets():
            prepare(config, params, source)
    return grid


def load_grid(path: str | os.PathLike[str], config: Any) -> Grid:
    """Read and parse a grid file."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise SweepError(f"{p}: cannot read ({exc.strerror})") from None
    return parse_grid(raw, config, source=str(p))


def _leaves(table: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of every leaf of a parsed TOML table: quoted dotted keys and nested
    tables name keys alike."""
    for key, value in table.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict):
            yield from _leaves(value, path)
        else:
            yield path, value


def _check_study(grid: Grid, type_: type) -> None:
    study = grid.study
    assert study is not None
    for key in study.ranges:
        check_key(key, type_, grid.source)
        if key in grid.axes:
            raise SweepError(f"{grid.source}: `{key}` is both a list of choices and a range")
    if not grid.axes and not study.ranges:
        raise SweepError(f"{grid.source}: [sweep.optuna] has nothing to search: no lists and no ranges")
    for key, values in grid.axes.items():
        if any(v is not None and not isinstance(v, (bool, int, float, str)) for v in values):
            raise SweepError(f"{grid.source}: `{key}`: a study chooses among numbers, strings and booleans only")


def check_key(key: str, type_: type, source: str = "grid") -> None:
    """``key`` names a setting of ``type_`` (a config Struct), or lies inside one of its free
    tables (``strategy.params.*``, checked by the strategy when the set is applied)."""
    t: Any = mi.type_info(type_)
    parts = key.split(".")
    for i, part in enumerate(parts):
        t = _table_type(t)
        where = ".".join(parts[:i])
        if isinstance(t, mi.DictType):
            return
        if not isinstance(t, mi.StructType):
            raise SweepError(f"{source}: unknown config key `{key}`: `{where}` is a value, not a table")
        fields = {f.encode_name: f.type for f in t.fields}
        if part not in fields:
            section = f"[{where}]" if where else "the config"
            raise SweepError(f"{source}: unknown config key `{key}`: {section} has {', '.join(fields)}")
        t = fields[part]
    if isinstance(_table_type(t), mi.StructType):
        raise SweepError(f"{source}: `{key}` is a table; sweep one of its keys")


def _table_type(t: Any) -> Any:
    while isinstance(t, mi.Metadata):
        t = t.type
    if isinstance(t, mi.UnionType):
        tables = [m for m in t.types if isinstance(m, (mi.StructType, mi.DictType))]
        if tables:
            return tables[0]
    return t


# --------------------------------------------------------------------------------------------
# Parameter sets applied to the base config


def apply_params(config: T, params: Mapping[str, Any], source: str = "grid") -> T:
    """``config`` with each dotted key of ``params`` set to its value, rebuilt and validated as a
    config file is (``ConfigError`` naming the key); ``config`` itself when ``params`` is empty.
    The values are as a config file writes them (shares, USDC); the rest of ``config`` is already
    in micro-units and is not converted again."""
    from bot.core.quantities import QuantityError, in_units
    from bot.ops.config import OFF, ConfigError, decode_config, switch_off

    if not params:
        return config
    written: dict[str, Any] = {}
    for key, value in params.items():
        node = written
        *head, last = key.split(".")
        for part in head:
            node = node.setdefault(part, {})
        node[last] = value
    try:
        converted = in_units(switch_off(written, type(config)), type(config), off=OFF)
    except QuantityError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    table = msgspec.to_builtins(config)  # in micro-units: only the set's values are as written
    for key in params:  # each value replaces what is at its key, whole
        node, value = table, converted
        *head, last = key.split(".")
        for part in head:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node, value = node[part], value[part]
        node[last] = value[last]
    return decode_config(table, type(config), source, written=False)


def prepare(config: T, params: Mapping[str, Any], source: str = "grid") -> T:
    """``apply_params``, and the strategy built with the set's parameters: what a worker would
    refuse, refused here in one line naming the set."""
    from bot.ops.config import ConfigError
    from bot.strategy import StrategyError, load_strategy

    where = f"{source} ({describe(params)})" if params else source
    try:
        out = apply_params(config, params, where)
        strategy = getattr(out, "strategy", None)
        if strategy is not None and strategy.path:
            load_strategy(strategy.path, strategy.params)
    except ConfigError as exc:
        raise SweepError(str(exc)) from None
    except StrategyError as exc:
        raise SweepError(f"{where}: {exc}") from None
    return out


def describe(params: Mapping[str, Any]) -> str:
    """``key=value, ...`` with values as TOML would write them."""
    return ", ".join(f"{k}={_text(v)}" for k, v in params.items()) or "the base config"


def _text(value: Any) -> str:
    return msgspec.json.encode(value).decode()


# --------------------------------------------------------------------------------------------
# Running


class Ranked(msgspec.Struct, frozen=True, kw_only=True):
    """A parameter set's place: ``score`` is the mean of the metric over its runs, times the
    metric's sign (higher is better; exact fractions for integer figures), None when a run failed."""

    rank: int
    set: int
    params: dict[str, Any]
    runs: tuple[int, ...]
    score: Any
    failed: int


class SweepResult(msgspec.Struct, frozen=True, kw_only=True):
    """Every run's outcome (by run number: set * len(seeds) + seed's place) and the ranking."""

    grid: Grid
    sets: list[dict[str, Any]]
    outcomes: list[Outcome]
    ranking: list[Ranked]
    interrupted: bool = False  # stopped (Ctrl-C) before every run was done: the finished runs only

    @property
    def planned(self) -> int:
        """The runs the sweep set out to do (the grid's or the study's sets, once per seed)."""
        sets = self.grid.study.trials if self.grid.study is not None else self.grid.size
        return sets * len(self.grid.seeds)

    @property
    def best(self) -> Ranked | None:
        top = self.ranking[0] if self.ranking else None
        return top if top is not None and top.score is not None else None


def run_sweep(config: Any, grid: Grid, paths: Sequence[str | os.PathLike[str]], executor: Executor, *,
              runs_dir: Path | None = None, on_outcome: Callable[[Outcome], None] | None = None) -> SweepResult:
    """Run every set of ``grid`` (or its study's trials) once per seed on ``executor``; each run
    writes its results folder under ``runs_dir`` when given (else only its summary is kept).

    An interrupt (Ctrl-C) stops the sweep, not the result: the runs finished by then are kept and
    ranked (the sets with every run done), and the result says it is ``interrupted``."""
    data = tuple(str(p) for p in paths)
    seeds = grid.seeds
    interrupted = False

    def jobs(numbered: Iterable[tuple[int, dict[str, Any]]]) -> Iterator[Job]:
        for index, params in numbered:
            applied = apply_params(config, params, grid.source)
            for k, seed in enumerate(seeds):
                run = index * len(seeds) + k
                out = str(runs_dir / f"{run:05d}-seed{seed}") if runs_dir is not None else None
                yield Job(run=run, config=applied, params=params, seed=seed, paths=data, out=out)

    def collect(outcomes: Iterable[Outcome]) -> list[Outcome]:
        nonlocal interrupted
        got: list[Outcome] = []
        if interrupted:
            return got
        try:
            for o in outcomes:
                got.append(o)
                if on_outcome is not None:
                    on_outcome(o)
        except KeyboardInterrupt:
            interrupted = True
        return got

    if grid.study is None:
        sets = list(grid.sets())
        outcomes = collect(executor.run(jobs(enumerate(sets))))
    else:
        sets, outcomes = _study(config, grid, executor, jobs, collect, lambda: interrupted)
    outcomes.sort(key=lambda o: o.run)
    ranking = rank(sets, outcomes, grid.metric, len(seeds))
    if interrupted:  # a set some of whose runs never ran has no score to rank: left out
        ranking = [msgspec.structs.replace(r, rank=place) for place, r in
                   enumerate((r for r in ranking if len(r.runs) == len(seeds)), 1)]
    return SweepResult(grid=grid, sets=sets, outcomes=outcomes, ranking=ranking, interrupted=interrupted)


def _study(config: Any, grid: Grid, executor: Executor, jobs: Callable[..., Iterator[Job]],
           collect: Callable[[Iterable[Outcome]], list[Outcome]],
           stopped: Callable[[], bool] = lambda: False) -> tuple[list[dict[str, Any]], list[Outcome]]:
    """Ask the study ``batch`` sets, run them, tell their scores in set order; until ``trials``."""
    optuna = _optuna()
    study_config = grid.study
    assert study_config is not None
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=study_config.seed))
    sets: list[dict[str, Any]] = []
    outcomes: list[Outcome] = []
    n = len(grid.seeds)
    while len(sets) < study_config.trials and not stopped():
        trials = [study.ask() for _ in range(min(study_config.batch, study_config.trials - len(sets)))]
        batch: list[tuple[int, dict[str, Any]]] = []
        refused: list[Outcome] = []
        for trial in trials:
            params = {key: trial.suggest_categorical(key, list(values)) for key, values in grid.axes.items()}
            for key, r in study_config.ranges.items():
                params[key] = _suggest(trial, key, r)
            index = len(sets)
            sets.append(params)
            try:
                prepare(config, params, grid.source)
            except SweepError as exc:  # a combination the config refuses: a failed trial
                refused += [Outcome(run=index * n + k, params=params, seed=s, error=str(exc))
                            for k, s in enumerate(grid.seeds)]
                continue
            batch.append((index, params))
        done = collect(executor.run(jobs(batch))) + collect(refused)
        outcomes += done
        by_set: dict[int, list[Outcome]] = {}
        for o in done:
            by_set.setdefault(o.run // n, []).append(o)
        for trial, index in zip(trials, range(len(sets) - len(trials), len(sets))):
            score = score_of(by_set.get(index, []), grid.metric, n)
            if score is None:
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(trial, float(score))
    return sets, outcomes


def _optuna() -> Any:
    try:
        import optuna
    except ImportError:
        raise SweepError("[sweep.optuna] needs Optuna, which is not installed: pip install 'pmbot[optuna]'") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def _suggest(trial: Any, key: str, r: StudyRange) -> int | float:
    if r.integer:
        return trial.suggest_int(key, r.low, r.high, step=r.step or 1, log=r.log)
    return trial.suggest_float(key, float(r.low), float(r.high), step=r.step, log=r.log)


def score_of(outcomes: Sequence[Outcome], metric: Metric, runs: int) -> Fraction | float | None:
    """The mean of ``metric`` over a set's ``runs`` outcomes, times its sign; None unless every
    run came back with a summary."""
    if len(outcomes) != runs or any(o.summary is None for o in outcomes):
        return None
    values = [getattr(o.summary, metric.field) for o in outcomes]
    if all(type(v) is int for v in values):
        return Fraction(sum(values), len(values)) * metric.sign
    return math.fsum(values) / len(values) * metric.sign


def rank(sets: Sequence[Mapping[str, Any]], outcomes: Sequence[Outcome], metric: Metric, seeds: int) -> list[Ranked]:
    """The sets best first: by score, then in the grid's order; sets with a failed run last."""
    by_set: dict[int, list[Outcome]] = {i: [] for i in range(len(sets))}
    for o in outcomes:
        by_set[o.run // seeds].append(o)
    scored = [(score_of(got, metric, seeds), i) for i, got in by_set.items()]
    scored.sort(key=lambda si: (si[0] is None, -si[0] if si[0] is not None else 0, si[1]))
    return [Ranked(rank=place, set=i, params=dict(sets[i]), runs=tuple(o.run for o in by_set[i]), score=score,
                   failed=sum(1 for o in by_set[i] if o.summary is None) + seeds - len(by_set[i]))
            for place, (score, i) in enumerate(scored, 1)]


# --------------------------------------------------------------------------------------------
# Results files


def mean_text(field: str, value: Fraction | float | int | None) -> str:
    """A mean figure as text: micro-unit figures in USDC or shares (exact to the micro-unit),
    counts as integers or to two places, ratios to four significant digits."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    if field in MICRO_FIELDS:
        from bot.venue.units import format_units

        return format_units(round(value))
    return str(value) if Fraction(value).denominator == 1 else f"{float(value):,.2f}"


def exact_text(value: Fraction | float | None) -> str | None:
    """A score for a results file: an integer, or a decimal to six places, or a float's repr."""
    if value is None or isinstance(value, float):
        return None if value is None else repr(value)
    f = Fraction(value)
    if f.denominator == 1:
        return str(f.numerator)
    return str((Decimal(f.numerator) / Decimal(f.denominator)).quantize(MICRO))


def ranked_row(r: Ranked) -> dict[str, Any]:
    """A ranked set for a results file (its score as ``exact_text``)."""
    return {"rank": r.rank, "set": r.set, "params": r.params, "runs": list(r.runs), "score": exact_text(r.score),
            "failed": r.failed}


CSV_SUMMARY = tuple(f.name for f in mi.type_info(Summary).fields
                    if f.name not in ("mode", "inventory", "final_position", "assumptions", "seed"))


def write_results(folder: Path, result: SweepResult, *, data: Sequence[str], executor: str, workers: int) -> None:
    """``results.json`` (the sweep, every run, the ranking) and ``results.csv`` (one row per run)."""
    grid = result.grid
    doc = {
        "grid": grid.source, "metric": grid.metric.name, "seeds": list(grid.seeds), "data": list(data),
        "executor": executor, "workers": workers,
        "study": msgspec.to_builtins(grid.study) if grid.study is not None else None,
        "sets": len(result.sets), "partial": result.interrupted, "planned_runs": result.planned,
        "runs": msgspec.to_builtins(result.outcomes),
        "ranking": [ranked_row(r) for r in result.ranking],
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_bytes(msgspec.json.format(msgspec.json.encode(doc), indent=2) + b"\n")
    keys: dict[str, None] = dict.fromkeys(k for s in result.sets for k in s)
    with (folder / "results.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["run", "set", "seed", *keys, "error", "peak_rss", *CSV_SUMMARY])
        n = len(grid.seeds)
        for o in result.outcomes:
            s = o.summary
            w.writerow([o.run, o.run // n, o.seed, *(_cell(o.params[k]) if k in o.params else "" for k in keys),
                        o.error or "", o.peak_rss, *(getattr(s, f) if s is not None else "" for f in CSV_SUMMARY)])


def _cell(value: Any) -> str:
    return value if isinstance(value, str) else _text(value)


def config_toml(config: Any, comment: str = "") -> str:
    """``config`` as a TOML config file that decodes back to it, after ``comment`` lines: the
    settings that differ from the defaults (``changed``), ``None`` written as ``"off"``, sizes and
    amounts in shares and USDC (``as_written``)."""
    import tomli_w

    from bot.core.quantities import as_written
    from bot.ops.config import OFF

    def off(value: Any) -> Any:
        if value is None:
            return OFF
        if isinstance(value, dict):
            return {k: off(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):  # a list, or an array of tables ([[strategies]])
            return [off(v) for v in value]
        return value

    head = "".join(f"# {line}\n" for line in comment.splitlines())
    return head + tomli_w.dumps(off(as_written(changed(config), type(config))))


def changed(table: msgspec.Struct) -> dict[str, Any]:
    """The keys of a config table (a Struct) whose values differ from what a file that leaves them
    out would decode to: the defaults of the table's own type (a table written in a file takes
    its missing keys from its type, not from the default of the table above it). Nested tables
    recursively, any other value whole."""
    try:
        fresh = type(table)()
    except TypeError:  # a table with required keys: written whole
        return msgspec.to_builtins(table)
    out: dict[str, Any] = {}
    for f in msgspec.structs.fields(table):
        value = getattr(table, f.name)
        if value == getattr(fresh, f.name):
            continue
        out[f.encode_name] = changed(value) if isinstance(value, msgspec.Struct) else msgspec.to_builtins(value)
    return out


# --------------------------------------------------------------------------------------------
# The command

SWEEP_FILES = ("results.json", "results.csv", "best.toml", "runs")  # what a sweep writes into its folder


def run(config: Any, args: Any) -> int:
    """Entry point of ``bot sweep``: returns the exit code."""
    from bot.backtest.executors import LOCAL_RAY, ExecutorError, open_executor
    from bot.backtest.recording import RecordingError
    from bot.ops.config import ConfigError

    from bot.backtest.cli import dataset_choice

    config = dataset_choice(config, args)
    try:
        grid = load_grid(args.grid, config)
        check_data(args.data, config)
        note = seeds_note(config, grid)
        if note is not None:
            print(note, file=sys.stderr)
        runs = grid.size * len(grid.seeds)
        in_parallel = runs if grid.study is None else min(grid.study.batch, grid.size) * len(grid.seeds)
        cluster = bool(args.ray) and args.ray != LOCAL_RAY  # a cluster's CPUs, unless told
        workers = args.workers or (None if cluster else os.cpu_count() or 1)
        workers = min(workers, in_parallel) if workers else None
        out = Path(args.out) if args.out else Path("results") / time.strftime("sweep-%Y%m%d-%H%M%S")
        refused = claim(out, "bot sweep", force=getattr(args, "force", False), names=SWEEP_FILES)
        if refused is not None:
            print(refused, file=sys.stderr)
            return 2
        with open_executor(workers, args.ray) as executor:
            show = _progress(runs, f"sweep on {executor.name}, {executor.workers} worker(s)",
                             enabled=not args.no_progress)
            try:
                result = run_sweep(config, grid, args.data, executor,
                                   runs_dir=out / "runs" if args.keep_runs else None, on_outcome=show)
            finally:
                show(None)
    except (SweepError, ExecutorError, RecordingError, ConfigError) as exc:
        print(f"bot sweep: {exc}", file=sys.stderr)
        return 2
    write_results(out, result, data=[str(p) for p in args.data], executor=executor.name, workers=executor.workers)
    best = result.best
    written: list[Path] = []
    if best is not None:
        text = config_toml(apply_params(config, best.params, grid.source),
                           f"bot sweep: the best of {len(result.sets)} parameter set(s) by {grid.metric.name} "
                           f"(mean over seeds {', '.join(map(str, grid.seeds))}): {describe(best.params)}\n"
                           f"results: {out / 'results.json'}")
        for path in (out / "best.toml", *([Path(args.best)] if args.best else [])):
            path.write_text(text)
            written.append(path)
    if args.json:
        rows = [ranked_row(r) for r in result.ranking]
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(rows), indent=2).decode() + "\n")
    else:
        from rich.console import Console

        console = Console(file=sys.stdout)
        console.print(ranking_table(result, top=args.top))
        print(f"results: {out / 'results.json'}, {out / 'results.csv'}")
        for path in written:
            print(f"best config: {path}")
    if result.interrupted:
        print(f"bot sweep: interrupted after {len(result.outcomes)} of {result.planned} run(s); the finished runs "
              f"and the ranking of the sets they complete are in {out / 'results.json'} (partial)", file=sys.stderr)
        return EXIT_INTERRUPTED
    failed = [o for o in result.outcomes if o.summary is None]
    if failed:
        first = failed[0]
        print(f"bot sweep: {len(failed)} of {len(result.outcomes)} run(s) failed; first: run {first.run} "
              f"({describe(first.params)}, seed {first.seed}): {first.error}", file=sys.stderr)
        return 2
    return 0


def seeds_note(config: Any, grid: Grid) -> str | None:
    """A line saying the seeds cannot change any result, when ``grid`` runs more than one seed and
    no set of it draws anything at random (constant latency, the deterministic queue models, no
    settlement retries or failures): the seeds would repeat the same runs."""
    from bot.sim.latency import is_random

    if len(grid.seeds) < 2 or grid.study is not None:
        return None

    def draws(cfg: Any) -> bool:
        sim = cfg.sim
        return is_random(sim.latency) or sim.settlement.retry_share > 0 or sim.settlement.fail_share > 0

    if any(draws(apply_params(config, params, grid.source)) for params in grid.sets()):
        return None
    return (f"note: seeds {', '.join(map(str, grid.seeds))} give the same results: nothing in these sets draws "
            "at random (constant latency, a deterministic queue model, no settlement retries or failures); "
            'sim.latency.kind = "lognormal" draws latencies from each seed')




def check_data(paths: Sequence[str | os.PathLike[str]], config: Any = None) -> None:
    """Every data path exists, the recordings among them are recordings (their headers are
    read), and the markets ``config`` chooses from top-of-book files among them exist, before
    any worker starts."""
    from bot.backtest.sources import split_sources
    from bot.backtest.replay import markets

    for p in map(Path, paths):
        if not p.exists():
            raise SweepError(f"{p}: no such file or folder")
    recordings, tables = split_sources(paths)
    if recordings:
        markets(recordings)
    if tables and config is not None:
        from bot.backtest.dataset import choose_markets

        bt = config.backtest
        choose_markets(tables, slugs=bt.dataset_slugs, category=bt.dataset_category, count=bt.dataset_markets,
                       rank=bt.dataset_rank)


SHOWN = ("pnl", "max_drawdown", "fills", "orders_sent")
"""The figures of the ranked table besides the metric (means over the seeds)."""

FIGURE_NAMES = {"pnl": "PnL (USDC)", "max_drawdown": "max drawdown (USDC)", "orders_sent": "orders",
                "realized": "realized (USDC)", "unrealized": "unrealized (USDC)", "fees": "fees (USDC)",
                "notional": "notional (USDC)", "volume": "volume (shares)"}


def short_names(keys: Sequence[str]) -> dict[str, str]:
    """Each dotted key by its shortest ending that no other key shares (``entry`` for
    ``sim.latency.entry``), for table headers."""
    out = {}
    for key in keys:
        parts = key.split(".")
        for n in range(1, len(parts) + 1):
            tail = ".".join(parts[-n:])
            if not any(other != key and (other == tail or other.endswith("." + tail)) for other in keys):
                break
        out[key] = tail
    return out


def ranking_table(result: SweepResult, top: int = 10) -> Any:
    """The best ``top`` sets as a rich table: their values, the metric and a few figures."""
    from rich.table import Table

    grid = result.grid
    n = len(grid.seeds)
    figures = [grid.metric.field, *(f for f in SHOWN if f != grid.metric.field)]
    keys = list(dict.fromkeys(k for s in result.sets for k in s))
    names = short_names(keys)
    t = Table(title=f"{len(result.sets)} parameter set(s) x {n} seed(s), ranked by {grid.metric.name}"
                    + (" (mean over seeds)" if n > 1 else "")
                    + (f"; PARTIAL: interrupted after {len(result.outcomes)} of {result.planned} runs"
                       if result.interrupted else ""))
    t.add_column("#", justify="right")
    for k in keys:
        t.add_column(names[k], justify="right")
    for f in figures:
        t.add_column(FIGURE_NAMES.get(f, f), justify="right")
    by_run = {o.run: o for o in result.outcomes}
    for r in result.ranking[:top]:
        got = [by_run[i] for i in r.runs]
        cells = []
        for f in figures:
            unsigned = score_of(got, Metric(f), n)
            cells.append(mean_text(f, unsigned) if unsigned is not None else f"failed ({r.failed})")
        t.add_row(str(r.rank), *(_cell(r.params[k]) if k in r.params else "" for k in keys), *cells)
    if len(result.ranking) > top:
        t.caption = f"and {len(result.ranking) - top} more in results.csv"
    return t


def _progress(total: int, title: str, *, enabled: bool) -> Callable[[Outcome | None], None]:
    """A progress bar of the runs on a terminal (stderr); nothing otherwise. Called with each
    outcome, then with None to stop."""
    if not enabled or not sys.stderr.isatty():
        return lambda outcome: None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TimeRemainingColumn(), console=Console(file=sys.stderr), transient=True)
    task = bar.add_task(title, total=total)
    bar.start()
    failed = 0

    def show(outcome: Outcome | None) -> None:
        nonlocal failed
        if outcome is None:
            bar.stop()
            return
        if outcome.summary is None:
            failed += 1
            bar.update(task, description=f"{title}, {failed} failed")
        bar.advance(task)

    return show

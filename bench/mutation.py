"""Mutation scores of the money- and order-safety modules, one line per module.

``make mutation`` (or ``.venv/bin/python -m bench.mutation [diff orders ...]``) copies the tree as
git sees it (tracked and untracked files, no ignored ones: no compiled extension shadows a source)
into a scratch folder, then for each module of ``bench/mutation.toml`` runs mutmut there with only
that module mutated and only its own tests selected, and prints its score: killed (or timed out)
over all mutants. Every survivor must be named in the module's ``equivalent`` table with the
reason no test can tell it apart; the run fails (exit 1) on any other survivor, printing its diff,
or on a score under ``--min-score``. ``--sample N`` tests a seeded random sample of N mutants per
module instead of all. Needs ``requirements-mutation.lock`` (``make mutation`` installs it).

``--keep DIR`` makes a run resumable: each module is mutated in its own folder ``DIR/<module>``,
which holds mutmut's results, and a run stopped half way goes on from the mutants it had tested
as long as the module, its tests and this tool are unchanged (otherwise that module starts
afresh). Modules in their own folders can also run at once from two commands sharing ``DIR``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONFIG = Path(__file__).with_name("mutation.toml")
SOURCE_ROOTS = ("bot", "strategies")  # copied into mutmut's tree so that every import resolves
KILLED = frozenset({"killed", "timeout", "caught by type check"})
# no example database: a failure found for one mutant is not replayed against the next
MUTMUT_ENV = {"HYPOTHESIS_STORAGE_DIRECTORY": os.devnull + "/none"}


@dataclass(frozen=True)
class Target:
    """One module to mutate, the tests that must kill its mutants, and its known equivalents."""

    path: str
    tests: tuple[str, ...]
    equivalent: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return Path(self.path).stem

    @property
    def dotted(self) -> str:
        return self.path.removesuffix(".py").replace("/", ".")


@dataclass(frozen=True)
class Score:
    target: Target
    status: dict[str, str]  # mutant name -> mutmut's status (of the sample, when sampled)
    seconds: float
    generated: int = 0  # mutants of the module in all, when ``status`` holds a sample of them

    @property
    def total(self) -> int:
        return sum(1 for s in self.status.values() if s != "skipped")

    @property
    def killed(self) -> int:
        return sum(1 for s in self.status.values() if s in KILLED)

    @property
    def survivors(self) -> list[str]:
        return sorted(m for m, s in self.status.items() if s not in KILLED and s != "skipped")

    @property
    def unexplained(self) -> list[str]:
        return [m for m in self.survivors if m not in self.target.equivalent]

    @property
    def percent(self) -> float:
        return 100.0 * self.killed / self.total if self.total else 100.0


def load_targets(path: Path = CONFIG) -> list[Target]:
    table = tomllib.loads(path.read_text())
    return [Target(m["path"], tuple(m["tests"]), dict(m.get("equivalent", {}))) for m in table["module"]]


def scratch_copy(dest: Path) -> None:
    """The working tree as git sees it (ignored files, such as compiled modules, left out)."""
    names = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, check=True, capture_output=True,
    ).stdout.decode().split("\0")
    for name in filter(None, names):
        src = REPO / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def mutmut_config(target: Target) -> str:
    lines = ["[mutmut]", "source_paths =", *(f"    {r}" for r in SOURCE_ROOTS),
             f"only_mutate = {target.path}", "pytest_add_cli_args_test_selection ="]
    lines += [f"    {t}" for t in target.tests]
    # every property test draws the same examples for every mutant: a kill is decided the same way each run
    lines += ["pytest_add_cli_args = -p no:cacheprovider -q --hypothesis-seed=0", "use_git_change_detection = false", ""]
    return "\n".join(lines)


def fingerprint(target: Target, sample: int, seed: int) -> str:
    """What a module's results depend on: its source, its tests, how mutmut runs them, the sample."""
    h = hashlib.sha256(f"{mutmut_config(target)}|{sample}|{seed}|{sorted(MUTMUT_ENV.items())}".encode())
    for name in (target.path, *target.tests):
        h.update((REPO / name).read_bytes())
    return h.hexdigest()


def prepare(target: Target, tree: Path, sample: int, seed: int) -> bool:
    """A scratch tree for ``target`` in ``tree``: the one left there by an earlier run of the
    same module, tests and tool (returns True: mutmut resumes from its results), or a fresh copy."""
    mark = tree / ".mutation-fingerprint"
    want = fingerprint(target, sample, seed)
    if mark.exists() and mark.read_text() == want and (tree / "mutants").is_dir():
        return True
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir(parents=True)
    scratch_copy(tree)
    (tree / "setup.cfg").write_text(mutmut_config(target))
    mark.write_text(want)
    return False


def run_target(target: Target, tree: Path, jobs: int, sample: int = 0, seed: int = 1) -> Score:
    """Mutate ``target`` in ``tree`` (prepared by ``prepare``) and test its mutants: all of them,
    or a seeded random ``sample`` of them (the mutants are generated first, then only the sample
    is tested). Mutants already tested there keep their results."""
    env = dict(os.environ, BOT_SHARED_DIR=str(REPO.parent / "shared"), **MUTMUT_ENV)
    mutmut = [sys.executable, "-m", "mutmut"]

    def mutmut_run(*names: str, check: bool = True) -> None:
        run = subprocess.run([*mutmut, "run", "--max-children", str(jobs), *names], cwd=tree, env=env,
                             capture_output=True, text=True)
        if check and run.returncode != 0:
            tail = "\n".join((run.stdout + run.stderr).strip().splitlines()[-30:])
            raise RuntimeError(f"mutmut run failed for {target.path}:\n{tail}")

    def results() -> dict[str, str]:
        out = subprocess.run([*mutmut, "results", "--all", "true"], cwd=tree, env=env,
                             capture_output=True, text=True, check=True).stdout
        found = {}
        for line in out.splitlines():
            name, sep, state = line.strip().rpartition(": ")
            if sep and name.startswith(target.dotted + "."):
                found[name] = state
        return found

    start = time.monotonic()
    generated = 0
    if sample:
        # generates every mutant and times the tests, then stops: the name matches no mutant
        mutmut_run(target.dotted + ".__none__", check=False)
        names = sorted(results())
        generated = len(names)
        chosen = sorted(random.Random(seed).sample(names, min(sample, generated)))
        mutmut_run(*chosen)
        status = {k: v for k, v in results().items() if k in set(chosen)}
    else:
        mutmut_run()
        status = results()
    seconds = time.monotonic() - start
    score = Score(target, status, seconds, generated)
    if score.unexplained:  # their diffs, from one process (``mutmut show`` costs seconds each)
        show = "import sys, mutmut.__main__ as m\nfor n in sys.argv[1:]: m.show.callback(n)"
        shown = subprocess.run([sys.executable, "-c", show, *score.unexplained], cwd=tree, env=env,
                               capture_output=True, text=True)
        print(shown.stdout.rstrip(), flush=True)
    return score


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mutation", description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="module names to run (diff, orders, ...); default all")
    parser.add_argument("--jobs", type=int, default=2, help="mutants tested at once (default 2)")
    parser.add_argument("--min-score", type=float, default=90.0, help="lowest passing score in percent")
    parser.add_argument("--keep", type=Path,
                        help="folder of the modules' scratch trees, kept to resume a stopped run (default: a temporary one)")
    parser.add_argument("--sample", type=int, default=0, metavar="N",
                        help="test a seeded random sample of N mutants per module (default: all)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the sample (default 1)")
    args = parser.parse_args(argv)
    targets = [t for t in load_targets() if not args.modules or t.name in args.modules]
    if not targets:
        parser.error(f"no such module in {CONFIG.name}: {', '.join(args.modules)}")
    tree = args.keep or Path(tempfile.mkdtemp(prefix="pmbot-mutation-"))
    tree.mkdir(parents=True, exist_ok=True)
    failed = False
    started = time.monotonic()
    try:
        header = f"{'module':<28} {'mutants':>7} {'killed':>7} {'equiv.':>6} {'other':>6} {'score':>7} {'time':>6}"
        print(header)
        rows: list[str] = []
        for target in targets:
            resumed = prepare(target, tree / target.name, args.sample, args.seed)
            s = run_target(target, tree / target.name, args.jobs, args.sample, args.seed)
            other = len(s.unexplained)
            bad = other > 0 or s.percent < args.min_score
            failed |= bad
            equiv = len(s.survivors) - other
            sampled = f"  (a sample of {s.total} of {s.generated})" if s.generated else ""
            rows.append(f"{target.path:<28} {s.total:>7} {s.killed:>7} {equiv:>6} {other:>6} {s.percent:>6.1f}% "
                        f"{s.seconds:>5.0f}s{'  FAIL' if bad else ''}{sampled}{'  (resumed)' if resumed else ''}")
            print(rows[-1], flush=True)
            for name in s.unexplained:
                print(f"    survivor not shown equivalent: {name} ({s.status[name]})")
        if len(rows) > 1:  # the whole table again, after any survivor's diff printed between its rows
            print("\n" + "\n".join([header, *rows]))
    finally:
        if args.keep is None:
            shutil.rmtree(tree, ignore_errors=True)
    print(f"{len(targets)} modules in {time.monotonic() - started:.0f}s, load average {os.getloadavg()[0]:.1f}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

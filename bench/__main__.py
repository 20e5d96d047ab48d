"""Run every ``bench/bench_*.py`` module's ``main()`` in turn (name order), or those named."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    wanted = set(sys.argv[1:] if argv is None else argv)
    names = sorted(p.stem for p in Path(__file__).parent.glob("bench_*.py"))
    failed = 0
    for name in names:
        if wanted and name not in wanted and name.removeprefix("bench_") not in wanted:
            continue
        print(f"== {name}", flush=True)
        module = importlib.import_module(f"bench.{name}")
        try:
            module.main()
        except Exception as exc:  # one broken bench must not hide the others' figures
            failed += 1
            print(f"{name} failed: {type(exc).__name__}: {exc}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

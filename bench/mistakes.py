"""A new user's first week: run every ordinary mistake of ``tests/mistakes.py`` and count the clean
answers (one line on stderr with the expected words and exit code, no traceback, no secret,
nothing written that should not be); a command still running after a minute counts as unclean.

    .venv/bin/python -m bench.mistakes [-v]

prints ``N mistakes, M clean answers`` and each unclean one with what is wrong and its first line
(``-v``: every answer's line).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


CASE_S = 60  # a mistake still unanswered after this long is a hang: unclean, and the walk goes on


@contextlib.contextmanager
def _answer_within(seconds: int) -> Iterator[None]:
    """A command still running after ``seconds`` gets ``TimeoutError`` (so a hang is counted, not waited on)."""
    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"no answer within {seconds} s")

    before = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


def main(argv: list[str] | None = None) -> int:
    from tests.mistakes import MISTAKES, Places, exchange_urls, first_line, needs_venue, run

    verbose = "-v" in (sys.argv[1:] if argv is None else argv)
    ex = None
    if needs_venue():
        from tests.integration.exchange_fixture import start_exchange

        ex = start_exchange()
    places = Places(exchange_urls(ex) if ex else None)
    unclean: list[str] = []
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="mistakes-") as scratch:
            for i, mistake in enumerate(MISTAKES):
                folder = Path(scratch) / f"{i:03d}"
                folder.mkdir()
                began = time.monotonic()
                with _answer_within(CASE_S):
                    answer, wrong = run(mistake, folder, places)
                took = time.monotonic() - began
                if took > CASE_S:  # a command blocked where no signal reaches Python answered, but late
                    wrong.append(f"answered after {took:.0f} s")
                if wrong:
                    unclean.append(f"  {mistake.id}: {'; '.join(wrong)}\n      {first_line(answer)[:300]}")
                elif verbose:
                    print(f"  ok {mistake.id}: {first_line(answer)[:200]}")
    finally:
        if ex is not None:
            ex.stop()
    print(f"{len(MISTAKES)} mistakes, {len(MISTAKES) - len(unclean)} clean answers "
          f"({time.monotonic() - started:.1f} s)")
    for line in unclean:
        print(line)
    return 0 if not unclean else 1


if __name__ == "__main__":
    raise SystemExit(main())

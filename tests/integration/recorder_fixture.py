"""``bot record`` as a subprocess for tests: started on one market, returned once its REST
snapshots of every token are readable in the recording (so a live bot started afterwards quotes
on books the recording has), stopped with SIGTERM at the end (a clean exit is asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bot.backtest.recording import BookLine, FileReader, RecordingError
from tests.integration.exchange_fixture import wait_for

REPO = Path(__file__).resolve().parents[2]


def snapshots_recorded(folder: Path) -> bool:
    """Whether every token the recording is about has a REST snapshot in its readable blocks."""
    for path in sorted(folder.glob("*.jsonl.zst")):
        try:
            reader = FileReader(path)
        except RecordingError:  # the header's block is not written yet
            return False
        try:
            wanted = set(reader.header.all_tokens())
            seen = {rec.book.asset_id for rec in reader if isinstance(rec, BookLine)}
        finally:
            reader.close()
        if wanted and wanted <= seen:
            return True
    return False


@contextmanager
def recording(config: Path, market: str, out: Path, *, duration_s: int, log: Path) -> Iterator[Path]:
    """Record ``market`` into ``out`` for at most ``duration_s``; yields ``out`` once the
    snapshots are in."""
    recorder = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "record", "--config", str(config), "--market", market, "--out", str(out),
         "--duration", str(duration_s), "--flush-s", "0.2", "--prefix", "live"],
        cwd=REPO, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=log.open("w"))
    try:
        wait_for(lambda: recorder.poll() is None and snapshots_recorded(out), deadline_s=20,
                 what="the recording's REST snapshots")
        yield out
    finally:
        recorder.terminate()
        assert recorder.wait(timeout=20) == 0, log.read_text()[-2000:]

"""Which paths a backtest is given are recordings and which top-of-book files (read by
``bot.backtest.dataset``): a file by its suffix, a folder by what it holds, a table by its header.

Invariant: naming recordings alone loads no table library (pyarrow and numpy hold tens of MB
resident once imported); a Parquet file's header is read with pyarrow only when one is found.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from bot.backtest.recording import PLAIN_SUFFIX, SUFFIX, RecordingError

TABLE_SUFFIXES = (".parquet", ".csv")
COLUMNS = ("ts", "slug", "bid", "ask")  # a top-of-book file's columns (``bot.backtest.importer``)


def is_table(path: Path) -> bool:
    """Whether ``path`` is named as a top-of-book file (``.parquet`` or ``.csv``)."""
    return path.suffix.lower() in TABLE_SUFFIXES


def split_sources(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[Path], list[Path]]:
    """``(recordings, top-of-book files)`` of the paths named: files by their suffix; a folder
    for the recordings in it (passed on as the folder) and the top-of-book files under it. A
    path that does not exist, or a folder that holds neither, is a RecordingError."""
    recordings: list[Path] = []
    tables: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            has_recordings = any(q.is_file() and q.name.endswith((SUFFIX, PLAIN_SUFFIX)) for q in p.iterdir())
            found = table_files(p)
            if has_recordings:
                recordings.append(p)
            tables += found
            if not has_recordings and not found:
                raise RecordingError(f"{p}: holds no recording (*{SUFFIX}, *{PLAIN_SUFFIX}) and no top-of-book "
                                     f"file (*.parquet, *.csv with columns {', '.join(COLUMNS)})")
        elif p.is_file():
            (tables if is_table(p) else recordings).append(p)
        else:
            raise RecordingError(f"{p}: no such recording file or directory")
    return recordings, list(dict.fromkeys(tables))


def table_files(folder: Path) -> list[Path]:
    """The top-of-book files under ``folder`` (any depth), sorted by path."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and is_table(p) and _has_columns(p))


def _has_columns(path: Path) -> bool:
    if path.suffix.lower() == ".csv":
        try:
            with path.open("r", encoding="utf-8", errors="replace") as f:
                names = [n.strip().strip('"') for n in f.readline().split(",")]
        except OSError:
            return False
    else:
        import pyarrow as pa  # only for a table: a run of recordings alone never loads it
        import pyarrow.parquet as pq

        try:
            names = pq.read_schema(path).names
        except (OSError, pa.ArrowException):
            return False
    return all(c in names for c in COLUMNS)

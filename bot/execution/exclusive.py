"""One process at a time on a journal (or a results folder): an OS lock on a file beside it.

Invariant: while an ``Exclusive`` is held, no other process can take one on the same path; the
OS releases it when the holder exits, however it ends (even ``kill -9``), so a stale lock never
blocks a restart. The lock file names the holder's pid, for the message a second process gets.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class InUse(ValueError):
    """The path is held by another process (a ``ValueError``: the CLI's one line and exit 2)."""

    def __init__(self, what: str, path: str, pid: str) -> None:
        holder = f"process {pid}" if pid else "another process"
        super().__init__(f"{what} {path} is in use by {holder}; one process at a time: stop it first, "
                         f"or give this run a path of its own")


def lock_path(path: str | Path) -> Path:
    """The lock file beside ``path``: ``state/journal.sqlite`` -> ``state/journal.sqlite.lock``."""
    p = Path(path)
    return p.with_name(p.name + ".lock")


class Exclusive:
    """An exclusive, non-blocking ``flock`` on ``lock_path(path)`` (or, ``inside`` a folder, on
    its ``.lock``), held until ``release`` (or the process ends); ``InUse`` names the pid of the
    process holding it."""

    def __init__(self, path: str | Path, what: str = "journal", *, inside: bool = False) -> None:
        self._fd: int | None = None
        self.path = Path(path) / ".lock" if inside else lock_path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            raise InUse(what, str(path), pid) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the only descriptor releases the lock

    def __del__(self) -> None:
        self.release()

"""Where a sweep's backtests run: a local process pool (spawned processes) or Ray tasks.

Each job is one backtest (``run_backtest``) of one config (the base config with one parameter
set applied) and one seed; its outcome is the run's ``Summary`` (or the one-line reason it could
not run), with the parameter set, the seed and the worker's peak resident memory.

Invariants: an outcome depends only on the job (config, parameters, seed, data), never on the
executor, the worker or the order runs finish in, so the same jobs give the same summaries on
every executor; at most ``2 * workers`` jobs are in flight, so a sweep's memory does not grow
with its length; a worker streams its data (``run_backtest`` does) and keeps nothing of a run
once it has returned its outcome.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import re
import signal
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import msgspec

from bot.results.folder import Summary

IN_FLIGHT = 2  # jobs queued per worker: enough to keep every worker busy, no more
LOCAL_RAY = "local"  # ``--ray local``: start a Ray instance on this machine for the sweep


class ExecutorError(ValueError):
    """An executor that cannot start (Ray not installed, a cluster that cannot be reached)."""


class Job(msgspec.Struct, frozen=True, kw_only=True):
    """One backtest of a sweep: run ``run`` is ``config`` (the base config with ``params``
    applied) on ``paths`` with ``seed``; ``out`` is its results folder to keep, or None for the
    summary only."""

    run: int
    config: Any
    params: dict[str, Any]
    seed: int
    paths: tuple[str, ...]
    out: str | None = None


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    """What one backtest came to: its summary, or ``error`` (one line) when it could not run.
    ``peak_rss``: the worker's peak resident set size in bytes once the run was done."""

    run: int
    params: dict[str, Any]
    seed: int
    summary: Summary | None = None
    error: str | None = None
    peak_rss: int = 0


def run_job(job: Job) -> Outcome:
    """Run one job in this process (the body of every worker)."""
    from bot.backtest.recording import RecordingError
    from bot.backtest.runner import BacktestError, run_backtest
    from bot.strategy import StrategyError

    _quiet()
    try:
        summary = run_backtest(job.config, list(job.paths), out=job.out, seed=job.seed)
    except (BacktestError, RecordingError, StrategyError, OSError) as exc:
        return Outcome(run=job.run, params=job.params, seed=job.seed, error=_one_line(str(exc) or type(exc).__name__),
                       peak_rss=peak_rss())
    except Exception as exc:  # a bug in a strategy or the engine: reported with the run, not a dead pool
        return Outcome(run=job.run, params=job.params, seed=job.seed,
                       error=_one_line(f"{type(exc).__name__}: {exc}"), peak_rss=peak_rss())
    return Outcome(run=job.run, params=job.params, seed=job.seed, summary=summary, peak_rss=peak_rss())


def peak_rss() -> int:
    """This process's peak resident set size in bytes so far: ``VmHWM`` where Linux reports it
    (``ru_maxrss`` would also count the parent's pages, kept across fork and exec), else
    ``ru_maxrss`` (0 where neither exists). Never less than an earlier answer: the kernel folds
    the resident size into ``VmHWM`` lazily, so it can read lower after memory is given back."""
    global _peak
    _peak = max(_peak, _measured_peak())
    return _peak


_peak = 0


def _forget_peak() -> None:
    global _peak
    _peak = 0


os.register_at_fork(after_in_child=_forget_peak)  # a forked worker's peak is its own


def _measured_peak() -> int:
    try:
        with open("/proc/self/status", "rb") as fh:
            found = re.search(rb"^VmHWM:\s+(\d+) kB", fh.read(), re.MULTILINE)
        if found:
            return int(found.group(1)) * 1024
    except OSError:
        pass
    try:
        import resource
    except ImportError:
        return 0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


_quieted = False


def _quiet() -> None:
    """A worker logs halts, not each rejected quote (as ``bot backtest`` does); once per process."""
    global _quieted
    if not _quieted:
        from bot.ops.logging import configure

        configure(level="error", json=True)
        _quieted = True


def _worker_start() -> None:
    """A pool worker leaves Ctrl-C to the sweep, which stops the pool itself."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _quiet()


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


class Executor:
    """Runs jobs on ``workers`` workers and yields their outcomes as they finish."""

    name = "executor"
    workers = 1

    def run(self, jobs: Iterable[Job]) -> Iterator[Outcome]:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class ProcessPool(Executor):
    """A pool of ``workers`` spawned processes (``concurrent.futures``): nothing of the parent's
    state is inherited but the jobs themselves."""

    name = "process pool"

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_worker_start)

    def run(self, jobs: Iterable[Job]) -> Iterator[Outcome]:
        pending: set[Future[Outcome]] = set()
        queue = iter(jobs)
        limit = IN_FLIGHT * self.workers
        try:
            for job in queue:
                pending.add(self._pool.submit(run_job, job))
                if len(pending) >= limit:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    yield from (f.result() for f in done)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                yield from (f.result() for f in done)
        except BrokenProcessPool as exc:  # a worker killed (out of memory, a signal): no outcome to give
            raise ExecutorError(f"a worker process of the pool died: {exc}") from None
        except KeyboardInterrupt:  # interrupted while waiting: the runs already back are still given
            for f in [f for f in pending if f.done() and not f.cancelled() and f.exception() is None]:
                pending.discard(f)
                yield f.result()
            raise
        finally:
            for f in pending:
                f.cancel()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class RayExecutor(Executor):
    """Ray tasks, one CPU each: on the cluster at ``address``, or on a Ray instance started here
    for the sweep (``address == "local"``, ``workers`` CPUs) and stopped with it. When Ray is
    already initialized in this process, that instance is used and left running.

    A cluster's nodes need pmbot installed and the data at the same paths as here."""

    name = "Ray"

    def __init__(self, address: str, workers: int | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise ExecutorError("--ray needs Ray, which is not installed: pip install 'pmbot[ray]'") from None
        self._ray = ray
        self._owned = not ray.is_initialized()
        if self._owned:
            local = address == LOCAL_RAY
            if not local:
                _reach(address)  # Ray itself retries an address that does not answer, without end
            try:
                ray.init(address="local" if local else address, num_cpus=workers if local else None,
                         include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR,
                         **({"_node_ip_address": "127.0.0.1"} if local else {}))
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ExecutorError(f"cannot start Ray at {address!r}: {_one_line(str(exc))}") from None
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.workers = max(1, min(workers, cpus) if workers else cpus)
        self._task = ray.remote(num_cpus=1, max_retries=0)(run_job)

    def run(self, jobs: Iterable[Job]) -> Iterator[Outcome]:
        ray = self._ray
        pending: deque[Any] = deque()
        limit = IN_FLIGHT * self.workers
        try:
            for job in jobs:
                pending.append(self._task.remote(job))
                if len(pending) >= limit:
                    yield from self._finished(pending)
            while pending:
                yield from self._finished(pending)
        finally:
            for ref in pending:
                ray.cancel(ref)

    def _finished(self, pending: deque[Any]) -> Iterator[Outcome]:
        done, rest = self._ray.wait(list(pending), num_returns=1)
        pending.clear()
        pending.extend(rest)
        for ref in done:
            try:
                yield self._ray.get(ref)
            except self._ray.exceptions.RayError as exc:  # a worker or node lost: no outcome to give
                raise ExecutorError(f"a Ray task failed: {_one_line(str(exc))[:300]}") from None

    def close(self) -> None:
        if self._owned and self._ray.is_initialized():
            self._ray.shutdown()


def _reach(address: str, timeout_s: float = 5.0) -> None:
    """An ``ExecutorError`` naming ``address`` (``HOST:PORT`` or ``ray://HOST:PORT``) when nothing
    accepts a connection there within ``timeout_s``; other forms (``auto``) are left to Ray."""
    import socket

    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except (OSError, OverflowError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise ExecutorError(f"cannot reach the Ray cluster at {address!r} ({reason})") from None


def open_executor(workers: int | None = None, ray: str | None = None) -> Executor:
    """The executor of a sweep: Ray when ``ray`` names a cluster address (or ``local``), else a
    process pool of ``workers`` processes (default: one per CPU)."""
    if ray:
        return RayExecutor(ray, workers)
    return ProcessPool(workers or os.cpu_count() or 1)

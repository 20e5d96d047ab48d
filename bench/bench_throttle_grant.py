"""Cost of one throttle grant: the in-memory sliding log against the same windows shared on Redis.

Each run grants ``--grants`` single tokens (``try_take``) from the venue's order windows (burst
and sustained, scaled up so no grant is refused) through :class:`bot.venue.throttle.Throttle`,
then through :class:`bot.venue.shared_throttle.RedisThrottle` on a ``redis-server`` started on a
free loopback port for the run (Debian's package; the bench says so and stops if it is missing).
Figures are wall-clock microseconds per grant, the median of ``--runs`` interleaved runs (a Redis
grant is a round trip, so wall time is what it costs), with the ratio Redis / memory and the load
average beside them: the machine is shared.

Run: ``.venv/bin/python -m bench throttle_grant`` or ``.venv/bin/python bench/bench_throttle_grant.py``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time

from bot.venue.limits import CLOB_LIMITS
from bot.venue.shared_throttle import RedisThrottle
from bot.venue.throttle import Throttle
from bot.exchange.server import free_port


def _windows():
    scope = next(s for s in CLOB_LIMITS.scopes if s.name == "orders")
    return [w.scaled(1000.0) for w in scope.windows]  # room for every grant of the run



def _per_grant_us(take, grants: int) -> float:
    start = time.perf_counter()
    for _ in range(grants):
        if not take(1):
            raise RuntimeError("a grant was refused: the windows are too small for the run")
    return (time.perf_counter() - start) / grants * 1e6


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grants", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv if argv is not None else [])
    binary = shutil.which("redis-server")
    if binary is None:
        print("redis-server is not installed (apt-get install redis-server): only the in-memory figure")
    import redis

    port, folder = free_port(), tempfile.mkdtemp(prefix="bench-redis-")
    proc = None
    if binary:
        proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", folder],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = redis.Redis(port=port, socket_timeout=2.0)
        if proc is not None:
            deadline = time.monotonic() + 10
            while True:
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
        memory, shared = [], []
        for run in range(args.runs):
            mem = Throttle(_windows())
            memory.append(_per_grant_us(mem.try_take, args.grants))
            if proc is not None:
                red = RedisThrottle(_windows(), client, f"bench:{run}:{time.time_ns()}")
                shared.append(_per_grant_us(red.try_take, args.grants))
        m = statistics.median(memory)
        print(f"load average {os.getloadavg()[0]:.2f}; {args.grants} grants x {args.runs} runs, medians:")
        print(f"  in memory: {m:8.2f} us per grant")
        if shared:
            r = statistics.median(shared)
            print(f"  on Redis:  {r:8.2f} us per grant (one Lua script round trip), {r / m:.0f}x the in-memory grant")
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])

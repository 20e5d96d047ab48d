"""A shared exchange under hostile clients: its memory and how fast ``/ok`` answers everyone else.

Run: ``.venv/bin/python -m bench.bench_hostile_load [--runs 3] [--ws-clients 200] [--slow 2000]
[--probes 200] [--nofile N] [--exchange-repo PATH]`` (``PATH``: another checkout, e.g. the code
before a change, whose exchange is run with this interpreter). The exchange runs in its own process
(``python -m bot.exchange.cli --free-ports --flow off``) at its default settings and with the
machine's open-file limits (``--nofile N``: both limits N instead). This process plays one hostile
client from 127.0.0.1 and, from ``--probe-ip`` (127.0.0.2), another client that asks ``/ok``.
Per run, three phases:

* baseline: ``/ok`` over a fresh connection each time, nothing else going on;
* WebSocket: ``--ws-clients`` market connections subscribing to made-up asset ids as fast and as
  large as they are let (a refused or closed one reconnects), never reading;
* slow heads: ``--slow`` connections each dripping one header byte a second (one closed by the
  exchange reconnects at once).

During each phase ``/ok`` is asked ``--probes`` times, one every 0.05 s (a fresh connection each
time; 5 s without an answer counts as 5000 ms and a failure), and the exchange's RSS is sampled;
after each crowd leaves the RSS is read again. Printed: the median over runs of /ok p50 and p99 (ms)
and their ratios to the same run's baseline, failures, RSS before (at the end of the baseline), peak
and after the crowd left (MB), the most files the exchange held open, its CPU and the crowd's (% of
one core: on a busy machine, the share each was given), and the load average when it started and ended.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parent.parent
PROBE_EVERY_S = 0.05
PROBE_TIMEOUT_S = 5.0
WS_FRAME_EVERY_S = 1.0  # each hostile WebSocket client sends a new subscription this often
GOAL_MS = 100.0
CROWD_IP = "127.0.0.1"  # the hostile client
GATHER_S = 2.0  # the crowd gathers this long before the probes start
SETTLE_S = 3.0  # after the crowd leaves, this long before the RSS is read again


def start_exchange(repo: Path, nofile: int, nice: int = 0) -> tuple[subprocess.Popen, str, str]:
    """The exchange in its own process (under ``nofile`` open files when non-zero, and ``nice``):
    (process, CLOB URL, WS base URL)."""

    def limit() -> None:
        if nofile:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))  # soft and hard: it cannot raise its own
        if nice:
            os.nice(nice)

    proc = subprocess.Popen([sys.executable, "-m", "bot.exchange.cli", "--free-ports", "--flow", "off"], cwd=repo,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, preexec_fn=limit,
                            env=dict(os.environ, PYTHONPATH=str(repo)))
    urls: dict[str, str] = {}
    deadline = time.monotonic() + 60
    while "clob" not in urls or "ws" not in urls:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line and (proc.poll() is not None or time.monotonic() > deadline):
            raise SystemExit(f"the exchange in {repo} did not start")
        word, _, rest = line.partition(" ")
        if word in ("clob", "ws"):
            urls[word] = rest.split()[0]
    return proc, urls["clob"], urls["ws"].rsplit("/ws/", 1)[0]


def open_files(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) the process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def probe_ok(host: str, port: int, probe_ip: str) -> tuple[float, bool]:
    """One ``GET /ok`` over a fresh connection from ``probe_ip``: (ms until the whole answer, answered 200)."""
    start = time.perf_counter()
    try:
        async with asyncio.timeout(PROBE_TIMEOUT_S):
            reader, writer = await asyncio.open_connection(host, port, local_addr=(probe_ip, 0))
            try:
                writer.write(b"GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                data = await reader.read()
            finally:
                writer.close()
        return (time.perf_counter() - start) * 1000, data.startswith(b"HTTP/1.1 200")
    except (OSError, TimeoutError):
        return PROBE_TIMEOUT_S * 1000, False


class Phase:
    """/ok latencies and RSS samples of one phase."""

    def __init__(self) -> None:
        self.ms: list[float] = []
        self.failures = 0
        self.rss: list[float] = []
        self.files: list[int] = []
        self.cpu_pct = 0.0  # the exchange's CPU over the phase, % of one core
        self.crowd_cpu_pct = 0.0  # the hostile client's
        self.rss_after = 0.0

    async def watch(self, host: str, port: int, probe_ip: str, pid: int, probes: int, crowd: int = 0) -> None:
        start, used, crowd_used = time.monotonic(), cpu_s(pid), cpu_s(crowd) if crowd else 0.0
        for _ in range(probes):
            ms, ok = await probe_ok(host, port, probe_ip)
            self.ms.append(ms)
            self.failures += not ok
            self.rss.append(rss_mb(pid))
            self.files.append(open_files(pid))
            await asyncio.sleep(PROBE_EVERY_S)
        took = time.monotonic() - start
        self.cpu_pct = 100 * (cpu_s(pid) - used) / took
        self.crowd_cpu_pct = 100 * (cpu_s(crowd) - crowd_used) / took if crowd else 0.0

    def p(self, q: float) -> float:
        xs = sorted(self.ms)
        return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


async def hostile_ws(ws_base: str, stop: asyncio.Event, n: int) -> None:
    from websockets.asyncio.client import connect

    pad = "z" * 460

    async def one(i: int) -> None:
        k = 0
        while not stop.is_set():
            try:
                async with connect(ws_base + "/ws/market", max_size=None, open_timeout=10, close_timeout=1) as ws:
                    first = True
                    while not stop.is_set():
                        ids = ",".join(f'"{i:06d}{k:08d}{j:04d}{pad}"' for j in range(500))  # ~245 KB, new ids
                        k += 1
                        head = '{"type":"market",' if first else '{"operation":"subscribe",'
                        await ws.send(head + '"assets_ids":[' + ids + "]}")
                        first = False
                        await asyncio.sleep(WS_FRAME_EVERY_S)
            except Exception:  # refused or closed: come back
                await asyncio.sleep(0.1)

    await asyncio.gather(*(one(i) for i in range(n)))


async def slow_heads(host: str, port: int, stop: asyncio.Event, n: int) -> None:
    async def one(i: int) -> None:
        while not stop.is_set():
            try:
                reader, writer = await asyncio.open_connection(host, port, local_addr=(CROWD_IP, 0))
            except OSError:
                await asyncio.sleep(0.5)
                continue
            try:
                writer.write(b"GET /ok HTTP/1.1\r\nHost: x\r\nX-Slow-%d: " % i)
                while not stop.is_set() and not reader.at_eof():
                    writer.write(b"a")
                    await writer.drain()
                    try:
                        async with asyncio.timeout(1.0):
                            await reader.read(65536)
                    except TimeoutError:
                        pass
            except OSError:
                pass
            finally:
                writer.close()

    await asyncio.gather(*(one(i) for i in range(n)))


def attack(kind: str, target: tuple, n: int, stop) -> None:
    """Run one hostile crowd until ``stop`` (a ``multiprocessing.Event``) is set, in a process of its
    own, apart from the probes."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    async def run() -> None:
        done = asyncio.Event()
        crowd = hostile_ws(target[0], done, n) if kind == "websocket" else slow_heads(*target, done, n)
        task = asyncio.create_task(crowd)
        while not stop.is_set():
            await asyncio.sleep(0.2)
        done.set()
        task.cancel()
        try:
            await task
        except (asyncio.CancelledError, Exception):
            pass

    asyncio.run(run())


def one_run(args: argparse.Namespace, repo: Path) -> dict[str, Phase]:
    proc, clob, ws_base = start_exchange(repo, args.nofile, args.exchange_nice)
    u = urlsplit(clob)
    host, port = u.hostname, u.port
    phases = {"baseline": Phase(), "websocket": Phase(), "slow heads": Phase()}
    try:
        asyncio.run(phases["baseline"].watch(host, port, args.probe_ip, proc.pid, args.probes))
        phases["baseline"].rss_after = rss_mb(proc.pid)
        for name, target, n in (("websocket", (ws_base,), args.ws_clients), ("slow heads", (host, port), args.slow)):
            stop = multiprocessing.Event()
            crowd = multiprocessing.Process(target=attack, args=(name, target, n, stop))
            crowd.start()
            time.sleep(GATHER_S)
            asyncio.run(phases[name].watch(host, port, args.probe_ip, proc.pid, args.probes, crowd.pid))
            stop.set()
            crowd.join(30)
            if crowd.is_alive():
                crowd.kill()
            time.sleep(SETTLE_S)  # what closed is let go
            phases[name].rss_after = rss_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    return phases


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ws-clients", type=int, default=200)
    ap.add_argument("--slow", type=int, default=2000)
    ap.add_argument("--probes", type=int, default=200, help="/ok requests per phase (default 200)")
    ap.add_argument("--probe-ip", default="127.0.0.2", help="the address /ok is asked from (default 127.0.0.2)")
    ap.add_argument("--nofile", type=int, default=0,
                    help="the exchange's open-file limits, soft and hard (default: the machine's)")
    ap.add_argument("--exchange-repo", default=str(REPO))
    ap.add_argument("--exchange-nice", type=int, default=0,
                    help="run the exchange at this niceness (negative: ahead of the machine's other work; root only)")
    args = ap.parse_args()
    repo = Path(args.exchange_repo).resolve()
    load_before = os.getloadavg()[0]
    runs = [one_run(args, repo) for _ in range(args.runs)]
    med = statistics.median
    limit = args.nofile or "the machine's"
    print(f"exchange of {repo}: {args.runs} runs, {args.probes} /ok per phase from {args.probe_ip}, "
          f"open-file limit {limit}, {args.ws_clients} WebSocket clients, {args.slow} slow connections from "
          f"{CROWD_IP}, nice {args.exchange_nice}, load average {load_before:.1f} -> {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores")
    print(f"{'phase':<11} {'/ok p50':>9} {'p99':>9} {'x base':>12} {'fails':>6} {'RSS before':>10} {'peak':>8} "
          f"{'after':>8} {'files':>6} {'CPU %':>6} {'crowd %':>7}")
    for name in ("baseline", "websocket", "slow heads"):
        ps = [r[name] for r in runs]
        p50, p99 = med(p.p(0.5) for p in ps), med(p.p(0.99) for p in ps)
        r50 = med(p.p(0.5) / r["baseline"].p(0.5) for p, r in zip(ps, runs))
        r99 = med(p.p(0.99) / r["baseline"].p(0.99) for p, r in zip(ps, runs))
        before = med(r["baseline"].rss_after for r in runs)
        after = f"{med(p.rss_after for p in ps):6.1f}MB" if name != "baseline" else ""
        crowd = f"{med(p.crowd_cpu_pct for p in ps):7.1f}" if name != "baseline" else ""
        print(f"{name:<11} {p50:7.2f}ms {p99:7.2f}ms {r50:5.1f}/{r99:5.1f}x {med(p.failures for p in ps):6g} "
              f"{before:8.1f}MB {med(max(p.rss) for p in ps):6.1f}MB {after:>8} {med(max(p.files) for p in ps):6g} "
              f"{med(p.cpu_pct for p in ps):6.1f} {crowd:>7}")
    worst = max(med(r[n].p(0.99) for r in runs) for n in ("websocket", "slow heads"))
    print(f"/ok p99 under load {worst:.2f} ms: {'within' if worst < GOAL_MS else 'over'} the {GOAL_MS:g} ms goal")
    return 0


if __name__ == "__main__":
    sys.exit(main())

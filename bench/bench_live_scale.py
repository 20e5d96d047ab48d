"""Live at scale: ``bot run`` quoting every market of a local exchange with synthetic flow on each
(books step every 0.25 s), the exchange in its own process, for N markets.

Run: ``.venv/bin/python bench/bench_live_scale.py [--markets 4,16,64,128] [--seconds 60]
[--bot-repo PATH] [--event-loop asyncio,uvloop]`` (``PATH``: another checkout with its own
``.venv``, e.g. the code before a change; the exchange is always this checkout's; several event
loops: a row for each, alternated per market count). Per row it prints, beside the machine's load
average: the bot's CPU (% of one core, from /proc, after a warm-up), how much of the time its
main thread was runnable (running or waiting for a core), market message lag (venue timestamp to
the frame's events applied, p50 / p99 from the bot's histogram), orders sent and the share
rejected as "post-only crosses book", halts, orphans, positions drifting at the end, the bot's
tick-to-order (socket to request written) and the exchange-stamped wire-to-wire latency (market
frame written -> the order request it caused received), 429s and the lowest order-throttle
level. Wire-to-wire counts only the orders a book update caused: the bot notes each one's salt
and when its update came off the socket (``BOT_NOTING_CAUSES``), and the exchange's stamps of
the frames and requests are joined to that on the monotonic clock both processes read (a bot
that cannot note them, an older checkout, is measured the older way: every request against its
token's last unanswered frame, fills and timers included). Under the table: the in-process tick-to-order of this build (``bench_tick_to_order``),
median of several runs, and the wire-to-wire ratio to it; and the floor: the wire-to-wire a bare
client gets from the same exchange on the same machine (``--floor-seconds``, 0 to skip), which no
client of this exchange can beat.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from typing import Any
from pathlib import Path

import msgspec
from bot.exchange.server import free_port  # noqa: E402

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

REPO = Path(__file__).resolve().parent.parent
MARKETS = (4, 16, 64, 128)
SECONDS = 60.0
FLOOR_SECONDS = 15.0
WARMUP_S = 8.0  # connect, first snapshot and first quotes: left out of CPU and latency figures


# --- the exchange, in its own process ---------------------------------------------------------


def serve_exchange(markets: int, out: str, limits_scale: float = 1.0, cpu: int | None = None) -> None:
    """Child process: a local exchange with ``markets`` binary markets (flow on every one), its
    URLs and demo account as one JSON line on stdout; on stdin's end, the wire-to-wire samples
    (seconds) written to ``out`` as JSON. ``limits_scale`` multiplies its rate limits; ``cpu``: the one
    core it runs on."""
    import anyio

    from bot.exchange.config import ExchangeConfig
    from bot.exchange.server import LocalExchange
    from bot.exchange.wire import WireStamps

    async def main() -> None:
        config = ExchangeConfig(markets=markets, neg_risk_events=0, seed=1, limits_scale=limits_scale)
        async with LocalExchange(config) as ex:
            stamps = WireStamps()
            ex.exchange.hub.stamps = stamps
            d, u = ex.demo_account, ex.urls
            print(json.dumps({"clob": u.clob, "catalog": u.catalog, "data": u.data, "ws": u.ws,
                              "key": d.private_key, "api_key": d.creds.apiKey, "secret": d.creds.secret,
                              "passphrase": d.creds.passphrase}), flush=True)
            await anyio.to_thread.run_sync(sys.stdin.read)
            Path(out).write_text(json.dumps({"wire": stamps.latencies(), "frames": len(stamps.frames),
                                             "requests": len(stamps.requests), "dropped": stamps.dropped,
                                             "write_lag": write_lags(stamps.frames),
                                             "book_frames": book_frames(stamps),
                                             "order_requests": order_requests(stamps)}))

    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    anyio.run(main)


def write_lags(frames: list[tuple[float, bytes | str]]) -> list[float]:
    """Exchange side of the market lag: each event frame's venue timestamp (``price_change``,
    ``last_trade_price``, ...: every frame the bot's lag counts) to the moment the exchange wrote
    it (its perf counter, on the wall clock by an offset read here)."""
    decode = msgspec.json.Decoder().decode
    offset = time.time() - time.perf_counter()
    out: list[float] = []
    for at, payload in frames:
        try:
            msg = decode(payload)
        except msgspec.DecodeError:
            continue
        if isinstance(msg, dict) and str(msg.get("timestamp", "")).isdigit():
            out.append(at + offset - int(msg["timestamp"]) / 1000.0)
    return out


def book_frames(stamps: Any) -> list[tuple[float, list[str]]]:
    """Each market frame the exchange wrote that names tokens (its time, those tokens): book
    changes, trades, snapshots, those our own orders caused included (the bot's record says which
    one caused an order)."""
    decode = msgspec.json.Decoder().decode
    out = []
    for at, payload in stamps.frames:
        try:
            msg = decode(payload)
        except msgspec.DecodeError:
            continue
        tokens: dict[str, None] = {}
        for m in msg if isinstance(msg, list) else [msg]:
            if not isinstance(m, dict):
                continue
            if isinstance(m.get("asset_id"), str):
                tokens[m["asset_id"]] = None
            for c in m.get("price_changes") or ():
                if isinstance(c, dict) and isinstance(c.get("asset_id"), str):
                    tokens[c["asset_id"]] = None
        if tokens:
            out.append((at, list(tokens)))
    return out


def order_requests(stamps: Any) -> list[tuple[float, list[int], list[str]]]:
    """Each ``POST /orders`` received (its time, its orders' salts and tokens)."""
    decode = msgspec.json.Decoder().decode
    out = []
    for at, body in stamps.requests:
        try:
            items = decode(body)
        except msgspec.DecodeError:
            continue
        orders = [it["order"] for it in items if isinstance(it, dict) and isinstance(it.get("order"), dict)] \
            if isinstance(items, list) else []
        out.append((at, [o["salt"] for o in orders if isinstance(o.get("salt"), int)],
                     [o["tokenId"] for o in orders if isinstance(o.get("tokenId"), str)]))
    return out


def book_caused_latencies(frames: list, requests: list, caused: dict[int, tuple[float, float | None]]
                          ) -> tuple[list[float], list[float], list[float]]:
    """Wire-to-wire of the orders a book update caused, the update's way to the bot (frame written
    to read off the bot's socket) and the request's way to the exchange (written by the bot to
    received by the exchange's app). ``caused``: the bot's record of each order a book update
    caused, its salt -> (the perf-counter time that update came off the bot's socket, the time its
    request was written); the bot and the exchange read one monotonic clock. A request counts when one of its orders is in ``caused``; the update is
    the latest frame on one of its tokens written at or before that receipt; each update counts
    once, by the first request it caused. Requests a fill, an answer or a timer caused (no
    update behind them) are not counted, nor matched to an older update of their token."""
    import bisect

    by_token: dict[str, list[float]] = {}
    for at, tokens in sorted(frames, key=lambda f: f[0]):
        for t in tokens:
            by_token.setdefault(t, []).append(at)
    answered: set[float] = set()
    wire: list[float] = []
    way_in: list[float] = []
    way_out: list[float] = []
    for at, salts, tokens in sorted(requests, key=lambda r: r[0]):
        noted = [caused[x] for x in salts if x in caused]
        if not noted:
            continue
        tick, sent = min(noted, key=lambda n: n[0])
        written = None
        for t in tokens:
            times = by_token.get(t)
            i = bisect.bisect_right(times, tick) if times else 0
            if i and (written is None or times[i - 1] > written):
                written = times[i - 1]
        if written is None or written in answered:
            continue
        answered.add(written)
        wire.append(at - written)
        way_in.append(tick - written)
        if sent is not None:
            way_out.append(at - sent)
    return wire, way_in, way_out


# the bot as ``bot run``, noting each order a book update caused (its salt, and when that update came
# off the socket: ``SendPlaces.tick_at``) to the file named by BENCH_BOOK_CAUSED at exit; a bot
# without that hook (an older checkout) runs as it is and notes nothing
BOT_NOTING_CAUSES = """
import atexit, json, os, sys, time
caused = {}
try:
    from bot.live.executor import LiveExecutor
    _written = LiveExecutor._written
    def _noting(self, action, started):
        done = _written(self, action, started)
        if action.tick_at is None or done is None:
            return done
        noted = [[o.signed.salt, action.tick_at, None] for o in action.batch.orders]
        for n in noted:
            caused[n[0]] = n
        def written():
            done()
            now = time.perf_counter()
            for n in noted:
                n[2] = now
        return written
    LiveExecutor._written = _noting
except (ImportError, AttributeError):
    pass
atexit.register(lambda: open(os.environ["BENCH_BOOK_CAUSED"], "w").write(json.dumps(list(caused.values()))))
from bot.cli import main
sys.exit(main(sys.argv[1:]))
"""


# --- reading the bot ----------------------------------------------------------------------------


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Prometheus text as {(name, labels): value}."""
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$', line)
        if not m:
            continue
        labels = tuple(sorted(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or "")))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def total(sample: dict, name: str, **match: str) -> float:
    return sum(v for (n, labels), v in sample.items()
               if n == name and all((k, val) in labels for k, val in match.items()))


def quantile(before: dict, after: dict, name: str, q: float, **match: str) -> float | None:
    """``histogram_quantile`` of ``name`` over what was observed between two scrapes."""
    buckets: dict[float, float] = {}
    for (n, labels), v in after.items():
        if n != name + "_bucket" or not all((k, val) in labels for k, val in match.items()):
            continue
        le = dict(labels)["le"]
        bound = float("inf") if le == "+Inf" else float(le)
        buckets[bound] = buckets.get(bound, 0.0) + v - before.get((n, labels), 0.0)
    if not buckets:
        return None
    bounds = sorted(buckets)
    count = buckets[bounds[-1]]
    if count <= 0:
        return None
    rank, prev_bound, prev_count = q * count, 0.0, 0.0
    for b in bounds:
        c = buckets[b]
        if c >= rank:
            if b == float("inf"):
                return prev_bound
            return prev_bound + (b - prev_bound) * (rank - prev_count) / max(c - prev_count, 1e-12)
        prev_bound, prev_count = b, c
    return prev_bound


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def runnable_seconds(pid: int) -> float:
    """Main thread: time on a core plus time waiting for one (``schedstat``)."""
    run_ns, wait_ns, _ = Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()
    return (int(run_ns) + int(wait_ns)) / 1e9



def pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


# --- one row --------------------------------------------------------------------------------------




def pinned_cores() -> tuple[int, int]:
    """With ``pin``, the bot's core and the exchange's: the first two this process may run on, each
    of them on a core of its own, as with a venue on another machine."""
    first, second = sorted(os.sched_getaffinity(0))[:2]
    return first, second



def start_exchange(markets: int, stamps_out: Path, log: Path, limits_scale: float = 1.0,
                   pin: bool = False) -> subprocess.Popen:
    """``serve_exchange`` in a child process (its first stdout line: URLs and account; closing its
    stdin stops it and writes the stamps to ``stamps_out``); ``pin``: on the exchange's core."""
    return subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve-exchange", str(markets),
                             str(stamps_out), "--exchange-limits-scale", str(limits_scale)]
                            + (["--exchange-cpu", str(pinned_cores()[1])] if pin else []), cwd=REPO,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log.open("w"), text=True)


def _on_core(cpu: int) -> Callable[[], None]:
    return lambda: os.sched_setaffinity(0, {cpu})


def with_event_loop(extra_config: str, event_loop: str | None) -> str:
    """``extra_config`` with ``[shell] event_loop`` set (in its ``[shell]`` table when it has one)."""
    if event_loop is None:
        return extra_config
    line = f'event_loop = "{event_loop}"\n'
    if re.search(r"^\[shell\]\s*$", extra_config, re.M):
        return re.sub(r"^\[shell\]\s*$\n?", lambda m: "[shell]\n" + line, extra_config, count=1, flags=re.M)
    return extra_config + "\n[shell]\n" + line


def run_row(markets: int, seconds: float = SECONDS, bot_repo: Path = REPO, workdir: Path | None = None,
            extra_config: str = "", limits_scale: float = 1.0, pin: bool = False,
            event_loop: str | None = None) -> dict:
    """``bot run`` (from ``bot_repo``) on a fresh exchange of ``markets`` markets for ``seconds``;
    the figures of one row. ``extra_config``: TOML appended to the bot's config; ``limits_scale``
    multiplies the rate limits of both the exchange and the bot (above 1: the write budget never
    binds, so wire-to-wire holds no wait for it); ``pin``: the exchange and the bot each on a core of
    its own (on shared cores, a request written wakes the exchange on the writer's core, which then
    waits its turn: a co-located artefact a venue on another machine does not cause); ``event_loop``:
    the bot's ``[shell] event_loop`` (``None``: its config's default)."""
    extra_config = with_event_loop(extra_config, event_loop)
    tmp = Path(workdir or tempfile.mkdtemp(prefix="live-scale-"))
    stamps_out = tmp / "wire.json"
    ex = start_exchange(markets, stamps_out, tmp / "exchange.log", limits_scale, pin)
    bot = None
    try:
        info = json.loads(ex.stdout.readline())
        port = free_port()
        cfg = tmp / "bot.toml"
        cfg.write_text(
            f'[venue]\nclob_url = "{info["clob"]}"\ncatalog_url = "{info["catalog"]}"\n'
            f'data_url = "{info["data"]}"\nws_url = "{info["ws"]}"\n'
            + (f'[venue.limits]\nscale = {limits_scale!r}\n' if limits_scale != 1.0 else '')
            + '[strategy]\npath = "strategies.market_maker:MarketMaker"\n'
            # every market quoted on both tokens: 4 resting orders a market, requotes paced by the venue's limits only
            '[risk]\nmax_open_orders = 4000\nmax_orders_per_window = "off"\n'
            f'[metrics]\nenabled = true\nport = {port}\n[journal]\npath = "{tmp / "journal.sqlite"}"\n'
            + extra_config)
        env = dict(os.environ, BOT_PRIVATE_KEY=info["key"], BOT_API_KEY=info["api_key"],
                   BOT_API_SECRET=info["secret"], BOT_API_PASSPHRASE=info["passphrase"])
        python = bot_repo / ".venv" / "bin" / "python"
        log = tmp / "bot.log"
        env["BENCH_BOOK_CAUSED"] = str(tmp / "caused.json")
        bot = subprocess.Popen([str(python), "-c", BOT_NOTING_CAUSES, "run", "--config", str(cfg), "--duration", str(seconds)],
                               preexec_fn=_on_core(pinned_cores()[0]) if pin else None,
                               cwd=bot_repo, env=env, stdout=subprocess.PIPE, stderr=log.open("w"), text=True)
        url = f"http://127.0.0.1:{port}/metrics"
        started = time.monotonic()
        first = last = None
        cpu0 = run0 = t0 = 0.0
        cpu1 = run1 = t1 = 0.0
        halted_at = None
        lowest_tokens = None
        while bot.poll() is None and time.monotonic() - started < seconds - 1.0:
            time.sleep(0.5)
            elapsed = time.monotonic() - started
            try:
                sample = scrape(url)
                cpu, run = cpu_seconds(bot.pid), runnable_seconds(bot.pid)
            except (OSError, ValueError):
                continue
            if first is None and elapsed >= WARMUP_S:
                first, cpu0, run0, t0 = sample, cpu, run, time.monotonic()
            if first is not None:
                last, cpu1, run1, t1 = sample, cpu, run, time.monotonic()
            if halted_at is None and total(sample, "bot_trading_state") >= 2:
                halted_at = elapsed
            tokens = [v for (n, lb), v in sample.items() if n == "bot_throttle_tokens" and ("throttle", "orders") in lb]
            if tokens and first is not None:
                lowest_tokens = min(tokens + ([lowest_tokens] if lowest_tokens is not None else []))
        out, _ = bot.communicate(timeout=60)
        bot = None
    finally:
        if bot is not None:
            bot.send_signal(signal.SIGTERM)
            bot.wait(timeout=30)
        ex.stdin.close()
        ex.wait(timeout=60)
    stamped = json.loads(stamps_out.read_text()) if stamps_out.exists() else {}
    wire, write_lag = stamped.get("wire", []), stamped.get("write_lag", [])
    caused_file = tmp / "caused.json"
    caused = {n[0]: (n[1], n[2]) for n in json.loads(caused_file.read_text())} if caused_file.exists() else {}
    booked, way_in, way_out = book_caused_latencies(stamped.get("book_frames", []),
                                                    stamped.get("order_requests", []), caused)
    matched = wire  # every request matched to its token's latest unanswered frame (fills and timers too)
    if booked:
        wire = booked
    if first is None or last is None:
        raise RuntimeError(f"bot run gave no metrics (see {tmp})")
    halts = sum(1 for line in log.read_text().splitlines() if '"risk_halt"' in line)
    wall = max(t1 - t0, 1e-9)
    sent = total(last, "bot_orders_submitted_total") - total(first, "bot_orders_submitted_total")
    crosses = (total(last, "bot_orders_rejected_total", reason="post_only_crosses")
               + total(last, "bot_orders_rejected_total", reason="venue")) - (
        total(first, "bot_orders_rejected_total", reason="post_only_crosses")
        + total(first, "bot_orders_rejected_total", reason="venue"))
    drift = sum(1 for (n, _), v in last.items() if n == "bot_position_drift_shares" and v != 0)
    return {
        "markets": markets, "event_loop": event_loop, "load": os.getloadavg(), "cpu": 100 * (cpu1 - cpu0) / wall,
        "runnable": 100 * (run1 - run0) / wall,
        "lag_p50": quantile(first, last, "bot_stream_message_lag_seconds", 0.5, stream="market"),
        "lag_p99": quantile(first, last, "bot_stream_message_lag_seconds", 0.99, stream="market"),
        "sent": sent, "crosses": crosses, "halts": halts, "halted_at": halted_at,
        "orphans": total(last, "bot_orphan_orders_total"),
        "orphans_unknown": total(last, "bot_orphan_orders_total", kind="unknown"), "drift": drift,
        "t2o_p50": quantile(first, last, "bot_tick_to_order_seconds", 0.5),
        "t2o_p99": quantile(first, last, "bot_tick_to_order_seconds", 0.99),
        "w2w_p50": pct(wire, 0.5), "w2w_p99": pct(wire, 0.99), "w2w_n": len(wire), "w2w_caused": bool(booked),
        "matched_p50": pct(matched, 0.5), "matched_p99": pct(matched, 0.99),
        "way_in_p50": pct(way_in, 0.5), "way_in_p99": pct(way_in, 0.99),
        "way_out_p50": pct(way_out, 0.5), "way_out_p99": pct(way_out, 0.99),
        "xlag_p50": pct(write_lag, 0.5), "xlag_p99": pct(write_lag, 0.99),
        "rate_limited": total(last, "bot_errors_total", kind="rate_limited"), "lowest_tokens": lowest_tokens,
        "stages": {st: (quantile(first, last, "bot_live_stage_seconds", 0.5, stage=st),
                        quantile(first, last, "bot_live_stage_seconds", 0.99, stage=st)) for st in STAGES},
        "summary": out.strip().splitlines()[-1] if out.strip() else "",
    }


# --- the floor: a bare client on the same exchange ------------------------------------------------


def floor(markets: int, seconds: float = FLOOR_SECONDS, workdir: Path | None = None, pin: bool = False,
          per_connection: int | None = None) -> dict:
    """The least wire-to-wire any client gets from this exchange on this machine: a fresh exchange
    of ``markets`` markets (its limits scaled up, so nothing is held or refused for rate) and a bare
    client that, for each ``price_change`` frame, writes a prebuilt ``POST /orders`` naming that
    frame's first token on a kept-alive connection: the frame's bytes searched for the token, no
    decode, no book, no strategy, no signing, no journal. The exchange stamps the request as it
    enters (before auth; it then refuses the unsigned order). Figures in seconds. ``pin``: the client
    on the bot's core (this process, for the run), the exchange on its own. ``per_connection``: tokens
    a market connection carries (the venue's 500 by default)."""
    import anyio

    tmp = Path(workdir or tempfile.mkdtemp(prefix="live-floor-"))
    out = tmp / "floor-wire.json"
    ex = start_exchange(markets, out, tmp / "floor-exchange.log", limits_scale=100.0, pin=pin)
    cpus = os.sched_getaffinity(0)
    try:
        info = json.loads(ex.stdout.readline())
        held: list[float] = []
        if pin:
            os.sched_setaffinity(0, {pinned_cores()[0]})
        sent = anyio.run(bare_client, info, seconds, held, per_connection)
    finally:
        os.sched_setaffinity(0, cpus)
        ex.stdin.close()
        ex.wait(timeout=60)
    wire = json.loads(out.read_text()).get("wire", []) if out.exists() else []
    return {"p50": pct(wire, 0.5), "p99": pct(wire, 0.99), "n": len(wire), "sent": sent, "load": os.getloadavg(),
            "client_p50": pct(held, 0.5)}


_TOKEN = re.compile(rb'"asset_id":\s*"([0-9]+)"')


async def bare_client(info: dict, seconds: float, held: list[float] | None = None,
                      per_connection: int | None = None) -> int:
    """Subscribe to every token of the exchange on its market channel (as many tokens a connection
    as the venue allows, as the bot does), and answer each ``price_change`` frame at once with a prebuilt request;
    responses are read and dropped. Returns the requests written; ``held`` gets the client's own
    share of each (the frame handed over by the WebSocket library to the request written)."""
    import anyio
    import websockets

    from bot.venue.clob import ClobClient
    from bot.venue.models.ws import MarketSubscribe
    from bot.venue.stream import StreamConfig, shard_assets
    from bot.venue.transport import Transport

    async with Transport(info["clob"]) as transport:
        tokens = [t.token_id async for m in ClobClient(transport).iter_markets() for t in m.tokens]
    host, _, port = info["clob"].split("//", 1)[1].partition(":")
    sent = 0

    def request(token: bytes) -> bytes:
        body = b'[{"order":{"tokenId":"' + token + b'"},"owner":"bare","orderType":"GTC"}]'
        return (b"POST /orders HTTP/1.1\r\nHost: " + host.encode() + b"\r\nContent-Type: application/json\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

    async def drain(stream: anyio.abc.ByteStream) -> None:
        try:
            while await stream.receive():
                pass
        except (anyio.EndOfStream, anyio.ClosedResourceError, OSError):
            pass

    async def listen(group: list[str]) -> None:
        """One market connection and its own kept-alive request connection: a stream has one
        writer (two tasks sending on one stream at once is an error, as past 500 tokens, where the
        market channel takes two connections)."""
        nonlocal sent
        stream = await anyio.connect_tcp(host, int(port))
        try:
            async with anyio.create_task_group() as reader:
                reader.start_soon(drain, stream)
                async with websockets.connect(info["ws"] + "/ws/market", compression=None, max_size=None) as ws:
                    await ws.send(msgspec.json.encode(MarketSubscribe(assets_ids=group)).decode())
                    async for frame in ws:
                        got = time.perf_counter()
                        raw = frame.encode() if isinstance(frame, str) else frame
                        if b'"price_change"' in raw and (m := _TOKEN.search(raw)):
                            await stream.send(request(m.group(1)))
                            sent += 1
                            if held is not None:
                                held.append(time.perf_counter() - got)
                reader.cancel_scope.cancel()
        finally:
            await stream.aclose()

    async with anyio.create_task_group() as tg:
        for group in shard_assets(tokens, per_connection or StreamConfig().max_assets_per_connection):
            tg.start_soon(listen, group)
        await anyio.sleep(seconds)
        tg.cancel_scope.cancel()
    return sent


def _counts(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of market counts: {text!r}") from None
    if not counts or min(counts) < 1 or max(counts) > 1000:
        raise argparse.ArgumentTypeError("market counts must be within 1..1000")
    return counts


def _loops(text: str) -> tuple[str, ...]:
    loops = tuple(x.strip() for x in text.split(","))
    bad = [x for x in loops if x not in ("auto", "asyncio", "uvloop")]
    if bad or not loops:
        raise argparse.ArgumentTypeError(f"event loops are auto, asyncio or uvloop, got {text!r}")
    return loops


def in_process_tick_to_order(runs: int = 5, updates: int = 1000) -> tuple[float, float]:
    """Median over ``runs`` of the in-process median and p99 (``bench_tick_to_order``), seconds."""
    from bench.bench_tick_to_order import p99, tick_to_order
    from bot.ops.logging import configure

    configure(level="warning")
    meds, tails = [], []
    for _ in range(runs):
        xs = tick_to_order(updates)
        meds.append(statistics.median(xs))
        tails.append(p99(xs))
    return statistics.median(meds), statistics.median(tails)


def _ms(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x * 1e3:.2f}" if x < 1e-3 else (f"{x * 1e3:.1f}" if x < 10 else f"{x:.0f} s")


def _label(r: dict) -> str:
    """A row's market count, with its event loop when the run chose one."""
    return f"{r['markets']}" + (f" ({r['event_loop']})" if r.get("event_loop") else "")


def format_row(r: dict) -> str:
    sent = r["sent"]
    cross = f"{100 * r['crosses'] / sent:.1f}%" if sent else "-"
    halts = f"{r['halts']}" + (f" (at {r['halted_at']:.0f} s)" if r["halted_at"] is not None else "")
    tokens = "-" if r["lowest_tokens"] is None else f"{r['lowest_tokens']:.0f}"
    return (f"| {_label(r)} | {r['load'][0]:.1f} | {r['cpu']:.0f} | {r['runnable']:.0f} | "
            f"{_ms(r['lag_p50'])} / {_ms(r['lag_p99'])} | {_ms(r['xlag_p50'])} / {_ms(r['xlag_p99'])} | {sent:.0f} | {cross} | {halts} | {r['orphans']:.0f} | "
            f"{r['drift']} | {_ms(r['t2o_p50'])} / {_ms(r['t2o_p99'])} | {_ms(r['w2w_p50'])} / {_ms(r['w2w_p99'])} | "
            f"{r['rate_limited']:.0f}; {tokens} |")


STAGES = ("wait", "core", "sync", "send")  # bot_live_stage_seconds


def format_stages(r: dict) -> str:
    """Where a book update's way to an order request goes, p50 / p99 ms: the exchange's own delay
    (venue timestamp to frame written), then the bot's stages (``bot_live_stage_seconds``), the
    bot's whole tick-to-order and the exchange-stamped wire-to-wire."""
    parts = [f"exchange write {_ms(r['xlag_p50'])} / {_ms(r['xlag_p99'])}"]
    if r.get("w2w_caused"):
        parts.append(f"frame written to read by the bot {_ms(r['way_in_p50'])} / {_ms(r['way_in_p99'])}")
    parts += [f"{st} {_ms(p50)} / {_ms(p99)}" for st, (p50, p99) in r["stages"].items()]
    parts += [f"tick-to-order {_ms(r['t2o_p50'])} / {_ms(r['t2o_p99'])}",
              f"wire-to-wire {_ms(r['w2w_p50'])} / {_ms(r['w2w_p99'])}"]
    if r.get("w2w_caused"):
        parts.insert(len(parts) - 1, f"request written to received by the exchange "
                     f"{_ms(r['way_out_p50'])} / {_ms(r['way_out_p99'])}")  # the older matching, for comparison with earlier tables
        parts.append(f"every request matched to its token's last frame {_ms(r['matched_p50'])} / "
                     f"{_ms(r['matched_p99'])}")
    return f"  {_label(r)} markets (p50 / p99 ms): " + ", ".join(parts)


HEADER = ("| markets | load (1 min) | bot CPU % | main thread runnable % | lag p50 / p99 ms | "
          "of which exchange p50 / p99 ms | orders sent | "
          "post-only crosses | halts | orphans | drift | tick-to-order p50 / p99 ms | wire-to-wire p50 / p99 ms | "
          "429s; lowest order tokens |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def main(argv: list[str] | None = None) -> None:
    if argv is None:  # command-line arguments only when run as a script, not via ``-m bench``
        argv = sys.argv[1:] if __name__ == "__main__" else []
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--markets", type=_counts, default=MARKETS, help="market counts, e.g. 4,16,64,128")
    parser.add_argument("--seconds", type=float, default=SECONDS, help="seconds of each run")
    parser.add_argument("--bot-repo", type=Path, default=REPO, help="the checkout (with .venv) whose bot runs")
    parser.add_argument("--config", default="", metavar="TOML",
                        help='TOML appended to the bot\'s config, e.g. "[shell]\npaced_hold_s = 0.05"')
    parser.add_argument("--limits-scale", type=float, default=1.0,
                        help="multiply the exchange's and the bot's rate limits (e.g. 100: the write budget never binds)")
    parser.add_argument("--pin", action="store_true",
                        help="the exchange and the bot each on a core of its own (needs 2 cores)")
    parser.add_argument("--event-loop", type=_loops, default=(None,), metavar="LOOPS",
                        help="the bot's event loop ([shell] event_loop), or several to alternate per market count, "
                             "e.g. asyncio,uvloop (default: the config's)")
    parser.add_argument("--floor-seconds", type=float, default=FLOOR_SECONDS,
                        help="seconds of the bare client's run per row (0: no floor)")
    parser.add_argument("--serve-exchange", nargs=2, metavar=("MARKETS", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--exchange-limits-scale", type=float, default=1.0, help=argparse.SUPPRESS)
    parser.add_argument("--exchange-cpu", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_exchange:
        serve_exchange(int(args.serve_exchange[0]), args.serve_exchange[1], args.exchange_limits_scale,
                       args.exchange_cpu)
        return
    if args.pin and len(os.sched_getaffinity(0)) < 2:
        parser.error("--pin needs 2 cores")
    if args.seconds <= WARMUP_S + 2:
        parser.error(f"--seconds must be more than {WARMUP_S + 2:g}")
    markets, seconds, bot_repo = args.markets, args.seconds, args.bot_repo.resolve()
    print(f"bot from {bot_repo}, {seconds:.0f} s per row (first {WARMUP_S:.0f} s left out), "
          f"{os.cpu_count()} cores" + (f", config + {args.config!r}" if args.config else "")
          + (f", rate limits x{args.limits_scale:g}" if args.limits_scale != 1.0 else "")
          + (", the bot on core {0}, the exchange on core {1}".format(*pinned_cores()) if args.pin else ""),
          flush=True)
    print(HEADER, flush=True)
    rows = []
    for n in markets:
        for loop in args.event_loop:  # alternated per market count: each loop's row beside the other's
            r = run_row(n, seconds, bot_repo,
                        extra_config=args.config.replace("\\n", "\n") + "\n" if args.config else "",
                        limits_scale=args.limits_scale, pin=args.pin, event_loop=loop)
            if args.floor_seconds > 0:
                r["floor"] = floor(n, args.floor_seconds, pin=args.pin)
            rows.append(r)
            print(format_row(r), flush=True)
    med, tail = in_process_tick_to_order()
    print(f"in-process tick-to-order (this build, median of 5 runs): median {med * 1e6:.0f} µs, p99 {tail * 1e6:.0f} µs;"
          f" load {os.getloadavg()[0]:.1f}")
    for r in rows:
        print(format_stages(r))
    for r in rows:
        if r["w2w_p50"] is not None:
            print(f"  {_label(r)} markets: wire-to-wire / in-process = {r['w2w_p50'] / med:.0f}x median, "
                  f"{r['w2w_p99'] / tail:.0f}x p99 ({r['w2w_n']} samples)")
        f = r.get("floor")
        if f is not None and f["p50"] is not None:
            mine = "" if r["w2w_p50"] is None else (
                f"; the bot's wire-to-wire / the floor = {r['w2w_p50'] / f['p50']:.1f}x median, "
                f"{r['w2w_p99'] / f['p99']:.1f}x p99")
            print(f"  {_label(r)} markets: floor (a bare client, same exchange) {_ms(f['p50'])} / {_ms(f['p99'])} ms"
                  f" = {f['p50'] / med:.0f}x / {f['p99'] / tail:.0f}x the in-process median / p99{mine}"
                  f" ({f['n']} samples, load {f['load'][0]:.1f}; the bare client's own share"
                  f" {_ms(f['client_p50'])} ms median, the rest is the exchange and the kernel)")


if __name__ == "__main__":
    main()

"""The trading writes' HTTP client against the general-purpose ones it replaced, on one loopback
server in the same run: a ``POST /orders`` of a realistic size written and its answer read, on a
kept-alive connection.

Prints, per client, the median round trip over several runs, and the ratio to ``httpx`` (the
baseline: the client every other REST call uses) and to ``h11`` driven directly on an asyncio
stream (the well-kept parser without a client around it). The figure that counts is the ratio;
machines drift, ratios measured in one run do not. The server answers from a fixed buffer, so it
costs the same for every client.

    .venv/bin/python bench/bench_order_write.py [--requests 2000] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

import h11
import httpx

from bot.venue.http1 import Http1Pool

BODY = b'[' + b",".join([b'{"order": {"salt": 1, "maker": "0x' + b"ab" * 20 + b'", "tokenId": "' + b"7" * 77
                         + b'", "makerAmount": "5000000", "takerAmount": "10000000", "side": "BUY", '
                         b'"signature": "0x' + b"cd" * 65 + b'"}, "owner": "key", "orderType": "GTC"}'] * 2) + b']'
ANSWER_BODY = b'[{"success": true, "orderID": "0x' + b"ef" * 32 + b'", "status": "live"}]' * 1
ANSWER = (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
          + str(len(ANSWER_BODY)).encode() + b"\r\n\r\n" + ANSWER_BODY)
HEADERS = {"content-type": "application/json", "POLY_API_KEY": "k", "POLY_SIGNATURE": "s" * 44,
           "POLY_TIMESTAMP": "1700000000", "POLY_PASSPHRASE": "p", "POLY_ADDRESS": "0x" + "ab" * 20}


class _Answering(asyncio.Protocol):
    """Answers each request (head and ``content-length`` body) with ``ANSWER``."""

    def connection_made(self, transport):  # type: ignore[no-untyped-def]
        self.transport, self.buf = transport, b""

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end].lower()
            at = head.find(b"content-length:")
            length = int(head[at + 15:].split(b"\r\n", 1)[0]) if at >= 0 else 0
            if len(self.buf) < end + 4 + length:
                return
            self.buf = self.buf[end + 4 + length:]
            self.transport.write(ANSWER)


async def _httpx(url: str, n: int) -> float:
    async with httpx.AsyncClient(base_url=url) as client:
        await client.post("/orders", content=BODY, headers=HEADERS)
        t0 = time.perf_counter()
        for _ in range(n):
            r = await client.post("/orders", content=BODY, headers=HEADERS)
            r.read()
        return (time.perf_counter() - t0) / n


async def _h11(host: str, port: int, n: int) -> float:
    reader, writer = await asyncio.open_connection(host, port)
    conn = h11.Connection(h11.CLIENT)
    headers = [("host", f"{host}:{port}"), ("content-length", str(len(BODY))), *HEADERS.items()]

    async def one() -> None:
        writer.write(conn.send(h11.Request(method="POST", target="/orders", headers=headers))
                     + conn.send(h11.Data(data=BODY)) + conn.send(h11.EndOfMessage()))
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(65536))
            elif isinstance(event, h11.EndOfMessage):
                conn.start_next_cycle()
                return

    await one()
    t0 = time.perf_counter()
    for _ in range(n):
        await one()
    elapsed = (time.perf_counter() - t0) / n
    writer.close()
    return elapsed


async def _http1(url: str, n: int) -> float:
    pool = Http1Pool(url, connect=5, read=5, write=5, pool=5, keepalive_expiry=30, max_connections=1)
    await pool.request("POST", "/orders", HEADERS, BODY)
    t0 = time.perf_counter()
    for _ in range(n):
        await pool.request("POST", "/orders", HEADERS, BODY)
    elapsed = (time.perf_counter() - t0) / n
    await pool.aclose()
    return elapsed


async def _run(n: int, runs: int) -> dict[str, list[float]]:
    server = await asyncio.get_running_loop().create_server(_Answering, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    out: dict[str, list[float]] = {"httpx": [], "h11": [], "http1": []}
    for _ in range(runs):  # alternated, so drift during the run touches each client alike
        out["httpx"].append(await _httpx(url, n))
        out["h11"].append(await _h11("127.0.0.1", port, n))
        out["http1"].append(await _http1(url, n))
    server.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    got = asyncio.run(_run(args.requests, args.runs))
    med = {k: statistics.median(v) for k, v in got.items()}
    print(f"load average {os.getloadavg()[0]:.1f}; {args.requests} requests x {args.runs} runs, "
          f"body {len(BODY)} bytes, one kept-alive connection")
    for k, v in med.items():
        print(f"  {k:6s} median round trip {v * 1e6:7.1f} µs   x{v / med['httpx']:.2f} of httpx   "
              f"x{v / med['h11']:.2f} of h11")


if __name__ == "__main__":
    main()

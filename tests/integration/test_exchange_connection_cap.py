"""The connections one client IP holds on a port are capped where they are accepted, over real sockets:
one more is answered 429 in the venue's body and closed at once, the ones it holds are not touched,
another client is served meanwhile, and a crowd of 2,000 slow connections leaves the exchange (its
own process, default settings) within a bound of open files and memory, during and after.

Nothing is timed: each read waits for the server's answer or close (``READ_S`` only catches a hang),
and what is counted is waited for."""

from __future__ import annotations

import json
import resource
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.integration.exchange_fixture import start_exchange, wait_for

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
READ_S = 15.0
CROWD_IP = "127.0.0.1"
OTHER_IP = "127.0.0.2"  # another client of the same machine (all of 127/8 is loopback)
SLOW_HEAD = b"GET /ok HTTP/1.1\r\nHost: x\r\nX-Slow: "  # a head that never ends


def address(url: str) -> tuple[str, int]:
    u = urlsplit(url)
    return u.hostname, u.port


def connect(addr: tuple[str, int], source: str = CROWD_IP) -> socket.socket:
    return socket.create_connection(addr, timeout=READ_S, source_address=(source, 0))


def answer_and_close(sock: socket.socket) -> bytes:
    """All the server sends until it closes the connection (a reset after the answer ends it too: the
    server closes without reading what arrives after its answer)."""
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        assert data, "reset before any answer"
    return data


def assert_refused_429(raw: bytes, cap: int) -> None:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert lines[0] == "HTTP/1.1 429 Too Many Requests", raw[:200]
    assert headers["content-type"] == "application/json" and headers["connection"] == "close"
    assert headers["retry-after"] == "1" and int(headers["content-length"]) == len(body)
    reply = json.loads(body)
    assert reply == {"error": f"rate_limited: too many connections from this client (at most {cap} open)",
                     "retry_after_seconds": 1}


def still_open(sock: socket.socket) -> bool:
    """The server has neither closed ``sock`` nor written to it (looked at without waiting)."""
    timeout = sock.gettimeout()
    sock.settimeout(0.0)
    try:
        sock.recv(1, socket.MSG_PEEK)
        return False  # an answer, or the close
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        sock.settimeout(timeout)


def ok_from(url: str, source: str) -> httpx.Response:
    with httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=READ_S) as client:
        return client.get(url + "/ok")


def test_a_connection_over_the_cap_is_refused_429_and_the_held_ones_and_other_clients_are_not_touched():
    cap = 20
    ex = start_exchange(connections_per_client=cap, header_timeout_s=600)  # no head times out here
    addr = address(ex.urls.clob)
    listener, waiting = ex.exchange.listeners["clob"], ex.exchange.waiting["clob"]
    held: list[socket.socket] = []
    try:
        for _ in range(cap):
            s = connect(addr)
            s.sendall(SLOW_HEAD)
            held.append(s)
        wait_for(lambda: ex.call(lambda: listener.held.get(CROWD_IP)) == cap, what="the crowd's connections held")
        for _ in range(3 * cap):  # refused, answered and closed: answer_and_close returns only at the close
            with connect(addr) as s:
                s.sendall(b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
                assert_refused_429(answer_and_close(s), cap)
        assert ex.call(lambda: listener.refused) == 3 * cap
        assert ok_from(ex.urls.clob, OTHER_IP).text.strip('"') == "OK"
        # the refusals evicted nothing: the crowd's own connections still wait for their heads
        assert ex.call(lambda: (waiting.evicted, listener.held.get(CROWD_IP))) == (0, cap)
        assert all(still_open(s) for s in held)
        # the catalog and data ports count their own connections: the same client is served there
        assert httpx.get(ex.urls.catalog + "/markets", timeout=READ_S).status_code == 200
        for s in held:
            s.close()
        wait_for(lambda: CROWD_IP not in ex.call(lambda: dict(listener.held)), what="the crowd's connections let go")
        assert ok_from(ex.urls.clob, CROWD_IP).text.strip('"') == "OK"  # back under its cap: served again
    finally:
        for s in held:
            s.close()
        ex.stop()


def test_a_websocket_over_the_cap_is_refused_429_in_its_handshake():
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect as ws_connect

    ex = start_exchange(connections_per_client=2)
    try:
        with ws_connect(ex.urls.ws + "/ws/market", open_timeout=READ_S), \
                ws_connect(ex.urls.ws + "/ws/market", open_timeout=READ_S):
            with pytest.raises(InvalidStatus) as refused:
                ws_connect(ex.urls.ws + "/ws/market", open_timeout=READ_S)
        answer = refused.value.response
        assert answer.status_code == 429 and answer.headers["Retry-After"] == "1"
        assert "too many connections from this client (at most 2 open)" in json.loads(answer.body)["error"]
    finally:
        ex.stop()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


def open_files(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


def file_limits(pid: int) -> tuple[str, str]:
    line = next(x for x in Path(f"/proc/{pid}/limits").read_text().splitlines() if x.startswith("Max open files"))
    soft, hard = line.split()[3:5]
    return soft, hard


CROWD = 2000
DEFAULT_CAP = 256  # ExchangeConfig.connections_per_client
CROWD_MB = 20  # what 256 held connections and 1,744 refusals may add to the exchange's memory, at most


def test_a_crowd_of_2000_slow_connections_leaves_the_exchange_bounded_in_files_and_memory():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2 * CROWD + 100:
        pytest.skip(f"an open-file limit of {hard} cannot hold the crowd")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    def low_soft_limit() -> None:  # the exchange starts under a soft limit below the crowd, and raises it
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))

    proc = subprocess.Popen([sys.executable, "-m", "bot.exchange.cli", "--free-ports", "--flow", "off"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, preexec_fn=low_soft_limit)
    crowd: list[socket.socket] = []
    try:
        clob = ""
        while not clob:
            line = proc.stdout.readline()
            assert line or proc.poll() is None, "the exchange did not start"
            if line.startswith("clob "):
                clob = line.split()[1]
        if hard != resource.RLIM_INFINITY:
            assert file_limits(proc.pid) == (str(hard), str(hard))  # raised to the hard limit at start
        addr = address(clob)
        for _ in range(20):
            assert ok_from(clob, OTHER_IP).status_code == 200
        files_before, rss_before = open_files(proc.pid), rss_mb(proc.pid)
        refused = 0
        for _ in range(CROWD):
            s = connect(addr)
            s.sendall(SLOW_HEAD)
            if len(crowd) < DEFAULT_CAP:
                crowd.append(s)  # held: the cap is not reached yet
                continue
            with s:
                assert_refused_429(answer_and_close(s), DEFAULT_CAP)
            refused += 1
        assert refused == CROWD - DEFAULT_CAP and all(still_open(s) for s in crowd)
        assert ok_from(clob, OTHER_IP).text.strip('"') == "OK"
        assert open_files(proc.pid) <= files_before + DEFAULT_CAP + 2  # + the /ok connection, if not yet gone
        assert rss_mb(proc.pid) <= rss_before + CROWD_MB
        for s in crowd:
            s.close()
        wait_for(lambda: open_files(proc.pid) <= files_before, deadline_s=READ_S, what="the crowd's files closed")
        assert rss_mb(proc.pid) <= rss_before + CROWD_MB
        assert ok_from(clob, CROWD_IP).text.strip('"') == "OK"
    finally:
        for s in crowd:
            s.close()
        proc.terminate()
        proc.wait(timeout=15)
        proc.stdout.close()

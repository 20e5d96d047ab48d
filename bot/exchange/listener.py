"""The exchange's listening sockets: what one client IP holds is capped where connections are accepted.

Invariant: a client IP holds at most ``cap`` open connections on one listener (sending a request,
waiting for one, or upgraded to a WebSocket). One more is refused inside ``accept`` itself, before
any transport, protocol or task exists for it: once it sends something (its request, usually), it is
sent ``refusal_answer(cap)`` (429 in the venue's body, ``Retry-After: 1``, ``Connection: close``)
and the end of the stream, what it sent is dropped, and it is closed when it closes or ``LINGER_S``
after it was refused, whichever comes first (answered then, if it sent nothing); beyond ``MAX_LINGERING`` refused connections waiting
so, one is answered and closed at once (a client still sending may then see a reset). A refusal
costs a few system calls, so a client that reconnects as fast as it can spends its own CPU rather
than the event loop's, and the listen queue drains fast enough for everyone else's connections to
get in. At most ``REFUSALS_PER_ACCEPT`` are refused in one call before the event loop gets back to
its other work. An accepted connection counts until its socket is closed (or collected, whichever
comes first: exactly once).
"""

from __future__ import annotations

import asyncio
import resource
import socket
import weakref

import msgspec

from bot.exchange.intake import LINGER_S, MAX_LINGERING, raw_answer

REFUSALS_PER_ACCEPT = 64  # refused in one accept() call; the rest wait for the next poll
RETRY_AFTER_S = 1


def refusal_answer(cap: int) -> bytes:
    """The whole HTTP answer to a connection over the cap: the venue's 429 body and headers."""
    body = msgspec.json.encode({"error": f"rate_limited: too many connections from this client (at most {cap} open)",
                                "retry_after_seconds": RETRY_AFTER_S})
    return raw_answer(429, body, {"retry-after": str(RETRY_AFTER_S)})


class Listener(socket.socket):
    """A listening TCP socket that hands out at most ``cap`` open connections per client IP."""

    def __init__(self, family: socket.AddressFamily, cap: int) -> None:
        super().__init__(family, socket.SOCK_STREAM)
        self.cap = cap
        self.refusal = refusal_answer(cap)
        self.held: dict[str, int] = {}  # client IP -> its open connections
        self.refused = 0  # connections refused over the cap, for audits
        self.lingering = 0  # refused connections left open a while before they close

    def accept(self) -> tuple[socket.socket, object]:
        """The next connection whose client is under the cap; those over it are refused on the way.
        ``BlockingIOError`` when none is queued; ``ConnectionAbortedError`` (asyncio's cue to poll
        again) after ``REFUSALS_PER_ACCEPT`` refusals in a row."""
        for _ in range(REFUSALS_PER_ACCEPT):
            fd, addr = self._accept()  # type: ignore[attr-defined]
            ip = addr[0]
            held = self.held.get(ip, 0)
            if held < self.cap:
                self.held[ip] = held + 1
                return Accepted(self, ip, fd), addr
            self.refused += 1
            self._refuse(fd)
        raise ConnectionAbortedError("connections over the per-client cap refused; the rest on the next poll")

    def _refuse(self, fd: int) -> None:
        conn = socket.socket(self.family, self.type, self.proto, fileno=fd)
        conn.setblocking(False)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None or self.lingering >= MAX_LINGERING:
            self._answer(conn)  # at once: a client still sending may see a reset instead
            conn.close()
            return
        self.lingering += 1  # answered when its request comes (or it leaves), closed LINGER_S after it came
        refused = _Refused(conn)
        loop.add_reader(fd, self._readable, loop, refused)
        loop.call_later(LINGER_S, self._let_go, loop, refused)

    def _answer(self, conn: socket.socket) -> None:
        try:
            conn.recv(65536)  # what it sent is dropped
        except OSError:
            pass  # nothing yet
        try:
            conn.send(self.refusal)
            conn.shutdown(socket.SHUT_WR)  # the answer, then the end of the stream
        except OSError:
            pass  # the client already left

    def _readable(self, loop: asyncio.AbstractEventLoop, refused: "_Refused") -> None:
        if refused.answered:
            try:
                if refused.conn.recv(65536):
                    return  # drained
            except BlockingIOError:
                return
            except OSError:
                pass
            self._let_go(loop, refused)  # the client closed (or reset): nothing more to wait for
            return
        refused.answered = True
        self._answer(refused.conn)

    def _let_go(self, loop: asyncio.AbstractEventLoop, refused: "_Refused") -> None:
        if refused.conn.fileno() < 0:
            return  # already closed
        loop.remove_reader(refused.conn.fileno())
        if not refused.answered:
            self._answer(refused.conn)  # it sent nothing: nothing of it can turn the close into a reset
        refused.conn.close()
        self.lingering -= 1

    def release(self, ip: str) -> None:
        """One connection of ``ip`` closed."""
        left = self.held.get(ip, 0) - 1
        if left > 0:
            self.held[ip] = left
        else:
            self.held.pop(ip, None)


class _Refused:
    """A refused connection waiting to be answered and closed."""

    __slots__ = ("conn", "answered")

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.answered = False


class Accepted(socket.socket):
    """An accepted connection, counted against its client on ``listener`` until it is closed."""

    def __init__(self, listener: Listener, ip: str, fd: int) -> None:
        super().__init__(listener.family, listener.type, listener.proto, fileno=fd)
        self._release = weakref.finalize(self, listener.release, ip)
        self._release.atexit = False

    def close(self) -> None:
        super().close()
        self._release()  # once: a finalizer runs at most one time


def raise_open_file_limit() -> int:
    """Raise this process's soft open-file limit to its hard limit (connections are files); the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (OSError, ValueError):
            pass  # kept as it was
    return soft

"""The order connection's HTTP/1.1 answer parser (``bot.venue.http1``) reads what h11 reads.

Generated answers (status, headers, a Content-Length, chunked or to-the-close body, interim 1xx
answers before them), cut into arbitrary pieces, are parsed by both; status, headers, body and
whether the connection may be reused agree. Arbitrary bytes only ever give an answer or a
``ProtocolError``/``ClosedUnanswered``, never another exception; request bytes that could break
the framing are refused.
"""

from __future__ import annotations

import h11
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.venue.http1 import ClosedUnanswered, ProtocolError, ResponseParser, format_request


_NAME = st.text("abcdefghijklmnopqrstuvwxyz-ABCXYZ0123456789", min_size=1, max_size=12).filter(
    lambda n: n.lower() not in ("content-length", "transfer-encoding", "connection"))
_VALUE = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=20).map(
    lambda v: v.replace(",", ""))  # repeated headers are joined with ", ": no comma inside, so both agree


@st.composite
def answers(draw):
    status = draw(st.sampled_from([200, 201, 204, 400, 401, 404, 425, 429, 500, 503]))
    headers = draw(st.lists(st.tuples(_NAME, _VALUE), max_size=5))
    body = b"" if status == 204 else draw(st.binary(max_size=300))
    framing = "none" if status == 204 else draw(st.sampled_from(["length", "chunked", "close"]))
    close = framing == "close" or draw(st.booleans())
    interim = draw(st.integers(0, 2))
    head = b"".join(b"HTTP/1.1 100 Continue\r\n\r\n" for _ in range(interim))
    head += f"HTTP/1.1 {status} Reason here\r\n".encode()
    head += b"".join(f"{n}: {v}\r\n".encode() for n, v in headers)
    if close:
        head += b"Connection: close\r\n"
    if framing == "length":
        head += f"Content-Length: {len(body)}\r\n".encode()
        payload = body
    elif framing == "chunked":
        head += b"Transfer-Encoding: chunked\r\n"
        sizes = draw(st.lists(st.integers(1, 64), max_size=8))
        payload, at = b"", 0
        for n in sizes:
            piece = body[at:at + n]
            if not piece:
                break
            payload += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
            at += len(piece)
        body = body[:at]
        payload += b"0\r\n\r\n"
    else:
        payload = body
    raw = head + b"\r\n" + payload
    cuts = sorted(draw(st.lists(st.integers(0, len(raw)), max_size=6)))
    return raw, cuts, framing == "close"


def _h11(raw: bytes, to_close: bool) -> tuple[int, dict[str, str], bytes, bool]:
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="POST", target="/orders", headers=[("Host", "x"), ("Content-Length", "0")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(raw)
    if to_close:
        conn.receive_data(b"")
    status, headers, body = 0, {}, b""
    while True:
        ev = conn.next_event()
        if isinstance(ev, h11.Response):
            status = ev.status_code
            for n, v in ev.headers:
                name, value = n.decode(), v.decode("latin-1")
                headers[name] = f"{headers[name]}, {value}" if name in headers else value
        elif isinstance(ev, h11.Data):
            body += bytes(ev.data)
        elif isinstance(ev, h11.EndOfMessage) or ev is h11.NEED_DATA or isinstance(ev, h11.ConnectionClosed):
            break
    keep = conn.our_state is h11.DONE and conn.their_state is h11.DONE
    return status, headers, body, keep


def _ours(raw: bytes, cuts: list[int], to_close: bool) -> tuple[int, dict[str, str], bytes, bool]:
    parser = ResponseParser()
    got = None
    at = 0
    for cut in cuts + [len(raw)]:
        piece, at = raw[at:cut], max(at, cut)
        got = parser.feed(piece) or got
    if to_close:
        assert got is None  # a body to the close is whole only at the close
        got = parser.eof()
    assert got is not None
    return got.status_code, got.headers, got.content, got.keep_alive


@settings(max_examples=300, deadline=None)
@given(answers())
def test_the_parser_reads_an_answer_as_h11_does_however_it_is_cut(case):
    raw, cuts, to_close = case
    assert _ours(raw, cuts, to_close) == _h11(raw, to_close)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.lists(st.integers(0, 400), max_size=4), st.booleans())
def test_arbitrary_bytes_give_an_answer_or_a_typed_error(raw, cuts, ends):
    parser = ResponseParser()
    try:
        at = 0
        for cut in sorted(cuts) + [len(raw)]:
            parser.feed(raw[at:max(at, cut)])
            at = max(at, cut)
        if ends:
            parser.eof()
    except (ProtocolError, ClosedUnanswered):
        pass


@pytest.mark.parametrize("raw", [
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nab",  # conflicting lengths
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",  # an encoding we cannot read
    b"HTTP/1.1 200 OK\r\n folded: value\r\n\r\n",  # obsolete line folding
    b"HTTP/2 200\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nabc",  # bytes after the answer
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
])
def test_malformed_answers_are_protocol_errors(raw):
    with pytest.raises(ProtocolError):
        ResponseParser().feed(raw)


def test_a_connection_closed_before_any_byte_is_closed_unanswered_and_cut_short_is_a_protocol_error():
    with pytest.raises(ClosedUnanswered):
        ResponseParser().eof()
    half = ResponseParser()
    assert half.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab") is None
    with pytest.raises(ProtocolError):
        half.eof()


def test_an_answer_larger_than_the_bound_is_refused_before_it_is_held():
    with pytest.raises(ProtocolError, match="too large"):
        ResponseParser().feed(b"HTTP/1.1 200 OK\r\nContent-Length: 999999999999\r\n\r\n")
    with pytest.raises(ProtocolError, match="too large"):
        ResponseParser().feed(b"HTTP/1.1 200 OK\r\nx: " + b"a" * 70_000)


@given(st.text(max_size=30), st.text(max_size=30))
def test_a_request_is_refused_rather_than_sent_with_a_header_that_breaks_its_framing(name, value):
    try:
        data = format_request("POST", "/orders", "h", {name: value}, b"{}")
    except ValueError:
        return
    head = data.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
    assert head[2] == f"{name}: {value}".encode("latin-1")  # one line, as given
    assert len(head) == 4 and data.endswith(b"\r\n\r\n{}")


def test_a_request_is_formatted_once_with_its_length():
    data = format_request("POST", "/orders?x=1", "127.0.0.1:9", {"POLY_API_KEY": "k"}, b"[1]")
    assert data == (b"POST /orders?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\nPOLY_API_KEY: k\r\n"
                    b"Content-Length: 3\r\n\r\n[1]")
    with pytest.raises(ValueError):
        format_request("GET", "/a b", "h", {}, None)

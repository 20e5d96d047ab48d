"""Request bodies and WebSocket frames: read under a size cap, decoded as strict JSON of bounded depth.

Invariant: a handler never holds more than ``MAX_BODY_BYTES`` of a body (a larger declared or
received body is refused before it is kept), and no decoder ever recurses into JSON nested deeper
than ``MAX_JSON_DEPTH``: the depth is measured first by a flat scan of the bytes. Only standard
JSON is accepted (no ``NaN``/``Infinity``, valid UTF-8). Every refusal is the venue's 400 body.
"""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.requests import Request

from bot.exchange.replies import bad_request
from bot.venue.models.decoding import MAX_JSON_DEPTH, too_deep

MAX_BODY_BYTES = 1 << 20  # 1 MiB: a full batch of 15 deposit-wallet orders is ~25 KB, 3000 cancel ids ~220 KB


def decode_json(raw: bytes | str) -> Any:
    """``raw`` as a JSON value; ``ValueError`` when it is not standard JSON or nests too deeply."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if too_deep(data):
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise ValueError(str(exc)) from None


async def read_body(request: Request) -> bytes:
    """The request body, at most ``MAX_BODY_BYTES`` (400 otherwise, nothing more is read); read
    once and kept in the request's scope for its later steps (the HMAC check, the decoder)."""
    kept = request.scope.get(_KEPT)
    if kept is not None:
        return kept
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isascii() or not declared.isdigit():
            raise bad_request("invalid Content-Length")
        if len(declared) > 12 or int(declared) > MAX_BODY_BYTES:
            raise too_large()
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise too_large()
        chunks.append(chunk)
    kept = request.scope[_KEPT] = b"".join(chunks)
    return kept


_KEPT = "pmbot.body"


def too_large():
    return bad_request(f"request body too large (at most {MAX_BODY_BYTES} bytes)")

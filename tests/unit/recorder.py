"""An in-process venue for client tests: replays canned replies and records every request."""

from __future__ import annotations

import json

import httpx


class Recorder:
    """httpx.MockTransport handler: answers with ``replies`` in order (the last one repeats).

    A reply is ``(status, body)`` or ``(status, body, headers)``; a ``bytes`` body is sent as is,
    anything else as JSON.
    """

    def __init__(self, *replies) -> None:
        self.replies = list(replies)
        self.requests: list[httpx.Request] = []

    def __call__(self, request):
        self.requests.append(request)
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        status, body, headers = reply if len(reply) == 3 else (*reply, None)
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return httpx.Response(status, content=content, headers=headers or {})

    @property
    def last(self) -> httpx.Request:
        """The most recent request."""
        return self.requests[-1]

"""Structured JSON-line logging with bound context and secret redaction.

Invariant: no value under a secret-looking key, and no registered secret string, ever reaches
an output line; both are replaced by ``"***"`` before rendering.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog

REDACTED = "***"
_SECRET_KEYS = ("secret", "passphrase", "private_key", "privatekey", "api_secret", "password", "auth")
_known_secrets: set[str] = set()


def register_secret(value: str) -> None:
    """Remember a secret string so that it is masked wherever it appears in a log line."""
    if value and len(value) >= 6:
        _known_secrets.add(value)


def _is_secret_key(key: str) -> bool:
    k = key.lower()
    return any(s in k for s in _SECRET_KEYS)


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        for s in _known_secrets:
            if s in value:
                value = value.replace(s, REDACTED)
        return value
    if isinstance(value, dict):
        return {k: (REDACTED if _is_secret_key(str(k)) else _scrub(v)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_scrub(v) for v in value)
    return value


def redact(_logger: Any, _method: str, event: dict[str, Any]) -> dict[str, Any]:
    """structlog processor: mask secret keys and known secret strings."""
    return {k: (REDACTED if _is_secret_key(k) else _scrub(v)) for k, v in event.items()}


def configure(level: str = "info", json: bool = True, stream: TextIO | None = None) -> None:
    """Configure structlog once for the process (JSON lines by default, to stderr)."""
    lvl = logging.getLevelName(level.upper())
    if not isinstance(lvl, int):
        raise ValueError(f"unknown log level: {level!r}")
    renderer: Any = structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            redact,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.WriteLoggerFactory(file=stream or sys.stderr),
        cache_logger_on_first_use=False,
    )


def get_logger(name: str = "bot", **context: Any) -> Any:
    """A logger with ``context`` bound (token, order id, strategy...)."""
    return structlog.get_logger(name).bind(**context)

"""The ``bot`` command: market lookup, books, offline order signing, keys, operator commands,
config checks, recording the market stream, and the entry points of the local exchange, live
trading and the demo (the commands: ``bot.commands``).

Invariant: every failure ends as one line on stderr: ``error: ...`` with exit code 2 for bad
input from the user or the venue (config, flags, venue errors, unreachable hosts), exit code 1
for an unexpected internal error; a traceback shows only with ``--debug``. No secret value is
printed unless the user asks for it with ``--show-secrets`` or ``--export``, and none ever
reaches an error line. ``bot order build`` never sends anything.
"""

from __future__ import annotations

import re
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from bot.commands.parser import build_parser
from bot.commands.session import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, Session
from bot.ops.arguments import EXIT_INTERRUPTED
from bot.ops.logging import configure as configure_logging
from bot.ops.logging import redact

__all__ = ["build_parser", "main", "one_line_error"]


def main(argv: Sequence[str] | None = None, *, http_transport: Any = None) -> int:
    """Run the ``bot`` command; returns the exit code (``http_transport``, an
    ``httpx.AsyncBaseTransport``, replaces the network)."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # --help, or a usage error already printed on one line
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    configure_logging(args.log_level or "warning", json=True)
    session = Session(args, http_transport)
    try:
        return int(args.handler(session))
    except BaseException as raised:
        exc = _sole_error(raised)
        if isinstance(exc, KeyboardInterrupt):
            return EXIT_INTERRUPTED
        if isinstance(exc, BrokenPipeError):
            return EXIT_OK
        if not isinstance(exc, Exception):
            raise
        if args.debug:
            traceback.print_exception(raised)
        if isinstance(exc, _user_errors()):
            message = one_line_error(exc)
            url = getattr(exc, "base_url", None) or session.last_url  # the host that failed, else the last opened
            if _is_unreachable(exc) and url:
                message = f"cannot reach {url}: {message}"
            sys.stderr.write(f"error: {message}\n")
            return EXIT_USAGE
        sys.stderr.write(f"error: internal error: {type(exc).__name__}: {one_line_error(exc)}\n")
        return EXIT_INTERNAL


def _user_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean bad input from the user or the venue (exit 2)."""
    import httpx
    import msgspec

    errors: list[type[BaseException]] = [ValueError, msgspec.MsgspecError, httpx.HTTPError, OSError]
    try:
        from bot.venue.errors import VenueError

        errors.append(VenueError)
    except ImportError:
        pass
    return tuple(errors)


def _is_unreachable(exc: BaseException) -> bool:
    import httpx

    try:
        from bot.venue.errors import TransportError
    except ImportError:
        return isinstance(exc, httpx.TransportError)
    return isinstance(exc, (TransportError, httpx.TransportError))


def one_line_error(exc: BaseException) -> str:
    """``exc`` as one line with known secrets masked."""
    text = str(exc) or type(exc).__name__
    text = re.sub(r"\s+", " ", text).strip()
    return redact(None, "", {"message": text})["message"]


def _sole_error(exc: BaseException) -> BaseException:
    """The one error inside (nested) task-group wrappers, so it is reported as itself."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


if __name__ == "__main__":
    sys.exit(main())

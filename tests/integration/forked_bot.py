"""A fork server of ``bot run`` processes, for crash loops: everything is imported once, then each
bot is a fork running ``bot.cli.main(["run", "--config", CONFIG])``, so one of many restarts costs a
fork, not an interpreter start. The server itself starts no thread, so forking it is safe.

Protocol, one line each way: the parent writes ``CONFIG LOG``; the server forks a bot whose stdout
and stderr go to LOG and answers its pid. Children are reaped by the server (SIGCHLD ignored): once
``os.kill(pid, 0)`` fails, the bot is gone. End of input ends the server.

    python -m tests.integration.forked_bot
"""

from __future__ import annotations

import os
import signal
import sys

import bot.cli
import bot.execution.journal  # noqa: F401  (imported once, before any fork)
import bot.live.run  # noqa: F401
import bot.live.shell  # noqa: F401
import bot.live.view  # noqa: F401
import bot.ops.metrics  # noqa: F401
import bot.ops.secrets  # noqa: F401
import bot.strategy  # noqa: F401
import rich.console  # noqa: F401
import strategies.market_maker  # noqa: F401


def serve() -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    for line in sys.stdin:
        config, log = line.split()
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(out, 1)
            os.dup2(out, 2)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            code = 70
            try:
                code = bot.cli.main(["run", "--config", config])
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        print(pid, flush=True)


if __name__ == "__main__":
    serve()

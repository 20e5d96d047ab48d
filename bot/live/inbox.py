"""What the live shell's inbox carries besides typed results (``bot.execution.protocol``): one
small message per kind of news or request the core loop acts on.

Kinds: ``stop`` and ``market`` wake the loop; ``ws`` a user-channel connection event (``a``);
``rest_books`` books read over REST (``a``); ``positions_seen`` the venue's holdings (``a``,
token -> share units); ``resend`` an order to POST again, its place token spent (``a``, the order
id); ``halt``, ``reduce``, ``resume``, ``sync``, ``trades`` the operator's controls (``a``: why).
Invariant: only the core loop reads the inbox, so only it touches the engine.
"""

from __future__ import annotations

from typing import Any

import msgspec


class Msg(msgspec.Struct, frozen=True):
    kind: str
    a: Any = None
    b: Any = None
    c: Any = None


STOP = Msg("stop")  # wakes the core loop; the stop event says the rest
MARKET = Msg("market")  # wakes the core loop: the market buffer has events

"""After a restart: merge what the journal remembers with what the exchange shows, purely.

Invariant: after the merge, (1) no fill the journal already holds is delivered again, and every
trade the exchange lists that we had not seen is delivered once, so journal fills plus new fills
minus reversals is the exchange's position (no duplicated fill, no lost position); (2) every
order the exchange shows open is known to us (adopted) or cancelled (orphan policy); (3) every
order we thought open but the exchange does not show is closed, and none is resent: a strategy
re-quotes from its targets instead of reviving orders signed before the crash.
"""

from __future__ import annotations

from typing import Any, Iterable

from bot.execution.journal import JournalState
from bot.execution.orders import OrderState, OwnOrder
from bot.execution.reconciler import Output, Reconciler

S = OrderState


def _copy(o: OwnOrder) -> OwnOrder:
    c = OwnOrder(
        o.order_id, o.token_id, o.side, o.price, o.size, order_type=o.order_type, post_only=o.post_only,
        expiration=o.expiration, state=o.state, filled=o.filled, venue_matched=o.venue_matched,
        trade_ids=list(o.trade_ids), reducing=o.reducing, signed=o.signed, sent_at=o.sent_at,
        updated_at=o.updated_at, reason=o.reason, market=o.market,
    )
    return c


def restore(
    rec: Reconciler,
    journal: JournalState,
    open_orders: Iterable[Any],
    trades: Iterable[Any],
    now: float,
    trades_cursor: str | None = None,
    next_cursor: str | None = None,
) -> list[Output]:
    """Load ``journal`` into the fresh reconciler ``rec``, then merge ``GET /data/trades`` items
    and a complete ``GET /data/orders`` listing; returns what the merge found (new fills,
    reversals, orphans to cancel, closed orders...) for the caller to absorb.

    The journal state given in is not modified (its orders are copied); nothing is emitted for
    what the journal already held.
    """
    orders = [_copy(o) for o in journal.orders]
    for o in orders:
        # a cancel or a submit in flight at the crash is unanswered forever: ask the venue again
        if o.state is S.PENDING_CANCEL:
            o.state = S.PARTIALLY_FILLED if o.matched > 0 else S.LIVE
        elif o.state is S.PENDING_SUBMIT:
            o.state = S.UNKNOWN
    rec.load(orders, journal.fills, journal.reversed, dict(journal.trade_statuses), dict(journal.cursors))
    out: list[Output] = []
    # trades first, so an order that closed by filling is seen filled before the listing closes it
    out += rec.on_trades_page(trades, now, cursor=trades_cursor, next_cursor=next_cursor)
    out += rec.on_open_orders(open_orders, now, as_of=now, resend_unknown=False)
    return out

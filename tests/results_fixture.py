"""A small scripted run of two complementary tokens, played into any journal sink: a results
folder (``ResultsSink``, with its series sampled every second) and a journal (SQLite) get the
same orders, fills and reversal. The books and every figure are worked out by hand below.

Timeline (seconds after ``T0``; YES book .50/.52 until 40 s, .48/.50 until 80 s, then .49/.51;
the NO book is its complement):

- 1.5  o1 buy 10 YES @ .50 and o2 sell 10 YES @ .52 sent, LIVE at 1.7
- 38.5 o1 maker fill 10 @ .50 (FILLED); 40.5 o2 cancel asked, CANCELED at 41.5
- 42.5 o3 sell 10 YES @ .50 sent, LIVE at 42.7; maker fills 4 at 50.5, 6 at 70.5 (FILLED)
- 60.5 o4 buy 5 NO @ .52 sent, taker fill 5 at 60.6 (fee .05), FILLED
- 85.5 o5 buy 10 YES @ .49 sent, LIVE 85.7, maker fill 10 at 95.5, reversed (trade failed) at 100.5
- 90.5 o6 sell 5 YES @ .60 sent, REJECTED at 90.6
- 100.5 o7 buy 10 NO @ .49 sent, LIVE 100.7, CANCELED at 115.5 (never filled)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.results.read import BookSample
from bot.results.folder import ResultsSink
from bot.core.events import Fill
from bot.execution.journal import Journal
from bot.execution.orders import OrderState as S
from bot.execution.orders import OwnOrder
from bot.portfolio.positions import Portfolio
from bot.venue.enums import Side, TradeStatus
from bot.core.events import FillReversal

T0 = 1_760_000_000.0
END = 120  # the last sample is at T0 + END
YES = "71321045679252212594626385532706912750332728571942532289631379312455583992563"
NO = "52114319501245915516055106046884209969926127482827954674443846427813813222426"
SHARE = 1_000_000


def yes_book(t: float) -> tuple[int, int]:
    dt = t - T0
    if dt < 40:
        return 500_000, 520_000
    if dt < 80:
        return 480_000, 500_000
    return 490_000, 510_000


def books_at(t: float) -> dict[str, tuple[int | None, int | None]]:
    bid, ask = yes_book(t)
    return {YES: (bid, ask), NO: (1_000_000 - ask, 1_000_000 - bid)}


def book_samples() -> list[BookSample]:
    """The books sampled every second, as a recording of the run's time would give them."""
    return [BookSample(T0 + k, books_at(T0 + k)) for k in range(END + 1)]


def _script() -> list[tuple[float, str, tuple[Any, ...]]]:
    """(time, kind, args): place (oid, token, side, price, size), state (oid, state, filled),
    fill (oid, trade id, price, size, fee, maker), reversal (oid, trade id)."""
    s = []
    def at(dt: float, kind: str, *args: Any) -> None:
        s.append((T0 + dt, kind, args))

    at(1.5, "place", "o1", YES, Side.BUY, 500_000, 10 * SHARE)
    at(1.5, "place", "o2", YES, Side.SELL, 520_000, 10 * SHARE)
    at(1.7, "state", "o1", S.LIVE, 0)
    at(1.7, "state", "o2", S.LIVE, 0)
    at(38.5, "fill", "o1", "t1", 500_000, 10 * SHARE, 0, True)
    at(38.5, "state", "o1", S.FILLED, 10 * SHARE)
    at(40.5, "state", "o2", S.PENDING_CANCEL, 0)
    at(41.5, "state", "o2", S.CANCELED, 0)
    at(42.5, "place", "o3", YES, Side.SELL, 500_000, 10 * SHARE)
    at(42.7, "state", "o3", S.LIVE, 0)
    at(50.5, "fill", "o3", "t2", 500_000, 4 * SHARE, 0, True)
    at(50.5, "state", "o3", S.PARTIALLY_FILLED, 4 * SHARE)
    at(60.5, "place", "o4", NO, Side.BUY, 520_000, 5 * SHARE)
    at(60.6, "fill", "o4", "t3", 520_000, 5 * SHARE, 50_000, False)
    at(60.6, "state", "o4", S.FILLED, 5 * SHARE)
    at(70.5, "fill", "o3", "t4", 500_000, 6 * SHARE, 0, True)
    at(70.5, "state", "o3", S.FILLED, 10 * SHARE)
    at(85.5, "place", "o5", YES, Side.BUY, 490_000, 10 * SHARE)
    at(85.7, "state", "o5", S.LIVE, 0)
    at(90.5, "place", "o6", YES, Side.SELL, 600_000, 5 * SHARE)
    at(90.6, "state", "o6", S.REJECTED, 0)
    at(95.5, "fill", "o5", "t5", 490_000, 10 * SHARE, 0, True)
    at(95.5, "state", "o5", S.FILLED, 10 * SHARE)
    at(100.5, "reversal", "o5", "t5")
    at(100.5, "place", "o7", NO, Side.BUY, 490_000, 10 * SHARE)
    at(100.7, "state", "o7", S.LIVE, 0)
    at(115.5, "state", "o7", S.CANCELED, 0)
    return s


def play(*sinks: Any, sample: ResultsSink | None = None) -> None:
    """Play the run into ``sinks`` (journal sinks); ``sample``: also sample its series every
    second into that results sink, as the backtest's ``Series`` does (PnL at the books' mids)."""
    orders: dict[str, OwnOrder] = {}
    fills: dict[str, Fill] = {}
    pf = Portfolio()
    events = _script()
    i = 0
    for k in range(END + 1):
        now = T0 + k
        while i < len(events) and events[i][0] <= now:
            t, kind, args = events[i]
            i += 1
            if kind == "place":
                oid, token, side, price, size = args
                o = orders[oid] = OwnOrder(oid, token, side, price, size, sent_at=t, updated_at=t)
                for sink in sinks:
                    sink.order(o)
            elif kind == "state":
                oid, state, filled = args
                o = orders[oid]
                o.state, o.filled, o.updated_at = state, filled, t
                if state is not S.REJECTED and not o.answered_at:
                    o.answered_at = t
                for sink in sinks:
                    sink.order(o)
            elif kind == "fill":
                oid, tid, price, size, fee, maker = args
                o = orders[oid]
                f = fills[tid] = Fill(tid, oid, o.token_id, o.side, price, size, fee=fee, is_maker=maker,
                                      status=TradeStatus.MATCHED, ts=t)
                pf.apply_fill(f)
                for sink in sinks:
                    sink.fill(f)
            else:
                oid, tid = args
                pf.apply_reversal(FillReversal(fills[tid]))
                for sink in sinks:
                    sink.reversal(fills[tid])
        for sink in sinks:
            sink.commit()
        if sample is None:
            continue
        marks, tokens = {}, {}
        for tok, (bid, ask) in books_at(now).items():
            marks[tok] = (bid + ask) // 2
            working = [o for o in orders.values() if o.token_id == tok and not o.state.terminal]
            bids = [o.price for o in working if o.side is Side.BUY]
            asks = [o.price for o in working if o.side is Side.SELL]
            tokens[tok] = {"position": pf.size(tok), "mark": marks[tok], "bid": bid, "ask": ask,
                           "our_bid": max(bids) if bids else None, "our_ask": min(asks) if asks else None}
        realized, fees, unrealized = pf.realized_pnl, pf.fees, pf.unrealized_pnl(marks)
        sample.sample({"t": now, "realized": realized, "unrealized": unrealized, "fees": fees,
                       "total": realized + unrealized - fees, "tokens": tokens})


def write_results(folder: Path, format: str = "parquet", row_group: int = 16) -> Path:
    """The run as a backtest's results folder (no summary.json: the report computes one); the
    Parquet tables in row groups of ``row_group`` rows, so that they hold several."""
    sink = ResultsSink(folder, format=format, row_group=row_group)
    play(sink, sample=sink)
    sink.close()
    return folder


def write_journal(path: Path) -> Path:
    """The run as a live journal."""
    journal = Journal(path, synchronous="NORMAL", signed_type=None)
    play(journal)
    journal.close()
    return path

"""What a person watching a run sees: a rich live view, plain status lines, the end summary.

Invariant: the view only reads the engine (books, own orders, fills, portfolio, stats); it never
changes state, and it shows no secret (token ids are shortened, no credentials are held here).
Money is shown from integer micro-units, formatted exactly.
"""

from __future__ import annotations

import statistics
from typing import Any

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from bot.strategy_set import strategy_rows
from bot.engine.engine import Engine
from bot.portfolio.sets import totals
from bot.venue.units import UNIT, format_units


def usd(units: int) -> str:
    """Micro-units as a signed decimal with four places, truncated (exact, no float)."""
    sign = "-" if units < 0 else ""
    whole, frac = divmod(abs(units), UNIT)
    return f"{sign}{whole}.{frac:06d}"[:-2]


def px(units: int | None) -> str:
    return "-" if units is None else format_units(units)


def short(token_id: str) -> str:
    return "…" + token_id[-6:]


def latency_figures(samples: Any) -> tuple[float | None, float | None]:
    """Median and p99 of tick-to-order samples (seconds), ``None`` without samples."""
    xs = sorted(samples)
    if not xs:
        return None, None
    p99 = xs[min(len(xs) - 1, int(len(xs) * 0.99))]
    return statistics.median(xs), p99


def _us(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e6:.0f} µs"


def pnl_figures(engine: Engine) -> dict[str, int]:
    marks = engine.marks()
    pf = engine.portfolio
    return {
        "realized": pf.realized_pnl,
        "unrealized": pf.unrealized_pnl(marks),
        "fees": pf.fees,
        "rebates": pf.rebates,
        "total": pf.total_pnl(marks),
    }


def render(engine: Engine, *, elapsed: float, duration: float | None) -> Group:
    """The live view: books and our quotes, recent fills, status lines.

    Every number keeps its full width (never cut with "…") down to an 80-column terminal: one of
    our orders per line in its cell, and only the token column wraps (between words) when space
    runs out."""
    books = _table("Books and our quotes")
    for col in ("token", "bid\nsize", "bid", "ask", "ask\nsize", "our\nbids", "our\nasks", "position", "unreal."):
        books.add_column(col, justify="left" if col == "token" else "right", no_wrap=col != "token",
                         overflow="fold")
    marks = engine.marks()
    for m in engine.markets:
        for i, t in enumerate(m.tokens):
            b = engine.books.get(t)
            mine = engine.working_orders(t)
            bids = "\n".join(f"{px(o.price)}x{format_units(o.remaining)}" for o in mine if o.side.value == "BUY")
            asks = "\n".join(f"{px(o.price)}x{format_units(o.remaining)}" for o in mine if o.side.value == "SELL")
            pos = engine.portfolio.position(t)
            stale = b is None or b.stale
            books.add_row(
                f"{m.outcomes[i]} {short(t)}" + (" (stale)" if stale else ""),
                format_units(b.best_bid_size) if b is not None and b.best_bid is not None else "-",
                px(b.best_bid if b is not None else None),
                px(b.best_ask if b is not None else None),
                format_units(b.best_ask_size) if b is not None and b.best_ask is not None else "-",
                bids or "-", asks or "-", format_units(pos.size), usd(pos.unrealized_pnl(marks.get(t))),
            )
    fills = _table("Recent fills")
    for col in ("trade", "token", "side", "price", "size", "maker", "status"):
        fills.add_column(col, no_wrap=True, overflow="fold")
    for f in list(engine.recent_fills)[-6:][::-1]:
        status = engine.settlement.get(f.trade_id, f.status)
        fills.add_row(f.trade_id[-10:], short(f.token_id), f.side.value, px(f.price), format_units(f.size),
                      "yes" if f.is_maker else "no", getattr(status, "value", str(status)))
    return Group(books, fills, *status_lines(engine, elapsed=elapsed, duration=duration))


def _table(title: str) -> Table:
    """A table whose columns are set apart by one space (no rules, no padding), so that nine
    columns of figures fit in 80 columns."""
    return Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, padding=0, expand=True)


def status_lines(engine: Engine, *, elapsed: float, duration: float | None) -> list[Text]:
    """The view's status, in lines short enough for an 80-column terminal."""
    p = pnl_figures(engine)
    s = engine.stats
    med, p99 = latency_figures(engine.latencies)
    left = f"{max(0.0, duration - elapsed):.0f}s left" if duration else f"{elapsed:.0f}s"
    return [
        Text(f"state {engine.state.value} | {left} | orders sent {s.orders_sent} accepted {s.orders_accepted} "
             f"rejected {s.orders_rejected} | fills {s.fills}", no_wrap=True, overflow="fold"),
        Text(f"PnL {usd(p['total'])} (realized {usd(p['realized'])} unrealized {usd(p['unrealized'])}) "
             f"fees {usd(p['fees'])} | "
             f"429s {s.rate_limited}", no_wrap=True, overflow="fold"),
        Text(f"tick-to-order median {_us(med)} p99 {_us(p99)}", no_wrap=True, overflow="fold"),
    ]


def header_lines(what: str, urls: list[tuple[str, str]]) -> list[Text]:
    """What is running, then one ``name  URL`` line per address: a URL is never wrapped or cut."""
    return [Text(what, no_wrap=True, overflow="fold"),
            *(Text(f"  {name:<9} {url}", no_wrap=True, overflow="ignore") for name, url in urls)]


def plain_line(engine: Engine, *, elapsed: float) -> str:
    """One status line for logs and non-TTY output."""
    s = engine.stats
    p = pnl_figures(engine)
    open_orders = len(engine.working_orders())
    return (
        f"[{elapsed:6.1f}s] state={engine.state.value} open_orders={open_orders} sent={s.orders_sent} "
        f"accepted={s.orders_accepted} rejected={s.orders_rejected} fills={s.fills} "
        f"realized={usd(p['realized'])} unrealized={usd(p['unrealized'])} pnl={usd(p['total'])} 429s={s.rate_limited}"
    )


def summary_rows(engine: Engine) -> list[tuple[str, str]]:
    s = engine.stats
    p = pnl_figures(engine)
    med, p99 = latency_figures(engine.latencies)
    return [
        ("orders sent", str(s.orders_sent)),
        ("orders accepted", str(s.orders_accepted)),
        ("orders rejected", str(s.orders_rejected)),
        ("cancels sent", str(s.cancels_sent)),
        ("fills", str(s.fills)),
        ("fills reversed", str(s.reversals)),
        ("volume (shares)", format_units(s.volume)),
        ("realized PnL (USDC)", usd(p["realized"])),
        ("unrealized PnL (USDC)", usd(p["unrealized"])),
        ("total PnL after fees (USDC)", usd(p["total"])),
        ("fees (USDC)", usd(p["fees"])),
        ("fees paid (USDC)", usd(p["fees"] + p["rebates"])),
        ("rebates earned (USDC)", usd(p["rebates"])),
        *set_rows(engine),
        ("429 responses", str(s.rate_limited)),
        ("risk rejections", str(s.risk_rejections)),
        ("tick-to-order median", _us(med)),
        ("tick-to-order p99", _us(p99)),
        ("final state", engine.state.value),
    ]


def set_rows(engine: Engine) -> list[tuple[str, str]]:
    """The complete sets the portfolio holds (valued at their payout in the PnL) and the mergeable
    pairs among them, when there are any."""
    held = totals(engine.portfolio.complete_sets())
    rows = []
    if held.sets:
        rows += [("complete sets (shares)", format_units(held.sets)),
                 ("locked value of the sets (USDC)", usd(held.value)),
                 ("edge realized on the sets (USDC)", usd(held.edge))]
    if held.mergeable:
        rows += [("mergeable YES+NO pairs (shares)", format_units(held.mergeable)),
                 ("capital locked in mergeable pairs (USDC)", usd(held.mergeable_cost))]
    return rows


def summary_table(engine: Engine) -> Table:
    t = Table(title="Run summary")
    t.add_column("figure")
    t.add_column("value", justify="right")
    for k, v in summary_rows(engine):
        t.add_row(k, v)
    for token, values in getattr(engine.strategy, "estimates", dict)().items():  # what the strategy estimated
        for name, value in values.items():
            t.add_row(f"estimate {name} (…{str(token)[-8:]})", f"{value:.6g}")
    for k, v in strategy_rows(getattr(engine.strategy, "figures", dict)()):  # several strategies, each
        t.add_row(k, v)
    return t


def stop_line(reason: str | None, open_left: int | None) -> str:
    """Why the run stopped and how many open orders the exchange still lists for the account."""
    shown = "unknown (could not ask)" if open_left is None else str(open_left)
    return f"stopped: {reason or 'done'}; open orders at the exchange: {shown}"


async def open_orders_left(venue: Any) -> int | None:
    """The account's open orders as the exchange lists them (``None`` if it cannot be asked)."""
    try:
        return len([o async for o in venue.clob.get_orders()])
    except Exception:  # noqa: BLE001 - informational only, at the very end of a run
        return None


async def ending(engine: Engine, reason: str | None, venue: Any) -> Group:
    """What a run prints when it ends (``bot run`` and ``bot demo`` alike): the summary table,
    then why it stopped and what the exchange still lists, read back from the exchange."""
    if venue is None:  # paper trading: the simulated venue executed everything
        return Group(summary_table(engine), Text(f"stopped: {reason or 'done'}; paper trading: no order was sent"))
    return Group(summary_table(engine), Text(stop_line(reason, await open_orders_left(venue))))

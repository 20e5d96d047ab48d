"""``bot markets`` and ``bot book``: the catalog's markets and a token's order book, read with no key.

Invariant: every id the docs say to copy prints whole (never cut to fit a terminal); best bid and
ask are found by price, never by list position; a market's neg-risk flag is the catalog's, else
the CLOB's, else unknown (never a guessed false).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from bot.commands.output import decimal_of, exact, print_json
from bot.commands.session import EXIT_OK, CommandError, Session
from bot.commands.venue import on_venue

MARKET_FLAGS = ("active", "closed", "archived", "neg_risk")  # shown for a market when true
MIN_QUESTION_WIDTH = 24  # the question column folds down to this; the id columns never do
CLOB_LOOKUPS = 8  # neg-risk lookups in flight at once (each also passes the CLOB's rate limiter)


# --------------------------------------------------------------------------------------------
# bot markets


def cmd_markets(s: Session) -> int:
    from bot.venue.models import str_list

    a = s.args

    async def fetch(venue):
        async with venue.catalog() as catalog:
            markets = await catalog.markets(
                limit=a.limit, offset=a.offset, active=a.active, closed=a.closed, archived=a.archived,
                tag=a.tag, tag_id=a.tag_id, event_slug=a.event_slug, condition_id=a.condition_id,
                slug=a.slug, order=a.order, ascending=a.ascending, creator=a.creator,
            )
        unknown = [tokens[0] for m in markets if m.neg_risk is None and (tokens := str_list(m.clob_token_ids))]
        if not unknown:
            return markets, {}
        async with venue.clob() as clob:
            return markets, await clob_neg_risk(clob, unknown)

    markets, neg_risk = on_venue(s, fetch)
    rows = [_market_row(m, neg_risk) for m in markets]
    if a.json:
        print_json(rows)
        return EXIT_OK
    if a.ids_only:
        for r in rows:
            print(r["condition_id"])
            for t in r["tokens"]:
                print(t["token_id"])
        return EXIT_OK
    console = s.console()
    if console.width >= _markets_table_width(rows):
        console.print(_markets_table(rows))
        return EXIT_OK
    # Too narrow for the ids side by side: one block per market, each id whole on its own line
    # (a cut id cannot be copied), the question wrapped to the terminal.
    import textwrap

    print(f"{len(rows)} market(s)")
    for r in rows:
        flags = [f for f in MARKET_FLAGS if r[f]]
        print()
        print(textwrap.fill(f"{r['question'] or ''}  [{', '.join(flags) or '-'}]", width=max(20, console.width)))
        print(f"condition id: {r['condition_id']}")
        for t in r["tokens"]:
            print(f"{t['outcome']}: {t['token_id']}")
    return EXIT_OK


def _markets_table_width(rows: list[dict[str, Any]]) -> int:
    """The terminal width the markets table needs to show every id whole beside a question column
    of ``MIN_QUESTION_WIDTH``: 3 columns of padding and a border each, and the ids' own lengths."""
    ids = max((len(r["condition_id"] or "") for r in rows), default=0)
    tokens = max((len(t["outcome"]) + 2 + len(t["token_id"]) for r in rows for t in r["tokens"]), default=1)
    flags = len(", ".join(MARKET_FLAGS))
    return MIN_QUESTION_WIDTH + ids + tokens + flags + 4 * 3 + 1


def _markets_table(rows: list[dict[str, Any]]):
    from rich.table import Table

    table = Table(title=f"{len(rows)} market(s)", title_justify="left")
    table.add_column("question", overflow="fold", min_width=MIN_QUESTION_WIDTH)
    table.add_column("condition id", no_wrap=True)
    table.add_column("outcome: token id", no_wrap=True)
    table.add_column("flags")
    for r in rows:
        tokens = "\n".join(f"{t['outcome']}: {t['token_id']}" for t in r["tokens"]) or "-"
        flags = [f for f in MARKET_FLAGS if r[f]]
        table.add_row(r["question"] or "", r["condition_id"], tokens, ", ".join(flags) or "-")
    return table


async def clob_neg_risk(clob, token_ids: Sequence[str]) -> dict[str, bool | None]:
    """The CLOB's neg-risk flag of each token (``GET /neg-risk``); ``None`` where it cannot say.

    The catalog's market listing does not carry the flag (interface.md 2.7), while the CLOB,
    which signs and matches orders, always knows it: that is where ``bot book`` reads it too."""
    import anyio

    from bot.venue.errors import VenueError

    found: dict[str, bool | None] = {}
    slots = anyio.Semaphore(CLOB_LOOKUPS)

    async def one(token_id: str) -> None:
        async with slots:
            try:
                found[token_id] = await clob.neg_risk(token_id)
            except VenueError:
                found[token_id] = None

    async with anyio.create_task_group() as tg:
        for token_id in dict.fromkeys(token_ids):
            tg.start_soon(one, token_id)
    return found


def _market_row(m, clob_neg_risk: dict[str, bool | None] | None = None) -> dict[str, Any]:
    """One market for ``bot markets``; ``neg_risk`` is the catalog's flag when it states one, else
    the CLOB's (``clob_neg_risk`` by first token id), else ``None`` (unknown, never a guessed false)."""
    from bot.venue.models import str_list

    outcomes = str_list(m.outcomes)
    token_ids = str_list(m.clob_token_ids)
    tokens = [
        {"outcome": outcomes[i] if i < len(outcomes) else f"#{i}", "token_id": tid}
        for i, tid in enumerate(token_ids)
    ]
    return {
        "question": m.question,
        "condition_id": m.condition_id,
        "slug": m.slug,
        "tokens": tokens,
        "active": bool(m.active),
        "closed": bool(m.closed),
        "archived": bool(m.archived),
        "neg_risk": m.neg_risk if m.neg_risk is not None else (clob_neg_risk or {}).get(next(iter(token_ids), "")),
        "end_date": m.end_date,
    }


# --------------------------------------------------------------------------------------------
# bot book


def cmd_book(s: Session) -> int:
    a = s.args

    async def fetch(venue):
        from bot.venue.errors import NotFound

        async with venue.clob() as clob:
            try:
                return await clob.book(a.token_id)
            except NotFound as exc:  # the token asked for is named with the venue's words
                raise CommandError(f"token {a.token_id}: {exc}") from None

    book = on_venue(s, fetch)
    view = book_view(book, a.depth)
    if a.json:
        print_json(view)
        return EXIT_OK
    from rich.table import Table

    console = s.console()
    console.print(
        f"token {view['token_id']}\nmarket {view['market']}  tick {view['tick_size'] or '?'}  "
        f"min size {view['min_order_size'] or '?'}  neg-risk {'yes' if view['neg_risk'] else 'no'}"
    )
    table = Table(show_edge=False)
    table.add_column("side")
    table.add_column("price", justify="right")
    table.add_column("size", justify="right")
    for level in reversed(view["asks"]):  # best ask last, next to the spread
        table.add_row("ask", level["price"], level["size"])
    table.add_section()
    for level in view["bids"]:  # best bid first
        table.add_row("bid", level["price"], level["size"])
    console.print(table)
    console.print(
        f"bid {view['best_bid'] or '-'}  ask {view['best_ask'] or '-'}  mid {view['mid'] or '-'}  "
        f"spread {view['spread'] or '-'}"
    )
    return EXIT_OK


def book_view(book, depth: int) -> dict[str, Any]:
    """The book as best-first levels (at most ``depth`` per side) with best bid/ask, mid and spread.

    Best levels are found by price (max bid, min ask), never by list position.
    """
    def levels(side, best_first_desc: bool) -> list[dict[str, str]]:
        parsed = [(p, lv) for lv in side if (p := decimal_of(lv.price)) is not None]
        parsed.sort(key=lambda x: x[0], reverse=best_first_desc)
        return [{"price": exact(p), "size": exact(decimal_of(lv.size) or Decimal(0))} for p, lv in parsed[:depth]]

    bids, asks = levels(book.bids, True), levels(book.asks, False)
    best_bid = Decimal(bids[0]["price"]) if bids else None
    best_ask = Decimal(asks[0]["price"]) if asks else None
    both = best_bid is not None and best_ask is not None
    return {
        "token_id": book.asset_id,
        "market": book.market,
        "timestamp": book.timestamp,
        "hash": book.hash,
        "tick_size": book.tick_size,
        "min_order_size": book.min_order_size,
        "neg_risk": bool(book.neg_risk),
        "last_trade_price": book.last_trade_price,
        "best_bid": exact(best_bid) if best_bid is not None else None,
        "best_ask": exact(best_ask) if best_ask is not None else None,
        "mid": exact((best_bid + best_ask) / 2) if both else None,
        "spread": exact(best_ask - best_bid) if both else None,
        "bids": bids,
        "asks": asks,
    }

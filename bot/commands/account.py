"""Operator commands on the account: ``bot cancel-all``, ``bot orders``, ``bot positions``.

Invariant: each reaches the venue through ``bot.commands.venue`` only, with the configured key and
credentials (positions are public: read by wallet address); amounts print as the exact decimals
they stand for.
"""

from __future__ import annotations

import sys

from bot.commands.output import print_json, wire_amount
from bot.commands.session import EXIT_OK, CommandError, Session
from bot.commands.venue import TRADER, on_venue
from bot.ops.config import is_address


def cmd_cancel_all(s: Session) -> int:
    a = s.args

    async def cancel(venue):
        async with venue.clob() as clob:
            if a.market or a.token:
                return await clob.cancel_market_orders(market=a.market, asset_id=a.token)
            return await clob.cancel_all()

    result = on_venue(s, cancel, TRADER)
    if a.json:
        print_json({"canceled": result.canceled, "not_canceled": result.not_canceled})
        return EXIT_OK
    out = sys.stdout
    out.write(f"canceled {len(result.canceled)} order(s)\n")
    for order_id in result.canceled:
        out.write(f"  {order_id}\n")
    if result.not_canceled:
        out.write(f"not canceled {len(result.not_canceled)}\n")
        for order_id, reason in result.not_canceled.items():
            out.write(f"  {order_id}: {reason}\n")
    return EXIT_OK


def cmd_orders(s: Session) -> int:
    a = s.args

    async def fetch(venue):
        async with venue.clob() as clob:
            return [o async for o in clob.get_orders(market=a.market, asset_id=a.token)]

    orders = on_venue(s, fetch, TRADER)
    if a.json:
        from bot.venue.models import to_builtins

        print_json([to_builtins(o) for o in orders])
        return EXIT_OK
    from rich.table import Table

    table = Table(title=f"{len(orders)} open order(s)", title_justify="left")
    for name, justify in (("id", "left"), ("side", "left"), ("price", "right"), ("size", "right"),
                          ("matched", "right"), ("type", "left"), ("status", "left"), ("outcome", "left"),
                          ("token id", "left")):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for o in orders:
        table.add_row(o.id, o.side, o.price, o.original_size or "", o.size_matched or "0", o.order_type or "",
                      o.status, o.outcome or "", o.asset_id or "")
    s.console().print(table)
    return EXIT_OK


def cmd_positions(s: Session) -> int:
    a = s.args
    if a.user is not None and not is_address(a.user):
        raise CommandError(f"--user {a.user[:80]!r} is not a wallet address (0x + 40 hex)")
    user = a.user or s.config.venue.funder or s.secrets.wallet().address

    async def fetch(venue):
        async with venue.account() as account:
            return await account.positions(user, market=a.market, limit=a.limit, redeemable=a.redeemable or None,
                                           mergeable=a.mergeable or None)

    positions = on_venue(s, fetch)
    if a.json:
        from bot.venue.models import to_builtins

        print_json([to_builtins(p) for p in positions])
        return EXIT_OK
    from rich.table import Table

    n = wire_amount
    table = Table(title=f"{len(positions)} position(s) of {user}", title_justify="left")
    for name in ("market", "outcome", "size", "avg price", "cur price", "value", "cash pnl", "flags", "token"):
        right = name in ("size", "avg price", "cur price", "value", "cash pnl")
        table.add_column(name, justify="right" if right else "left", overflow="fold")
    for p in positions:
        flags = [f for f, on in (("redeemable", p.redeemable), ("mergeable", p.mergeable),
                                 ("neg-risk", p.negative_risk)) if on]
        table.add_row(p.title or p.condition_id, p.outcome or "", n(p.size), n(p.avg_price),
                      n(p.cur_price), n(p.current_value), n(p.cash_pnl), ", ".join(flags), p.asset)
    s.console().print(table)
    return EXIT_OK

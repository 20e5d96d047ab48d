"""``bot order build``: an order built and signed offline, printed as its ``POST /order`` request.

Invariant: nothing is ever sent (``--fetch`` only reads the market's tick and neg-risk flag); the
passphrase header prints as ``***`` unless ``--show-secrets`` asks for it.
"""

from __future__ import annotations

import sys
import time

from bot.commands.output import print_json
from bot.commands.session import EXIT_OK, CommandError, Session
from bot.commands.venue import on_venue

ORDER_PATH = "/order"


def cmd_order_build(s: Session) -> int:
    from bot.venue.auth import PASSPHRASE, auth_timestamp, l2_headers
    from bot.venue.enums import OrderType
    from bot.venue.orders import OrderBuilder, order_body

    a = s.args
    order_type = OrderType(a.order_type or ("FOK" if a.amount is not None else "GTC"))
    _check_flags(a, order_type)  # the order asked for is whole before any secret is read
    venue = s.config.venue
    wallet = s.secrets.wallet()
    creds = None if a.body_only else s.secrets.credentials()
    owner = a.owner or (creds.api_key if creds is not None else s.secrets.api_key)  # the key is no secret
    if not owner:
        from bot.ops.secrets import ENV_API_KEY

        raise CommandError(f"--body-only needs --owner or the API key ({ENV_API_KEY} or api_key in the secrets file)")

    tick, neg_risk = a.tick, a.neg_risk
    if a.fetch and (tick is None or neg_risk is None):
        tick, neg_risk = on_venue(s, lambda v: _market_terms(v, a.token, tick, neg_risk))
    tick = tick or "0.01"
    neg_risk = bool(neg_risk)
    if not order_type.is_market:
        _check_on_tick(a.price, tick)

    builder = OrderBuilder(wallet, venue.chain_id, maker=venue.funder, signature_type=venue.signature_type,
                           builder_code=venue.builder_code or None)
    common = dict(salt=a.salt, timestamp_ms=a.timestamp_ms, condition_id=a.condition_id)
    if order_type.is_market:
        signed = builder.market_decimal(a.token, a.side, a.amount, a.price, tick, neg_risk, order_type, **common)
    else:
        expiration = 0
        if a.expiration is not None:
            expiration = int(time.time()) + int(a.expiration[1:]) if a.expiration.startswith("+") else int(a.expiration)
        signed = builder.limit_decimal(
            a.token, a.side, a.price, a.size, tick, neg_risk, order_type, min_size=a.min_size,
            expiration=expiration, post_only=a.post_only, **common,
        )
    body = order_body(signed, owner, defer_exec=a.defer_exec)
    url = venue.clob_url.rstrip("/") + ORDER_PATH
    headers: dict[str, str] = {}
    if creds is not None:
        headers = l2_headers(creds, wallet.address, "POST", ORDER_PATH, body, auth_timestamp(venue.timestamp_unit))
        if not a.show_secrets:
            headers[PASSPHRASE] = "***"
    if a.json:
        print_json({"order_id": signed.hash, "method": "POST", "url": url, "headers": headers,
                    "body": body.decode()})
        return EXIT_OK
    out = sys.stdout
    out.write(f"# order id {signed.hash} (tick {tick}, neg-risk {'yes' if neg_risk else 'no'}; not sent)\n")
    if not a.body_only:
        out.write(f"POST {url}\n")
        for name, value in headers.items():
            out.write(f"{name}: {value}\n")
        if not a.show_secrets:
            out.write(f"# {PASSPHRASE} hidden; --show-secrets prints it\n")
        out.write("\n")
    out.write(body.decode() + "\n")
    return EXIT_OK


def _check_flags(a, order_type) -> None:
    """The flags name one whole order of ``order_type``: its quantity given once, in hundredths."""
    if order_type.is_market:
        if a.amount is None or a.size is not None:
            raise CommandError(f"{order_type.value} orders take --amount (USDC for BUY, shares for SELL), not --size")
        if a.post_only or a.expiration is not None:
            raise CommandError(f"{order_type.value} orders take neither --post-only nor --expiration")
        _check_hundredths("--amount", a.amount)
    else:
        if a.size is None and a.amount is None:
            raise CommandError(f"a {order_type.value} order needs --size (shares); a FOK or FAK order takes --amount")
        if a.size is None or a.amount is not None:
            raise CommandError(f"{order_type.value} orders take --size (shares), not --amount")
        _check_hundredths("--size", a.size)


def _check_hundredths(flag: str, text: str) -> None:
    """An order's size or amount is whole hundredths (the venue's step); more decimals are refused,
    not floored into another order than the one typed."""
    from decimal import ROUND_FLOOR, Decimal

    value = Decimal(text)
    step = Decimal("0.01")
    if value % step:
        below = value.quantize(step, rounding=ROUND_FLOOR)
        raise CommandError(f"{flag} {text} has more than 2 decimals: an order's quantity is whole hundredths "
                           f"(0.01); write {below} or {below + step}")


def _check_on_tick(price: str, tick: str) -> None:
    """A limit price sits on the market's tick (named as typed, not in units)."""
    from decimal import Decimal

    from bot.venue.amounts import parse_tick

    parse_tick(tick)  # an unsupported tick is said as such first
    if Decimal(price) % Decimal(tick):
        raise CommandError(f"--price {price} is not a multiple of the tick {tick} (the market's price step)")


async def _market_terms(venue, token: str, tick: str | None, neg_risk: bool | None):
    """The market's tick and neg-risk flag from the CLOB, for those not given."""
    async with venue.clob() as clob:
        if tick is None:
            tick = await clob.tick_size(token)
        if neg_risk is None:
            neg_risk = await clob.neg_risk(token)
    return tick, neg_risk

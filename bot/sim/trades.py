"""Trades: one per (taker order, price bucket), each with the maker orders it filled.

Invariant: ``size == sum(m.size for m in makers)``; a maker fill on the taker's token is at
``price``; one on the complement token is at ``UNIT - price`` (a mint for a BUY taker, a merge
for a SELL taker). The taker's fee goes to the fee account and each maker's rebate comes out of it
(``bot.venue.fees``). ``apply_trade(+1)`` then ``apply_trade(-1)`` leaves every balance as before.
"""

from __future__ import annotations

import random

import msgspec

from bot.sim.accounts import Ledger
from bot.sim.events import MakerOrderView, TradeView
from bot.venue.enums import Side, TradeStatus
from bot.venue.units import UNIT, fill_cash, makers_cash


class MakerFill(msgspec.Struct, gc=False):
    """One maker order's part of a trade; ``price``/``side`` in the maker's own token."""

    order_id: str
    account: str
    owner: str
    token: str
    side: Side
    price: int
    size: int
    outcome: str
    rebate: int = 0  # USDC units the maker earns on this fill (bot.venue.fees.maker_rebate)


class Trade(msgspec.Struct, gc=False):
    """A match of one taker order at one effective price (``bucket_index`` counts them)."""

    id: str
    market: str
    token: str
    side: Side  # the taker's side, in ``token``
    price: int  # in ``token``
    taker_order_id: str
    taker_account: str
    taker_owner: str
    fee_rate_bps: int
    match_time: float
    bucket_index: int
    outcome: str
    size: int = 0
    fee: int = 0  # paid by the taker: tokens on a BUY, collateral on a SELL
    status: TradeStatus = TradeStatus.MATCHED
    last_update: float = 0.0
    makers: list[MakerFill] = []
    tx_hash: str = ""
    path: int = 0  # settlement path drawn at match time (settlement.py)

    def view(self, status: TradeStatus | None = None, last_update: float | None = None) -> TradeView:
        """Snapshot; ``status``/``last_update`` override the current ones (past steps)."""
        bps = self.fee_rate_bps
        makers = tuple(
            MakerOrderView(m.order_id, m.owner, m.account, m.size, m.price, bps, m.token,
                           m.outcome, m.side)
            for m in self.makers
        )
        return TradeView(self.id, self.taker_order_id, self.market, self.token, self.side,
                         self.size, self.price, bps, self.fee, status or self.status,
                         self.match_time, (last_update if last_update is not None
                                           else self.last_update or self.match_time),
                         self.outcome, self.taker_owner, self.taker_account,
                         self.bucket_index, self.tx_hash, makers)


def trade_id_prefix(rng: random.Random) -> str:
    """The seeded first 20 hex digits of UUID-shaped trade ids (``prefix + f"{n:012x}"``), so the
    same seed names the same trades."""
    h = "%032x" % rng.getrandbits(128)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{h[16:20]}-"


def maker_cash(side: Side, price: int, size: int) -> int:
    """Collateral units of a maker fill of ``size`` shares at ``price`` (``bot.venue.units.fill_cash``:
    a maker BUY pays its price rounded down, a maker SELL is paid it rounded up; the taker gives or
    gets the same amount, or the other end of a minted or merged pair)."""
    return fill_cash(price, size, buyer=side is Side.BUY)


def taker_cash(trade: Trade) -> int:
    """The collateral the taker of ``trade`` pays (BUY) or receives (SELL), before fees: the sum
    over its maker fills of their cash, or of the pair's other end for complement fills."""
    return makers_cash(trade.token, ((m.token, maker_cash(m.side, m.price, m.size), m.size) for m in trade.makers))


def apply_trade(ledger: Ledger, trade: Trade, fee_account: str, sign: int = 1) -> None:
    """Move collateral and tokens for every fill of ``trade`` (``sign=-1`` undoes it exactly).

    Exact for 6-decimal fills too: each fill's collateral is ``maker_cash``, a whole number of
    units, and the taker's is the other end of it. Reservations are not touched: they belong to
    orders, not to trades.
    """
    accounts = ledger.accounts
    tok = trade.token
    buy = trade.side is Side.BUY
    cash = 0  # the taker's collateral change
    shares = 0  # tokens of ``tok`` the taker gets (BUY) or gives (SELL)
    pairs = 0
    for m in trade.makers:
        x = m.size * sign
        c = maker_cash(m.side, m.price, m.size) * sign
        maker = accounts[m.account]
        mt = maker.tokens
        mtok = m.token
        if mtok == tok:  # same book: shares and collateral change hands
            if buy:
                cash -= c
                maker.collateral += c
                mt[tok] = mt.get(tok, 0) - x
            else:
                cash += c
                maker.collateral -= c
                mt[tok] = mt.get(tok, 0) + x
        elif buy:  # complement bid: both buy, a pair is minted, each pays its own price
            maker.collateral -= c
            cash -= x - c
            mt[mtok] = mt.get(mtok, 0) + x
            pairs += x
        else:  # complement ask: both sell, a pair is merged into 1 USDC split by price
            maker.collateral += c
            cash += x - c
            mt[mtok] = mt.get(mtok, 0) - x
            pairs -= x
        shares += x
        if m.rebate:
            maker.collateral += m.rebate * sign
            ledger.get(fee_account).collateral -= m.rebate * sign
    taker = accounts[trade.taker_account]
    tt = taker.tokens
    fee = trade.fee * sign
    if buy:
        tt[tok] = tt.get(tok, 0) + shares - fee
        taker.collateral += cash
    else:
        tt[tok] = tt.get(tok, 0) - shares
        taker.collateral += cash - fee
    if pairs:
        ledger.pairs[trade.market] = ledger.pairs.get(trade.market, 0) + pairs
    if fee:
        house = ledger.get(fee_account)
        if buy:
            house.tokens[tok] = house.tokens.get(tok, 0) + fee
        else:
            house.collateral += fee

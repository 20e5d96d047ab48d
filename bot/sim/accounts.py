"""Balances: collateral and outcome tokens per account, with reservations for resting orders.

Invariants (no FAILED trade reversed after the tokens were spent): for every account,
``0 <= reserved <= collateral`` and ``0 <= reserved_tokens[t] <= tokens[t]``.
Conservation: ``sum(collateral) + sum(pairs.values()) == funded`` and, for each token ``t`` of
market ``m``, ``sum(tokens[t]) == pairs[m] + airdropped[t]``: collateral only turns into tokens by
minting a YES/NO pair (1 USDC -> 1 YES + 1 NO) and back by merging one.
"""

from __future__ import annotations

from bot.venue.units import UNIT


class Account:
    """One funds holder (a maker address)."""

    __slots__ = ("id", "collateral", "reserved", "tokens", "reserved_tokens", "trade_ids",
                 "open_orders")

    def __init__(self, id: str) -> None:
        self.id = id
        self.collateral = 0
        self.reserved = 0
        self.tokens: dict[str, int] = {}
        self.reserved_tokens: dict[str, int] = {}
        self.trade_ids: list[str] = []  # trades it took part in, oldest first, no repeats in a row
        self.open_orders: dict[str, object] = {}  # order id -> Order, resting only

    @property
    def free_collateral(self) -> int:
        return self.collateral - self.reserved

    def free_tokens(self, token: str) -> int:
        return self.tokens.get(token, 0) - self.reserved_tokens.get(token, 0)


class Ledger:
    """All accounts plus the counters that make conservation checkable."""

    __slots__ = ("accounts", "funded", "pairs", "airdropped")

    def __init__(self) -> None:
        self.accounts: dict[str, Account] = {}
        self.funded = 0  # collateral units ever deposited
        self.pairs: dict[str, int] = {}  # market -> minted YES/NO pairs outstanding (share units)
        self.airdropped: dict[str, int] = {}  # token -> units created by mint_tokens

    def get(self, account: str) -> Account:
        acct = self.accounts.get(account)
        if acct is None:
            acct = self.accounts[account] = Account(account)
        return acct

    def fund(self, account: str, collateral: int) -> None:
        """Deposit ``collateral`` units (negative withdraws, never below the free balance)."""
        acct = self.get(account)
        if collateral < 0 and acct.collateral - acct.reserved + collateral < 0:
            raise ValueError("withdrawal exceeds the free collateral")
        acct.collateral += collateral
        self.funded += collateral

    def mint_tokens(self, account: str, token: str, size: int) -> None:
        """Airdrop ``size`` token units (demo accounts); tracked apart from minted pairs."""
        if size < 0:
            raise ValueError("size must be >= 0")
        acct = self.get(account)
        acct.tokens[token] = acct.tokens.get(token, 0) + size
        self.airdropped[token] = self.airdropped.get(token, 0) + size

    def split(self, account: str, market: str, tokens: tuple[str, str], size: int) -> None:
        """Turn ``size`` units of collateral into ``size`` YES and ``size`` NO (a mint)."""
        acct = self.get(account)
        if size <= 0 or acct.collateral - acct.reserved < size:
            raise ValueError("not enough free collateral to split")
        acct.collateral -= size
        for t in tokens:
            acct.tokens[t] = acct.tokens.get(t, 0) + size
        self.pairs[market] = self.pairs.get(market, 0) + size

    def merge(self, account: str, market: str, tokens: tuple[str, str], size: int) -> None:
        """Turn ``size`` YES and ``size`` NO back into ``size`` units of collateral."""
        acct = self.get(account)
        if size <= 0 or any(acct.free_tokens(t) < size for t in tokens):
            raise ValueError("not enough free tokens to merge")
        for t in tokens:
            acct.tokens[t] -= size
        acct.collateral += size
        self.pairs[market] = self.pairs.get(market, 0) - size


def cost(price: int, size: int) -> int:
    """USDC units for ``size`` share units at ``price``, rounded down (exact when size is a lot
    multiple): what a resting BUY of ``size`` reserves."""
    return price * size // UNIT


def release(price: int, remaining: int, filled: int) -> int:
    """The reservation a resting BUY of ``remaining`` shares at ``price`` frees when ``filled`` of
    them fill: ``cost`` before less ``cost`` after, so the releases of a whole order sum to
    its reservation exactly, however off-lot its fills."""
    return cost(price, remaining) - cost(price, remaining - filled)

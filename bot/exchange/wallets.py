"""The wallets a signing key may trade from (venue.md 2.4), derived or registered as the venue does.

Invariant: every account (a signer EOA) owns exactly four wallets, one per signature type: itself
(0, EOA), its proxy wallet (1, POLY_PROXY) and its Gnosis safe (2, POLY_GNOSIS_SAFE), both at the
CREATE2 addresses the venue's factories deploy them to, and its deposit wallet (3, POLY_1271),
which the exchange registers when the account is made. A configured account may register another
funder for type 1, 2 or 3 instead. No wallet has two owners, so a wallet's funds, orders and trades
are reachable only through its owner's API keys.
"""

from __future__ import annotations

import msgspec

from bot.venue.eip712 import address_bytes, keccak256, to_checksum_address
from bot.venue.enums import SignatureType

# the venue's wallet factories on Polygon and the hashes of the code they deploy (CREATE2 inputs)
PROXY_FACTORY = "0xaB45c5A4B0c941a2F231C04C3f49182e1A254052"
PROXY_INIT_CODE_HASH = bytes.fromhex("d21df8dc65880a8606f09fe0ce3df9b8869287ab0b058be05aa9e8af6330a00b")
SAFE_FACTORY = "0xaacFeEa03eb1561C4e67d661e40682Bd20E3541b"
SAFE_INIT_CODE_HASH = bytes.fromhex("2bce2127ff07fb632d16c8347c4ebf501f4841168bed00d9e6ef715ddb6fcecf")


def create2_address(factory: str, salt: bytes, init_code_hash: bytes) -> str:
    """keccak256(0xff ‖ factory ‖ salt ‖ init_code_hash)[12:], checksummed (EIP-1014)."""
    digest = keccak256(b"\xff" + address_bytes(factory) + salt + init_code_hash)
    return to_checksum_address(digest[12:])


def proxy_wallet(eoa: str) -> str:
    """The POLY_PROXY wallet of ``eoa``: salt = keccak256(abi.encodePacked(eoa))."""
    return create2_address(PROXY_FACTORY, keccak256(address_bytes(eoa)), PROXY_INIT_CODE_HASH)


def safe_wallet(eoa: str) -> str:
    """The POLY_GNOSIS_SAFE wallet of ``eoa``: salt = keccak256(abi.encode(eoa))."""
    return create2_address(SAFE_FACTORY, keccak256(address_bytes(eoa).rjust(32, b"\0")), SAFE_INIT_CODE_HASH)


def deposit_wallet(seed: int, eoa: str) -> str:
    """The deposit wallet this exchange registers for ``eoa`` (stable for a given server seed)."""
    digest = keccak256(f"pmbot-exchange-deposit-wallet|{seed}|{eoa.lower()}".encode())
    return to_checksum_address(digest[12:])


class AccountWallets(msgspec.Struct, frozen=True):
    """The four wallets of one signer EOA, checksummed."""

    owner: str
    proxy: str
    safe: str
    deposit: str

    def of(self, signature_type: int) -> str:
        """The order ``maker`` this account must use with ``signature_type`` (0..3)."""
        return (self.owner, self.proxy, self.safe, self.deposit)[SignatureType(signature_type)]

    def all(self) -> tuple[str, str, str, str]:
        return (self.owner, self.proxy, self.safe, self.deposit)


class WalletRegistry:
    """Signer EOA -> its wallets, and each wallet -> its owner."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._by_owner: dict[str, AccountWallets] = {}
        self._owner_of: dict[str, str] = {}  # lowercase wallet -> checksummed owner

    def register(self, eoa: str, funder: str = "", signature_type: int = 0) -> AccountWallets:
        """The wallets of ``eoa``, registered on first use; ``funder`` (with type 1..3) replaces the
        wallet of that type. Raises ``ValueError`` when a wallet already belongs to another owner."""
        owner = to_checksum_address(eoa)
        known = self._by_owner.get(owner)
        wallets = known or AccountWallets(owner, proxy_wallet(owner), safe_wallet(owner),
                                          deposit_wallet(self.seed, owner))
        if funder:
            kind = SignatureType(signature_type)
            if kind is SignatureType.EOA:
                raise ValueError("a funder needs signature type 1, 2 or 3")
            field = {SignatureType.POLY_PROXY: "proxy", SignatureType.POLY_GNOSIS_SAFE: "safe",
                     SignatureType.POLY_1271: "deposit"}[kind]
            wallets = msgspec.structs.replace(wallets, **{field: to_checksum_address(funder)})
        if wallets == known:
            return known
        for address in wallets.all():
            other = self._owner_of.get(address.lower())
            if other is not None and other != owner:
                raise ValueError(f"wallet {address} already belongs to {other}")
        if known is not None:
            for address in known.all():
                self._owner_of.pop(address.lower(), None)
        for address in wallets.all():
            self._owner_of[address.lower()] = owner
        self._by_owner[owner] = wallets
        return wallets

    def of(self, eoa: str) -> AccountWallets | None:
        return self._by_owner.get(to_checksum_address(eoa))

    def owner_of(self, wallet: str) -> str | None:
        """The signer EOA that controls ``wallet`` (itself for a registered EOA), else None."""
        return self._owner_of.get(wallet.lower())

"""The exchange's state: catalog, matching engine, accounts, keys, heartbeats and event fan-out.

Invariant: every engine command runs on the event loop thread between awaits (the engine is
single-threaded and synchronous) and is followed by ``publish()``, which drains the engine's
outbox into the WebSocket hub, so each event reaches subscribers exactly once, in engine order.
Accounts are keyed by checksummed address; every account that holds an API key has its wallets
registered (``bot.exchange.wallets``), and funds sit in the wallet its orders name as ``maker``.
API credentials and the demo accounts' keys come from the CSPRNG; they follow from the seed only
when the config asks for it (``demo_credentials = "deterministic"``).
The clock is wall time in unix seconds.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable

import msgspec

from bot.exchange.config import ExchangeConfig
from bot.exchange.faults import Faults
from bot.exchange.keys import Credentials, KeyStore, deterministic_credentials
from bot.exchange.seed import Catalog, add_fixed_market, generate_catalog, load_catalog
from bot.exchange.wallets import AccountWallets, WalletRegistry
from bot.sim.matching import MatchingConfig, MatchingEngine
from bot.sim.orders import NewOrder
from bot.sim.settlement import SettlementConfig
from bot.venue.eip712 import Wallet, new_private_key, to_checksum_address
from bot.venue.enums import OrderType, Side
from bot.venue.units import UNIT, parse_units

LIQUIDITY_ACCOUNT = "0x000000000000000000000000000000000000dEaD"
class DemoAccount(msgspec.Struct, frozen=True):
    """A funded account ready to trade: wallet key, address (the signer EOA), L2 credentials and the
    wallets it may trade from (``wallets.of(signature_type)`` is an order's ``maker``)."""

    private_key: str
    address: str
    creds: Credentials
    wallets: AccountWallets | None = None

    def __repr__(self) -> str:
        return f"DemoAccount(address={self.address!r}, private_key=<redacted>, creds={self.creds!r})"


class ArmedHeartbeat:
    """An API key's armed heartbeat: the id its next beat must echo, and the time it must come by."""

    __slots__ = ("expected", "deadline")

    def __init__(self, expected: str, deadline: float) -> None:
        self.expected = expected
        self.deadline = deadline


def demo_private_key(seed: int, index: int = 0) -> str:
    """The reproducible key of demo account ``index`` (only with ``demo_credentials = "deterministic"``)."""
    return "0x" + hashlib.sha256(f"pmbot-local-exchange-demo|{seed}|{index}".encode()).hexdigest()


class ExchangeState:
    def __init__(self, config: ExchangeConfig, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.clock = clock
        self.catalog: Catalog = (
            load_catalog(config.catalog_file) if config.catalog_file
            else generate_catalog(config.seed, config.markets, config.neg_risk_events, config.neg_risk_outcomes)
        )
        for ms in config.extra_markets:
            add_fixed_market(self.catalog, ms)
        f = config.faults
        s = config.settlement
        self.engine = MatchingEngine(MatchingConfig(
            seed=config.seed,
            settlement=SettlementConfig(
                mined_after=s.mined_after_s, confirmed_after=s.confirmed_after_s,
                fail_share=min(1.0, f.settlement_fail_rate), retrying_after=s.mined_after_s,
                failed_after=s.confirmed_after_s,
            ),
        ))
        for m in self.catalog.markets:
            self.engine.add_market(m.info)
        self.keys = KeyStore()
        self.wallets = WalletRegistry(config.seed)
        self.faults = Faults(f, clock)
        self.heartbeats: dict[str, ArmedHeartbeat] = {}
        self.hub = None  # set by the WebSocket hub (ws.Hub); receives engine events
        self.rng = random.Random(config.seed)
        self.demo = self._make_demo()
        for acc in config.accounts:
            self.add_account(acc)
        self._seed_liquidity()
        self.publish()

    # accounts ------------------------------------------------------------------------------
    def fund(self, address: str, usdc: int, shares: int = 0) -> None:
        if usdc:
            self.engine.fund(address, usdc)
        if shares:
            for t in self.engine.tokens():
                self.engine.mint_tokens(address, t, shares)

    def credentials(self, address: str, nonce: int) -> Credentials:
        """The API key of ``address`` and ``nonce`` (issued at random on first use, then the same),
        with the wallets registered."""
        self.wallets.register(address)
        return self.keys.issue(address, nonce)

    @property
    def reproducible(self) -> bool:
        """The demo accounts' keys and credentials follow from the seed (asked for in the config)."""
        return self.config.demo_credentials == "deterministic"

    def _account_key(self, index: int) -> str:
        return demo_private_key(self.config.seed, index) if self.reproducible else "0x" + new_private_key().hex()

    def _demo_credentials(self, address: str) -> Credentials:
        """Nonce 0 credentials of a demo account: random, or from the seed when asked for."""
        if not self.reproducible:
            return self.credentials(address, 0)
        self.wallets.register(address)
        creds = deterministic_credentials(self.config.seed, address, 0)
        self.keys.register(creds, address, 0)
        return creds

    def wallets_of(self, address: str) -> AccountWallets:
        """The wallets of a signer EOA (registered now if it has none yet)."""
        return self.wallets.register(address)

    def _make_demo(self) -> DemoAccount:
        key = self._account_key(0)
        wallet = Wallet(key)
        creds = self._demo_credentials(wallet.address)
        wallets = self.wallets_of(wallet.address)
        holder = wallets.of(self.config.demo_signature_type)
        self.fund(holder, parse_units(self.config.demo_usdc), parse_units(self.config.demo_shares))
        return DemoAccount(key, wallet.address, creds, wallets)

    def add_account(self, acc) -> DemoAccount:
        """Fund an ``AccountSeed`` (and install its fixed credentials and funder when given)."""
        address = to_checksum_address(acc.address or Wallet(acc.private_key).address)
        wallets = self.wallets.register(address, acc.funder, acc.signature_type)
        if acc.api_key:
            creds = Credentials(acc.api_key, acc.secret, acc.passphrase)
            self.keys.register(creds, address)
        else:
            creds = self.credentials(address, 0)
        holder = wallets.of(acc.signature_type)
        self.fund(holder, parse_units(acc.usdc))
        for token, shares in acc.tokens.items():
            self.engine.mint_tokens(holder, token, parse_units(shares))
        return DemoAccount(acc.private_key, address, creds, wallets)

    def new_account(self, index: int, usdc: str = "10000", shares: str = "1000",
                    funded: tuple[int, ...] = (0,)) -> DemoAccount:
        """Another funded account (index >= 1, reproducible from the seed only as the demo's is),
        e.g. a counterparty in tests; each wallet whose signature type is in ``funded`` gets
        ``usdc`` and ``shares`` of every token."""
        key = self._account_key(index)
        wallet = Wallet(key)
        creds = self._demo_credentials(wallet.address)
        wallets = self.wallets_of(wallet.address)
        for kind in dict.fromkeys(funded):
            self.fund(wallets.of(kind), parse_units(usdc), parse_units(shares))
        self.publish()
        return DemoAccount(key, wallet.address, creds, wallets)

    def _seed_liquidity(self) -> None:
        """A resting ladder around each market's mid so books are never empty at start."""
        eng = self.engine
        self.fund(LIQUIDITY_ACCOUNT, 10**9 * UNIT, 10**6 * UNIT)
        now = self.clock()
        for m in self.catalog.markets:
            tick = parse_units(m.tick_size)
            step = max(tick, 10_000)
            mid = parse_units(m.mid)
            yes = m.token_ids[0]
            for k in range(1, 6):
                for side, price in ((Side.BUY, mid - k * step), (Side.SELL, mid + k * step)):
                    if not tick <= price <= UNIT - tick:
                        continue
                    oid = "0x" + hashlib.sha256(f"seed|{m.condition_id}|{side}|{k}".encode()).hexdigest()
                    eng.place(NewOrder(oid, LIQUIDITY_ACCOUNT, yes, side, price, (20 + 10 * k) * UNIT,
                                           OrderType.GTC, owner="liquidity"), now)

    # engine time and events ----------------------------------------------------------------
    def publish(self) -> None:
        events = self.engine.drain()
        if events and self.hub is not None:
            self.hub.dispatch(events)

    def advance(self) -> None:
        now = self.clock()
        events = self.engine.advance(now)
        if events and self.hub is not None:
            self.hub.dispatch(events)
        self._check_heartbeats(now)

    def price_of(self, token: str) -> float:
        m = self.catalog.by_token.get(token)
        if m is not None and m.winner >= 0:
            return 1.0 if m.token_ids[m.winner] == token else 0.0
        mid = self.engine.midpoint(token)
        if mid is None:
            last = self.engine.last_trade_price(token)
            return last / UNIT if last else 0.5
        return mid / UNIT

    # heartbeats (venue.md 10.4) --------------------------------------------------------------
    def heartbeat(self, api_key: str, given: str) -> tuple[bool, str]:
        """(accepted, id): a new id on success, the expected id on a wrong one."""
        now = self.clock()
        hb = self.heartbeats.get(api_key)
        if hb is not None and given != hb.expected:
            return False, hb.expected
        new_id = "%032x" % self.rng.getrandbits(128)
        new_id = f"{new_id[:8]}-{new_id[8:12]}-{new_id[12:16]}-{new_id[16:20]}-{new_id[20:]}"
        self.heartbeats[api_key] = ArmedHeartbeat(new_id, now + self.config.heartbeat_timeout_s)
        return True, new_id

    def _check_heartbeats(self, now: float) -> None:
        for key, hb in list(self.heartbeats.items()):
            if now >= hb.deadline:
                del self.heartbeats[key]
                self.engine.cancel_all(key, now)
        self.publish()

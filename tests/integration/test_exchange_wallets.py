"""Wallet ownership over real sockets: an account trades, reserves, sees and cancels only through the
wallets its signing key controls (venue.md 2.4), for every signature type."""

from __future__ import annotations

import json
import time

import httpx
import pytest
import websockets.sync.client as wsc

from bot.venue.auth import Credentials, auth_timestamp, l1_headers, l2_headers
from bot.venue.eip712 import Wallet
from bot.venue.enums import OrderType, Side, SignatureType
from bot.venue.orders import OrderBuilder, order_body
from tests.integration.exchange_fixture import exchange, wait_for  # noqa: F401

pytestmark = pytest.mark.integration

TYPES = tuple(SignatureType)


class Trader:
    """A signing key with its API credentials, talking to the exchange over HTTP."""

    def __init__(self, ex, private_key: str, creds: Credentials) -> None:
        self.ex = ex
        self.wallet = Wallet(private_key)
        self.address = self.wallet.address
        self.creds = creds

    @classmethod
    def fresh(cls, ex, private_key: str, nonce: int = 0) -> "Trader":
        """An API key made with POST /auth/api-key (L1) for ``private_key``'s address and ``nonce``."""
        w = Wallet(private_key)
        r = httpx.post(ex.urls.clob + "/auth/api-key", headers=l1_headers(w, 137, str(int(time.time())), nonce))
        assert r.status_code == 200, r.text
        c = r.json()
        return cls(ex, private_key, Credentials(c["apiKey"], c["secret"], c["passphrase"]))

    @classmethod
    def of(cls, ex, acct) -> "Trader":
        return cls(ex, acct.private_key, Credentials(acct.creds.apiKey, acct.creds.secret, acct.creds.passphrase))

    def call(self, method: str, path: str, body: bytes | None = None, params: dict | None = None) -> httpx.Response:
        headers = l2_headers(self.creds, self.address, method, path, body, auth_timestamp())
        return httpx.request(method, self.ex.urls.clob + path, content=body, headers=headers, params=params,
                             timeout=10)

    def post(self, signed) -> dict:
        r = self.call("POST", "/order", order_body(signed, self.creds.api_key))
        assert r.status_code == 200, r.text
        return r.json()

    def builder(self, signature_type: int, maker: str | None) -> OrderBuilder:
        return OrderBuilder(self.wallet, 137, maker=maker, signature_type=signature_type)

    def balance(self, signature_type: int) -> int:
        r = self.call("GET", "/balance-allowance", params={"asset_type": "COLLATERAL",
                                                            "signature_type": signature_type})
        assert r.status_code == 200, r.text
        return int(r.json()["balance"])

    def open_ids(self) -> set[str]:
        return {o["id"] for o in self.call("GET", "/data/orders").json()["data"]}

    def trade_ids(self) -> set[str]:
        return {t["id"] for t in self.call("GET", "/data/trades").json()["data"]}


def market(ex) -> tuple[str, str, bool, int, int, int]:
    """(condition id, YES token, neg_risk, tick, best bid, best ask) of a generated market."""
    m = httpx.get(ex.urls.clob + "/markets").json()["data"][0]
    token = m["tokens"][0]["token_id"]
    book = httpx.get(ex.urls.clob + "/book", params={"token_id": token}).json()
    units = lambda text: int(round(float(text) * 1_000_000))  # noqa: E731 - decimal strings of 2-4 places
    bid = max(units(lv["price"]) for lv in book["bids"])
    ask = min(units(lv["price"]) for lv in book["asks"])
    return m["condition_id"], token, m["neg_risk"], units(book["tick_size"]), bid, ask


def holdings(ex, user: str) -> dict[str, float]:
    """``{asset: size}`` of GET /positions for ``user``."""
    r = httpx.get(ex.urls.data + "/positions", params={"user": user, "sizeThreshold": "0"})
    assert r.status_code == 200, r.text
    return {p["asset"]: p["size"] for p in r.json()}


def raw_signed(builder: OrderBuilder, token: str, price: int, size: int, tick: int, neg: bool, cond: str):
    """A GTC BUY signed by ``builder``'s key whatever its maker (the exchange must judge the maker)."""
    return builder.limit(token, Side.BUY, price, size, tick, neg, condition_id=cond)


def test_another_account_can_never_spend_or_reserve_a_wallets_funds(exchange):
    """The review's case first: maker = the demo's address with types 1-3; then every wallet of the
    demo with every signature type, as marketable and resting orders, BUY and SELL."""
    ex = exchange
    demo = Trader.of(ex, ex.demo_account)
    thief = Trader.fresh(ex, "0x" + "5a" * 32)
    cond, token, neg, tick, bid, ask = market(ex)
    before_balances = {t: demo.balance(t) for t in TYPES}
    before_positions = holdings(ex, demo.address)

    def attempts(maker: str):
        for kind in TYPES:
            if kind is SignatureType.EOA:
                continue  # the builder itself refuses maker != signer for type 0 (covered below)
            b = thief.builder(kind, maker)
            yield kind, b.market(token, Side.BUY, 50_000_000, ask + 10 * tick, tick, neg, OrderType.FOK,
                                 condition_id=cond)
            yield kind, b.limit(token, Side.BUY, bid, 20_000_000, tick, neg, condition_id=cond)
            yield kind, b.limit(token, Side.SELL, ask + 5 * tick, 20_000_000, tick, neg, condition_id=cond)

    def accepted(maker: str) -> list:
        results = [(kind, thief.post(signed)) for kind, signed in attempts(maker)]
        return [(int(kind), r) for kind, r in results if r["success"] or not r["errorMsg"]]

    assert accepted(ex.demo_account.address) == []
    for maker in ex.demo_account.wallets.all():
        assert accepted(maker) == [], maker
    # type 0 naming the demo as maker and signer: the signature is not the demo's
    eoa = OrderBuilder(Wallet("0x" + "5a" * 32), 137)
    forged = json.loads(order_body(eoa.limit(token, Side.BUY, bid, 20_000_000, tick, neg, condition_id=cond),
                                   thief.creds.api_key))
    forged["order"]["maker"] = forged["order"]["signer"] = ex.demo_account.address
    res = thief.call("POST", "/order", json.dumps(forged, separators=(",", ":")).encode()).json()
    assert res["success"] is False and res["errorMsg"]

    assert {t: demo.balance(t) for t in TYPES} == before_balances
    assert holdings(ex, demo.address) == before_positions
    assert not thief.open_ids() and not demo.open_ids()
    assert not thief.trade_ids()


def test_each_wallet_is_traded_seen_and_canceled_only_by_its_owner(exchange):
    ex = exchange
    owner_acct = ex.new_account(21, usdc="1000", shares="50", funded=tuple(TYPES))
    owner = Trader.of(ex, owner_acct)
    second_key = Trader.fresh(ex, owner_acct.private_key, nonce=1)  # the same address, another API key
    assert second_key.creds.api_key != owner.creds.api_key
    other = Trader.fresh(ex, "0x" + "6b" * 32)
    seller = Trader.of(ex, ex.new_account(22, usdc="1000", shares="500"))
    cond, token, neg, tick, bid, ask = market(ex)
    price = bid + tick
    assert price < ask
    wallets = owner_acct.wallets
    assert len({a.lower() for a in wallets.all()}) == 4

    with wsc.connect(ex.urls.ws + "/ws/user") as ws:
        c = owner_acct.creds
        ws.send(json.dumps({"type": "user", "auth": {"apiKey": c.apiKey, "secret": c.secret,
                                                     "passphrase": c.passphrase}}))
        ws.send("PING")
        assert ws.recv(timeout=5) == "PONG"
        for kind in TYPES:
            maker = wallets.of(kind)
            start = {t: owner.balance(t) for t in TYPES}
            res = owner.post(owner.builder(kind, None if kind is SignatureType.EOA else maker)
                             .limit(token, Side.BUY, price, 20_000_000, tick, neg, condition_id=cond))
            assert res["success"] is True and res["status"] == "live", (kind, res)
            oid = res["orderID"]
            # reserved in the named wallet only
            reserved = price * 20
            assert {t: owner.balance(t) for t in TYPES} == {t: start[t] - (reserved if t == kind else 0)
                                                           for t in TYPES}
            # the owner sees it, on REST and on its user channel; the other account does not
            mine = owner.call("GET", f"/data/order/{oid}")
            assert mine.status_code == 200 and mine.json()["maker_address"] == maker
            assert oid in owner.open_ids() and oid not in other.open_ids()
            assert second_key.call("GET", f"/data/order/{oid}").status_code == 200
            assert other.call("GET", f"/data/order/{oid}").status_code == 404

            def placement(oid=oid):
                ev = json.loads(ws.recv(timeout=5))
                return next((e for e in (ev if isinstance(ev, list) else [ev])
                             if e.get("event_type") == "order" and e["id"] == oid), None)
            assert wait_for(placement, what=f"user-channel PLACEMENT of a type {int(kind)} order")
            # the other account cannot cancel it, one by one, by list, by market or all at once
            body = json.dumps({"orderID": oid}).encode()
            assert oid in other.call("DELETE", "/order", body).json()["not_canceled"]
            assert oid in other.call("DELETE", "/orders", json.dumps([oid]).encode()).json()["not_canceled"]
            assert other.call("DELETE", "/cancel-market-orders",
                              json.dumps({"market": cond}).encode()).json()["canceled"] == []
            assert other.call("DELETE", "/cancel-all").json()["canceled"] == []
            assert oid in owner.open_ids()
            # a fill lands in the named wallet and shows in the owner's trades only
            sold = seller.post(seller.builder(0, None).limit(token, Side.SELL, price, 6_000_000, tick, neg,
                                                             condition_id=cond))
            assert sold["status"] == "matched", sold
            trade = set(sold["tradeIDs"])
            assert trade <= owner.trade_ids() and trade <= second_key.trade_ids() and not trade & other.trade_ids()
            assert holdings(ex, maker)[f"{cond}:0"] == pytest.approx(50 + 6)
            assert owner.call("DELETE", "/order", body).json()["canceled"] == [oid]
            assert {t: owner.balance(t) for t in TYPES} == {t: start[t] - (price * 6 if t == kind else 0)
                                                           for t in TYPES}

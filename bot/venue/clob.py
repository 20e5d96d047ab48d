"""Trading (CLOB) surface client: interface.md 4.1 and the venue extras of venue.md section 6.

Invariant: one method per route; every trading, cancel, account-order and key-management route
carries fresh L2 headers signed over the path without query and the exact body bytes sent;
bounds (1..15 orders per batch, <= 3000 ids per cancel, required ids) are checked before anything
is sent; writes are never retried by this layer (the transport retries only reads).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, NamedTuple

import msgspec

from bot.venue import params as p
from bot.venue.auth import AuthConfig, Credentials, auth_timestamp, l1_headers, l2_headers
from bot.venue.enums import Side
from bot.venue.errors import BadRequest, ParameterError, UnexpectedResponse
from bot.venue.models import (
    ApiCreds,
    BalanceAllowance,
    BanStatus,
    CancelResult,
    ClobMarket,
    ClobMarketInfo,
    DecodeError,
    FeeRateResponse,
    Heartbeat,
    MidpointResponse,
    NegRiskResponse,
    OpenOrder,
    OrderBook,
    OrderResult,
    Page,
    PriceMap,
    PriceResponse,
    SamplingMarket,
    SamplingSimplifiedMarket,
    SimplifiedMarket,
    TickSizeResponse,
    Trade,
    VersionResponse,
    decode_order_lookup,
)
from bot.venue.orders import SignedOrder, order_body, orders_body
from bot.venue.pagination import FIRST_CURSOR, cursor_items
from bot.venue.http1 import Flight
from bot.venue.transport import HeaderFactory, Transport, decode_body
from bot.venue.units import MAX_BATCH

__all__ = ["ClobClient", "MAX_BATCH", "MAX_CANCEL_IDS", "INVALID_HEARTBEAT_ID"]

MAX_CANCEL_IDS = 3000
INVALID_HEARTBEAT_ID = "invalid heartbeat id"
ASSET_TYPES = ("COLLATERAL", "CONDITIONAL")

_encode = msgspec.json.Encoder().encode


def _segment(name: str, value: str) -> str:
    value = p.text(name, value, required=True)  # type: ignore[assignment]
    if any(c in value for c in "/?#") or value in (".", ".."):
        raise ParameterError(name, f"must be a single path segment, got {value!r}")
    return value


def _side(name: str, side: Side | str | None) -> str | None:
    return p.one_of(name, side, ("BUY", "SELL"))


def _token_ids(token_ids: Sequence[str]) -> list[str]:
    if isinstance(token_ids, str) or not token_ids:
        raise ParameterError("token_ids", "must be a non-empty list of token ids")
    return [p.text("token_id", t, required=True) for t in token_ids]  # type: ignore[misc]


class OrdersFlight(NamedTuple):
    """A ``POST /orders`` as started: its body and auth, and the request on the wire if the
    transport could write it at once (``None``: ``post_orders`` sends it)."""

    body: bytes
    auth: HeaderFactory
    flight: Flight | None
    on_written: Callable[[], None] | None = None  # called once, as it was written (now or later)


class ClobClient:
    """Async client of the CLOB surface; ``creds`` and ``address`` (the signer EOA) enable L2
    routes, ``wallet`` enables the L1 key routes."""

    def __init__(
        self,
        transport: Transport,
        *,
        creds: Credentials | None = None,
        address: str | None = None,
        wallet: object | None = None,
        chain_id: int = 137,
        auth: AuthConfig | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.transport = transport
        self.wallet = wallet
        self.address = address or (getattr(wallet, "address", None) if wallet is not None else None)
        self.chain_id = chain_id
        self.auth_config = auth or AuthConfig()
        self.wall_clock = wall_clock
        #: Seconds added to ``wall_clock`` for auth timestamps (see :meth:`sync_clock`).
        self.clock_offset = 0.0
        self.creds: Credentials | None = None
        self.heartbeat_id = ""
        self._tick: dict[str, str] = {}
        self._neg_risk: dict[str, bool] = {}
        if creds is not None:
            self.use_credentials(creds)

    def __repr__(self) -> str:
        return f"ClobClient({self.transport.base_url}, address={self.address})"

    def use_credentials(self, creds: Credentials) -> None:
        """Sign L2 routes with ``creds`` from now on (its passphrase is masked in error texts)."""
        self.creds = creds
        self.transport.add_redaction(creds.passphrase.reveal(), creds.secret.reveal())

    # -- plumbing ----------------------------------------------------------------------------

    def _now(self) -> float:
        return self.wall_clock() + self.clock_offset

    def _l2(self) -> HeaderFactory:
        creds, address = self.creds, self.address
        if creds is None:
            raise ParameterError("creds", "L2 credentials are required for this route")
        if not address:
            raise ParameterError("address", "the signer address is required for L2 routes")
        unit = self.auth_config.timestamp_unit

        def headers(method: str, path: str, body: bytes | None) -> Mapping[str, str]:
            return l2_headers(creds, address, method, path, body, auth_timestamp(unit, self._now()))

        return headers

    def _l1(self, nonce: int) -> HeaderFactory:
        wallet = self.wallet
        if wallet is None:
            raise ParameterError("wallet", "a wallet is required for the L1 key routes")
        p.int_in("nonce", nonce, 0)

        def headers(method: str, path: str, body: bytes | None) -> Mapping[str, str]:
            return l1_headers(wallet, self.chain_id, int(self._now()), nonce)  # type: ignore[arg-type]

        return headers

    async def _call(
        self,
        method: str,
        path: str,
        model: object,
        *,
        flight: Any = None,
        params: list[tuple[str, object]] | None = None,
        body: bytes | None = None,
        auth: HeaderFactory | None = None,
        write: bool = False,
        items: int = 1,
        on_written: Callable[[], None] | None = None,
        idempotent: bool | None = None,
    ) -> object:
        response = await self.transport.request(
            method, path, params=params, body=body, auth=auth, write=write, items=items,  # type: ignore[arg-type]
            on_written=on_written, idempotent=idempotent, flight=flight,
        )
        return decode_body(response, model)

    # -- public reads (L0) -------------------------------------------------------------------

    async def ok(self) -> str:
        """``GET /ok``: the literal ``OK`` when the service is up."""
        return await self._call("GET", "/ok", str)  # type: ignore[return-value]

    async def health(self) -> str:
        """``GET /``."""
        return await self._call("GET", "/", str)  # type: ignore[return-value]

    async def time(self) -> int:
        """``GET /time``: server unix seconds."""
        return await self._call("GET", "/time", int)  # type: ignore[return-value]

    async def sync_clock(self) -> float:
        """Align auth timestamps with ``GET /time``; returns the offset applied (seconds)."""
        server = await self.time()
        self.clock_offset = float(server) - self.wall_clock()
        return self.clock_offset

    async def version(self) -> int:
        """``GET /version`` (2 for the current order format)."""
        return (await self._call("GET", "/version", VersionResponse)).version  # type: ignore[attr-defined]

    async def book(self, token_id: str) -> OrderBook:
        """``GET /book?token_id=``."""
        query = [("token_id", p.text("token_id", token_id, required=True))]
        return await self._call("GET", "/book", OrderBook, params=query)  # type: ignore[return-value]

    async def books(self, token_ids: Sequence[str]) -> list[OrderBook]:
        """``POST /books`` with ``[{"token_id": ...}, ...]``."""
        body = _encode([{"token_id": t} for t in _token_ids(token_ids)])
        return await self._call("POST", "/books", list[OrderBook], body=body)  # type: ignore[return-value]

    async def price(self, token_id: str, side: Side | str) -> str:
        """``GET /price?token_id=&side=``: the decimal price text."""
        query = [
            ("token_id", p.text("token_id", token_id, required=True)),
            ("side", _side("side", side) or _missing("side")),
        ]
        return (await self._call("GET", "/price", PriceResponse, params=query)).price  # type: ignore[attr-defined]

    async def prices(self, requests: Sequence[tuple[str, Side | str | None]]) -> PriceMap:
        """``POST /prices`` with ``[{"token_id", "side"?}, ...]`` (a missing side is dropped)."""
        if isinstance(requests, str) or not requests:
            raise ParameterError("requests", "must be a non-empty list of (token_id, side)")
        items = []
        for token_id, side in requests:
            item = {"token_id": p.text("token_id", token_id, required=True)}
            wire_side = _side("side", side) if side != "" else None
            if wire_side:
                item["side"] = wire_side
            items.append(item)
        return await self._call("POST", "/prices", PriceMap, body=_encode(items))  # type: ignore[return-value]

    async def midpoint(self, token_id: str) -> str:
        """``GET /midpoint?token_id=``."""
        query = [("token_id", p.text("token_id", token_id, required=True))]
        return (await self._call("GET", "/midpoint", MidpointResponse, params=query)).mid  # type: ignore[attr-defined]

    async def tick_size(self, token_id: str, *, refresh: bool = False) -> str:
        """``GET /tick-size`` as exact decimal text, cached per token until invalidated."""
        p.text("token_id", token_id, required=True)
        if not refresh and token_id in self._tick:
            return self._tick[token_id]
        reply = await self._call("GET", "/tick-size", TickSizeResponse, params=[("token_id", token_id)])
        self._tick[token_id] = tick = reply.tick  # type: ignore[attr-defined]
        return tick

    def set_tick_size(self, token_id: str, tick: str | None) -> None:
        """Record a tick seen elsewhere (``tick_size_change``); ``None`` forgets the cached one."""
        if tick is None:
            self._tick.pop(token_id, None)
        else:
            self._tick[token_id] = tick

    async def neg_risk(self, token_id: str, *, refresh: bool = False) -> bool:
        """``GET /neg-risk``, cached per token."""
        p.text("token_id", token_id, required=True)
        if not refresh and token_id in self._neg_risk:
            return self._neg_risk[token_id]
        reply = await self._call("GET", "/neg-risk", NegRiskResponse, params=[("token_id", token_id)])
        self._neg_risk[token_id] = value = reply.neg_risk  # type: ignore[attr-defined]
        return value

    async def fee_rate(self, token_id: str) -> str:
        """``GET /fee-rate``: the base fee in bps as text (informational)."""
        query = [("token_id", p.text("token_id", token_id, required=True))]
        return (await self._call("GET", "/fee-rate", FeeRateResponse, params=query)).bps  # type: ignore[attr-defined]

    async def markets_page(self, cursor: str = FIRST_CURSOR) -> Page[ClobMarket]:
        """``GET /markets?next_cursor=``."""
        return await self._page("/markets", cursor, Page[ClobMarket])  # type: ignore[return-value]

    async def simplified_markets_page(self, cursor: str = FIRST_CURSOR) -> Page[SimplifiedMarket]:
        return await self._page("/simplified-markets", cursor, Page[SimplifiedMarket])  # type: ignore[return-value]

    async def sampling_markets_page(self, cursor: str = FIRST_CURSOR) -> Page[SamplingMarket]:
        return await self._page("/sampling-markets", cursor, Page[SamplingMarket])  # type: ignore[return-value]

    async def sampling_simplified_markets_page(self, cursor: str = FIRST_CURSOR) -> Page[SamplingSimplifiedMarket]:
        return await self._page(  # type: ignore[return-value]
            "/sampling-simplified-markets", cursor, Page[SamplingSimplifiedMarket]
        )

    def iter_markets(self) -> AsyncIterator[ClobMarket]:
        return cursor_items(self.markets_page)

    def iter_simplified_markets(self) -> AsyncIterator[SimplifiedMarket]:
        return cursor_items(self.simplified_markets_page)

    def iter_sampling_markets(self) -> AsyncIterator[SamplingMarket]:
        return cursor_items(self.sampling_markets_page)

    def iter_sampling_simplified_markets(self) -> AsyncIterator[SamplingSimplifiedMarket]:
        return cursor_items(self.sampling_simplified_markets_page)

    async def _page(self, path: str, cursor: str, model: object, auth: HeaderFactory | None = None,
                    query: list[tuple[str, object]] | None = None) -> object:
        cursor = p.text("next_cursor", cursor, required=True)  # type: ignore[assignment]
        return await self._call("GET", path, model, params=[*(query or []), ("next_cursor", cursor)], auth=auth)

    async def market(self, condition_id: str) -> ClobMarket:
        """``GET /markets/{condition_id}``."""
        return await self._call("GET", f"/markets/{_segment('condition_id', condition_id)}", ClobMarket)  # type: ignore[return-value]

    async def clob_market(self, condition_id: str) -> ClobMarketInfo:
        """``GET /clob-markets/{condition_id}``."""
        return await self._call(  # type: ignore[return-value]
            "GET", f"/clob-markets/{_segment('condition_id', condition_id)}", ClobMarketInfo
        )

    # -- API keys (L1 / L2) ------------------------------------------------------------------

    async def create_api_key(self, nonce: int = 0) -> Credentials:
        """``POST /auth/api-key`` (L1)."""
        reply = await self._call("POST", "/auth/api-key", ApiCreds, auth=self._l1(nonce), write=True)
        return Credentials(reply.api_key, reply.secret, reply.passphrase)  # type: ignore[attr-defined]

    async def derive_api_key(self, nonce: int = 0) -> Credentials:
        """``GET /auth/derive-api-key`` (L1): the same credentials for the same address and nonce."""
        reply = await self._call("GET", "/auth/derive-api-key", ApiCreds, auth=self._l1(nonce))
        return Credentials(reply.api_key, reply.secret, reply.passphrase)  # type: ignore[attr-defined]

    async def create_or_derive_api_key(self, nonce: int = 0) -> Credentials:
        """Try to create a key; when the venue refuses (it already exists), derive it."""
        try:
            creds = await self.create_api_key(nonce)
        except BadRequest:
            creds = await self.derive_api_key(nonce)
        self.use_credentials(creds)
        return creds

    async def api_keys(self) -> object:
        """``GET /auth/api-keys`` (L2): the venue's key list, as parsed JSON."""
        return await self._call("GET", "/auth/api-keys", object, auth=self._l2())

    async def delete_api_key(self) -> object:
        """``DELETE /auth/api-key`` (L2)."""
        return await self._call("DELETE", "/auth/api-key", object, auth=self._l2(), write=True)

    async def ban_status(self) -> BanStatus:
        """``GET /auth/ban-status/closed-only`` (L2); true means only closing trades are allowed."""
        return await self._call("GET", "/auth/ban-status/closed-only", BanStatus, auth=self._l2())  # type: ignore[return-value]

    async def balance_allowance(
        self, asset_type: str, *, token_id: str | None = None, signature_type: int | None = None, update: bool = False
    ) -> BalanceAllowance:
        """``GET /balance-allowance`` (or ``/balance-allowance/update``) (L2)."""
        query = [
            ("signature_type", p.int_in("signature_type", signature_type, 0, 3)),
            ("asset_type", p.one_of("asset_type", asset_type, ASSET_TYPES) or _missing("asset_type")),
            ("token_id", p.text("token_id", token_id)),
        ]
        if asset_type == "CONDITIONAL" and token_id is None:
            raise ParameterError("token_id", "is required with asset_type CONDITIONAL")
        path = "/balance-allowance/update" if update else "/balance-allowance"
        return await self._call("GET", path, BalanceAllowance, params=query, auth=self._l2())  # type: ignore[return-value]

    # -- orders (L2 writes) ------------------------------------------------------------------

    def _owner(self) -> str:
        if self.creds is None:
            raise ParameterError("creds", "L2 credentials are required to submit orders")
        return self.creds.api_key

    async def post_order(
        self,
        signed: SignedOrder,
        *,
        order_type: object | None = None,
        post_only: bool | None = None,
        defer_exec: bool = False,
    ) -> OrderResult:
        """``POST /order`` with the exact body of ``orders.order_body``; never retried."""
        auth = self._l2()
        try:
            body = order_body(signed, self._owner(), order_type=order_type, post_only=post_only, defer_exec=defer_exec)  # type: ignore[arg-type]
        except ValueError as exc:
            raise ParameterError("order", str(exc)) from None
        return await self._call("POST", "/order", OrderResult, body=body, auth=auth, write=True)  # type: ignore[return-value]

    async def post_orders(self, orders: Sequence[SignedOrder], *, defer_exec: bool = False,
                          on_written: Callable[[], None] | None = None,
                          flight: "OrdersFlight | None" = None) -> list[OrderResult]:
        """``POST /orders`` with 1 to 15 orders (one result per order, in order); never retried.
        ``on_written`` is called when the request has been written to the connection; ``flight``
        (``start_post_orders``): the request as it was started, written already if it could be."""
        if flight is None:
            body, auth = self._orders_request(orders, defer_exec)
        else:
            body, auth, on_written = flight.body, flight.auth, flight.on_written
        return await self._call(  # type: ignore[return-value]
            "POST", "/orders", list[OrderResult], body=body, auth=auth, write=True, items=len(orders),
            on_written=on_written, flight=flight.flight if flight is not None else None,
        )

    def start_post_orders(self, orders: Sequence[SignedOrder], *, on_written: Callable[[], None] | None = None,
                          defer_exec: bool = False) -> OrdersFlight:
        """``POST /orders`` written at once when the transport can (``Transport.start``): what
        ``post_orders(orders, flight=...)`` then finishes, with the same checks and answers."""
        body, auth = self._orders_request(orders, defer_exec)
        return OrdersFlight(body, auth, self.transport.start("POST", "/orders", body=body, auth=auth,
                                                             on_written=on_written), on_written)

    def _orders_request(self, orders: Sequence[SignedOrder], defer_exec: bool) -> tuple[bytes, HeaderFactory]:
        if not 1 <= len(orders) <= MAX_BATCH:
            raise ParameterError("orders", f"a batch holds 1 to {MAX_BATCH} orders, got {len(orders)}")
        auth = self._l2()
        try:
            return orders_body(orders, self._owner(), defer_exec=defer_exec), auth
        except ValueError as exc:
            raise ParameterError("orders", str(exc)) from None

    async def cancel(self, order_id: str) -> CancelResult:
        """``DELETE /order`` with ``{"orderID": id}``."""
        body = _encode({"orderID": p.text("order_id", order_id, required=True)})
        return await self._call("DELETE", "/order", CancelResult, body=body, auth=self._l2(), write=True)  # type: ignore[return-value]

    async def cancel_orders(self, order_ids: Sequence[str]) -> CancelResult:
        """``DELETE /orders`` with a JSON array of 1 to 3000 order ids."""
        if isinstance(order_ids, str) or not 1 <= len(order_ids) <= MAX_CANCEL_IDS:
            raise ParameterError("order_ids", f"must hold 1 to {MAX_CANCEL_IDS} ids")
        ids = [p.text("order_ids", i, required=True) for i in order_ids]
        return await self._call(  # type: ignore[return-value]
            "DELETE", "/orders", CancelResult, body=_encode(ids), auth=self._l2(), write=True, items=len(ids)
        )

    async def cancel_all(self) -> CancelResult:
        """``DELETE /cancel-all`` (no body)."""
        return await self._call("DELETE", "/cancel-all", CancelResult, auth=self._l2(), write=True)  # type: ignore[return-value]

    async def cancel_market_orders(self, *, market: str | None = None, asset_id: str | None = None) -> CancelResult:
        """``DELETE /cancel-market-orders`` with a condition id, a token id, or both."""
        if market is None and asset_id is None:
            raise ParameterError("market", "market or asset_id is required")
        fields = {}
        if market is not None:
            fields["market"] = p.text("market", market)
        if asset_id is not None:
            fields["asset_id"] = p.text("asset_id", asset_id)
        return await self._call(  # type: ignore[return-value]
            "DELETE", "/cancel-market-orders", CancelResult, body=_encode(fields), auth=self._l2(), write=True
        )

    async def heartbeat(self, heartbeat_id: str | None = None) -> str:
        """``POST /v1/heartbeats`` echoing the last id (``""`` arms the switch); returns the new
        id. A 400 ``Invalid Heartbeat ID`` is answered at once by resending the expected id (so a
        heartbeat whose connection closed unanswered is sent again: ``idempotent``)."""
        hb = self.heartbeat_id if heartbeat_id is None else heartbeat_id
        auth = self._l2()
        try:  # safe to send twice: a spent id is answered with the expected one, sent below
            reply = await self._call(
                "POST", "/v1/heartbeats", Heartbeat, body=_encode({"heartbeat_id": hb}), auth=auth, write=True,
                idempotent=True,
            )
        except BadRequest as exc:
            expected = exc.fields.get("heartbeat_id")
            if INVALID_HEARTBEAT_ID not in exc.message.lower() or not isinstance(expected, str):
                raise
            reply = await self._call(
                "POST", "/v1/heartbeats", Heartbeat, body=_encode({"heartbeat_id": expected}), auth=auth, write=True
            )
        self.heartbeat_id = reply.heartbeat_id  # type: ignore[attr-defined]
        return self.heartbeat_id

    # -- account orders and trades (L2 reads) ------------------------------------------------

    async def orders_page(
        self, *, id: str | None = None, market: str | None = None, asset_id: str | None = None,
        cursor: str = FIRST_CURSOR,
    ) -> Page[OpenOrder]:
        """``GET /data/orders``: one page of the account's live orders."""
        query = [("id", p.text("id", id)), ("market", p.text("market", market)), ("asset_id", p.text("asset_id", asset_id))]
        return await self._page("/data/orders", cursor, Page[OpenOrder], self._l2(), query)  # type: ignore[return-value]

    def get_orders(
        self, *, id: str | None = None, market: str | None = None, asset_id: str | None = None
    ) -> AsyncIterator[OpenOrder]:
        """All live orders matching the filters, across pages."""
        self._l2()
        for name, value in (("id", id), ("market", market), ("asset_id", asset_id)):
            p.text(name, value)
        return cursor_items(lambda c: self.orders_page(id=id, market=market, asset_id=asset_id, cursor=c))

    async def get_order(self, order_id: str) -> OpenOrder:
        """``GET /data/order/{id}``: the bare order (the live venue) or ``{order: ...}`` (the seed)."""
        path = f"/data/order/{_segment('order_id', order_id)}"
        raw = await self._call("GET", path, msgspec.Raw, auth=self._l2())
        try:
            return decode_order_lookup(bytes(raw))  # type: ignore[arg-type]
        except DecodeError as exc:
            raise UnexpectedResponse(str(exc), status=200, route=f"GET {path}") from None

    @staticmethod
    def _trade_query(id, taker, maker, market, asset_id, before, after) -> list[tuple[str, object]]:
        return [
            ("id", p.text("id", id)),
            ("taker", p.text("taker", taker)),
            ("maker", p.text("maker", maker)),
            ("market", p.text("market", market)),
            ("asset_id", p.text("asset_id", asset_id)),
            ("before", p.int_in("before", before, 0)),
            ("after", p.int_in("after", after, 0)),
        ]

    async def trades_page(
        self, *, id: str | None = None, taker: str | None = None, maker: str | None = None,
        market: str | None = None, asset_id: str | None = None, before: int | None = None,
        after: int | None = None, cursor: str = FIRST_CURSOR,
    ) -> Page[Trade]:
        """``GET /data/trades``: one page; ``before``/``after`` are unix seconds (exclusive)."""
        query = self._trade_query(id, taker, maker, market, asset_id, before, after)
        return await self._page("/data/trades", cursor, Page[Trade], self._l2(), query)  # type: ignore[return-value]

    def get_trades(self, **filters) -> AsyncIterator[Trade]:
        """All trades matching the filters of :meth:`trades_page`, until ``LTE=``."""
        self._l2()
        self._trade_query(**{**dict.fromkeys(("id", "taker", "maker", "market", "asset_id", "before", "after")), **filters})
        return cursor_items(lambda c: self.trades_page(cursor=c, **filters))

    async def builder_trades(
        self, *, id: str | None = None, maker_address: str | None = None, market: str | None = None,
        asset_id: str | None = None, before: int | None = None, after: int | None = None,
        cursor: str | None = None,
    ) -> list[Trade]:
        """``GET /builder/trades``: a bare array of trades."""
        query = [
            ("id", p.text("id", id)),
            ("maker_address", p.text("maker_address", maker_address)),
            ("market", p.text("market", market)),
            ("asset_id", p.text("asset_id", asset_id)),
            ("before", p.int_in("before", before, 0)),
            ("after", p.int_in("after", after, 0)),
            ("next_cursor", p.text("next_cursor", cursor)),
        ]
        return await self._call("GET", "/builder/trades", list[Trade], params=query, auth=self._l2())  # type: ignore[return-value]


def _missing(name: str) -> str:
    raise ParameterError(name, "is required")

"""The CLOB surface: public market data, L1 key routes, and L2 trading and account-order routes.

Invariants: order writes pass, in this order, L2 authentication, the engine-phase check (425
while restarting, 503 ``post_only_mode``), the body bound (1..15), the per-key token bucket (n
tokens, all-or-nothing) and then per-order checks, each failure becoming that order's
``errorMsg`` (venue.md 10.1): owner = API key, signer = authenticated address, maker = that
address's wallet of the order's signature type (``bot.exchange.wallets``), conditionId = market of
tokenId, signature recovery, amounts (3.5), expiration (decision 2), postOnly only with GTC/GTD,
duplicate hash. Orders, trades and balances are read only through the wallets of the caller's
address. Bodies are read under a cap and decoded with bounded depth (``bodies``); every list,
window and batch a client names is bounded before any work is sized by it. Every cursor list ends
with ``LTE=`` in the live venue's spelling; in the seed's, markets and orders end with ``""`` and
trades with ``LTE=``. The routes the official client calls that the local exchange cannot serve
(notifications, builder and read-only keys, order scoring, rewards, RFQ, market activity) answer
501 with the venue's error body, after the same L2 check as the venue's route.
"""

from __future__ import annotations

import base64
import time
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.routing import Route

from bot.exchange import render
from bot.exchange.bodies import decode_json, read_body
from bot.exchange.faults import EnginePhase
from bot.exchange.wire import RECEIVED
from bot.exchange.query import MAX_UNIX_S, query_int
from bot.exchange.replies import Reply, bad_request, error, json_response, not_found
from bot.sim import results as R
from bot.sim.orders import NewOrder
from bot.venue.amounts import AmountError, MarketAccuracyError, check_signed_amounts
from bot.venue.eip712 import SignatureError
from bot.venue.enums import OrderType
from bot.venue.models.bodies import (
    ApiCreds, BalanceAllowance, BanStatus, CancelResult, FeeRateResponse, HistoryPoint, LastTradePrice,
    MarketByToken, MidpointResponse, NegRiskResponse, OrderResult, PriceHistory, PriceResponse, SpreadResponse,
    TickSizeResponse, TokenPrices, VersionResponse,
)
from bot.venue.orders import OrderError, parse_and_verify_order
from bot.venue.pagination import LAST_CURSOR
from bot.venue.units import UNIT, format_units

PAGE = 100
TRADES_PAGE = 100
BATCH_TOKENS = 500  # the most tokens one POST /books or /prices names (as a WebSocket's asset cap)
HISTORY_POINTS = 500  # the most points one prices-history answer carries (the latest ones)
HISTORY_INTERVALS = {"1h": 3600, "6h": 6 * 3600, "1d": 86400, "1w": 7 * 86400, "1m": 30 * 86400, "max": 0}


def history_times(start: int, end: int, step: int) -> range:
    """The last ``HISTORY_POINTS`` of ``start, start + step, ...`` up to ``end``, computed without
    walking the earlier ones, so the work is bounded whatever the window."""
    count = (end - start) // step + 1 if end >= start else 0
    first = max(0, count - HISTORY_POINTS)
    return range(start + first * step, start + count * step, step)


def encode_cursor(offset: int) -> str:
    return base64.b64encode(str(offset).encode()).decode()


def decode_cursor(text: str | None) -> int:
    if not text:
        return 0
    try:
        value = int(base64.b64decode(text, validate=True).decode())
    except Exception:
        raise bad_request("invalid next_cursor") from None
    if value < 0:
        raise bad_request("invalid next_cursor: the list has ended")
    return value


def page(items: list, cursor: str | None, size: int, end: str, short: bool = False) -> dict[str, Any]:
    offset = decode_cursor(cursor)
    chunk = items[offset : offset + size]
    nxt = encode_cursor(offset + size) if offset + size < len(items) else end
    if short:
        return {"data": chunk, "next_cursor": nxt}
    return {"data": chunk, "next_cursor": nxt, "limit": size, "count": len(chunk)}


async def json_body(request: Request) -> tuple[bytes, Any]:
    """The raw body (what the HMAC covers) and its JSON value (None when empty)."""
    raw = await read_body(request)
    try:
        return raw, decode_json(raw) if raw else None
    except ValueError as exc:
        raise bad_request(f"invalid JSON body: {exc}") from None


class ClobRoutes:
    def __init__(self, ex) -> None:
        self.ex = ex  # app.Exchange: state, auth, limits, markets view
        self.state = ex.state
        self.seen_hashes: set[str] = set()
        self.live = ex.config.spelling == "live"
        self.list_end = LAST_CURSOR if self.live else ""  # where markets and orders lists end

    # -- helpers -------------------------------------------------------------------------
    def token_param(self, request: Request) -> str:
        token = request.query_params.get("token_id") or request.query_params.get("market")
        if not token:
            raise bad_request("token_id is required")
        if token not in self.state.catalog.by_token:
            raise not_found("No orderbook exists for the requested token id")
        return token

    def _book(self, token: str):
        return render.book(self.state.engine.book(token), self.state.clock())

    # -- public --------------------------------------------------------------------------
    async def ok(self, request: Request):
        return json_response("OK")

    async def time(self, request: Request):
        return json_response(int(self.state.clock()))

    async def version(self, request: Request):
        return json_response(VersionResponse(version=2))

    async def book(self, request: Request):
        return json_response(self._book(self.token_param(request)))

    async def books(self, request: Request):
        _, body = await json_body(request)
        return json_response([self._book(item["token_id"]) for item in self._token_items(body, "{token_id}")])

    def _token_items(self, body: Any, shape: str) -> list[dict]:
        """The items of a public batch body: an array of at most ``BATCH_TOKENS`` objects, each
        naming a known ``token_id``; anything else is refused whole."""
        if not isinstance(body, list) or len(body) > BATCH_TOKENS:
            raise bad_request(f"body must be an array of at most {BATCH_TOKENS} {shape}")
        for item in body:
            tok = item.get("token_id") if isinstance(item, dict) else None
            if not isinstance(tok, str) or tok not in self.state.catalog.by_token:
                raise bad_request(f"invalid token_id: {str(tok)[:80]}")
        return body

    def _side_price(self, token: str, side: str) -> str:
        bid, ask = self.state.engine.best_bid_ask(token)
        # the venue's GET /price: BUY = best bid, SELL = best ask (what a maker would get)
        return format_units(bid if side == "BUY" else ask)

    async def price(self, request: Request):
        token = self.token_param(request)
        side = (request.query_params.get("side") or "").upper()
        if side not in ("BUY", "SELL"):
            raise bad_request("side must be BUY or SELL")
        return json_response(PriceResponse(price=self._side_price(token, side)))

    async def prices(self, request: Request):
        _, body = await json_body(request)
        out: dict[str, TokenPrices] = {}
        for item in self._token_items(body, "{token_id, side}"):
            tok = item["token_id"]
            side = item.get("side") or ""
            if not isinstance(side, str) or side.upper() not in ("", "BUY", "SELL"):
                raise bad_request("side must be BUY or SELL")
            side = side.upper()
            cur = out.get(tok) or TokenPrices()
            if side in ("", "BUY"):
                cur.buy = self._side_price(tok, "BUY")
            if side in ("", "SELL"):
                cur.sell = self._side_price(tok, "SELL")
            out[tok] = cur
        return json_response(out)

    async def midpoint(self, request: Request):
        token = self.token_param(request)
        mid = self.state.engine.midpoint(token)
        return json_response(MidpointResponse(mid=format_units(mid if mid is not None else 0)))

    def _spread(self, token: str) -> str:
        bid, ask = self.state.engine.best_bid_ask(token)
        return format_units(ask - bid if bid and ask else 0)

    def _last_trade(self, token: str, with_token: bool = False) -> LastTradePrice:
        price, side = self.state.engine.last_trade(token)
        return LastTradePrice(token_id=token if with_token else None, price=format_units(price),
                              side=side.value if side is not None else "")

    async def midpoints(self, request: Request):
        _, body = await json_body(request)
        out = {}
        for item in self._token_items(body, "{token_id}"):
            mid = self.state.engine.midpoint(item["token_id"])
            out[item["token_id"]] = format_units(mid if mid is not None else 0)
        return json_response(out)

    async def spread(self, request: Request):
        return json_response(SpreadResponse(spread=self._spread(self.token_param(request))))

    async def spreads(self, request: Request):
        _, body = await json_body(request)
        return json_response({item["token_id"]: self._spread(item["token_id"])
                              for item in self._token_items(body, "{token_id}")})

    async def last_trade_price(self, request: Request):
        return json_response(self._last_trade(self.token_param(request)))

    async def last_trades_prices(self, request: Request):
        _, body = await json_body(request)
        return json_response([self._last_trade(item["token_id"], with_token=True)
                              for item in self._token_items(body, "{token_id}")])

    async def market_by_token(self, request: Request):
        token = request.path_params["token_id"]
        m = self.state.catalog.by_token.get(token)
        if m is None:
            raise not_found("market not found")
        return json_response(MarketByToken(condition_id=m.condition_id, primary_token_id=m.token_ids[0],
                                           secondary_token_id=m.token_ids[1]))

    async def tick_size(self, request: Request):
        token = self.token_param(request)
        return json_response(TickSizeResponse(minimum_tick_size=float(format_units(self.state.engine.tick_size(token)))))

    async def neg_risk(self, request: Request):
        token = self.token_param(request)
        return json_response(NegRiskResponse(neg_risk=self.state.catalog.by_token[token].neg_risk))

    async def fee_rate(self, request: Request):
        bps = self.state.engine.fee(self.token_param(request)).bps  # the rate its trades carry
        return json_response(FeeRateResponse(base_fee=str(bps) if self.live else bps))

    async def prices_history(self, request: Request):
        q = request.query_params
        token = q.get("market") or q.get("token_id")
        if token not in self.state.catalog.by_token:
            raise bad_request("market (token id) is required")
        start, end = self._history_window(q)
        fidelity = query_int(q, "fidelity", 60, 1, MAX_UNIX_S // 60)
        price = round(self.state.price_of(token), 6)
        return json_response(PriceHistory(history=[HistoryPoint(t=t, p=price)
                                                   for t in history_times(start, end, fidelity * 60)]))

    def _history_window(self, q) -> tuple[int, int]:
        """(startTs, endTs) from the query: explicit bounds or an ``interval`` ending now."""
        now = int(self.state.clock())
        interval = q.get("interval")
        if interval:
            if q.get("startTs") or q.get("endTs"):
                raise bad_request("interval cannot be combined with startTs or endTs")
            if interval not in HISTORY_INTERVALS:
                raise bad_request(f"interval must be one of {', '.join(HISTORY_INTERVALS)}")
            span = HISTORY_INTERVALS[interval]
            return (max(0, now - span) if span else 0), now
        end = query_int(q, "endTs", now, 0, MAX_UNIX_S)
        start = query_int(q, "startTs", max(0, end - 3600), 0, MAX_UNIX_S)
        if start > end:
            raise bad_request("startTs must not be after endTs")
        return start, end

    # -- markets -------------------------------------------------------------------------
    def _market(self, cond: str):
        m = self.state.catalog.market(cond)
        if m is None:
            raise not_found("market not found")
        return m

    async def markets(self, request: Request):
        variant = request.query_params.get("variant") or self.ex.config.clob_markets_variant
        items = [self.ex.markets_view.clob_market(m, variant) for m in self.state.catalog.markets]
        return json_response(page(items, request.query_params.get("next_cursor"), PAGE, self.list_end))

    async def market(self, request: Request):
        return json_response(self.ex.markets_view.clob_market(self._market(request.path_params["cond"]), "A"))

    async def clob_market(self, request: Request):
        return json_response(self.ex.markets_view.info(self._market(request.path_params["cond"])))

    async def simplified(self, request: Request):
        items = [self.ex.markets_view.simplified(m) for m in self.state.catalog.markets]
        return json_response(page(items, request.query_params.get("next_cursor"), PAGE, self.list_end))

    async def sampling(self, request: Request):
        items = [self.ex.markets_view.sampling(m) for m in self.state.catalog.markets if m.active and not m.closed]
        return json_response(page(items, request.query_params.get("next_cursor"), PAGE, self.list_end, short=True))

    async def sampling_simplified(self, request: Request):
        items = [self.ex.markets_view.sampling_simplified(m) for m in self.state.catalog.markets
                 if m.active and not m.closed]
        return json_response(page(items, request.query_params.get("next_cursor"), PAGE, self.list_end, short=True))

    # -- L1 keys ---------------------------------------------------------------------------
    async def create_key(self, request: Request):
        address, nonce = self.ex.auth.require_l1(request)
        c = self.state.credentials(address, nonce)
        return json_response(ApiCreds(api_key=c.apiKey, secret=c.secret, passphrase=c.passphrase))

    derive_key = create_key

    async def api_keys(self, request: Request):
        ident = await self._l2(request)
        return json_response({"apiKeys": self.state.keys.keys_of(ident.address)})

    async def delete_key(self, request: Request):
        ident = await self._l2(request)
        self.state.keys.revoke(ident.api_key)
        return json_response("OK")

    async def ban_status(self, request: Request):
        await self._l2(request)
        return json_response(BanStatus(closed_only=False))

    async def balance_allowance(self, request: Request):
        ident = await self._l2(request)
        q = request.query_params
        wallet = self.state.wallets_of(ident.address).of(query_int(q, "signature_type", 0, 0, 3))
        bal = self.state.engine.balance(wallet)
        kind = (q.get("asset_type") or "COLLATERAL").upper()
        if kind == "COLLATERAL":
            amount = bal.collateral - bal.collateral_reserved
        elif kind == "CONDITIONAL":
            tok = q.get("token_id") or ""
            if tok not in self.state.catalog.by_token:
                raise bad_request("token_id is required for CONDITIONAL")
            amount = bal.tokens.get(tok, 0) - bal.tokens_reserved.get(tok, 0)
        else:
            raise bad_request("asset_type must be COLLATERAL or CONDITIONAL")
        return json_response(BalanceAllowance(balance=str(amount), allowance=str(10**18)))

    # -- L2 helpers ---------------------------------------------------------------------------
    async def _l2(self, request: Request, raw: bytes | None = None):
        if raw is None:
            raw = await read_body(request)
        return self.ex.auth.require_l2(request, raw)

    # -- orders ----------------------------------------------------------------------------
    def _phase_gate(self, items: list[dict]) -> None:
        phase = self.state.faults.engine_phase()
        if phase == EnginePhase.RESTARTING:
            raise error(425, "matching engine is restarting, retry later")
        post_only = phase == EnginePhase.POST_ONLY
        self.state.engine.post_only_mode = post_only
        if post_only and any(not (isinstance(i, dict) and i.get("postOnly") is True) for i in items):
            raise error(503, R.POST_ONLY_MODE, code="post_only_mode")

    async def post_order(self, request: Request):
        raw, body = await json_body(request)
        ident = await self._l2(request, raw)
        if not isinstance(body, dict):
            raise bad_request("body must be an order object")
        return json_response(self._place_all(ident, [body], single=True)[0])

    async def post_orders(self, request: Request):
        raw, body = await json_body(request)
        stamps = getattr(self.state.hub, "stamps", None)
        if stamps is not None:  # received: stamped as the request entered the exchange
            stamps.request(raw, request.scope.get(RECEIVED) or time.perf_counter())
        ident = await self._l2(request, raw)
        if not isinstance(body, list) or not 1 <= len(body) <= 15:
            raise bad_request("body must be an array of 1 to 15 orders")
        return json_response(self._place_all(ident, body))

    def _publish(self) -> None:
        """What a trading request did, to the market channel (marked as its answer while stamped)."""
        stamps = getattr(self.state.hub, "stamps", None)
        if stamps is None:
            self.state.publish()
            return
        stamps.answering = True
        try:
            self.state.publish()
        finally:
            stamps.answering = False

    def _place_all(self, ident, items: list, single: bool = False) -> list[OrderResult]:
        self._phase_gate(items)
        self.ex.limits.trading("orders", ident.api_key, len(items))
        if self.state.faults.version_mismatch():
            raise bad_request("order_version_mismatch: the order version is not supported")
        out = [self._place(ident, item, single) for item in items]
        self._publish()
        return out

    def _place(self, ident, item: Any, single: bool = False) -> OrderResult:
        """One order's result; a refusal the venue answers with HTTP 400 (``whole``) is that
        answer for POST /order and the item's ``errorMsg`` in a batch."""
        try:
            req, order_hash = self._validate(ident, item)
        except _Rejected as exc:
            if single and exc.whole:
                raise bad_request(str(exc)) from None
            return OrderResult(success=False, error_msg=str(exc), order_id=exc.order_id, status="unmatched",
                               order_hash=exc.order_id, making_amount="", taking_amount="")
        res = self.state.engine.place(req, self.state.clock())
        if res.success:
            self.seen_hashes.add(order_hash)
        return OrderResult(
            success=res.success, error_msg=res.error_msg, order_id=res.order_id, status=res.status,
            making_amount=format_units(res.making_amount) if res.making_amount else "",
            taking_amount=format_units(res.taking_amount) if res.taking_amount else "",
            order_hash=res.order_id, trade_ids=list(res.trade_ids) or None,
            transactions_hashes=[] if res.trade_ids else None,
        )

    def _validate(self, ident, item: Any) -> tuple[NewOrder, str]:
        if not isinstance(item, dict) or not isinstance(item.get("order"), dict):
            raise _Rejected("invalid order: missing order object")
        obj = item["order"]
        if item.get("owner") != ident.api_key:
            raise _Rejected("unauthorized: owner does not match the api key")
        try:
            otype = OrderType(str(item.get("orderType", "GTC")).upper())
        except ValueError:
            raise _Rejected(f"invalid order type: {item.get('orderType')}") from None
        post_only = item.get("postOnly") is True
        if post_only and otype.is_market:
            raise _Rejected(R.POST_ONLY_MARKET)
        token = str(obj.get("tokenId", ""))
        market = self.state.catalog.by_token.get(token)
        if market is None:
            raise _Rejected(R.UNKNOWN_TOKEN)
        cond = obj.get("conditionId")
        if cond is not None and str(cond).lower() != market.condition_id.lower():
            raise _Rejected("invalid order: conditionId is not the market of tokenId")
        try:
            verified = parse_and_verify_order(obj, self.ex.config.chain_id, market.neg_risk, otype, post_only)
        except (OrderError, SignatureError, ValueError) as exc:  # ValueError: e.g. a number too long to read
            raise _Rejected(str(exc)[:200]) from None
        so = verified.order
        if verified.hash in self.seen_hashes or self.state.engine.order(verified.hash) is not None:
            raise _Rejected(R.DUPLICATED, verified.hash)
        if verified.recovered.lower() != ident.address:
            raise _Rejected("unauthorized: the order signer is not the api key's address", verified.hash)
        if so.maker != self.state.wallets_of(ident.address).of(so.signature_type):
            raise _Rejected(f"unauthorized: the order maker is not the api key's {_WALLET_NAMES[so.signature_type]}",
                            verified.hash)
        now = self.state.clock()
        exp = so.expiration
        if otype is OrderType.GTD:
            if not exp or exp <= now:
                raise _Rejected(R.INVALID_EXPIRATION, verified.hash)
        elif exp:
            raise _Rejected(R.INVALID_EXPIRATION, verified.hash)
        tick = self.state.engine.tick_size(token)
        try:
            check_signed_amounts(so.side, so.maker_amount, so.taker_amount, otype, tick)
        except MarketAccuracyError as exc:  # the venue's words, as a 400
            raise _Rejected(str(exc), verified.hash, whole=True) from None
        except AmountError as exc:
            text = str(exc)
            if "tick" in text or "valid price" in text:
                raise _Rejected(f"{R.INVALID_AMOUNTS}: {text} (tick {format_units(tick)})", verified.hash) from None
            raise _Rejected(f"{R.INVALID_AMOUNTS}: {text}", verified.hash) from None
        req = NewOrder.from_amounts(
            verified.hash, so.maker, token, so.side, so.maker_amount, so.taker_amount, otype, post_only,
            exp, ident.api_key,
        )
        return req, verified.hash

    # -- cancels ---------------------------------------------------------------------------
    def _cancel_result(self, res) -> CancelResult:
        self._publish()
        return CancelResult(canceled=list(res.canceled), not_canceled=dict(res.not_canceled))

    async def cancel_order(self, request: Request):
        raw, body = await json_body(request)
        ident = await self._l2(request, raw)
        oid = body.get("orderID") if isinstance(body, dict) else None
        if not isinstance(oid, str):
            raise bad_request("orderID is required")
        self.ex.limits.trading("cancels", ident.api_key, 1)
        return json_response(self._cancel_result(self.state.engine.cancel(oid, ident.api_key, self.state.clock())))

    async def cancel_orders(self, request: Request):
        raw, body = await json_body(request)
        ident = await self._l2(request, raw)
        if not isinstance(body, list) or not all(isinstance(i, str) for i in body) or len(body) > 3000:
            raise bad_request("body must be an array of at most 3000 order ids")
        self.ex.limits.trading("cancels", ident.api_key, max(1, len(body)))
        res = self.state.engine.cancel_orders(body, ident.api_key, self.state.clock())
        return json_response(self._cancel_result(res))

    async def cancel_all(self, request: Request):
        ident = await self._l2(request)
        self.ex.limits.trading("cancels", ident.api_key, 1)
        res = self.state.engine.cancel_all(ident.api_key, self.state.clock())
        self.ex.limits.charge_after("cancels", ident.api_key, len(res.canceled))
        return json_response(self._cancel_result(res))

    async def cancel_market(self, request: Request):
        raw, body = await json_body(request)
        ident = await self._l2(request, raw)
        body = body if isinstance(body, dict) else {}
        market, token = body.get("market") or None, body.get("asset_id") or None
        if market is None and token is None:
            raise bad_request("market or asset_id is required")
        if not isinstance(market, (str, type(None))) or not isinstance(token, (str, type(None))):
            raise bad_request("market and asset_id must be strings")
        self.ex.limits.trading("cancels", ident.api_key, 1)
        res = self.state.engine.cancel_market(ident.api_key, market, token, self.state.clock())
        self.ex.limits.charge_after("cancels", ident.api_key, len(res.canceled))
        return json_response(self._cancel_result(res))

    async def heartbeat(self, request: Request):
        raw, body = await json_body(request)
        ident = await self._l2(request, raw)
        given = body.get("heartbeat_id", "") if isinstance(body, dict) else ""
        ok, hid = self.state.heartbeat(ident.api_key, str(given or ""))
        if not ok:
            raise Reply(400, {"error_msg": "Invalid Heartbeat ID", "heartbeat_id": hid})
        return json_response({"heartbeat_id": hid})

    # -- account orders and trades -------------------------------------------------------
    async def data_orders(self, request: Request):
        ident = await self._l2(request)
        q = request.query_params
        views = self.state.engine.open_orders(ident.api_key, q.get("market") or None, q.get("asset_id") or None,
                                              q.get("id") or None)
        items = [render.live_open_order(v) if self.live else render.open_order(v) for v in views]
        return json_response(page(items, q.get("next_cursor"), PAGE, self.list_end))

    async def data_order(self, request: Request):
        ident = await self._l2(request)
        v = self.state.engine.order(request.path_params["id"])
        if v is None or (v.owner != ident.api_key and v.account not in self.state.wallets_of(ident.address).all()):
            raise not_found("order not found")
        if self.live:  # the bare order; the seed wraps it in {"order": ...}
            return json_response(render.live_open_order(v))
        return json_response({"order": render.open_order(v)})

    def _trades(self, ident, q) -> list:
        """The trades of every wallet the caller's address controls, oldest first, each once."""
        before = query_int(q, "before", None, 0, MAX_UNIX_S)
        after = query_int(q, "after", None, 0, MAX_UNIX_S)
        wallets = self.state.wallets_of(ident.address).all()
        views = {}
        for account in wallets:
            for t in self.state.engine.trades_of(account, q.get("market") or None, q.get("asset_id") or None,
                                                 q.get("id") or None, before, after):
                views.setdefault(t.id, t)
        taker = (q.get("taker") or "").lower()
        maker = (q.get("maker") or q.get("maker_address") or "").lower()
        out = []
        for t in sorted(views.values(), key=lambda t: t.match_time):
            if taker and t.account.lower() != taker:
                continue
            if maker and not any(m.account.lower() == maker for m in t.maker_orders):
                continue
            out.append(render.trade(t, render.role_of(t, wallets)))
        return out

    async def data_trades(self, request: Request):
        ident = await self._l2(request)
        items = self._trades(ident, request.query_params)
        return json_response(page(items, request.query_params.get("next_cursor"), TRADES_PAGE, LAST_CURSOR))

    async def builder_trades(self, request: Request):
        if "builder_code" in request.query_params:  # the official client's public form
            raise error(501, "not_implemented: trades by builder code: not served by the local exchange "
                             "(it keeps no builder attribution)")
        ident = await self._l2(request)
        items = self._trades(ident, request.query_params)
        offset = decode_cursor(request.query_params.get("next_cursor"))
        return json_response(items[offset : offset + TRADES_PAGE])

    async def pre_migration_orders(self, request: Request):
        """``GET /data/pre-migration-orders``: orders of the venue's previous order version; the
        local exchange only ever took version-2 orders, so the list is empty."""
        await self._l2(request)
        return json_response(page([], request.query_params.get("next_cursor"), PAGE, LAST_CURSOR))

    def _unserved(self, what: str, l2: bool):
        """A route of the venue the local exchange does not serve: 501 in the venue's error body,
        after the venue's own L2 check when the route has one."""

        async def answer(request: Request):
            if l2:
                await self._l2(request)
            raise error(501, f"not_implemented: {what}: not served by the local exchange")

        return answer

    def routes(self) -> list[Route]:
        r = self
        unserved = r._unserved
        return [
            Route("/", r.ok), Route("/ok", r.ok), Route("/time", r.time), Route("/version", r.version),
            Route("/book", r.book), Route("/books", r.books, methods=["POST"]),
            Route("/price", r.price), Route("/prices", r.prices, methods=["POST"]),
            Route("/midpoint", r.midpoint), Route("/tick-size", r.tick_size), Route("/neg-risk", r.neg_risk),
            Route("/fee-rate", r.fee_rate), Route("/prices-history", r.prices_history),
            Route("/markets", r.markets), Route("/markets/{cond}", r.market),
            Route("/clob-markets/{cond}", r.clob_market), Route("/simplified-markets", r.simplified),
            Route("/sampling-markets", r.sampling), Route("/sampling-simplified-markets", r.sampling_simplified),
            Route("/auth/api-key", r.create_key, methods=["POST"]),
            Route("/auth/api-key", r.delete_key, methods=["DELETE"]),
            Route("/auth/derive-api-key", r.derive_key), Route("/auth/api-keys", r.api_keys),
            Route("/auth/ban-status/closed-only", r.ban_status),
            Route("/balance-allowance", r.balance_allowance), Route("/balance-allowance/update", r.balance_allowance),
            Route("/order", r.post_order, methods=["POST"]), Route("/order", r.cancel_order, methods=["DELETE"]),
            Route("/orders", r.post_orders, methods=["POST"]), Route("/orders", r.cancel_orders, methods=["DELETE"]),
            Route("/cancel-all", r.cancel_all, methods=["DELETE"]),
            Route("/cancel-market-orders", r.cancel_market, methods=["DELETE"]),
            Route("/v1/heartbeats", r.heartbeat, methods=["POST"]),
            Route("/data/orders", r.data_orders), Route("/data/order/{id}", r.data_order),
            Route("/data/trades", r.data_trades), Route("/trades", r.data_trades),
            Route("/builder/trades", r.builder_trades),
            Route("/markets-by-token/{token_id}", r.market_by_token), Route("/spread", r.spread),
            Route("/midpoints", r.midpoints, methods=["POST"]), Route("/spreads", r.spreads, methods=["POST"]),
            Route("/last-trade-price", r.last_trade_price),
            Route("/last-trades-prices", r.last_trades_prices, methods=["POST"]),
            Route("/data/pre-migration-orders", r.pre_migration_orders),
            Route("/notifications", unserved("notifications", True), methods=["GET", "DELETE"]),
            Route("/auth/builder-api-key", unserved("builder api keys", True), methods=["GET", "POST", "DELETE"]),
            Route("/auth/readonly-api-key", unserved("read-only api keys", True), methods=["POST", "DELETE"]),
            Route("/auth/readonly-api-keys", unserved("read-only api keys", True)),
            Route("/order-scoring", unserved("order scoring", True)),
            Route("/orders-scoring", unserved("order scoring", True), methods=["POST"]),
            Route("/rewards/user{rest:path}", unserved("user rewards", True)),
            Route("/rewards/markets/{rest:path}", unserved("market rewards", False)),
            Route("/markets/live-activity/{cond}", unserved("market live activity", False)),
            Route("/fees/builder-fees/{code}", unserved("builder fee rates", False)),
            Route("/rfq/{rest:path}", unserved("requests for quote", True), methods=["GET", "POST", "DELETE"]),
        ]


_WALLET_NAMES = ("address", "proxy wallet", "safe", "deposit wallet")  # by signature type 0..3


class _Rejected(Exception):
    def __init__(self, message: str, order_id: str = "", whole: bool = False) -> None:
        super().__init__(message)
        self.order_id = order_id
        self.whole = whole

"""The account-data surface: ``GET /positions`` and ``GET /holders`` (interface.md 4.3).

Invariants: the caller's IP must be allow-listed (403 ``unauthorized: ip_not_allowlisted``);
an unknown query parameter answers 400 ``unknown_field: <name>``; sizes come from the engine's
balances and costs from the account's own non-FAILED fills, so ``size``, ``avgPrice`` and PnL
agree with ``/data/trades``. ``mergeable`` means both outcomes of the market are held;
``redeemable`` means the market is resolved and the token is held.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.routing import Route

from bot.exchange.query import query_int, query_number
from bot.exchange.replies import bad_request, json_response
from bot.venue.eip712 import SignatureError, to_checksum_address
from bot.venue.units import UNIT

POSITIONS_PARAMS = {"user", "market", "sizeThreshold", "redeemable", "mergeable", "limit", "offset", "sortBy",
                    "sortDirection", "title", "eventId"}
HOLDERS_PARAMS = {"market", "limit", "minBalance"}
SORTS = {"CURRENT", "INITIAL", "TOKENS", "CASHPNL", "PERCENTPNL", "TITLE", "RESOLVING", "PRICE", "AVGPRICE"}


def _check_params(request: Request, allowed: set[str]) -> None:
    for name in request.query_params.keys():
        if name not in allowed:
            raise bad_request(f"unknown_field: {name}")


def _invalid(detail: str):
    return bad_request(f"invalid_field: {detail}")


def _int(q, name: str, default: int, lo: int, hi: int | None = None) -> int:
    return query_int(q, name, default, lo, hi, _invalid)


def _num(q, name: str, default: float, lo: float, hi: float | None = None) -> float:
    return query_number(q, name, default, lo, hi, _invalid)


def _flag(q, name: str) -> bool:
    raw = (q.get(name) or "false").lower()
    if raw not in ("true", "false"):
        raise bad_request(f"invalid_field: {name} must be a boolean")
    return raw == "true"


class AccountRoutes:
    def __init__(self, ex) -> None:
        self.ex = ex
        self.state = ex.state

    async def positions(self, request: Request):
        self.ex.allow.check(request)
        _check_params(request, POSITIONS_PARAMS)
        q = request.query_params
        user = q.get("user")
        if not user:
            raise bad_request("invalid_field: user is required")
        try:
            account = to_checksum_address(user)
        except (SignatureError, ValueError):
            raise bad_request("invalid_field: user is not an address") from None
        threshold = _num(q, "sizeThreshold", 1, 0)
        limit = _int(q, "limit", 100, 0, 500)
        offset = _int(q, "offset", 0, 0, 10000)
        sort = (q.get("sortBy") or "TOKENS").upper()
        direction = (q.get("sortDirection") or "DESC").upper()
        title = q.get("title") or ""
        if sort not in SORTS:
            raise bad_request(f"invalid_field: sortBy must be one of {sorted(SORTS)}")
        if direction not in ("ASC", "DESC"):
            raise bad_request("invalid_field: sortDirection must be ASC or DESC")
        if len(title) > 100:
            raise bad_request("invalid_field: title is longer than 100 characters")
        only_redeemable = _flag(q, "redeemable")
        only_mergeable = _flag(q, "mergeable")
        markets = {m.strip().lower() for m in (q.get("market") or "").split(",") if m.strip()}
        rows = self._rows(account)
        out = []
        for r in rows:
            if r["size"] < threshold or (markets and r["conditionId"].lower() not in markets):
                continue
            if title and title.lower() not in r["title"].lower():
                continue
            if (only_redeemable and not r["redeemable"]) or (only_mergeable and not r["mergeable"]):
                continue
            out.append(r)
        key = {
            "CURRENT": lambda r: r["currentValue"], "INITIAL": lambda r: r["initialValue"],
            "TOKENS": lambda r: r["size"], "CASHPNL": lambda r: r["cashPnl"], "PERCENTPNL": lambda r: r["percentPnl"],
            "TITLE": lambda r: r["title"], "RESOLVING": lambda r: r["endDate"], "PRICE": lambda r: r["curPrice"],
            "AVGPRICE": lambda r: r["avgPrice"],
        }[sort]
        out.sort(key=key, reverse=direction == "DESC")
        return json_response(out[offset : offset + limit])

    def _rows(self, account: str) -> list[dict]:
        eng = self.state.engine
        cat = self.state.catalog
        bal = eng.balance(account)
        fills = {p.token: p for p in eng.positions(account)}
        now = int(self.state.clock())
        rows = []
        for token, units in bal.tokens.items():
            m = cat.by_token.get(token)
            if m is None or units <= 0:
                continue
            idx = m.token_ids.index(token)
            other = m.token_ids[1 - idx]
            p = fills.get(token)
            size = units / UNIT
            avg = (p.avg_price / UNIT) if p else 0.0
            cur = self.state.price_of(token)
            initial = size * avg
            current = size * cur
            cash_pnl = current - initial
            realized = (p.realized_pnl / UNIT) if p else 0.0
            bought = (p.total_bought / UNIT) if p else 0.0
            ev = cat.event_of(m)
            rows.append({
                "proxyWallet": account, "asset": f"{m.condition_id}:{idx}", "conditionId": m.condition_id,
                "size": size, "avgPrice": avg, "initialValue": initial, "currentValue": current,
                "cashPnl": cash_pnl, "percentPnl": (cash_pnl / initial * 100) if initial else 0.0,
                "totalBought": bought, "realizedPnl": realized,
                "percentRealizedPnl": (realized / (bought * avg) * 100) if bought and avg else 0.0,
                "curPrice": cur, "redeemable": m.winner >= 0,
                "mergeable": m.winner < 0 and bal.tokens.get(other, 0) > 0,
                "title": m.question, "slug": m.slug, "icon": f"https://example.invalid/img/{m.slug}.png",
                "eventSlug": ev.slug if ev else "", "outcome": m.outcomes[idx], "outcomeIndex": idx,
                "oppositeOutcome": m.outcomes[1 - idx], "oppositeAsset": f"{m.condition_id}:{1 - idx}",
                "endDate": m.end_date, "negativeRisk": m.neg_risk, "timestamp": now,
            })
        return rows

    async def holders(self, request: Request):
        self.ex.allow.check(request)
        _check_params(request, HOLDERS_PARAMS)
        q = request.query_params
        raw = q.get("market")
        if not raw:
            raise bad_request("invalid_field: market is required")
        limit = _int(q, "limit", 100, 0, 500)
        min_balance = _num(q, "minBalance", 1, 0)
        out = []
        found = (self.state.catalog.market(c.strip()) for c in raw.split(","))
        for m in {m.condition_id: m for m in found if m is not None}.values():  # each market once
            for idx, token in enumerate(m.token_ids):
                rows = self.state.engine.holders(token, limit, max(1, int(min_balance * UNIT)))
                holders = [{
                    "proxyWallet": acct, "bio": "", "asset": f"{m.condition_id}:{idx}", "pseudonym": acct[:10],
                    "amount": units / UNIT, "displayUsernamePublic": False, "outcomeIndex": idx, "name": "",
                    "profileImage": "", "profileImageOptimized": "",
                } for acct, units in rows]
                out.append({"token": f"{m.condition_id}:{idx}", "holders": holders})
        return json_response(out)

    def routes(self) -> list[Route]:
        async def ok(request: Request):
            return json_response("OK")

        return [Route("/positions", self.positions), Route("/holders", self.holders), Route("/", ok)]

"""The catalog surface: markets, events, tags, series, creators, comments and search.

Invariant: lists are offset-paginated bare arrays; ``outcomes`` and ``clobTokenIds`` are JSON
arrays held in strings; failures use the catalog body ``{"type", "error"}`` (400 ``bad
request``, 404 ``not found error``). Nothing here mutates the catalog.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.routing import Route

from bot.exchange.query import query_int
from bot.exchange.replies import catalog_error, json_response
from bot.exchange.seed import Catalog, Event, Market

IMAGE = "https://example.invalid/img/{}.png"
_TRUE = {"true": True, "1": True, "false": False, "0": False}
_MARKET_ORDER = {
    "id": lambda m: int(m.id), "question": lambda m: m.question, "slug": lambda m: m.slug,
    "startDate": lambda m: m.start_date, "endDate": lambda m: m.end_date, "createdAt": lambda m: m.created_at,
}
_CREATOR_ORDER = {"id": lambda c: int(c.id), "creatorName": lambda c: c.creatorName,
                  "creatorHandle": lambda c: c.creatorHandle, "createdAt": lambda c: c.createdAt}


def _bad(text: str):
    return catalog_error(400, "bad request", text)


def _int(q, name: str, default: int, lo: int, hi: int | None = None) -> int:
    return query_int(q, name, default, lo, hi, _bad)


def _bool(q, name: str) -> bool | None:
    raw = q.get(name)
    if raw is None or raw == "":
        return None
    v = _TRUE.get(raw.lower())
    if v is None:
        raise _bad(f"{name} must be a boolean")
    return v


def _page(q, items: list) -> list:
    limit = _int(q, "limit", 20, 1, 100)
    offset = _int(q, "offset", 0, 0)
    return items[offset : offset + limit]


def _sorted(q, items: list, columns: dict) -> list:
    ascending = _bool(q, "ascending") or False
    order = q.get("order")
    if not order:
        return items
    key = columns.get(order)
    if key is None:
        raise _bad(f"invalid order column: {order}")
    return sorted(items, key=key, reverse=not ascending)


class CatalogView:
    """Renders catalog records in the interface's shapes (sections 2.7-2.10)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def market(self, m: Market, by_slug: bool = False) -> dict[str, Any]:
        ev = self.catalog.event_of(m)
        out: dict[str, Any] = {
            "id": m.id, "question": m.question, "conditionId": m.condition_id, "slug": m.slug,
            "resolutionSource": "https://example.invalid/resolution", "startDate": m.start_date,
            "endDate": m.end_date, "image": IMAGE.format(m.slug), "icon": IMAGE.format(m.slug),
            "description": m.description, "outcomes": json.dumps(list(m.outcomes)),
            "clobTokenIds": json.dumps(list(m.token_ids)), "active": m.active, "closed": m.closed,
            "archived": m.archived, "createdAt": m.created_at, "updatedAt": m.created_at,
            "questionID": m.question_id,
        }
        if by_slug:
            out["mirrorConditionId"] = ""
            out["mirrorClobTokenIds"] = json.dumps([])
        events = []
        if ev is not None:
            brief = {"id": ev.id, "ticker": ev.ticker, "slug": ev.slug, "title": ev.title}
            if by_slug:
                brief.update(self._event_base(ev, with_ids=False))
            events.append(brief)
        out["events"] = events
        return out

    def _event_base(self, ev: Event, with_ids: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if with_ids:
            out.update({"id": ev.id, "ticker": ev.ticker, "slug": ev.slug, "title": ev.title})
        out.update({
            "description": ev.description, "resolutionSource": "https://example.invalid/resolution",
            "startDate": ev.start_date, "creationDate": ev.created_at, "endDate": ev.end_date,
            "image": IMAGE.format(ev.slug), "icon": IMAGE.format(ev.slug), "active": ev.active,
            "closed": ev.closed, "archived": ev.archived, "createdAt": ev.created_at, "updatedAt": ev.created_at,
        })
        return out

    def event(self, ev: Event) -> dict[str, Any]:
        c = self.catalog
        out = self._event_base(ev)
        out["tags"] = [self.tag(c.tags_by_id[t]) for t in ev.tag_ids if t in c.tags_by_id]
        markets = []
        for mid in ev.market_ids:
            m = c.by_market_id.get(mid)
            if m is not None:
                d = self.market(m)
                d.pop("events")
                markets.append(d)
        out["markets"] = markets
        out["series"] = [self.series(c.series_by_id[s]) for s in ev.series_ids if s in c.series_by_id]
        out["eventMetadata"] = {"negRisk": ev.neg_risk, "creatorId": ev.creator_id}
        return out

    @staticmethod
    def tag(t) -> dict[str, Any]:
        return {"id": t.id, "label": t.label, "slug": t.slug, "createdAt": t.createdAt, "updatedAt": t.updatedAt,
                "requiresTranslation": False}

    @staticmethod
    def series(s) -> dict[str, Any]:
        return {"id": s.id, "ticker": s.ticker, "slug": s.slug, "title": s.title, "seriesType": s.seriesType,
                "recurrence": s.recurrence, "image": IMAGE.format(s.slug), "icon": IMAGE.format(s.slug),
                "active": True, "closed": False, "archived": False, "createdAt": s.createdAt, "updatedAt": s.updatedAt}

    @staticmethod
    def creator(c) -> dict[str, Any]:
        return {"id": c.id, "creatorName": c.creatorName, "creatorHandle": c.creatorHandle,
                "creatorUrl": c.creatorUrl, "creatorImage": c.creatorImage, "createdAt": c.createdAt,
                "updatedAt": c.updatedAt}

    def comment(self, cm) -> dict[str, Any]:
        return {
            "id": cm.id, "body": cm.body, "parentEntityType": "Event", "parentEntityID": cm.event_id,
            "parentCommentID": "", "userAddress": cm.user_address, "replyAddress": "",
            "createdAt": cm.created_at, "updatedAt": cm.created_at,
            "profile": {
                "name": cm.name, "pseudonym": cm.name, "bio": "", "proxyWallet": cm.user_address,
                "baseAddress": cm.user_address, "profileImage": "", "displayUsernamePublic": True,
                "isMod": False, "isCreator": any(c.address == cm.user_address for c in self.catalog.creators),
                "profileImageOptimized": {}, "positions": [],
            },
            "reactions": [], "reportCount": 0, "reactionCount": 0, "replyCount": 0, "replies": [],
        }

    # -- filters ---------------------------------------------------------------------------

    def creator_scope(self, creator: str | None) -> set[str] | None:
        """Event ids visible to ``creator`` (wallet address, handle, name or id); None = all."""
        if not creator:
            return None
        key = creator.lower()
        ids = {c.id for c in self.catalog.creators
               if key in (c.address.lower(), c.id, c.creatorHandle.lower(), c.creatorName.lower())}
        return {e.id for e in self.catalog.events if e.creator_id in ids}


def _by_flags_and_tag(q, items, tags, tag_ids_of) -> list:
    """The catalog list filters shared by markets and events: active/closed/archived, tag slug."""
    items = list(items)
    for flag in ("active", "closed", "archived"):
        v = _bool(q, flag)
        if v is not None:
            items = [x for x in items if getattr(x, flag) == v]
    tag_slug = q.get("tag_slug") or q.get("tag")
    if tag_slug:
        ids = {t.id for t in tags if t.slug == tag_slug}
        items = [x for x in items if ids & set(tag_ids_of(x))]
    return items


def routes(view: CatalogView) -> list[Route]:
    c = view.catalog

    async def markets(request: Request):
        q = request.query_params
        items = _by_flags_and_tag(q, c.markets, c.tags, lambda m: m.tags)
        if q.get("tag_id"):
            tid = str(_int(q, "tag_id", 0, 0))
            items = [m for m in items if tid in m.tags]
        if q.get("event_id"):
            eid = str(_int(q, "event_id", 0, 0))
            items = [m for m in items if m.event_id == eid]
        eslug = q.get("event_slug") or q.get("eventSlug")
        if eslug:
            ev = c.events_by_slug.get(eslug)
            items = [m for m in items if ev is not None and m.event_id == ev.id]
        cond = q.get("conditionId") or q.get("condition_id")
        if cond:
            wanted = {x.strip().lower() for x in cond.split(",")}
            items = [m for m in items if m.condition_id.lower() in wanted]
        if q.get("slug"):
            items = [m for m in items if m.slug == q["slug"]]
        scope = view.creator_scope(q.get("creator"))
        if scope is not None:
            items = [m for m in items if m.event_id in scope]
        items = _sorted(q, items, _MARKET_ORDER)
        return json_response([view.market(m) for m in _page(q, items)])

    async def market_by_slug(request: Request):
        m = c.by_slug.get(request.path_params["slug"])
        scope = view.creator_scope(request.query_params.get("creator"))
        if m is None or (scope is not None and m.event_id not in scope):
            raise catalog_error(404, "not found error", "slug not found")
        return json_response(view.market(m, by_slug=True))

    async def market_by_id(request: Request):
        m = c.by_market_id.get(request.path_params["id"])
        if m is None:
            raise catalog_error(404, "not found error", "id not found")
        return json_response(view.market(m))

    async def events(request: Request):
        q = request.query_params
        items = _by_flags_and_tag(q, c.events, c.tags, lambda e: e.tag_ids)
        if q.get("slug"):
            items = [e for e in items if e.slug == q["slug"]]
        scope = view.creator_scope(q.get("creator"))
        if scope is not None:
            items = [e for e in items if e.id in scope]
        return json_response([view.event(e) for e in _page(q, items)])

    async def event_by_id(request: Request):
        ev = c.events_by_id.get(str(_int(request.path_params, "id", -1, 0)))
        scope = view.creator_scope(request.query_params.get("creator"))
        if ev is None or (scope is not None and ev.id not in scope):
            raise catalog_error(404, "not found error", "id not found")
        return json_response(view.event(ev))

    async def event_by_slug(request: Request):
        ev = c.events_by_slug.get(request.path_params["slug"])
        scope = view.creator_scope(request.query_params.get("creator"))
        if ev is None or (scope is not None and ev.id not in scope):
            raise catalog_error(404, "not found error", "slug not found")
        return json_response(view.event(ev))

    async def creators(request: Request):
        q = request.query_params
        items = list(c.creators)
        if q.get("creator_name"):
            items = [x for x in items if q["creator_name"].lower() in x.creatorName.lower()]
        if q.get("creator_handle"):
            items = [x for x in items if q["creator_handle"].lower() in x.creatorHandle.lower()]
        items = _sorted(q, items, _CREATOR_ORDER)
        return json_response([view.creator(x) for x in _page(q, items)])

    async def comments(request: Request):
        addr = request.path_params["user_address"].lower()
        items = [cm for cm in c.comments if cm.user_address.lower() == addr]
        return json_response([view.comment(cm) for cm in _page(request.query_params, items)])

    async def tags(request: Request):
        return json_response([view.tag(t) for t in _page(request.query_params, list(c.tags))])

    async def tag_by_id(request: Request):
        t = c.tags_by_id.get(request.path_params["id"])
        if t is None:
            raise catalog_error(404, "not found error", "id not found")
        return json_response(view.tag(t))

    async def series_list(request: Request):
        return json_response([view.series(s) for s in _page(request.query_params, list(c.series))])

    async def search(request: Request):
        q = request.query_params
        text = (q.get("q") or "").strip().lower()
        if not text:
            raise _bad("q is required")
        evs = [e for e in c.events if text in e.title.lower() or text in e.slug]
        tags = [t for t in c.tags if text in t.label.lower() or text in t.slug]
        limit = _int(q, "limit_per_type", 10, 1, 100)
        return json_response({"events": [view.event(e) for e in evs[:limit]],
                              "tags": [view.tag(t) for t in tags[:limit]], "profiles": [],
                              "pagination": {"hasMore": len(evs) > limit, "totalResults": len(evs)}})

    async def ok(request: Request):
        return json_response("OK")

    return [
        Route("/markets", markets),
        Route("/markets/slug/{slug}", market_by_slug),
        Route("/markets/{id}", market_by_id),
        Route("/events", events),
        Route("/events/creators", creators),
        Route("/events/slug/{slug}", event_by_slug),
        Route("/events/{id}", event_by_id),
        Route("/comments/user_address/{user_address}", comments),
        Route("/tags", tags),
        Route("/tags/{id}", tag_by_id),
        Route("/series", series_list),
        Route("/public-search", search),
        Route("/", ok),
    ]

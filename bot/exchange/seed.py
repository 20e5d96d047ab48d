"""The exchange's catalog: events, markets, tags, series, creators and comments.

Invariant: ``generate_catalog(seed, ...)`` is a pure function of its arguments, so the same seed
gives byte-identical ids, slugs and texts on every run. Condition and question ids are ``0x`` +
64 lowercase hex; token ids are large decimal integers (< 2^256), as on the venue. A catalog can
also be loaded from (and dumped to) JSON with the same schema (``load_catalog``/``dump_catalog``).
"""

from __future__ import annotations

import hashlib
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

import msgspec

from bot.core.markets import MarketInfo
from bot.venue.fees import FeeSchedule
from bot.venue.units import parse_units

EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)
COLLATERAL = "0x2791Bca1f2de4661ED88A30C99A7a9449Aa84174"


class Tag(msgspec.Struct, frozen=True):
    id: str
    label: str
    slug: str
    createdAt: str
    updatedAt: str


class Series(msgspec.Struct, frozen=True):
    id: str
    ticker: str
    slug: str
    title: str
    seriesType: str = "single"
    recurrence: str = "daily"
    createdAt: str = ""
    updatedAt: str = ""


class Creator(msgspec.Struct, frozen=True):
    id: str
    creatorName: str
    creatorHandle: str
    creatorUrl: str
    creatorImage: str
    address: str
    createdAt: str
    updatedAt: str


class Market(msgspec.Struct, frozen=True):
    """One binary market (a condition with two outcome tokens)."""

    id: str  # numeric catalog id as a string
    question: str
    condition_id: str
    question_id: str
    slug: str
    token_ids: tuple[str, str]
    outcomes: tuple[str, str] = ("Yes", "No")
    tick_size: str = "0.01"
    min_order_size: str = "5"
    neg_risk: bool = False
    neg_risk_market_id: str = ""
    event_id: str = ""
    description: str = ""
    start_date: str = ""
    end_date: str = ""
    created_at: str = ""
    active: bool = True
    closed: bool = False
    archived: bool = False
    mid: str = "0.5"  # where the synthetic flow centres the book
    winner: int = -1  # index of the winning outcome once resolved, -1 while open
    tags: tuple[str, ...] = ()  # tag ids
    # the fee rule (bot.venue.fees), served as ``fd`` on /clob-markets: rate and maker rebate share
    # in whole basis points (trades carry the rate as ``fee_rate_bps``), exponent ``e``
    fee_rate_bps: int = 0
    fee_exponent: int = 1
    fee_rebate_bps: int = 0

    @property
    def fee(self) -> FeeSchedule:
        return FeeSchedule.from_bps(self.fee_rate_bps, self.fee_exponent, self.fee_rebate_bps)

    @property
    def info(self) -> MarketInfo:
        return MarketInfo(
            condition_id=self.condition_id,
            tokens=self.token_ids,
            tick=parse_units(self.tick_size),
            min_size=parse_units(self.min_order_size),
            neg_risk=self.neg_risk,
            event_id=self.event_id,
            outcomes=self.outcomes,
            fee=self.fee,
        )


class Event(msgspec.Struct, frozen=True):
    id: str
    ticker: str
    slug: str
    title: str
    description: str
    market_ids: tuple[str, ...]
    tag_ids: tuple[str, ...] = ()
    series_ids: tuple[str, ...] = ()
    creator_id: str = ""
    neg_risk: bool = False
    start_date: str = ""
    end_date: str = ""
    created_at: str = ""
    active: bool = True
    closed: bool = False
    archived: bool = False


class Comment(msgspec.Struct, frozen=True):
    id: str
    body: str
    event_id: int
    user_address: str
    created_at: str
    name: str = ""


class Catalog(msgspec.Struct, dict=True):
    """Everything the catalog surface serves; markets keyed by id in insertion order."""

    markets: list[Market] = []
    events: list[Event] = []
    tags: list[Tag] = []
    series: list[Series] = []
    creators: list[Creator] = []
    comments: list[Comment] = []

    def __post_init__(self) -> None:
        self.reindex()

    def reindex(self) -> None:
        self.by_condition = {m.condition_id.lower(): m for m in self.markets}
        self.by_token = {t: m for m in self.markets for t in m.token_ids}
        self.by_market_id = {m.id: m for m in self.markets}
        self.by_slug = {m.slug: m for m in self.markets}
        self.events_by_id = {e.id: e for e in self.events}
        self.events_by_slug = {e.slug: e for e in self.events}
        self.tags_by_id = {t.id: t for t in self.tags}
        self.series_by_id = {s.id: s for s in self.series}
        self.creators_by_id = {c.id: c for c in self.creators}

    def market(self, condition_id: str) -> Market | None:
        return self.by_condition.get(condition_id.lower())

    def event_of(self, market: Market) -> Event | None:
        return self.events_by_id.get(market.event_id)

    def replace_market(self, market: Market) -> None:
        self.markets = [market if m.condition_id == market.condition_id else m for m in self.markets]
        self.reindex()


def iso(dt: datetime) -> str:
    """A UTC time as the venue's catalog and order views spell it (``2024-01-31T12:00:00Z``)."""
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def _hex32(*parts: object) -> str:
    return "0x" + hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()


def _token_id(*parts: object) -> str:
    return str(int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest(), "big"))


def _slug(text: str) -> str:
    out = "".join(c.lower() if c.isalnum() else "-" for c in text)
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-")


_SUBJECTS = [
    ("Bitcoin", "crypto", "close above ${}k on {}?", (60, 150)),
    ("Ethereum", "crypto", "close above ${}k on {}?", (2, 8)),
    ("The Fed", "economy", "cut rates by {} bps at the {} meeting?", (25, 75)),
    ("Team Red", "sports", "win by more than {} points on {}?", (3, 15)),
    ("The S&P 500", "stocks", "gain more than {}% by {}?", (1, 9)),
    ("Global temperature", "science", "rise more than {} tenths of a degree by {}?", (1, 5)),
    ("Candidate A", "politics", "poll above {}% on {}?", (30, 60)),
    ("A new phone", "tech", "sell {} million units by {}?", (5, 40)),
]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August"]


def _address(rng: random.Random) -> str:
    return "0x" + "".join(rng.choice("0123456789abcdef") for _ in range(40))


def generate_catalog(
    seed: int = 1, markets: int = 8, neg_risk_events: int = 1, neg_risk_outcomes: int = 3
) -> Catalog:
    """A deterministic catalog: ``markets`` binary events plus neg-risk multi-outcome events."""
    rng = random.Random(seed)
    created = iso(EPOCH - timedelta(days=30))
    updated = iso(EPOCH - timedelta(days=1))
    topics = sorted({s[1] for s in _SUBJECTS})
    tags = [Tag(str(100 + i), t.capitalize(), t, created, updated) for i, t in enumerate(topics)]
    tag_by_topic = {t.slug: t.id for t in tags}
    series = [
        Series(str(500 + i), f"{t}-daily", f"{t}-daily", f"{t.capitalize()} daily", createdAt=created, updatedAt=updated)
        for i, t in enumerate(topics)
    ]
    series_by_topic = {s.slug.removesuffix("-daily"): s.id for s in series}
    creators = [
        Creator(
            str(900 + i), f"creator{i}", f"@creator{i}", f"https://example.invalid/creator{i}",
            f"https://example.invalid/creator{i}.png", _address(rng), created, updated,
        )
        for i in range(3)
    ]
    out_markets: list[Market] = []
    events: list[Event] = []
    mid_choices = ["0.2", "0.35", "0.5", "0.5", "0.65", "0.8"]
    next_market = 10_000
    next_event = 20_000

    def make_market(question: str, event_id: str, topic: str, neg: bool, nr_id: str, outcomes, end: datetime) -> Market:
        nonlocal next_market
        next_market += 1
        mid = rng.choice(mid_choices)
        return Market(
            id=str(next_market),
            question=question,
            condition_id=_hex32("condition", seed, next_market),
            question_id=_hex32("question", seed, next_market),
            slug=_slug(question),
            token_ids=(_token_id("token", seed, next_market, 0), _token_id("token", seed, next_market, 1)),
            outcomes=outcomes,
            tick_size=rng.choice(["0.01", "0.01", "0.01", "0.001"]),
            min_order_size="5",
            neg_risk=neg,
            neg_risk_market_id=nr_id,
            event_id=event_id,
            description=f"This market resolves to \"{outcomes[0]}\" if {question[:-1].lower()}. Otherwise \"{outcomes[1]}\".",
            start_date=created,
            end_date=iso(end),
            created_at=created,
            mid=mid,
            tags=(tag_by_topic[topic],),
        )

    for i in range(markets):
        subject, topic, pattern, (lo, hi) = _SUBJECTS[i % len(_SUBJECTS)]
        month = _MONTHS[(i // len(_SUBJECTS)) % len(_MONTHS)]
        question = f"Will {subject} " + pattern.format(rng.randint(lo, hi), f"{month} {1 + i % 28}")
        next_event += 1
        eid = str(next_event)
        m = make_market(question, eid, topic, False, "", ("Yes", "No"), EPOCH + timedelta(days=60 + i))
        out_markets.append(m)
        events.append(Event(
            id=eid, ticker=m.slug, slug=m.slug, title=question, description=m.description,
            market_ids=(m.id,), tag_ids=m.tags, series_ids=(series_by_topic[topic],),
            creator_id=creators[i % len(creators)].id, start_date=created, end_date=m.end_date,
            created_at=created,
        ))
    for j in range(neg_risk_events):
        next_event += 1
        eid = str(next_event)
        title = f"Who will win election {j + 1}?"
        nr_id = _hex32("negrisk", seed, j)
        ms = []
        for k in range(neg_risk_outcomes):
            name = f"Candidate {chr(65 + k)}"
            m = make_market(f"Will {name} win election {j + 1}?", eid, "politics", True, nr_id, ("Yes", "No"),
                            EPOCH + timedelta(days=120))
            ms.append(m)
        ms = [msgspec.structs.replace(m, mid=mid) for m, mid in zip(ms, event_mids(seed, j, len(ms)))]
        out_markets.extend(ms)
        events.append(Event(
            id=eid, ticker=_slug(title), slug=_slug(title), title=title,
            description="Exactly one candidate wins; the others resolve No.", market_ids=tuple(m.id for m in ms),
            tag_ids=(tag_by_topic["politics"],), series_ids=(), creator_id=creators[0].id, neg_risk=True,
            start_date=created, end_date=iso(EPOCH + timedelta(days=120)), created_at=created,
        ))
    comments = []
    for n in range(12 if events else 0):  # a catalog of no market has no comments either
        ev = events[n % len(events)]
        comments.append(Comment(
            id=str(70_000 + n), body=f"Comment {n} on {ev.title}", event_id=int(ev.id),
            user_address=creators[n % len(creators)].address, created_at=iso(EPOCH - timedelta(hours=n)),
            name=creators[n % len(creators)].creatorName,
        ))
    return Catalog(out_markets, events, tags, series, creators, comments)


def event_mids(seed: int, event: int, outcomes: int) -> list[str]:
    """The YES mids of a neg-risk event's outcomes (exactly one wins): 2-decimal prices of at least
    0.02 that sum to exactly 1, drawn from their own generator (the rest of the catalog's draws are
    unchanged by the number of outcomes)."""
    rng = random.Random(f"event-mids:{seed}:{event}")
    cents = 100 - 2 * outcomes  # what is left over the 0.02 floor of each, shared by weights
    weights = [rng.uniform(1.0, 3.0) for _ in range(outcomes)]
    total = sum(weights)
    shares = [int(cents * w / total) for w in weights]
    for i in range(cents - sum(shares)):  # the rounding's remainder, a cent each to the first
        shares[i % outcomes] += 1
    return [f"0.{2 + c:02d}" for c in shares]


def add_fixed_market(catalog: Catalog, seed: "object") -> Market:
    """Add a market with given ids (``config.MarketSeed``) as its own event; returns it."""
    cond = seed.condition_id.lower()
    existing = catalog.market(cond)
    if existing is not None:
        return existing
    comp = seed.complement_token_id or _token_id("complement", seed.token_id)
    n = 30_000 + len(catalog.markets)
    question = seed.question or f"Fixed market {cond[:10]}?"
    created = iso(EPOCH - timedelta(days=30))
    eid = str(40_000 + len(catalog.events))
    m = Market(
        id=str(n), question=question, condition_id=cond, question_id=_hex32("question-fixed", cond),
        slug=_slug(question) + f"-{n}", token_ids=(seed.token_id, comp), tick_size=seed.tick_size,
        neg_risk=seed.neg_risk, neg_risk_market_id=_hex32("negrisk-fixed", cond) if seed.neg_risk else "",
        event_id=eid, description=question, start_date=created, end_date=iso(EPOCH + timedelta(days=365)),
        created_at=created, mid=seed.mid, tags=(catalog.tags[0].id,) if catalog.tags else (),
        fee_rate_bps=seed.fee_rate_bps, fee_exponent=seed.fee_exponent, fee_rebate_bps=seed.fee_rebate_bps,
    )
    catalog.markets.append(m)
    catalog.events.append(Event(
        id=eid, ticker=m.slug, slug=m.slug, title=question, description=question, market_ids=(m.id,),
        tag_ids=m.tags, neg_risk=seed.neg_risk, start_date=created, end_date=m.end_date, created_at=created,
    ))
    catalog.reindex()
    return m


def load_catalog(path: str | Path) -> Catalog:
    return msgspec.json.decode(Path(path).read_bytes(), type=Catalog)


def dump_catalog(catalog: Catalog) -> bytes:
    return msgspec.json.encode(catalog)

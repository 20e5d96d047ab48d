"""CLOB-surface renderings of catalog markets (interface.md 2.13-2.15), built from venue models.

Invariant: each rendering sets exactly the fields of its shape and leaves the others ``None`` (the
models omit unset fields), so variant A never carries ``itode``/``taker_order_delay_ms``/
``order_age_seconds``/``blockaid_check_enabled`` and variant B tokens never carry
``mirror_token_id``. Token prices are informational floats; money stays in the books.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from bot.exchange.seed import COLLATERAL, Catalog, Market
from bot.venue.models.markets import (
    ClobMarket, ClobMarketInfo, ClobToken, FeeDetails, InfoToken, MarketEventRef, RewardRate, Rewards,
    SamplingMarket, SamplingSimplifiedMarket, SimplifiedMarket,
)

CREATOR = "0x0000000000000000000000000000000000000000"
IMAGE = "https://example.invalid/img/{}.png"


def _num(text: str) -> float | int:
    value = float(text)
    return int(value) if value.is_integer() else value


class MarketsView:
    def __init__(self, catalog: Catalog, price_of: Callable[[str], float]) -> None:
        self.catalog = catalog
        self.price_of = price_of

    @staticmethod
    def rewards() -> Rewards:
        return Rewards(rates=[RewardRate(asset_address=COLLATERAL, rewards_daily_rate=0)], min_size=0, max_spread=0)

    def status(self, m: Market) -> str:
        if m.archived:
            return "archived"
        return "resolved" if m.winner >= 0 else ("closed" if m.closed else "active")

    def tokens(self, m: Market, mirror: bool) -> list[ClobToken]:
        return [
            ClobToken(token_id=t, outcome=o, price=round(self.price_of(t), 6), winner=m.winner == i,
                      mirror_token_id="" if mirror else None)
            for i, (t, o) in enumerate(zip(m.token_ids, m.outcomes))
        ]

    def event_ref(self, m: Market) -> MarketEventRef:
        ev = self.catalog.event_of(m)
        if ev is None:
            return MarketEventRef(id="", slug="", title="", ticker="", description="")
        return MarketEventRef(id=ev.id, slug=ev.slug, title=ev.title, ticker=ev.ticker, description=ev.description)

    def tag_labels(self, m: Market) -> list[str]:
        return [self.catalog.tags_by_id[t].label for t in m.tags if t in self.catalog.tags_by_id] + ["All"]

    def clob_market(self, m: Market, variant: str = "A") -> ClobMarket:
        accepting = m.active and not m.closed
        common = dict(
            enable_order_book=True, active=m.active, closed=m.closed, archived=m.archived,
            accepting_orders=accepting, accepting_order_timestamp=m.created_at,
            minimum_order_size=_num(m.min_order_size), minimum_tick_size=_num(m.tick_size),
            condition_id=m.condition_id, question_id=m.question_id, question=m.question,
            description=m.description, market_slug=m.slug, end_date_iso=m.end_date, game_start_time="",
            seconds_delay=0, fpmm="", maker_base_fee=0, taker_base_fee=0, notifications_enabled=True,
            neg_risk=m.neg_risk, neg_risk_market_id=m.neg_risk_market_id,
            neg_risk_request_id=m.question_id if m.neg_risk else "", icon=IMAGE.format(m.slug),
            image=IMAGE.format(m.slug), rewards=self.rewards(), is_50_50_outcome=False,
            tokens=self.tokens(m, mirror=variant == "A"), tags=self.tag_labels(m),
        )
        if variant == "A":
            return ClobMarket(
                **common, creator=CREATOR, mirror_condition_id="", status=self.status(m), slug=m.slug,
                market_id=int(m.id), assets_ids=list(m.token_ids), outcomes=list(m.outcomes),
                event=self.event_ref(m), raw_metadata={"source": "local-exchange"},
            )
        return ClobMarket(**common, itode=False, taker_order_delay_ms=0, order_age_seconds=0,
                          blockaid_check_enabled=False)

    def simplified(self, m: Market) -> SimplifiedMarket:
        return SimplifiedMarket(
            condition_id=m.condition_id, creator=CREATOR, mirror_condition_id="", status=self.status(m),
            question=m.question, slug=m.slug, neg_risk=m.neg_risk, active=m.active, closed=m.closed,
            archived=m.archived, accepting_orders=m.active and not m.closed, market_id=int(m.id),
            tokens=self.tokens(m, mirror=True), rewards=self.rewards(), assets_ids=list(m.token_ids),
            outcomes=list(m.outcomes),
        )

    def sampling(self, m: Market) -> SamplingMarket:
        return SamplingMarket(
            condition_id=m.condition_id, status=self.status(m), question=m.question, slug=m.slug,
            description=m.description, neg_risk=m.neg_risk, market_id=int(m.id), assets_ids=list(m.token_ids),
            outcomes=list(m.outcomes), event=self.event_ref(m), raw_metadata={"source": "local-exchange"},
        )

    def sampling_simplified(self, m: Market) -> SamplingSimplifiedMarket:
        return SamplingSimplifiedMarket(
            condition_id=m.condition_id, status=self.status(m), question=m.question, slug=m.slug,
            neg_risk=m.neg_risk, market_id=int(m.id), assets_ids=list(m.token_ids), outcomes=list(m.outcomes),
        )

    @staticmethod
    def fee_details(m: Market) -> FeeDetails:
        """The market's fee rule as ``fd``: ``r`` (a decimal number), ``e``, and the rebate share
        ``rb`` only where the market pays one."""
        fee = m.fee
        return FeeDetails(rate=_num(str(Decimal(fee.rate).scaleb(-6))), exponent=fee.exponent, taker_only=True,
                          rebate=_num(str(Decimal(fee.rebate).scaleb(-6))) if fee.rebate else None)

    def info(self, m: Market) -> ClobMarketInfo:
        return ClobMarketInfo(
            game_start_time=m.start_date, rewards=self.rewards(), condition_id=m.condition_id, creator=CREATOR,
            mirror_condition_id="", neg_risk=m.neg_risk, rfq_enabled=False, taker_order_delay_enabled=False,
            blockaid_check_enabled=False,
            tokens=[InfoToken(token_id=t, mirror_token_id="", outcome=o) for t, o in zip(m.token_ids, m.outcomes)],
            min_tick_size=_num(m.tick_size), min_order_size=_num(m.min_order_size),
            fee=self.fee_details(m), maker_base_fee=0, taker_base_fee=0,
            order_age_seconds=0,
        )

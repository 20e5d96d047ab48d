"""Several strategies on one account: the config that lists them and what it refuses, and the set
the engine runs (each strategy's books, markets and tokens, its own limits and the account's, its
name in logs and metrics), on hand-made events and in a backtest on the synthetic market."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import generate_latest
from structlog.testing import capture_logs

from bot.backtest.runner import run_backtest
from bot.backtest.synthetic import SyntheticConfig, SyntheticMarket
from bot.cli import main
from bot.core.clock import SimClock
from bot.core.intents import CancelAll, Quote, QuoteTarget
from bot.core.markets import MarketInfo
from bot.engine.assembly import Signing, build_engine, simulated_throttles
from bot.strategy_set import StrategySet, configured_strategy
from bot.execution.protocol import SendCancels, SendPlaces
from bot.ops.config import (BotConfig, ConfigError, StrategyInstanceConfig, decode_bot_config, load_bot_config,
                            traded_markets)
from bot.ops.metrics import Metrics
from bot.risk import RiskLimits
from bot.risk.limits import StrategyLimits
from bot.strategy import Strategy, StrategyError
from bot.venue.enums import Side
from bot.venue.models.ws import decode_market_frame
from bot.venue.stream import ConnectionEvent
from bot.venue.units import UNIT

REPO = Path(__file__).resolve().parents[2]
A, B = "0x" + "aa" * 32, "0x" + "bb" * 32
M1 = MarketInfo(A, ("1001", "1002"))
M2 = MarketInfo(B, ("2001", "2002"))


class Bidder(Strategy):
    """Bids ``size`` at ``price`` on every book it is shown (and on ``also``, a token it may not
    quote); cancels everything of its own on a timer when ``cancel_on_timer``."""

    class Params(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
        price: int = 450_000
        size: int = 10 * UNIT
        also: str = ""
        cancel_on_timer: bool = False

    def __init__(self, params=None) -> None:
        super().__init__(params)
        self.seen: list[tuple[str, tuple[str, ...]]] = []

    def on_book(self, ctx, token_id):
        p = self.params
        self.seen.append((token_id, tuple(m.condition_id for m in ctx.markets)))
        ctx.log.info("bid", token_id=token_id)
        out = [QuoteTarget(token_id, (Quote(token_id, Side.BUY, p.price, p.size),))]
        if p.also:
            out.append(QuoteTarget(p.also, (Quote(p.also, Side.BUY, p.price, p.size),)))
        return out

    def on_timer(self, ctx):
        return [CancelAll()] if self.params.cancel_on_timer else None


def book(market: str, token: str) -> object:
    frame = {"event_type": "book", "market": market, "asset_id": token, "timestamp": "1", "hash": "h",
             "bids": [{"price": "0.48", "size": "100"}], "asks": [{"price": "0.52", "size": "100"}]}
    return decode_market_frame(json.dumps([frame]).encode())[0]


def engine_of(a: Bidder, b: Bidder, *, limits_a: StrategyLimits | None = None, risk: RiskLimits | None = None,
              metrics=None):
    clock = SimClock(1000.0)
    s = StrategySet([("a", a, (A,), limits_a), ("b", b, (B,), None)])
    eng = build_engine(s, [M1, M2], clock=clock, signing=Signing(None, 1),
                       throttles=simulated_throttles(BotConfig().venue.limits, clock), risk=risk, metrics=metrics)
    eng.start()
    eng.on_connection(ConnectionEvent(kind="connected", channel="market", shard=0, attempt=0, at=clock.now(),
                                      subscriptions=M1.tokens + M2.tokens))
    return eng, s, clock


def feed(eng, *pairs) -> list:
    out = []
    for market, token in pairs:
        out += eng.on_market([book(market, token)])
    return out


def placed(actions) -> list:
    return [o for a in actions if isinstance(a, SendPlaces) for o in a.batch.orders]


def tally(s: StrategySet, name: str):
    return next(t for t in s.tallies if t.name == name)


# -- the engine runs the set --------------------------------------------------------------------

def test_each_strategy_sees_only_its_own_books_and_markets():
    a, b = Bidder(), Bidder()
    eng, s, _ = engine_of(a, b)
    orders = placed(feed(eng, (A, "1001"), (B, "2002")))
    assert a.seen == [("1001", (A,))]
    assert b.seen == [("2002", (B,))]
    assert sorted(o.token_id for o in orders) == ["1001", "2002"]
    assert s.owners == {"1001": "a", "1002": "a", "2001": "b", "2002": "b"}
    assert eng.reconciler.updates is False  # no strategy of the set reads order updates: none are made


def test_an_intent_on_another_strategys_token_is_dropped_counted_and_logged_with_the_name():
    a, b = Bidder({"also": "2001"}), Bidder()
    eng, s, _ = engine_of(a, b)
    with capture_logs() as logs:
        orders = placed(feed(eng, (A, "1001")))
    assert [o.token_id for o in orders] == ["1001"]
    assert dict(tally(s, "a").rejections) == {"foreign_token": 1}
    assert tally(s, "b").rejections == ()
    refused = [e for e in logs if e["event"] == "strategy_risk_reject"]
    assert refused and refused[0]["strategy"] == "a" and refused[0]["token_id"] == "2001"
    assert any(e["event"] == "bid" and e["strategy"] == "a" for e in logs)


def test_a_strategys_own_limit_refuses_what_the_account_allows():
    a, b = Bidder({"size": 30 * UNIT}), Bidder({"size": 30 * UNIT})
    eng, s, _ = engine_of(a, b, limits_a=StrategyLimits(max_position=20 * UNIT))
    orders = placed(feed(eng, (A, "1001"), (B, "2001")))
    assert [o.token_id for o in orders] == ["2001"]
    assert dict(tally(s, "a").rejections) == {"position": 1}


def test_the_accounts_limits_apply_to_the_strategies_in_total_and_name_the_strategy():
    a, b = Bidder(), Bidder()
    eng, s, _ = engine_of(a, b, risk=RiskLimits(max_open_orders=1))
    with capture_logs() as logs:
        orders = placed(feed(eng, (A, "1001"), (B, "2001")))
    assert [o.token_id for o in orders] == ["1001"]  # each alone is within the limit; both are not
    refused = [e for e in logs if e["event"] == "risk_reject"]
    assert [(e["strategy"], e["reason"]) for e in refused] == [("b", "open_orders")]


def test_a_strategys_cancel_all_cancels_its_own_orders_only():
    a, b = Bidder({"cancel_on_timer": True}), Bidder()
    eng, _, clock = engine_of(a, b)
    orders = placed(feed(eng, (A, "1001"), (B, "2001")))
    assert len(orders) == 2
    clock.advance(5.0)
    out = eng.on_timer()
    cancelled = [oid for x in out if isinstance(x, SendCancels) for oid in x.batch.order_ids]
    assert cancelled == [o.order_id for o in orders if o.token_id == "1001"]


def test_two_strategies_on_one_token_are_refused_when_the_set_is_bound():
    s = StrategySet([("a", Bidder(), (A,), None), ("b", Bidder(), (A,), None)])
    with pytest.raises(StrategyError, match="strategies 'a' and 'b' both quote token 1001"):
        s.bind([M1, M2])
    s = StrategySet([("a", Bidder(), (A,), None), ("b", Bidder(), ("0x" + "cc" * 32,), None)])
    with pytest.raises(StrategyError, match="'b': market 0xcc"):
        s.bind([M1, M2])


def test_metrics_carry_each_strategys_name():
    metrics = Metrics()
    a, b = Bidder({"also": "2001"}), Bidder()
    eng, s, _ = engine_of(a, b, metrics=metrics)
    metrics.watch_strategy(s)
    feed(eng, (A, "1001"))
    text = generate_latest(metrics.registry).decode()
    assert 'bot_strategy_token{strategy="a",token="1001"} 1.0' in text
    assert 'bot_strategy_token{strategy="b",token="2002"} 1.0' in text
    assert 'bot_strategy_risk_rejections_total{reason="foreign_token",strategy="a"} 1.0' in text
    assert 'bot_strategy_fills_total{strategy="b"} 0.0' in text


# -- the config ---------------------------------------------------------------------------------

TWO = f"""
[[strategies]]
name = "mm"
path = "strategies.market_maker:MarketMaker"
markets = ["{A}"]
[strategies.risk]
max_position = 50

[[strategies]]
name = "bands"
path = "strategies.bands:BandsMarketMaker"
markets = ["{B}"]
[strategies.params]
max_inventory = 20
"""


def test_a_config_lists_several_strategies_each_with_markets_params_and_limits():
    c = decode_bot_config(TWO)
    assert [s.name for s in c.strategies] == ["mm", "bands"]
    assert traded_markets(c) == (A, B)
    assert c.strategies[0].risk.max_position == 50 * UNIT and c.strategies[1].risk.max_position is None
    s = configured_strategy(c)
    assert isinstance(s, StrategySet)
    assert [type(m.strategy).__name__ for m in s.members] == ["MarketMaker", "BandsMarketMaker"]
    assert s.members[1].strategy.params.max_inventory == 20 * UNIT


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=3), min_size=1, max_size=4))
def test_a_list_of_strategies_is_refused_exactly_when_two_share_a_market(assignment: list[list[int]]):
    ids = ["0x" + f"{i:064x}" for i in range(6)]
    instances = tuple(StrategyInstanceConfig(name=f"s{n}", path="strategies.market_maker:MarketMaker",
                                             markets=tuple(dict.fromkeys(ids[i] for i in markets)))
                      for n, markets in enumerate(assignment))
    shared = sum(len(i.markets) for i in instances) != len({m for i in instances for m in i.markets})
    if shared:
        with pytest.raises(ValueError, match="both quote market"):
            BotConfig(strategies=instances)
    else:
        assert traded_markets(BotConfig(strategies=instances)) == tuple(m for i in instances for m in i.markets)


@pytest.mark.parametrize("text, says", [
    (TWO.replace(f'markets = ["{B}"]', f'markets = ["{A}"]'), "strategies 'mm' and 'bands' both quote market"),
    (TWO.replace('name = "bands"', 'name = "mm"'), "two strategies are named 'mm'"),
    (TWO + '[strategy]\npath = "strategies.market_maker:MarketMaker"\n', "[strategy] and [[strategies]] are both set"),
    (TWO.replace(f'markets = ["{B}"]', "markets = []"), "strategy 'bands' names no market"),
    (TWO.replace("max_position", "max_pos"), "unknown field `max_pos`"),
    (TWO.replace('name = "bands"', 'name = "bands"\nsecret = "x"'), "`strategies[1].secret` looks like a secret"),
])
def test_a_bad_list_of_strategies_is_one_line_naming_the_fault(text: str, says: str):
    with pytest.raises(ConfigError) as info:
        decode_bot_config(text)
    assert says in str(info.value) and "\n" not in str(info.value)


def test_bad_params_name_the_strategy():
    c = decode_bot_config(TWO.replace("max_inventory", "max_inventry"))
    with pytest.raises(StrategyError, match="strategy 'bands': .*max_inventry"):
        configured_strategy(c)


def test_config_check_refuses_two_strategies_on_one_market(capsys, tmp_path):
    f = tmp_path / "two.toml"
    f.write_text(TWO.replace(f'markets = ["{B}"]', f'markets = ["{A}"]'))
    code = main(["config", "check", str(f)])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.count("\n") == 1 and "both quote market" in err
    f.write_text(TWO)
    assert main(["config", "check", str(f)]) == 0
    assert "2 strategies (mm, bands)" in capsys.readouterr().out


# -- a backtest of two strategies on one account ------------------------------------------------

def test_two_strategies_backtest_on_one_account_on_the_synthetic_market(tmp_path):
    source = SyntheticMarket(SyntheticConfig(seed=2, duration_s=120.0, markets=2))
    m1, m2 = source.markets
    config = BotConfig(strategies=(
        StrategyInstanceConfig(name="mm", path="strategies.market_maker:MarketMaker", markets=(m1.condition_id,)),
        StrategyInstanceConfig(name="bands", path="strategies.bands:BandsMarketMaker", markets=(m2.condition_id,),
                               risk=StrategyLimits(max_position=20 * UNIT)),
    ))
    out = tmp_path / "results"
    summary = run_backtest(config, [], source=source, out=out)
    fills = pq.read_table(out / "fills.parquet").to_pylist()
    by_market = {m.condition_id: sum(1 for f in fills if f["token_id"] in m.tokens) for m in (m1, m2)}
    assert all(by_market.values()), by_market  # both strategies traded, on one account
    assert summary.fills == len(fills)
    assert {name: f["fills"] for name, f in summary.strategies.items()} == {
        "mm": by_market[m1.condition_id], "bands": by_market[m2.condition_id]}
    assert summary.strategies["bands"]["rejections"] > 0  # its own position limit was met (the account's was not)
    for t in m2.tokens:  # the bands strategy's own position limit held throughout
        assert abs(summary.final_position.get(t, 0)) <= 20 * UNIT


def test_the_example_config_backtests_two_strategies_on_the_sample_recording(tmp_path):
    config = load_bot_config(REPO / "config" / "strategies.example.toml")
    out = tmp_path / "results"
    summary = run_backtest(config, [REPO / "data" / "sample"], out=out)
    fills = pq.read_table(out / "fills.parquet").to_pylist()
    markets = {m.condition_id: m for m in sample_markets()}
    for s in config.strategies:
        tokens = {t for c in s.markets for t in markets[c].tokens}
        assert any(f["token_id"] in tokens for f in fills), s.name  # each strategy traded its markets
    assert summary.fills == len(fills)


def sample_markets() -> list[MarketInfo]:
    from bot.backtest import replay

    return [m.info() for m in replay.markets([REPO / "data" / "sample"])]


def test_a_config_of_several_strategies_is_written_back_as_it_reads():
    """As a sweep writes its best set: the file decodes to the same config."""
    from bot.backtest.sweep import config_toml

    config = load_bot_config(REPO / "config" / "strategies.example.toml")
    assert decode_bot_config(config_toml(config)) == config

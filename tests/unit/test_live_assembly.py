"""The live assembly: what the config file says reaches the objects it configures."""

from __future__ import annotations

from bot.core.markets import MarketInfo
from bot.execution.reconciler import ReconcilerConfig
from bot.live.assembly import make_engine
from bot.live.venue import Venue
from bot.venue.auth import Credentials
from bot.venue.units import UNIT
from strategies.market_maker import MarketMaker

KEY = "0x" + "11" * 32


def test_the_reconciler_section_reaches_the_reconciler_and_our_key_marks_our_trades():
    creds = Credentials("key-1", "c2VjcmV0", "pass")
    venue = Venue(clob_url="http://127.0.0.1:1", data_url="http://127.0.0.1:1", ws_url="ws://127.0.0.1:1",
                  creds=creds, address="0x0000000000000000000000000000000000000001")
    market = MarketInfo("0xc", ("1", "2"), tick=10_000, min_size=5_000_000)
    engine = make_engine(MarketMaker(), [market], venue, private_key=KEY,
                         reconciler_config=ReconcilerConfig(orphan_policy="adopt", max_held_trades=7))
    config = engine.reconciler.config
    assert (config.orphan_policy, config.max_held_trades, config.owner) == ("adopt", 7, "key-1")


FUNDER = "0x6A9296CEb89D12e1F53b2Dd5Df45d3ADB3A814c2"
BUILDER = "0x" + "ab" * 32
EVERY_SECTION = f"""
[venue]
clob_url = "http://127.0.0.1:1"
data_url = "http://127.0.0.1:2"
ws_url = "ws://127.0.0.1:3"
chain_id = 80002
signature_type = 1
funder = "{FUNDER}"
builder_code = "{BUILDER}"
timestamp_unit = "s"
[venue.limits]
scale = 0.5
[venue.timeouts]
connect = 3.0
[strategy]
path = "strategies.market_maker:MarketMaker"
[strategy.params]
half_spread_ticks = 4
[risk]
max_order_size = 123
[router]
max_batch = 7
[reconciler]
orphan_policy = "adopt"
[engine]
recent_fills = 5
[feed]
stale_after_s = 90.0
[sim]
collateral = 7
[shell]
orders_sync_s = 2.0
[shell.stream]
ping_interval_s = 3.0
[journal]
path = "JOURNAL"
"""


def test_every_section_of_the_bot_config_reaches_what_it_configures(tmp_path):
    from bot.execution.journal import Journal
    from bot.execution.router import OrderRequest
    from bot.live.run import engine_of, venue_of
    from bot.live.shell import LiveShell
    from bot.ops.config import decode_bot_config
    from bot.strategy import load_strategy
    from bot.venue.eip712 import Wallet
    from bot.venue.enums import Side

    config = decode_bot_config(EVERY_SECTION.replace("JOURNAL", str(tmp_path / "j.sqlite")))
    wallet = Wallet(KEY)
    venue = venue_of(config, Credentials("key-1", "c2VjcmV0", "pass"), wallet.address)
    assert venue.clob.auth_config.timestamp_unit == "s" and venue.clob.chain_id == 80002
    assert venue.limiter.throttle("clob:all").windows[0].capacity == 2500 and venue.holder == FUNDER  # scale 0.5
    assert venue.clob.transport.config.connect == 3.0
    strategy = load_strategy(config.strategy.path, config.strategy.params)
    assert strategy.params.half_spread_ticks == 4
    market = MarketInfo("0x" + "cd" * 32, ("1", "2"), tick=10_000, min_size=5_000_000)
    engine = engine_of(config, strategy, [market], venue, wallet)
    assert engine.risk.limits.max_order_size == 123 * UNIT
    assert engine.router.config.max_batch == 7
    assert engine.reconciler.config.orphan_policy == "adopt"
    assert engine.config.recent_fills == 5
    assert engine.feed.config.stale_after_s == 90.0
    from bot.sim.venue import SimVenue

    assert SimVenue([market], config.sim).balance().collateral == 7 * UNIT
    signed = engine.router._sign(OrderRequest("1", Side.BUY, 400_000, 10_000_000))
    assert (signed.signature_type, signed.maker, signed.builder) == (1, FUNDER, BUILDER)
    shell = LiveShell(engine, venue, config=config.shell)
    assert shell.config.orders_sync_s == 2.0 and shell.config.stream.ping_interval_s == 3.0
    journal = Journal.from_config(config.journal)
    journal.close()
    assert (tmp_path / "j.sqlite").exists()


def test_the_live_router_spends_orders_at_the_sustained_rate_with_headroom():
    """A flood of quotes takes orders at the venue's sustained rate at 0.9 (24000 / 10 min, the
    window lengthened by the 0.3 s margin: just under 36 a second), a whole POST of 15 at a time,
    not the whole 2400 burst window at once: no 429 when requests arrive bunched, no budget spent
    in the first minutes of a run."""
    venue = Venue(clob_url="http://127.0.0.1:1", data_url="http://127.0.0.1:1", ws_url="ws://127.0.0.1:1",
                  creds=Credentials("key-1", "c2VjcmV0", "pass"), address="0x0000000000000000000000000000000000000001")
    orders = venue.throttles()["place_throttle"]
    t0 = 1_000_000.0
    grants = [orders.take_up_to(15, t0 + k * 0.001) for k in range(10_000)]  # 10 s of a flood
    assert 0.95 * 359.7 <= sum(grants) <= 359.7 + 15 and max(grants) == 15

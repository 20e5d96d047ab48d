"""The live assembly: what the config file says reaches the objects it configures."""

from __future__ import annotations

from bot.core.markets import MarketInfo
from bot.execution.reconciler import ReconcilerConfig
from bot.live.shell import Venue, make_engine
from bot.venue.auth import Credentials
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

"""The synthetic research market: a seeded Brownian mid, takers reaching distance delta with
intensity A * exp(-k * delta), books and prints on the venue's grid, and its use as a backtest's
data source."""

from __future__ import annotations

import math
import random
from pathlib import Path

import msgspec
import pytest

from bot.backtest.runner import BacktestError, run_backtest
from bot.backtest.synthetic import SyntheticConfig, SyntheticMarket, taker_reach
from bot.venue.models.ws import BookEvent, LastTradePriceEvent
from bot.venue.units import UNIT, parse_units
from tests.unit.strategy_kit import config


@pytest.mark.parametrize("a, k, dt, deltas", [
    (1.4, 150.0, 0.5, (-0.003, -0.001, 0.0, 0.005, 0.01, 0.02)),
    (140.0, 1.5, 0.005, (-0.5, -0.2, -0.1, 0.0, 0.65, 2.0)),  # the paper's setting, quotes through the mid
])
def test_through_the_mid_a_quote_at_distance_delta_is_reached_with_probability_min_1_a_dt_exp_minus_k_delta(
        a, k, dt, deltas):
    rng = random.Random(7)
    n = 200_000
    reaches = [taker_reach(rng, a, k, dt, through_mid=True) for _ in range(n)]
    assert min(reaches) >= math.log(a * dt) / k  # the shortest reach: closer than that, every step
    for delta in deltas:
        p = min(1.0, a * dt * math.exp(-k * delta))
        hits = sum(1 for r in reaches if r >= delta)
        if p == 1.0:
            assert hits == n, delta  # not a * dt: a quote far enough through the mid fills every step
        else:
            assert abs(hits / n - p) < 4 * math.sqrt(p * (1 - p) / n), delta


def test_by_default_a_quote_at_distance_delta_is_reached_with_probability_a_dt_exp_minus_k_delta():
    rng = random.Random(7)
    a, k, dt, n = 1.4, 150.0, 0.5, 200_000
    reaches = [taker_reach(rng, a, k, dt) for _ in range(n)]
    for delta in (-0.003, 0.0, 0.005, 0.01, 0.02):  # through the mid: a * dt, as at the mid
        p = a * dt * math.exp(-k * max(delta, 0.0))
        hits = sum(1 for r in reaches if r is not None and r >= delta)
        assert abs(hits / n - p) < 4 * math.sqrt(p * (1 - p) / n), delta


def test_no_takers_reach_anything():
    assert taker_reach(random.Random(1), 0.0, 150.0, 0.5, through_mid=True) is None
    assert taker_reach(random.Random(1), 0.0, 150.0, 0.5) is None


def events(c: SyntheticConfig) -> list:
    return list(SyntheticMarket(c).events())


def test_the_same_seed_gives_the_same_market_and_another_seed_another():
    c = SyntheticConfig(seed=3, duration_s=60.0)
    enc = msgspec.json.encode
    assert [(t, enc(e)) for t, e in events(c)] == [(t, enc(e)) for t, e in events(c)]
    assert [enc(e) for _, e in events(c)] != [enc(e) for _, e in events(msgspec.structs.replace(c, seed=4))]


@pytest.mark.parametrize("tick", [1_000, 10_000, 100_000])
def test_books_and_prints_live_on_the_grid_and_mirror_each_other(tick: int):
    c = SyntheticConfig(seed=1, duration_s=300.0, tick=tick, sigma=0.004, jump_rate=0.01, jump_sd=0.05,
                        half_spread_ticks=1, levels=2)
    m = SyntheticMarket(c).markets[0]
    yes, no = m.tokens
    last = 0
    books: dict[str, tuple[int, int]] = {}
    prints: dict[str, list] = {}
    lo, hi = c.bounds
    for t, ev in events(c):
        assert t >= last
        last = t
        if isinstance(ev, BookEvent):
            bids = [parse_units(lv.price) for lv in ev.bids]
            asks = [parse_units(lv.price) for lv in ev.asks]
            assert all(p % tick == 0 and tick <= p <= UNIT - tick for p in bids + asks)
            assert max(bids) < min(asks)
            books[ev.asset_id] = (max(bids), min(asks))
            if ev.asset_id == no:  # without a gap, NO mirrors YES exactly
                assert books[no] == (UNIT - books[yes][1], UNIT - books[yes][0])
                assert lo - tick <= (books[yes][0] + books[yes][1]) // 2 <= hi + tick
        else:
            assert isinstance(ev, LastTradePriceEvent)
            price = parse_units(ev.price)
            assert price % tick == 0 and tick <= price <= UNIT - tick
            prints.setdefault(ev.transaction_hash, []).append((ev.asset_id, ev.side, price))
    assert prints
    for legs in prints.values():  # each taker shows on both books, the other way round at 1 - p
        (ta, sa, pa), (tb, sb, pb) = legs
        assert (ta, tb) == (yes, no) and sa != sb and pa + pb == UNIT


@pytest.mark.parametrize("through_mid", [False, True])
def test_a_buyer_prints_where_it_reached_floored_and_a_seller_ceiled(through_mid: bool):
    c = SyntheticConfig(seed=9, duration_s=200.0, half_spread_ticks=1, takers_through_mid=through_mid)
    yes = SyntheticMarket(c).markets[0].tokens[0]
    # through the mid a taker may stop short of it (< 0), never more than ln(a dt) / k
    shortest = math.floor(math.log(c.a * c.dt) / c.k * UNIT) if through_mid else 0
    mids = {}
    short = 0
    for t, ev in events(c):
        if isinstance(ev, BookEvent) and ev.asset_id == yes:
            mids[t] = (parse_units(ev.bids[-1].price) + parse_units(ev.asks[-1].price)) / 2
        elif isinstance(ev, LastTradePriceEvent) and ev.asset_id == yes:
            price = parse_units(ev.price)
            # the grid (a tick), the book's mid (half a tick off the model's) and the shortest reach
            assert (price > mids[t] + shortest - 15_000) if ev.side == "BUY" else (price < mids[t] - shortest + 15_000)
            short += (price < mids[t] - 10_000) if ev.side == "BUY" else (price > mids[t] + 10_000)
    assert bool(short) == through_mid  # takers that stopped short of the mid print through it


def test_bad_settings_are_refused():
    for bad in ({"tick": 5_000}, {"a": 3.0, "dt": 0.5}, {"start": 0.99}, {"sigma": float("nan")}, {"k": 0.0},
                {"markets": 0}, {"dt": 0.0}):
        with pytest.raises(ValueError):
            SyntheticConfig(**bad)


def test_it_backtests_the_configured_markets_only(tmp_path: Path):
    source = SyntheticMarket(SyntheticConfig(seed=2, duration_s=120.0, markets=2))
    first = source.markets[0].condition_id
    cfg = config("strategies.market_maker:MarketMaker", {})
    cfg = msgspec.structs.replace(cfg, strategy=msgspec.structs.replace(cfg.strategy, markets=(first,)))
    summary = run_backtest(cfg, [], source=source)
    assert set(summary.final_position) == set(source.markets[0].tokens)
    other = msgspec.structs.replace(cfg, strategy=msgspec.structs.replace(cfg.strategy, markets=("0x" + "ab" * 32,)))
    with pytest.raises(BacktestError, match="none of those configured"):
        run_backtest(other, [], source=source)


def test_the_shipped_settings_file_decodes_to_the_synthetic_config():
    from pathlib import Path

    import tomllib

    import msgspec

    from bot.backtest.synthetic import SyntheticConfig

    path = Path(__file__).resolve().parents[2] / "config" / "synthetic.toml"
    config = msgspec.convert(tomllib.loads(path.read_text()), SyntheticConfig)
    assert config.duration_s == 1800.0 and config.sigma == 0.002


class Interrupted:
    """A source that is interrupted (Ctrl-C) after ``after`` events."""

    def __init__(self, source: SyntheticMarket, after: int) -> None:
        self.markets, self._source, self._after = source.markets, source, after

    def events(self):
        for n, item in enumerate(self._source.events()):
            if n == self._after:
                raise KeyboardInterrupt
            yield item


def test_an_interrupted_backtest_keeps_what_ran_marked_partial_everywhere_it_is_shown(tmp_path: Path, monkeypatch,
                                                                                    capsys):
    from bot.results.read import read_results
    from bot.results.report import build_report

    cfg = config("strategies.market_maker:MarketMaker", {})
    whole = run_backtest(cfg, [], source=SyntheticMarket(SyntheticConfig(seed=2, duration_s=300.0)))
    cut = run_backtest(cfg, [], out=tmp_path / "r",
                       source=Interrupted(SyntheticMarket(SyntheticConfig(seed=2, duration_s=300.0)), 2_000))
    assert cut.partial and not whole.partial
    assert cut.events == 2_000 < whole.events and 0 < cut.seconds < whole.seconds
    assert msgspec.json.decode((tmp_path / "r" / "summary.json").read_bytes())["partial"] is True
    report = build_report(read_results(tmp_path / "r"))
    assert report.title.endswith("(partial)") and report.sections[1].id == "partial"
    # a folder whose run never wrote its summary (killed) is shown as partial too
    (tmp_path / "r" / "summary.json").unlink()
    assert build_report(read_results(tmp_path / "r")).title.endswith("(partial)")
    # the command: the summary, one line saying the results are partial, exit 130
    import bot.backtest.cli as cli
    from bot.cli import main

    monkeypatch.setattr(cli, "synthetic_source", lambda path, seed=None: Interrupted(
        SyntheticMarket(SyntheticConfig(seed=2, duration_s=300.0)), 2_000))
    settings = tmp_path / "s.toml"
    settings.write_text("")
    code = main(["backtest", "--config", "config/bot.example.toml", "--synthetic", str(settings), "--no-progress",
                 "--out", str(tmp_path / "c")])
    assert code == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bot backtest: interrupted after 2,000 events") and "partial" in err[0]
    assert msgspec.json.decode((tmp_path / "c" / "summary.json").read_bytes())["events"] == 2_000

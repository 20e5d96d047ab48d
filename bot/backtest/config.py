"""``[backtest]``: how a backtest runs (the simulated venue it trades on is ``[sim]``)."""

from __future__ import annotations

import msgspec


class BacktestConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``[backtest]``: how a backtest runs (the simulated venue itself is ``[sim]``)."""

    seed: int = 1  # order ids, latency draws and trade ids
    sample_every_s: float = 1.0  # PnL and inventory series cadence, simulated seconds
    cache: bool = True  # build and read a recording's derived binary cache
    feed_delay: bool = True  # the venue sees events at their exchange time (else at receive time)
    dataset_markets: int = 1  # markets taken from a top-of-book file (.parquet, .csv) the config names none of

    def __post_init__(self) -> None:
        if not 0 < self.sample_every_s <= 86_400:
            raise ValueError(f"backtest.sample_every_s must be within (0, 86400], got {self.sample_every_s}")
        if not 1 <= self.dataset_markets <= 10_000:
            raise ValueError(f"backtest.dataset_markets must be within 1..10000, got {self.dataset_markets}")

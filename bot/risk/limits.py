"""Risk limits, as one frozen config.

Invariant: every limit is an integer in micro-units (shares or USDC) or a count; ``None`` means
"no limit" (spelt ``"off"`` in a config file, see ``bot.ops.config.OFF``). A config file writes
sizes in shares and amounts in USDC (``max_order_size = 1000``, ``max_daily_loss = "50.5"``:
``bot.core.quantities``). Unknown keys are refused when the config is decoded.
"""

from __future__ import annotations

import msgspec

from bot.core.quantities import Shares, Usdc


class RiskLimits(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    # pre-trade, per order
    max_order_size: Shares | None = 1_000_000_000  # shares (1000 shares)
    price_band_ticks: int | None = None  # |price - mid| allowed, in ticks
    price_band_bps: int | None = None  # |price - mid| allowed, in basis points of the mid
    # pre-trade, projected as if every resting and new order filled
    max_position: Shares | None = 5_000_000_000  # shares per token
    max_market_notional: Usdc | None = 2_500_000_000  # USDC per market (cost + buys)
    max_event_notional: Usdc | None = 10_000_000_000  # USDC per neg-risk event
    max_net_exposure: Shares | None = 5_000_000_000  # |YES - NO| shares per market
    max_event_loss: Usdc | None = 2_500_000_000  # worst-case loss, USDC, per event/market
    max_open_orders: int | None = 200
    max_orders_per_window: int | None = 50  # new orders sent per sliding window
    rate_window_s: float = 1.0
    # kill switch
    max_daily_loss: Usdc | None = None  # USDC, realized + unrealized - fees since the UTC day began
    # (the day's start is journaled: a restart the same UTC day keeps counting, see DailyPnl)
    max_total_loss: Usdc | None = None  # USDC, since start
    stale_halt_s: float | None = 30.0  # a tracked book stale for longer than this halts
    max_errors: int | None = 20  # errors within error_window_s that halt
    error_window_s: float = 60.0
    max_reject_streak: int | None = 10  # consecutive venue rejects that halt
    disconnect_halt_s: float | None = 5.0  # venue connectivity lost for longer than this halts

    def __post_init__(self) -> None:
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"risk limit {name} must not be negative")
        if self.rate_window_s <= 0 or self.error_window_s <= 0:
            raise ValueError("risk windows must be positive")


class StrategyLimits(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One strategy's own pre-trade limits when several share an account (``[strategies.risk]``).

    Each is checked as ``RiskLimits``' field of the same name, on that strategy's markets, resting
    orders and order rate only; ``None`` (the default, ``"off"``) leaves only the account's limit
    (``[risk]``), which every order passes as well. The kill switch is the account's alone.
    """

    max_order_size: Shares | None = None
    max_position: Shares | None = None
    max_market_notional: Usdc | None = None
    max_event_notional: Usdc | None = None
    max_net_exposure: Shares | None = None
    max_event_loss: Usdc | None = None
    max_open_orders: int | None = None
    max_orders_per_window: int | None = None
    rate_window_s: float = 1.0

    def __post_init__(self) -> None:
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"risk limit {name} must not be negative")
        if self.rate_window_s <= 0:
            raise ValueError("risk windows must be positive")

    def as_limits(self) -> RiskLimits:
        """These limits as the ``RiskLimits`` the pre-trade checks read; every other limit off."""
        off = {name: None for name in RiskLimits.__struct_fields__
               if name not in ("rate_window_s", "error_window_s")}
        return RiskLimits(**{**off, **{name: getattr(self, name) for name in self.__struct_fields__}})

    @property
    def any(self) -> bool:
        """True when at least one limit is set."""
        return any(getattr(self, n) is not None for n in self.__struct_fields__ if n != "rate_window_s")

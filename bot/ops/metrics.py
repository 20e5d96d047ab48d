"""Prometheus metrics for the bot: one registry per engine, served on 127.0.0.1:9464 by default.

Invariant: labels are bounded (tokens, routes, reasons, states) and never carry secrets.
"""

from __future__ import annotations

import errno

from typing import Any, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from bot.venue.units import MAX_BATCH

# fine from 50 µs to 1 s (roughly 1-2-5 steps): in-process figures sit at the bottom, wire ones higher
LATENCY_BUCKETS = (50e-6, 100e-6, 150e-6, 250e-6, 500e-6, 1e-3, 2e-3, 3e-3, 5e-3, 7.5e-3, 0.01, 0.015, 0.02,
                   0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0)
HTTP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """Every metric the engine exports, registered on its own registry."""

    def __init__(self, registry: CollectorRegistry | None = None, mode: str = "live") -> None:
        r = self.registry = registry or CollectorRegistry()
        self.mode = mode
        # the run's mode as a label (join on it: ``... * on(instance) group_left(mode) bot_mode``)
        Gauge("bot_mode", "1, labelled with the run's mode: live, paper or backtest", ["mode"],
              registry=r).labels(mode).set(1)
        self.orders_submitted = Counter("bot_orders_submitted", "Orders sent to the venue", ["token"], registry=r)
        self.orders_accepted = Counter("bot_orders_accepted", "Orders accepted by the venue", ["token"], registry=r)
        self.orders_rejected = Counter("bot_orders_rejected", "Orders rejected (venue or risk)", ["reason"], registry=r)
        self.cancels = Counter("bot_cancels", "Cancel requests by outcome", ["outcome"], registry=r)
        self.fills = Counter("bot_fills", "Fills seen (first sight)", ["token", "side"], registry=r)
        self.fill_volume = Counter("bot_fill_volume_shares", "Filled shares", ["token", "side"], registry=r)
        self.fills_reversed = Counter("bot_fills_reversed", "Fills reversed after a FAILED trade", ["token"], registry=r)
        self.position = Gauge("bot_position_shares", "Position per token", ["token"], registry=r)
        self.pnl_realized = Gauge("bot_pnl_realized_usdc", "Realized PnL per token", ["token"], registry=r)
        self.pnl_unrealized = Gauge("bot_pnl_unrealized_usdc", "Unrealized PnL per token", ["token"], registry=r)
        self.open_orders = Gauge("bot_open_orders", "Own open orders", ["token"], registry=r)
        self.quote_age = Gauge("bot_quote_age_seconds", "Age of the oldest live quote", ["token"], registry=r)
        self.tick_to_order = Histogram(
            "bot_tick_to_order_seconds", "Book update off the socket to the order request written (live), or to "
            "the order batch ready (paper, backtest)", buckets=LATENCY_BUCKETS, registry=r
        )
        self.live_stage = Histogram(
            "bot_live_stage_seconds", "Where the live loop's time goes, by stage: wait (a market frame off the "
            "socket to its turn in the engine), core (the engine on a turn's market frames: books, strategy, risk, "
            "router, signing), sync (a turn's journal sync before its requests leave), send (an order write "
            "started to its request written: HTTP client and connection)", ["stage"], buckets=LATENCY_BUCKETS,
            registry=r)
        self.orders_per_post = Histogram(
            "bot_orders_per_post", "Orders in each POST /orders sent (at most the venue's batch of 15)",
            buckets=tuple(range(1, MAX_BATCH + 1)), registry=r)
        self.requotes_shed = Counter(
            "bot_requotes_shed", "Requotes not built: the token's newest book update was older than "
            "[engine] max_book_age_s when its turn came", registry=r)
        self.http_latency = Histogram(
            "bot_http_request_seconds", "HTTP latency", ["route", "status"], buckets=HTTP_BUCKETS, registry=r
        )
        self.throttle_wait = Counter("bot_throttle_wait_seconds", "Time spent waiting on throttles", ["route"], registry=r)
        self.throttle_tokens = Gauge("bot_throttle_tokens", "Tokens available", ["throttle"], registry=r)
        self.stream_state = Gauge("bot_stream_connected", "1 when the stream shard is connected", ["stream", "shard"], registry=r)
        self.reconnects = Counter("bot_stream_reconnects", "Stream reconnects", ["stream"], registry=r)
        self.message_lag = Histogram("bot_stream_message_lag_seconds", "Venue timestamp to receipt", ["stream"], buckets=HTTP_BUCKETS, registry=r)
        self.decode_errors = Counter("bot_stream_decode_errors", "Frames that failed to decode", ["stream"], registry=r)
        self.book_staleness = Gauge("bot_book_staleness_seconds", "Seconds since the book last updated", ["token"], registry=r)
        self.book_stale = Gauge("bot_book_stale", "1 when the book is stale", ["token"], registry=r)
        self.trading_state = Gauge("bot_trading_state", "0 ACTIVE, 1 REDUCING, 2 HALTED", registry=r)
        self.tasks = Gauge("bot_async_tasks", "Tasks alive in the bot's event loop", registry=r)
        self.risk_rejections = Counter("bot_risk_rejections", "Intents rejected by risk", ["reason"], registry=r)
        self.heartbeats = Counter("bot_heartbeats", "Heartbeats by outcome", ["outcome"], registry=r)
        self.errors = Counter("bot_errors", "Errors by kind", ["kind"], registry=r)
        self.journal_repairs = Counter(
            "bot_journal_repairs", "Journaled fills set right from the venue's trades at restart, by field "
            "(order_id, token_id, side, price, size, fee, is_maker), and orders the journal lost rebuilt (order)",
            ["field"], registry=r)
        self.orphans = Counter(
            "bot_orphan_orders", "Orders the venue listed open that the bot did not count as working "
            "(unknown: never heard of; closed: closed here before the listing)", ["kind"], registry=r,
        )
        self.trades_unbooked = Counter(
            "bot_trades_unbooked", "Trade records the bot could not book (each counted once, kept and "
            "read again; the tokens they may move stop quoting until they are booked)", registry=r,
        )
        self.blocked_tokens = Gauge("bot_tokens_blocked_unbooked", "Tokens not quoted while a trade record that may "
                                    "hold a fill of ours there cannot be booked", registry=r)
        # deploy/rules read these: limits beside the figures they bound, and the shared throttle's store
        self.risk_limit = Gauge("bot_risk_limit", "A configured risk limit (shares or USDC)", ["limit"], registry=r)
        self.daily_pnl = Gauge("bot_daily_pnl_usdc", "PnL since the UTC day began", registry=r)
        self.shared_throttle_up = Gauge("bot_shared_throttle_up", "0 while the shared throttle's Redis cannot be "
                                        "reached (only cancels go out)", registry=r)
        self.drift = Gauge("bot_position_drift_shares", "Local minus venue position", ["token"], registry=r)
        self._watched: list[Any] = []  # strategies whose estimates are exported (``watch_strategy``)
        r.register(_Estimates(self._watched))

    def watch_strategy(self, strategy: Any) -> None:
        """Export what ``strategy`` estimates (``Strategy.estimates()``) as
        ``bot_strategy_estimate{strategy, token, name}``, read at each scrape (once per strategy)."""
        if all(s is not strategy for s in self._watched):
            self._watched.append(strategy)

    def serve(self, host: str = "127.0.0.1", port: int = 9464):
        """Start the scrape endpoint in a daemon thread; returns (server, thread).

        A port that cannot be opened raises ``MetricsPortError`` naming the address."""
        try:
            return start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            raise MetricsPortError(host, port, exc) from None


class _Estimates:
    """A collector reading each watched strategy's latest published estimates at scrape time (the
    strategy replaces, never mutates, what it published: a scrape reads one consistent snapshot).
    A value that is not a number is skipped; a failing strategy exports nothing, never an error."""

    def __init__(self, strategies: list[Any]) -> None:
        self._strategies = strategies

    def collect(self) -> Iterator[GaugeMetricFamily]:
        g = GaugeMetricFamily("bot_strategy_estimate", "What the strategy estimates as it runs "
                              "(volatility, takers' intensity, reward earned), by token and name",
                              labels=["strategy", "token", "name"])
        for label, strategy in _named(self._strategies):
            try:
                found = strategy.estimates()
            except Exception:  # noqa: BLE001 - a scrape must not fail with the strategy
                continue
            for token, values in list(found.items()):
                for name, value in list(values.items()):
                    if isinstance(value, (int, float)) and not isinstance(value, bool):
                        g.add_metric([label, str(token)[-8:], str(name)], float(value))
        yield g
        yield from _tallies(self._strategies)

    def describe(self) -> list[Any]:
        return []


def _named(strategies: list[Any]) -> Iterator[tuple[str, Any]]:
    """Each watched strategy with its name; a set of several strategies (``members``), each of them."""
    for strategy in list(strategies):
        members = getattr(strategy, "members", None)
        if members is not None:
            for m in list(members):
                yield m.name, m.strategy
        else:
            yield str(getattr(strategy, "name", type(strategy).__name__)), strategy


def _tallies(strategies: list[Any]) -> Iterator[Any]:
    """Per strategy of a set (``StrategySet.tallies``): the tokens it quotes (``bot_strategy_token``,
    1 each, to join the per-token series with its name), its fills, filled shares, realized PnL
    and the intents its own limits refused, by reason."""
    token = GaugeMetricFamily("bot_strategy_token", "1 for each token a strategy quotes (several strategies on "
                              "one account)", labels=["strategy", "token"])
    fills = CounterMetricFamily("bot_strategy_fills", "Fills of a strategy's tokens", labels=["strategy"])
    volume = CounterMetricFamily("bot_strategy_fill_volume_shares", "Filled shares of a strategy's tokens",
                                 labels=["strategy"])
    pnl = GaugeMetricFamily("bot_strategy_pnl_realized_usdc", "Realized PnL of a strategy's tokens",
                            labels=["strategy"])
    rejects = CounterMetricFamily("bot_strategy_risk_rejections", "Intents refused by a strategy's own limits "
                                  "(or on a token it does not quote), by reason", labels=["strategy", "reason"])
    for strategy in list(strategies):
        for t in getattr(strategy, "tallies", ()):
            for tok in t.tokens:
                token.add_metric([t.name, tok[-8:]], 1.0)
            fills.add_metric([t.name], float(t.fills))
            volume.add_metric([t.name], t.volume / 1e6)
            pnl.add_metric([t.name], t.realized_pnl / 1e6)
            for reason, n in t.rejections:
                rejects.add_metric([t.name, reason], float(n))
    yield from (token, fills, volume, pnl, rejects)


class MetricsPortError(OSError):
    """The metrics endpoint could not listen; the message names the address and what to change."""

    def __init__(self, host: str, port: int, cause: OSError) -> None:
        why = "is in use" if cause.errno == errno.EADDRINUSE else f"cannot be opened ({cause.strerror or cause})"
        super().__init__(f"metrics port {port} on {host} {why}: set [metrics] port to another one "
                         "(0 = any free port) or enabled = false")

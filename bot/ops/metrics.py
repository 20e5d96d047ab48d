"""Prometheus metrics for the bot: one registry per engine, served on 127.0.0.1:9464 by default.

Invariant: labels are bounded (tokens, routes, reasons, states) and never carry secrets.
"""

from __future__ import annotations

import errno

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

LATENCY_BUCKETS = (50e-6, 100e-6, 150e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025, 0.1, 0.5, 1.0)
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
            "bot_tick_to_order_seconds", "Book update received to request sent", buckets=LATENCY_BUCKETS, registry=r
        )
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
        self.orphans = Counter(
            "bot_orphan_orders", "Orders the venue listed open that the bot did not count as working "
            "(unknown: never heard of; closed: closed here before the listing)", ["kind"], registry=r,
        )
        self.drift = Gauge("bot_position_drift_shares", "Local minus venue position", ["token"], registry=r)

    def serve(self, host: str = "127.0.0.1", port: int = 9464):
        """Start the scrape endpoint in a daemon thread; returns (server, thread).

        A port that cannot be opened raises ``MetricsPortError`` naming the address."""
        try:
            return start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            raise MetricsPortError(host, port, exc) from None


class MetricsPortError(OSError):
    """The metrics endpoint could not listen; the message names the address and what to change."""

    def __init__(self, host: str, port: int, cause: OSError) -> None:
        why = "is in use" if cause.errno == errno.EADDRINUSE else f"cannot be opened ({cause.strerror or cause})"
        super().__init__(f"metrics port {port} on {host} {why}: set [metrics] port to another one "
                         "(0 = any free port) or enabled = false")

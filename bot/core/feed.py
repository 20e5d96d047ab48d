"""Market-data freshness per token, and when to fall back to REST book polls.

Invariants:

- A token's data is *fresh* when its stream is up, a snapshot arrived since the stream (re)connected,
  and the last update is at most ``stale_after_s`` old; or when a REST snapshot is at most
  ``rest_fresh_s`` old. Anything else is *stale*, and a stale book is never traded on.
- REST polls go to tokens whose stream data is not fresh, most out-of-date first, in batches of at
  most ``batch_size`` tokens per ``POST /books``, and never faster than the poll budget (a token
  bucket holding a share of the route limit, 80 requests / 10 s) nor more often than once per
  ``poll_interval_s`` per token.
- A REST snapshot is applied as a new epoch of the book, and only while the token's stream data is
  still not fresh (a stream snapshot that arrived meanwhile is newer and wins).

Everything here is a pure state machine driven by explicit ``now`` values (monotonic seconds), so
it is deterministic in tests and backtests; the poller that calls the venue lives in the venue
layer.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from bot.core.book import Book, BookError, Books


class FeedConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Freshness and REST-fallback settings (seconds unless stated)."""

    stale_after_s: float = 60.0  # a live token with no update for this long is stale
    rest_fresh_s: float = 10.0  # a REST snapshot counts as fresh for this long
    poll_interval_s: float = 5.0  # at most one REST poll per token per interval
    batch_size: int = 50  # tokens per POST /books request
    route_limit: int = 80  # POST /books requests allowed per route window (venue limit)
    route_window_s: float = 10.0
    budget_share: float = 0.5  # share of the route limit the fallback poller may spend

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if not 0.0 < self.budget_share <= 1.0:
            raise ValueError("budget_share must be in (0, 1]")
        if self.route_limit < 1 or self.route_window_s <= 0:
            raise ValueError("route_limit and route_window_s must be positive")

    @property
    def poll_capacity(self) -> int:
        """Requests the poller may burst: its share of the route limit (at least one)."""
        return max(1, int(self.route_limit * self.budget_share))

    @property
    def poll_rate(self) -> float:
        """Requests per second the poller may sustain."""
        return self.poll_capacity / self.route_window_s


class PollBudget:
    """A token bucket of ``capacity`` requests refilled at ``rate`` per second (starts full)."""

    __slots__ = ("capacity", "rate", "tokens", "at")

    def __init__(self, capacity: int, rate: float, now: float = 0.0) -> None:
        self.capacity = capacity
        self.rate = rate
        self.tokens = float(capacity)
        self.at = now

    def available(self, now: float) -> int:
        if now > self.at:
            self.tokens = min(float(self.capacity), self.tokens + (now - self.at) * self.rate)
            self.at = now
        return int(self.tokens)

    def spend(self, n: int, now: float) -> None:
        self.available(now)
        self.tokens -= n


class TokenFeed:
    """What the feed knows of one token's data (times are monotonic seconds; None = never)."""

    __slots__ = ("up", "synced", "last_ws", "last_rest", "last_poll", "stale")

    def __init__(self) -> None:
        self.up = False  # its stream connection is up
        self.synced = False  # a stream snapshot arrived since the connection came up
        self.last_ws: float | None = None
        self.last_rest: float | None = None
        self.last_poll: float | None = None
        self.stale = True  # the last verdict published to the book


def ws_fresh(tf: TokenFeed, now: float, cfg: FeedConfig) -> bool:
    return (tf.up and tf.synced and tf.last_ws is not None
            and now - tf.last_ws <= cfg.stale_after_s)


def rest_fresh(tf: TokenFeed, now: float, cfg: FeedConfig) -> bool:
    return tf.last_rest is not None and now - tf.last_rest <= cfg.rest_fresh_s


def is_stale(tf: TokenFeed, now: float, cfg: FeedConfig) -> bool:
    """Neither the stream nor a recent REST snapshot vouches for this token's book."""
    return not (ws_fresh(tf, now, cfg) or rest_fresh(tf, now, cfg))


def wants_poll(tf: TokenFeed, now: float, cfg: FeedConfig) -> bool:
    """The stream does not vouch for the token and it was not polled within the interval."""
    if ws_fresh(tf, now, cfg):
        return False
    return tf.last_poll is None or now - tf.last_poll >= cfg.poll_interval_s


def _poll_order(tf: TokenFeed) -> tuple[float, float]:
    """Sort key: least recently polled first (never-polled first), then the most out-of-date,
    so that no token starves while the budget is short."""
    never = float("-inf")
    last_data = max(tf.last_ws if tf.last_ws is not None else never,
                    tf.last_rest if tf.last_rest is not None else never)
    return (tf.last_poll if tf.last_poll is not None else never, last_data)


class Feed:
    """Per-token freshness and the REST fallback decisions (see the module invariants)."""

    __slots__ = ("config", "tokens", "budget", "rest_applied", "rest_dropped", "rest_errors",
                 "polls")

    def __init__(self, config: FeedConfig | None = None, token_ids: Iterable[str] = (),
                 now: float = 0.0) -> None:
        self.config = config or FeedConfig()
        self.tokens: dict[str, TokenFeed] = {}
        self.budget = PollBudget(self.config.poll_capacity, self.config.poll_rate, now)
        self.rest_applied = 0
        self.rest_dropped = 0  # REST snapshots skipped because the stream was fresher
        self.rest_errors = 0
        self.polls = 0  # requests handed out
        for t in token_ids:
            self.track(t)

    # -- inputs ---------------------------------------------------------------------------

    def track(self, token_id: str) -> TokenFeed:
        tf = self.tokens.get(token_id)
        if tf is None:
            tf = self.tokens[token_id] = TokenFeed()
        return tf

    def untrack(self, token_id: str) -> None:
        self.tokens.pop(token_id, None)

    def on_stream_up(self, token_ids: Iterable[str], now: float) -> None:
        """A connection carrying these tokens (re)connected: data counts once a snapshot arrives."""
        for t in token_ids:
            tf = self.track(t)
            tf.up = True
            tf.synced = False

    def on_stream_down(self, token_ids: Iterable[str], now: float) -> None:
        """A connection carrying these tokens dropped or went silent."""
        for t in token_ids:
            tf = self.tokens.get(t)
            if tf is not None:
                tf.up = False
                tf.synced = False

    def on_snapshot(self, token_id: str, now: float) -> None:
        tf = self.tokens.get(token_id)
        if tf is not None:
            tf.synced = True
            tf.last_ws = now

    def on_update(self, token_id: str, now: float) -> None:
        """A delta (level change, trade print) arrived on the stream."""
        tf = self.tokens.get(token_id)
        if tf is not None:
            tf.last_ws = now

    def pause(self, start: float, end: float) -> None:
        """The source itself was silent from ``start`` to ``end`` (a polled source whose collector
        stopped, not a book that stopped updating): data last updated at or before ``start`` ages as
        if that time had not passed, so the pause alone makes no book stale."""
        if end <= start:
            return
        for tf in self.tokens.values():
            if tf.last_ws is not None and tf.last_ws <= start:
                tf.last_ws += end - start

    # -- decisions ------------------------------------------------------------------------

    def is_stale(self, token_id: str, now: float) -> bool:
        tf = self.tokens.get(token_id)
        return True if tf is None else is_stale(tf, now, self.config)

    def stale_tokens(self, now: float) -> list[str]:
        cfg = self.config
        return [t for t, tf in self.tokens.items() if is_stale(tf, now, cfg)]

    def due_polls(self, now: float) -> list[list[str]]:
        """Batches of tokens to fetch with ``POST /books`` now; spends the budget and records
        the poll time of every token handed out (call once per poller tick)."""
        cfg = self.config
        due = [(t, tf) for t, tf in self.tokens.items() if wants_poll(tf, now, cfg)]
        if not due:
            return []
        n_req = min(self.budget.available(now), -(-len(due) // cfg.batch_size))
        if n_req <= 0:
            return []
        due.sort(key=lambda item: _poll_order(item[1]))
        take = due[: n_req * cfg.batch_size]
        for _, tf in take:
            tf.last_poll = now
        batches = [[t for t, _ in take[i:i + cfg.batch_size]]
                   for i in range(0, len(take), cfg.batch_size)]
        self.budget.spend(len(batches), now)
        self.polls += len(batches)
        return batches

    def apply_rest_books(self, books: Books, snapshots: Iterable[Any], now: float) -> list[Book]:
        """Apply REST snapshots (objects shaped like the venue book) as new epochs of ``books``.
        A snapshot for a token the stream already vouches for is dropped; a malformed one is
        counted and skipped. Returns the books updated."""
        cfg = self.config
        out: list[Book] = []
        for snap in snapshots:
            token = snap.asset_id
            tf = self.tokens.get(token)
            book = books.get(token)
            if tf is None or book is None or ws_fresh(tf, now, cfg):
                self.rest_dropped += 1
                continue
            book.mark_stale()  # a poll is a continuity break: always a new epoch
            try:
                books.apply_book(snap)
            except BookError:
                self.rest_errors += 1
                continue
            tf.last_rest = now
            tf.stale = False
            self.rest_applied += 1
            out.append(book)
        return out

    def publish(self, books: Books, now: float) -> tuple[list[str], list[str]]:
        """Copy the freshness verdicts onto the books: a book turning stale is marked for resync
        (its next snapshot starts a new epoch). Returns ``(became_stale, became_fresh)``."""
        cfg = self.config
        went_stale: list[str] = []
        went_fresh: list[str] = []
        for t, tf in self.tokens.items():
            stale = is_stale(tf, now, cfg)
            if stale == tf.stale:
                continue
            tf.stale = stale
            book = books.get(t)
            if stale:
                went_stale.append(t)
                if book is not None:
                    book.mark_stale()
            else:
                went_fresh.append(t)
                if book is not None and not book.resync:
                    book.stale = False
        return went_stale, went_fresh

"""The ``bot`` command: market lookup, books, offline order signing, keys, operator commands,
config checks, recording the market stream, and the entry points of the local exchange, live
trading and the demo.

Invariant: every failure ends as one line on stderr: ``error: ...`` with exit code 2 for bad
input from the user or the venue (config, flags, venue errors, unreachable hosts), exit code 1
for an unexpected internal error; a traceback shows only with ``--debug``. No secret value is
printed unless the user asks for it with ``--show-secrets`` or ``--export``, and none ever
reaches an error line. ``bot order build`` never sends anything.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import re
import shlex
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from pathlib import Path
from typing import Any, NoReturn

import anyio
import httpx
import msgspec

from bot.ops.arguments import OneLineParser, decimal, integer, number, run_seconds, with_range
from bot.venue.orders import MAX_SALT
from bot.venue.units import MICRO
from bot.ops.config import (DEFAULT_CONFIG_PATH, BotConfig, ConfigError, has_strategy, load_bot_config,
                            resolve_bot_config, summarize)
from bot.ops.logging import configure as configure_logging
from bot.ops.logging import redact, register_secret

PROG = "bot"
EXIT_OK, EXIT_INTERNAL, EXIT_USAGE = 0, 1, 2
ORDER_PATH = "/order"


class CommandError(ValueError):
    """A command that cannot proceed for a reason the user can fix (one line)."""


# --------------------------------------------------------------------------------------------
# Parser


_Parser = OneLineParser

# Declared ranges of the numbers typed on the command line (bot.ops.arguments). Sizes and amounts
# stop at a billion: far beyond any market's depth, far below where exact decimal arithmetic runs
# out of digits; prices and ticks lie strictly between 0 and 1, as every price of the venue does.
PRICE = decimal(gt=0, lt=1)
QUANTITY = decimal(gt=0, le=10**9)
MIN_SIZE = decimal(ge=0, le=10**9)
SALT = integer(0, MAX_SALT)
EPOCH_MS = integer(10**12, 10**13 - 1)  # epoch milliseconds: 13 digits (years 2001..2286)
EPOCH_S = integer(0, 10**10 - 1)  # unix seconds, the same horizon
AHEAD_S = integer(0, 10**9)  # +SECONDS from now
NONCE = integer(0, 2**256 - 1)  # uint256 of the ClobAuth message
KDF_WORK = integer(2, 10_000_000)  # scrypt n or pbkdf2 rounds of a new keystore (bot.ops.keystore bounds)
DURATION = run_seconds()


def _expiration(text: str) -> str:
    """Unix seconds, or ``+N`` seconds from now (resolved when the order is built)."""
    ahead = text.strip().startswith("+")
    rng = AHEAD_S if ahead else EPOCH_S
    try:
        rng.parse(text.strip()[1:] if ahead else text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"got {text[:40]!r}, expected unix seconds ({EPOCH_S.describe()}) or +SECONDS ({AHEAD_S.describe()})"
        ) from None
    return text.strip()


def build_parser() -> argparse.ArgumentParser:
    """The full ``bot`` argument parser."""
    parser = _Parser(prog=PROG, description="Prediction-market trading bot.")
    parser.add_argument("--config", dest="config_file", metavar="FILE",
                        help=f"bot config (default: {DEFAULT_CONFIG_PATH} if present, else built-in defaults)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    parser.add_argument("--log-level", choices=["debug", "info", "warning", "error", "critical"],
                        help="log level (logs go to stderr)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("markets", help="find markets in the catalog")
    for flag in ("active", "closed", "archived"):
        p.add_argument(f"--{flag}", action=argparse.BooleanOptionalAction, default=None,
                       help=f"only markets with {flag}=true (--no-{flag}: false)")
    p.add_argument("--tag", help="tag slug")
    p.add_argument("--tag-id", type=(r := integer(0, 2**63 - 1)), help=with_range("tag id", r))
    p.add_argument("--event-slug", help="event slug")
    p.add_argument("--slug", help="market slug")
    p.add_argument("--condition-id", help="condition id")
    p.add_argument("--order", help="sort column")
    p.add_argument("--ascending", action=argparse.BooleanOptionalAction, default=None, help="sort ascending")
    p.add_argument("--limit", type=(r := integer(1, 100)), help=with_range("markets per request (venue default 20)", r))
    p.add_argument("--offset", type=(r := integer(0, 10**9)), help=with_range("skip this many markets", r))
    p.add_argument("--creator", help="creator wallet address or site identifier")
    p.add_argument("--json", action="store_true", help="print a JSON array instead of a table")
    p.add_argument("--ids-only", action="store_true",
                   help="print each market's condition id, then its token ids, one per line")
    p.set_defaults(handler=cmd_markets)

    p = sub.add_parser("book", help="print a token's order book")
    p.add_argument("token_id", metavar="TOKEN_ID")
    p.add_argument("--depth", type=(r := integer(1, 10_000)), default=5,
                   help=with_range("levels per side (default 5)", r))
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_book)

    p = sub.add_parser("order", help="orders (offline)")
    order_sub = p.add_subparsers(dest="order_command", metavar="ACTION", parser_class=_Parser)
    order_sub.required = True
    b = order_sub.add_parser("build", help="build and sign an order; print its POST /order request (never sent)")
    b.add_argument("--token", required=True, help="outcome token id")
    b.add_argument("--side", required=True, type=str.upper, choices=["BUY", "SELL"])
    b.add_argument("--price", required=True, type=PRICE.text(),
                   help=with_range("limit price (GTC/GTD) or worst acceptable price (FOK/FAK)", PRICE))
    b.add_argument("--size", type=QUANTITY.text(), help=with_range("shares (GTC/GTD)", QUANTITY))
    b.add_argument("--amount", type=QUANTITY.text(),
                   help=with_range("FOK/FAK: USDC to spend (BUY) or shares to sell (SELL)", QUANTITY))
    b.add_argument("--type", dest="order_type", type=str.upper, choices=["GTC", "GTD", "FOK", "FAK"], default=None,
                   help="order type (default GTC, or FOK with --amount)")
    b.add_argument("--tick", type=PRICE.text(),
                   help="market tick size: 0.1, 0.01, 0.001 or 0.0001 (default 0.01, or fetched)")
    b.add_argument("--neg-risk", action=argparse.BooleanOptionalAction, default=None,
                   help="the market is neg-risk (default no, or fetched)")
    b.add_argument("--fetch", action="store_true", help="fetch the tick and neg-risk flag not given from the CLOB")
    b.add_argument("--min-size", type=MIN_SIZE.text(),
                   help=with_range("refuse sizes below the market minimum", MIN_SIZE))
    b.add_argument("--expiration", type=_expiration, help="GTD expiry: unix seconds or +SECONDS from now")
    b.add_argument("--post-only", action="store_true", help="post-only (GTC/GTD)")
    b.add_argument("--defer-exec", action="store_true", help="set deferExec")
    b.add_argument("--condition-id", help="the market's condition id (sent as conditionId, not signed)")
    b.add_argument("--owner", help="owner (API key) in the body (default: the configured API key)")
    b.add_argument("--salt", type=SALT, help=with_range("salt (default random)", SALT))
    b.add_argument("--timestamp-ms", type=EPOCH_MS,
                   help=with_range("order timestamp, epoch ms (default now)", EPOCH_MS))
    b.add_argument("--body-only", action="store_true",
                   help="print only the body (needs no API secret or passphrase; the owner is --owner "
                        "or the configured API key)")
    b.add_argument("--show-secrets", action="store_true", help="show the passphrase header instead of ***")
    b.add_argument("--json", action="store_true", help="print JSON {order_id, method, url, headers, body}")
    b.set_defaults(handler=cmd_order_build)

    p = sub.add_parser("keys", help="API credentials")
    keys_sub = p.add_subparsers(dest="keys_command", metavar="ACTION", parser_class=_Parser)
    keys_sub.required = True
    k = keys_sub.add_parser("derive", help="create or derive the API credentials of the configured key (L1)")
    k.add_argument("--nonce", type=NONCE, default=0, help=with_range("key nonce (default 0)", NONCE))
    shown = k.add_mutually_exclusive_group()
    shown.add_argument("--show-secrets", action="store_true", help="print secret and passphrase")
    shown.add_argument("--export", action="store_true",
                       help="print `export BOT_API_...=` lines (with the secret values) for a shell")
    k.set_defaults(handler=cmd_keys_derive)
    k = keys_sub.add_parser("new", help="make a new private key in an encrypted keystore file (mode 600)")
    k.add_argument("file", metavar="FILE", help="keystore file to write (never overwritten)")
    k.add_argument("--kdf", choices=("scrypt", "pbkdf2"), default="scrypt", help="key derivation (default scrypt)")
    k.add_argument("--work", type=KDF_WORK, metavar="N",
                   help=with_range("scrypt n (a power of two) or pbkdf2 rounds (default the standard: "
                                   "262144 or 1000000)", KDF_WORK))
    k.set_defaults(handler=cmd_keys_new)

    p = sub.add_parser("new", help="start something new from a template that works as written")
    new_sub = p.add_subparsers(dest="new_command", metavar="WHAT", parser_class=_Parser)
    new_sub.required = True
    n = new_sub.add_parser("strategy", help="write NAME.py (a strategy), test_NAME.py (its test) and NAME.toml "
                                            "(its config)")
    n.add_argument("name", metavar="NAME", help="the strategy's module name, e.g. join_the_touch")
    n.add_argument("--dir", default=".", help="the folder to write into (default: the working directory)")
    n.set_defaults(handler=cmd_new_strategy)

    p = sub.add_parser("config", help="config files")
    config_sub = p.add_subparsers(dest="config_command", metavar="ACTION", parser_class=_Parser)
    config_sub.required = True
    c = config_sub.add_parser("check", help="validate a bot config file")
    c.add_argument("file", metavar="FILE")
    c.add_argument("--secrets", action="store_true", help="also load the secrets it names (values never shown)")
    c.set_defaults(handler=cmd_config_check)

    p = sub.add_parser("exchange", help="run the local exchange", formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_exchange_arguments(p)
    p.set_defaults(handler=cmd_exchange)

    p = sub.add_parser("cancel-all", help="cancel all open orders (or those of one market/token)")
    p.add_argument("--market", help="only this condition id")
    p.add_argument("--token", help="only this token id")
    p.add_argument("--json", action="store_true", help="print the venue's cancel result as JSON")
    p.set_defaults(handler=cmd_cancel_all)

    p = sub.add_parser("orders", help="list open orders")
    p.add_argument("--market", help="only this condition id")
    p.add_argument("--token", help="only this token id")
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.set_defaults(handler=cmd_orders)

    p = sub.add_parser("positions", help="list the wallet's positions")
    p.add_argument("--user", help="wallet address (default: the funder, else the key's address)")
    p.add_argument("--market", action="append", help="only this condition id (repeat)")
    p.add_argument("--limit", type=(r := integer(0, 500)), help=with_range("at most this many (venue default 100)", r))
    p.add_argument("--redeemable", action="store_true", help="only redeemable positions")
    p.add_argument("--mergeable", action="store_true", help="only mergeable positions")
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.set_defaults(handler=cmd_positions)

    p = sub.add_parser("run", help="run the configured strategy live")
    p.add_argument("--config", dest="config_file", metavar="FILE", default=argparse.SUPPRESS,
                   help="bot config (same as the global --config)")
    p.add_argument("--duration", type=DURATION,
                   help=with_range("stop after this many seconds (default: until interrupted)", DURATION))
    p.add_argument("--paper", action="store_true",
                   help="paper trading: live books, orders filled by the simulated venue ([sim]); never sends "
                        "an order, needs no key")
    p.set_defaults(handler=cmd_run)

    p = sub.add_parser("backtest", help="backtest the configured strategy on recorded books")
    p.add_argument("--config", dest="config_file", metavar="FILE", default=argparse.SUPPRESS,
                   help="bot config (same as the global --config)")
    data = p.add_mutually_exclusive_group(required=True)
    data.add_argument("--data", nargs="+", metavar="PATH",
                      help="recordings: files, or folders holding them (merged by receive time)")
    data.add_argument("--synthetic", nargs="?", const="", metavar="FILE",
                      help="the seeded synthetic research market instead (its settings: a TOML file of "
                           "bot.backtest.synthetic.SyntheticConfig; the defaults without one)")
    p.add_argument("--seed", type=(r := integer(0, 2**63 - 1)), help=with_range("seed (default [backtest] seed)", r))
    p.add_argument("--out", metavar="DIR", help="results folder (default results/backtest-<time>)")
    p.add_argument("--no-progress", action="store_true", help="no progress line")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--report", action="store_true", help="also write the HTML report into the results folder")
    p.add_argument("--jsonl", action="store_true",
                   help="write orders, fills and series as JSON lines, not Parquet (as [results] format = \"jsonl\")")
    _add_dataset_arguments(p)
    p.set_defaults(handler=cmd_backtest)

    p = sub.add_parser("compare", help="backtest a live or paper session's recording and compare it with the session")
    p.add_argument("--config", dest="config_file", metavar="FILE", default=argparse.SUPPRESS,
                   help="bot config of the session (same as the global --config)")
    p.add_argument("--journal", required=True, metavar="FILE", help="the session's journal (SQLite)")
    p.add_argument("--recording", required=True, nargs="+", metavar="PATH", help="recordings made during the session")
    p.add_argument("--out", metavar="DIR", help="folder of the backtest's results and the report (default results/compare-<time>)")
    p.add_argument("--suggest", action="store_true",
                   help="also try latency and queue models and say which matched the session best")
    p.add_argument("--seed", type=(r := integer(0, 2**63 - 1)), help=with_range("backtest seed", r))
    p.set_defaults(handler=cmd_compare)
    p = sub.add_parser("sweep", help="backtest a grid of parameter sets (or an Optuna study) in parallel, ranked")
    p.add_argument("--config", dest="config_file", metavar="FILE", default=argparse.SUPPRESS,
                   help="the base config (same as the global --config)")
    p.add_argument("--grid", required=True, metavar="GRID.toml",
                   help="dotted config keys to lists of values, and [sweep] (bot/backtest/sweep.py)")
    p.add_argument("--data", nargs="+", required=True, metavar="PATH", help="recordings, as for bot backtest")
    p.add_argument("--workers", type=(r := integer(1, 1024)), help=with_range("backtests at once (default: CPUs)", r))
    p.add_argument("--ray", metavar="ADDRESS", help="run on the Ray cluster at ADDRESS, or `local`: a Ray instance here")
    p.add_argument("--out", metavar="DIR", help="results folder (default results/sweep-<time>)")
    p.add_argument("--best", metavar="FILE", help="also write the best set's config file here (always OUT/best.toml)")
    p.add_argument("--keep-runs", action="store_true", help="write each run's results folder under OUT/runs")
    p.add_argument("--top", type=(r := integer(1, 10_000)), default=10, help=with_range("rows of the table", r))
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the ranking as JSON")
    _add_dataset_arguments(p)
    p.set_defaults(handler=cmd_sweep)

    p = sub.add_parser("report", help="write the HTML report of a run (results folder, or live/paper journal)")
    p.add_argument("results", metavar="RESULTS", help="a backtest's results folder, or a live or paper journal (SQLite)")
    p.add_argument("--out", metavar="FILE", help="HTML file (default RESULTS/report.html, or JOURNAL.report.html)")
    p.add_argument("--recording", nargs="+", default=(), metavar="PATH",
                   help="a journal's books: recordings of the run's time (marks, best bid and ask, markouts)")
    p.add_argument("--every", type=(r := number(ge=0.001, le=86_400.0)), default=1.0, metavar="SECONDS",
                   help=with_range("a journal's series: one sample every this many seconds (default 1)", r))
    p.set_defaults(handler=cmd_report)

    p = sub.add_parser("demo", help="run the demo (local exchange + market maker)")
    _add_demo_arguments(p)
    p.set_defaults(handler=cmd_demo)

    p = sub.add_parser("record", help="record the market stream of chosen markets to files (docs/recording-format.md)")
    _add_record_arguments(p)
    p.set_defaults(handler=cmd_record)
    return parser


def _add_dataset_arguments(p: argparse.ArgumentParser) -> None:
    """Which markets of top-of-book files (``--data`` Parquet or CSV, or folders of them) to
    replay: ``[backtest] dataset_*`` in the config, replaced by these when given."""
    g = p.add_argument_group("top-of-book data (Parquet or CSV: docs/real-data.md)")
    g.add_argument("--market-slug", nargs="+", action="extend", metavar="SLUG",
                   help="markets by slug, or shell pattern of slugs (\"nba-*\"); no match is an error")
    g.add_argument("--category", metavar="NAME", help="markets of this category only (politics, sports, ...)")
    g.add_argument("--markets", type=(r := integer(1, 10_000)), metavar="N",
                   help=with_range("take the first N markets by --rank (default: every slug named, else 1)", r))
    g.add_argument("--rank", choices=("snapshots", "spread"),
                   help="most polls first (default), or narrowest mean spread first")


def _add_record_arguments(p: argparse.ArgumentParser) -> None:
    from bot.backtest.recording import WriterConfig
    from bot.ops.arguments import field_range

    p.add_argument("--config", dest="config_file", metavar="FILE", default=argparse.SUPPRESS,
                   help="bot config: where the venue is (same as the global --config)")
    p.add_argument("--out", default="recordings", metavar="DIR", help="directory of the files (default recordings)")
    p.add_argument("--token", action="append", default=[], metavar="TOKEN_ID",
                   help="record this token's market (repeat)")
    p.add_argument("--market", action="append", default=[], metavar="CONDITION_ID", help="record this market (repeat)")
    p.add_argument("--event", action="append", default=[], metavar="SLUG", help="record this event's markets (repeat)")
    p.add_argument("--tag", help="record the catalog's active open markets of this tag")
    p.add_argument("--limit", type=(r := integer(1, 100)), default=0,
                   help=with_range("record the catalog's first N active open markets (of --tag, if given)", r))
    p.add_argument("--duration", type=DURATION,
                   help=with_range("stop after this many seconds (default: until SIGTERM or Ctrl-C)", DURATION))
    p.add_argument("--prefix", default="book", help="file name prefix (default book)")
    p.add_argument("--rotate-mb", type=(r := integer(1, 2**20)), default=256,
                   help=with_range("start a new file after this many compressed MiB (default 256)", r))
    p.add_argument("--rotate-s", type=(r := field_range(WriterConfig, "rotate_s")), default=3600.0,
                   help=with_range("start a new file after this many seconds (default 3600)", r))
    p.add_argument("--flush-s", type=(r := field_range(WriterConfig, "flush_s")), default=1.0,
                   help=with_range("end a compressed block at least this often; a killed recorder loses at "
                                   "most one block (default 1)", r))


def _add_demo_arguments(p: argparse.ArgumentParser) -> None:
    try:
        from bot.live.demo import add_arguments
    except ImportError:  # an installation without the live runner: ``bot demo`` says so when run
        p.add_argument("ignored", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        return
    add_arguments(p)


def _add_exchange_arguments(p: argparse.ArgumentParser) -> None:
    from bot.exchange import cli as exchange_cli

    exchange_cli.add_arguments(p)
    p.epilog = getattr(exchange_cli, "EPILOG", None)


# --------------------------------------------------------------------------------------------
# What a command can use


class Session:
    """One invocation: its arguments, and the config, secrets and HTTP clients, made on demand."""

    def __init__(self, args: argparse.Namespace, http_transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.args = args
        self.http_transport = http_transport
        self._config: tuple[BotConfig, Path | None] | None = None
        self._secrets = None
        self.last_url: str | None = None  # base URL of the last transport made, for error lines

    @property
    def config(self) -> BotConfig:
        return self._resolved()[0]

    @property
    def config_path(self) -> Path | None:
        return self._resolved()[1]

    def _resolved(self) -> tuple[BotConfig, Path | None]:
        if self._config is None:
            self._config = resolve_bot_config(getattr(self.args, "config_file", None))
        return self._config

    @property
    def secrets(self):
        if self._secrets is None:
            from bot.ops.secrets import load_secrets

            self._secrets = load_secrets(self.config.secrets)
        return self._secrets

    def transport(self, surface: str):
        """A pooled HTTP transport to ``surface`` (``clob``, ``catalog`` or ``account``)."""
        from bot.venue.limits import RouteLimiter
        from bot.venue.transport import Transport

        venue = self.config.venue
        url = {"clob": venue.clob_url, "catalog": venue.catalog_url, "account": venue.data_url}[surface]
        self.last_url = url
        return Transport(url, limiter=RouteLimiter(venue.limits, surface), transport=self.http_transport,
                         config=venue.timeouts)

    def clob(self, transport, *, wallet=None, creds=None):
        from bot.venue.auth import AuthConfig
        from bot.venue.clob import ClobClient

        venue = self.config.venue
        address = wallet.address if wallet is not None else None
        return ClobClient(transport, creds=creds, address=address, wallet=wallet, chain_id=venue.chain_id,
                          auth=AuthConfig(timestamp_unit=venue.timestamp_unit))

    def console(self):
        """A rich console on the current stdout (wide when not a terminal, so ids never fold)."""
        from rich.console import Console

        out = sys.stdout
        return Console(file=out, width=None if out.isatty() else 240, highlight=False, soft_wrap=False)


def _print_json(value: Any) -> None:
    sys.stdout.write(msgspec.json.encode(value).decode() + "\n")


def _fmt(value: Decimal) -> str:
    """An exact decimal without exponent or trailing zeros."""
    text = format(value.normalize(), "f")
    return "0" if text in ("-0", "") else text


def _dec(text: str | None) -> Decimal | None:
    if text is None or text == "":
        return None
    try:
        return Decimal(str(text))
    except InvalidOperation:
        return None


# --------------------------------------------------------------------------------------------
# bot markets


def cmd_markets(s: Session) -> int:
    from bot.venue.catalog import CatalogClient

    a = s.args

    async def fetch():
        async with s.transport("catalog") as t:
            markets = await CatalogClient(t).markets(
                limit=a.limit, offset=a.offset, active=a.active, closed=a.closed, archived=a.archived,
                tag=a.tag, tag_id=a.tag_id, event_slug=a.event_slug, condition_id=a.condition_id,
                slug=a.slug, order=a.order, ascending=a.ascending, creator=a.creator,
            )
        unknown = [tokens[0] for m in markets if m.neg_risk is None and (tokens := str_list(m.clob_token_ids))]
        if not unknown:
            return markets, {}
        async with s.transport("clob") as t:
            return markets, await clob_neg_risk(s.clob(t), unknown)

    from bot.venue.models import str_list

    markets, neg_risk = anyio.run(fetch)
    rows = [_market_row(m, neg_risk) for m in markets]
    if a.json:
        _print_json(rows)
        return EXIT_OK
    if a.ids_only:
        for r in rows:
            print(r["condition_id"])
            for t in r["tokens"]:
                print(t["token_id"])
        return EXIT_OK
    console = s.console()
    if console.width >= _markets_table_width(rows):
        console.print(_markets_table(rows))
        return EXIT_OK
    # Too narrow for the ids side by side: one block per market, each id whole on its own line
    # (a cut id cannot be copied), the question wrapped to the terminal.
    import textwrap

    print(f"{len(rows)} market(s)")
    for r in rows:
        flags = [f for f in MARKET_FLAGS if r[f]]
        print()
        print(textwrap.fill(f"{r['question'] or ''}  [{', '.join(flags) or '-'}]", width=max(20, console.width)))
        print(f"condition id: {r['condition_id']}")
        for t in r["tokens"]:
            print(f"{t['outcome']}: {t['token_id']}")
    return EXIT_OK


MARKET_FLAGS = ("active", "closed", "archived", "neg_risk")  # shown for a market when true
MIN_QUESTION_WIDTH = 24  # the question column folds down to this; the id columns never do


def _markets_table_width(rows: list[dict[str, Any]]) -> int:
    """The terminal width the markets table needs to show every id whole beside a question column
    of ``MIN_QUESTION_WIDTH``: 3 columns of padding and a border each, and the ids' own lengths."""
    ids = max((len(r["condition_id"] or "") for r in rows), default=0)
    tokens = max((len(t["outcome"]) + 2 + len(t["token_id"]) for r in rows for t in r["tokens"]), default=1)
    flags = len(", ".join(MARKET_FLAGS))
    return MIN_QUESTION_WIDTH + ids + tokens + flags + 4 * 3 + 1


def _markets_table(rows: list[dict[str, Any]]):
    from rich.table import Table

    table = Table(title=f"{len(rows)} market(s)", title_justify="left")
    table.add_column("question", overflow="fold", min_width=MIN_QUESTION_WIDTH)
    table.add_column("condition id", no_wrap=True)
    table.add_column("outcome: token id", no_wrap=True)
    table.add_column("flags")
    for r in rows:
        tokens = "\n".join(f"{t['outcome']}: {t['token_id']}" for t in r["tokens"]) or "-"
        flags = [f for f in MARKET_FLAGS if r[f]]
        table.add_row(r["question"] or "", r["condition_id"], tokens, ", ".join(flags) or "-")
    return table


CLOB_LOOKUPS = 8  # neg-risk lookups in flight at once (each also passes the CLOB's rate limiter)


async def clob_neg_risk(clob, token_ids: Sequence[str]) -> dict[str, bool | None]:
    """The CLOB's neg-risk flag of each token (``GET /neg-risk``); ``None`` where it cannot say.

    The catalog's market listing does not carry the flag (interface.md 2.7), while the CLOB,
    which signs and matches orders, always knows it: that is where ``bot book`` reads it too."""
    from bot.venue.errors import VenueError

    found: dict[str, bool | None] = {}
    slots = anyio.Semaphore(CLOB_LOOKUPS)

    async def one(token_id: str) -> None:
        async with slots:
            try:
                found[token_id] = await clob.neg_risk(token_id)
            except VenueError:
                found[token_id] = None

    async with anyio.create_task_group() as tg:
        for token_id in dict.fromkeys(token_ids):
            tg.start_soon(one, token_id)
    return found


def _market_row(m, clob_neg_risk: dict[str, bool | None] | None = None) -> dict[str, Any]:
    """One market for ``bot markets``; ``neg_risk`` is the catalog's flag when it states one, else
    the CLOB's (``clob_neg_risk`` by first token id), else ``None`` (unknown, never a guessed false)."""
    from bot.venue.models import str_list

    outcomes = str_list(m.outcomes)
    token_ids = str_list(m.clob_token_ids)
    tokens = [
        {"outcome": outcomes[i] if i < len(outcomes) else f"#{i}", "token_id": tid}
        for i, tid in enumerate(token_ids)
    ]
    return {
        "question": m.question,
        "condition_id": m.condition_id,
        "slug": m.slug,
        "tokens": tokens,
        "active": bool(m.active),
        "closed": bool(m.closed),
        "archived": bool(m.archived),
        "neg_risk": m.neg_risk if m.neg_risk is not None else (clob_neg_risk or {}).get(next(iter(token_ids), "")),
        "end_date": m.end_date,
    }


# --------------------------------------------------------------------------------------------
# bot book


def cmd_book(s: Session) -> int:
    a = s.args

    async def fetch():
        async with s.transport("clob") as t:
            return await s.clob(t).book(a.token_id)

    book = anyio.run(fetch)
    view = book_view(book, a.depth)
    if a.json:
        _print_json(view)
        return EXIT_OK
    from rich.table import Table

    console = s.console()
    console.print(
        f"token {view['token_id']}\nmarket {view['market']}  tick {view['tick_size'] or '?'}  "
        f"min size {view['min_order_size'] or '?'}  neg-risk {'yes' if view['neg_risk'] else 'no'}"
    )
    table = Table(show_edge=False)
    table.add_column("side")
    table.add_column("price", justify="right")
    table.add_column("size", justify="right")
    for level in reversed(view["asks"]):  # best ask last, next to the spread
        table.add_row("ask", level["price"], level["size"])
    table.add_section()
    for level in view["bids"]:  # best bid first
        table.add_row("bid", level["price"], level["size"])
    console.print(table)
    console.print(
        f"bid {view['best_bid'] or '-'}  ask {view['best_ask'] or '-'}  mid {view['mid'] or '-'}  "
        f"spread {view['spread'] or '-'}"
    )
    return EXIT_OK


def book_view(book, depth: int) -> dict[str, Any]:
    """The book as best-first levels (at most ``depth`` per side) with best bid/ask, mid and spread.

    Best levels are found by price (max bid, min ask), never by list position.
    """
    def levels(side, best_first_desc: bool) -> list[dict[str, str]]:
        parsed = [(p, lv) for lv in side if (p := _dec(lv.price)) is not None]
        parsed.sort(key=lambda x: x[0], reverse=best_first_desc)
        return [{"price": _fmt(p), "size": _fmt(_dec(lv.size) or Decimal(0))} for p, lv in parsed[:depth]]

    bids, asks = levels(book.bids, True), levels(book.asks, False)
    best_bid = Decimal(bids[0]["price"]) if bids else None
    best_ask = Decimal(asks[0]["price"]) if asks else None
    both = best_bid is not None and best_ask is not None
    return {
        "token_id": book.asset_id,
        "market": book.market,
        "timestamp": book.timestamp,
        "hash": book.hash,
        "tick_size": book.tick_size,
        "min_order_size": book.min_order_size,
        "neg_risk": bool(book.neg_risk),
        "last_trade_price": book.last_trade_price,
        "best_bid": _fmt(best_bid) if best_bid is not None else None,
        "best_ask": _fmt(best_ask) if best_ask is not None else None,
        "mid": _fmt((best_bid + best_ask) / 2) if both else None,
        "spread": _fmt(best_ask - best_bid) if both else None,
        "bids": bids,
        "asks": asks,
    }


# --------------------------------------------------------------------------------------------
# bot order build


def cmd_order_build(s: Session) -> int:
    from bot.venue.auth import PASSPHRASE, auth_timestamp, l2_headers
    from bot.venue.enums import OrderType
    from bot.venue.orders import OrderBuilder, order_body

    a = s.args
    venue = s.config.venue
    wallet = s.secrets.wallet()
    creds = None if a.body_only else s.secrets.credentials()
    owner = a.owner or (creds.api_key if creds is not None else s.secrets.api_key)  # the key is no secret
    if not owner:
        from bot.ops.secrets import ENV_API_KEY

        raise CommandError(f"--body-only needs --owner or the API key ({ENV_API_KEY} or api_key in the secrets file)")

    order_type = OrderType(a.order_type or ("FOK" if a.amount is not None else "GTC"))
    tick, neg_risk = a.tick, a.neg_risk
    if a.fetch and (tick is None or neg_risk is None):
        tick, neg_risk = anyio.run(_fetch_market_terms, s, a.token, tick, neg_risk)
    tick = tick or "0.01"
    neg_risk = bool(neg_risk)

    builder = OrderBuilder(wallet, venue.chain_id, maker=venue.funder, signature_type=venue.signature_type,
                           builder_code=venue.builder_code or None)
    common = dict(salt=a.salt, timestamp_ms=a.timestamp_ms, condition_id=a.condition_id)
    if order_type.is_market:
        if a.amount is None or a.size is not None:
            raise CommandError(f"{order_type.value} orders take --amount (USDC for BUY, shares for SELL), not --size")
        if a.post_only or a.expiration is not None:
            raise CommandError(f"{order_type.value} orders take neither --post-only nor --expiration")
        signed = builder.market_decimal(a.token, a.side, a.amount, a.price, tick, neg_risk, order_type, **common)
    else:
        if a.size is None or a.amount is not None:
            raise CommandError(f"{order_type.value} orders take --size (shares), not --amount")
        expiration = 0
        if a.expiration is not None:
            expiration = int(time.time()) + int(a.expiration[1:]) if a.expiration.startswith("+") else int(a.expiration)
        signed = builder.limit_decimal(
            a.token, a.side, a.price, a.size, tick, neg_risk, order_type, min_size=a.min_size,
            expiration=expiration, post_only=a.post_only, **common,
        )
    body = order_body(signed, owner, defer_exec=a.defer_exec)
    url = venue.clob_url.rstrip("/") + ORDER_PATH
    headers: dict[str, str] = {}
    if creds is not None:
        headers = l2_headers(creds, wallet.address, "POST", ORDER_PATH, body, auth_timestamp(venue.timestamp_unit))
        if not a.show_secrets:
            headers[PASSPHRASE] = "***"
    if a.json:
        _print_json({"order_id": signed.hash, "method": "POST", "url": url, "headers": headers,
                     "body": body.decode()})
        return EXIT_OK
    out = sys.stdout
    out.write(f"# order id {signed.hash} (tick {tick}, neg-risk {'yes' if neg_risk else 'no'}; not sent)\n")
    if not a.body_only:
        out.write(f"POST {url}\n")
        for name, value in headers.items():
            out.write(f"{name}: {value}\n")
        if not a.show_secrets:
            out.write(f"# {PASSPHRASE} hidden; --show-secrets prints it\n")
        out.write("\n")
    out.write(body.decode() + "\n")
    return EXIT_OK


async def _fetch_market_terms(s: Session, token: str, tick: str | None, neg_risk: bool | None):
    async with s.transport("clob") as t:
        clob = s.clob(t)
        if tick is None:
            tick = await clob.tick_size(token)
        if neg_risk is None:
            neg_risk = await clob.neg_risk(token)
    return tick, neg_risk


# --------------------------------------------------------------------------------------------
# bot keys derive


def cmd_keys_derive(s: Session) -> int:
    from bot.ops.secrets import ENV_API_KEY, ENV_API_PASSPHRASE, ENV_API_SECRET

    a = s.args
    wallet = s.secrets.wallet()

    async def derive():
        async with s.transport("clob") as t:
            return await s.clob(t, wallet=wallet).create_or_derive_api_key(a.nonce)

    creds = anyio.run(derive)
    secret, passphrase = creds.secret.reveal(), creds.passphrase.reveal()
    register_secret(secret)
    register_secret(passphrase)
    out = sys.stdout
    if a.export:
        out.write(f"export {ENV_API_KEY}={shlex.quote(creds.api_key)}\n")
        out.write(f"export {ENV_API_SECRET}={shlex.quote(secret)}\n")
        out.write(f"export {ENV_API_PASSPHRASE}={shlex.quote(passphrase)}\n")
        return EXIT_OK
    hidden = "*** (--show-secrets prints it)"
    out.write(f"address     {wallet.address}\n")
    out.write(f"apiKey      {creds.api_key}\n")
    out.write(f"secret      {secret if a.show_secrets else hidden}\n")
    out.write(f"passphrase  {passphrase if a.show_secrets else hidden}\n")
    return EXIT_OK


# --------------------------------------------------------------------------------------------
# bot keys new


def cmd_keys_new(s: Session) -> int:
    """A fresh key, encrypted with a passphrase from BOT_KEYSTORE_PASSPHRASE or the terminal."""
    from bot.ops.keystore import passphrase, write_keystore
    from bot.venue.eip712 import new_private_key
    from bot.venue.eip712 import Wallet

    a = s.args
    if a.kdf == "scrypt" and a.work is not None and a.work & (a.work - 1):
        raise CommandError(f"--work {a.work}: scrypt n must be a power of two")
    key = new_private_key()
    register_secret(key.hex())
    register_secret("0x" + key.hex())
    write_keystore(a.file, key, passphrase(confirm=True), a.kdf, a.work)
    sys.stdout.write(f"address   {Wallet('0x' + key.hex()).address}\nkeystore  {a.file}\n"
                     f'use it with [secrets] source = "keystore", file = "{a.file}"\n')
    return EXIT_OK


# --------------------------------------------------------------------------------------------
# bot config check


def cmd_new_strategy(s: Session) -> int:
    from bot.ops.scaffold import ScaffoldError, new_strategy

    a = s.args
    try:
        written = new_strategy(a.name, a.dir)
    except ScaffoldError as exc:
        raise CommandError(f"bot new strategy: {exc}") from None
    print(f"wrote {', '.join(str(p) for p in written)}")
    strategy, test, config = written
    print(f"next: .venv/bin/python -m pytest {test}; .venv/bin/bot backtest --config {config} --synthetic")
    return EXIT_OK


def cmd_config_check(s: Session) -> int:
    a = s.args
    config = load_bot_config(a.file)
    if has_strategy(config):
        from bot.strategy_set import configured_strategy

        configured_strategy(config)
    line = f"ok: {a.file}: {summarize(config)}"
    if a.secrets:
        from bot.ops.secrets import load_secrets

        found = load_secrets(config.secrets)
        if found.private_key is not None:
            found.wallet()  # parses the key; reports a malformed one without showing it
        if found.has_credentials:
            found.credentials()
        line += f"; {found.describe()}"
    sys.stdout.write(line + "\n")
    return EXIT_OK


# --------------------------------------------------------------------------------------------
# operator commands: cancel-all, orders, positions


def _with_account_clob(s: Session, call):
    """Run ``await call(clob)`` on a CLOB client authenticated with the configured key."""
    wallet, creds = s.secrets.wallet(), s.secrets.credentials()

    async def run():
        async with s.transport("clob") as t:
            return await call(s.clob(t, wallet=wallet, creds=creds))

    return anyio.run(run)


def cmd_cancel_all(s: Session) -> int:
    a = s.args

    async def cancel(clob):
        if a.market or a.token:
            return await clob.cancel_market_orders(market=a.market, asset_id=a.token)
        return await clob.cancel_all()

    result = _with_account_clob(s, cancel)
    if a.json:
        _print_json({"canceled": result.canceled, "not_canceled": result.not_canceled})
        return EXIT_OK
    out = sys.stdout
    out.write(f"canceled {len(result.canceled)} order(s)\n")
    for order_id in result.canceled:
        out.write(f"  {order_id}\n")
    if result.not_canceled:
        out.write(f"not canceled {len(result.not_canceled)}\n")
        for order_id, reason in result.not_canceled.items():
            out.write(f"  {order_id}: {reason}\n")
    return EXIT_OK


def cmd_orders(s: Session) -> int:
    a = s.args

    async def fetch(clob):
        return [o async for o in clob.get_orders(market=a.market, asset_id=a.token)]

    orders = _with_account_clob(s, fetch)
    if a.json:
        from bot.venue.models import to_builtins

        _print_json([to_builtins(o) for o in orders])
        return EXIT_OK
    from rich.table import Table

    table = Table(title=f"{len(orders)} open order(s)", title_justify="left")
    for name, justify in (("id", "left"), ("side", "left"), ("price", "right"), ("size", "right"),
                          ("matched", "right"), ("type", "left"), ("status", "left"), ("outcome", "left"),
                          ("token id", "left")):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for o in orders:
        table.add_row(o.id, o.side, o.price, o.original_size or "", o.size_matched or "0", o.order_type or "",
                      o.status, o.outcome or "", o.asset_id or "")
    s.console().print(table)
    return EXIT_OK


def cmd_positions(s: Session) -> int:
    from bot.venue.account import AccountClient

    a = s.args
    user = a.user or s.config.venue.funder or s.secrets.wallet().address

    async def fetch():
        async with s.transport("account") as t:
            return await AccountClient(t).positions(
                user, market=a.market, limit=a.limit, redeemable=a.redeemable or None,
                mergeable=a.mergeable or None,
            )

    positions = anyio.run(fetch)
    if a.json:
        from bot.venue.models import to_builtins

        _print_json([to_builtins(p) for p in positions])
        return EXIT_OK
    from rich.table import Table

    table = Table(title=f"{len(positions)} position(s) of {user}", title_justify="left")
    for name in ("market", "outcome", "size", "avg price", "cur price", "value", "cash pnl", "flags", "token"):
        right = name in ("size", "avg price", "cur price", "value", "cash pnl")
        table.add_column(name, justify="right" if right else "left", overflow="fold")
    for p in positions:
        flags = [f for f, on in (("redeemable", p.redeemable), ("mergeable", p.mergeable),
                                 ("neg-risk", p.negative_risk)) if on]
        table.add_row(p.title or p.condition_id, p.outcome or "", _num(p.size), _num(p.avg_price),
                      _num(p.cur_price), _num(p.current_value), _num(p.cash_pnl), ", ".join(flags), p.asset)
    s.console().print(table)
    return EXIT_OK


def _num(value: object) -> str:
    """A wire number as an exact decimal of at most 6 places (shares and USDC are micro-units): the
    account-data route's JSON floats (``509.79441999999995``) print as the amount they stand for."""
    if value is None:
        return ""
    d = _dec(str(value))
    if d is None or not d.is_finite():
        return str(value)
    try:
        return _fmt(d.quantize(MICRO, rounding=ROUND_HALF_EVEN))
    except InvalidOperation:  # more digits than a Decimal context holds: printed as given
        return str(value)



# --------------------------------------------------------------------------------------------
# delegated commands: exchange, run, demo


def cmd_exchange(s: Session) -> int:
    from bot.exchange import cli as exchange_cli

    return int(exchange_cli.run(s.args) or 0)


def _entry_point(module_name: str, command: str) -> Callable[..., Any]:
    """``module_name.run``, or a CommandError when that module is not part of this install."""
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and module_name.startswith(missing) and module_name[len(missing):len(missing) + 1] in ("", "."):
            raise CommandError(f"bot {command}: not available ({module_name} is not installed)") from None
        raise
    run = getattr(module, "run", None)
    if not callable(run):
        raise CommandError(f"bot {command}: not available ({module_name} has no run())")
    return run


def _finish(result: Any) -> int:
    if inspect.iscoroutine(result):
        result = anyio.run(lambda: result)
    return EXIT_OK if result is None else int(result)


def _configure_run_logging(s: Session) -> None:
    log = s.config.log
    configure_logging(s.args.log_level or log.level, json=log.json)


def cmd_run(s: Session) -> int:
    run = _entry_point("bot.live.run", "run")
    if s.config_path is None:
        raise CommandError(f"bot run needs a config: --config FILE (or {DEFAULT_CONFIG_PATH})")
    if not has_strategy(s.config):
        raise ConfigError(f"{s.config_path}: [strategy] path (or [[strategies]]) is not set")
    _configure_run_logging(s)
    return _finish(run(s.config, s.args))


def cmd_backtest(s: Session) -> int:
    run = _entry_point("bot.backtest.cli", "backtest")
    if not has_strategy(s.config):
        where = s.config_path or "the default config"
        raise ConfigError(f"{where}: [strategy] path (or [[strategies]]) is not set (bot backtest --config FILE)")
    return _finish(run(s.config, s.args))


def cmd_compare(s: Session) -> int:
    from bot.backtest.cli import compare

    if not has_strategy(s.config):
        raise ConfigError(f"{s.config_path or 'the default config'}: [strategy] path (or [[strategies]]) is not set")
    return compare(s.config, s.args)
def cmd_sweep(s: Session) -> int:
    run = _entry_point("bot.backtest.sweep", "sweep")
    if not has_strategy(s.config):
        where = s.config_path or "the default config"
        raise ConfigError(f"{where}: [strategy] path (or [[strategies]]) is not set (bot sweep --config FILE)")
    return _finish(run(s.config, s.args))


def cmd_report(s: Session) -> int:
    from bot.backtest.replay import recorded
    from bot.results.read import read_run
    from bot.results.report import report_path, write_report

    a = s.args
    results = read_run(a.results, recording=recorded(a.recording), every_s=a.every)
    out = write_report(results, a.out or report_path(a.results))
    sys.stdout.write(f"report: {out}\n")
    return EXIT_OK


def cmd_demo(s: Session) -> int:
    run = _entry_point("bot.live.demo", "demo")
    return _finish(run(s.args))


def cmd_record(s: Session) -> int:
    from bot.backtest.recorder import Recorder, RecorderConfig, resolve_markets
    from bot.backtest.recording import WriterConfig
    from bot.venue.catalog import CatalogClient
    from bot.venue.stream import StreamConfig

    a = s.args
    if not (a.token or a.market or a.event or a.tag or a.limit):
        raise CommandError("bot record: choose what to record with --token, --market, --event, --tag or --limit")
    out = Path(a.out)
    if out.exists() and not out.is_dir():
        raise CommandError(f"bot record: --out {a.out} is a file; give a directory (new or existing) for the recordings")
    if out.is_dir() and not os.access(out, os.W_OK | os.X_OK):
        raise CommandError(f"bot record: --out {a.out} is not writable")
    writer = msgspec.convert(dict(directory=a.out, prefix=a.prefix, rotate_bytes=a.rotate_mb * 2**20,
                                  rotate_s=a.rotate_s, flush_s=a.flush_s), WriterConfig)
    venue = s.config.venue
    _configure_run_logging(s)

    async def record():
        async with s.transport("clob") as t:
            clob = s.clob(t)
            if a.event or a.tag or a.limit:
                async with s.transport("catalog") as c:
                    markets = await resolve_markets(clob, CatalogClient(c), tokens=a.token, markets=a.market,
                                                    events=a.event, tag=a.tag, limit=a.limit)
            else:
                markets = await resolve_markets(clob, tokens=a.token, markets=a.market)
            if not markets:
                raise CommandError("bot record: the venue lists none of the chosen markets")
            s.last_url = venue.ws_url
            config = RecorderConfig(writer=writer, stream=StreamConfig(url=venue.ws_url))
            return await Recorder(clob, markets, config).run(duration=a.duration)

    done = anyio.run(record)
    sys.stdout.write(f"recorded {done.frames} frame(s) of {len(done.files)} file(s) in {a.out} "
                     f"({done.bytes} bytes, {done.gaps} gap(s), {done.snapshots} REST snapshot(s)); "
                     f"stopped by {done.stop_reason}\n")
    for path in done.files:
        sys.stdout.write(f"  {path}\n")
    return EXIT_OK


# --------------------------------------------------------------------------------------------
# Entry point


def _user_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean bad input from the user or the venue (exit 2)."""
    errors: list[type[BaseException]] = [ValueError, msgspec.MsgspecError, httpx.HTTPError, OSError]
    try:
        from bot.venue.errors import VenueError

        errors.append(VenueError)
    except ImportError:
        pass
    return tuple(errors)


def _is_unreachable(exc: BaseException) -> bool:
    try:
        from bot.venue.errors import TransportError
    except ImportError:
        return isinstance(exc, httpx.TransportError)
    return isinstance(exc, (TransportError, httpx.TransportError))


def one_line_error(exc: BaseException) -> str:
    """``exc`` as one line with known secrets masked."""
    text = str(exc) or type(exc).__name__
    text = re.sub(r"\s+", " ", text).strip()
    return redact(None, "", {"message": text})["message"]


def main(argv: Sequence[str] | None = None, *, http_transport: httpx.AsyncBaseTransport | None = None) -> int:
    """Run the ``bot`` command; returns the exit code (``http_transport`` replaces the network)."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # --help, or a usage error already printed on one line
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    configure_logging(args.log_level or "warning", json=True)
    session = Session(args, http_transport)
    try:
        return int(args.handler(session))
    except BaseException as raised:
        exc = _sole_error(raised)
        if isinstance(exc, KeyboardInterrupt):
            return 130
        if isinstance(exc, BrokenPipeError):
            return EXIT_OK
        if not isinstance(exc, Exception):
            raise
        if args.debug:
            traceback.print_exception(raised)
        if isinstance(exc, _user_errors()):
            message = one_line_error(exc)
            if _is_unreachable(exc) and session.last_url:
                message = f"cannot reach {session.last_url}: {message}"
            sys.stderr.write(f"error: {message}\n")
            return EXIT_USAGE
        sys.stderr.write(f"error: internal error: {type(exc).__name__}: {one_line_error(exc)}\n")
        return EXIT_INTERNAL


def _sole_error(exc: BaseException) -> BaseException:
    """The one error inside (nested) task-group wrappers, so it is reported as itself."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


if __name__ == "__main__":
    sys.exit(main())

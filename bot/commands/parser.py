"""The parser of the ``bot`` command: every command, its options and their declared ranges, and the
handler each command runs (a function of ``bot.commands``, looked up when the parser is built).

Invariant: a number typed on the command line is checked against its declared range while parsing
(``bot.ops.arguments``), so a value out of range is one usage line and exit code 2 before anything
runs; parsing imports no command's dependencies (``bot --help`` stays quick).
"""

from __future__ import annotations

import argparse

from bot.commands import account, backtest, config, data, keys, market, order, run
from bot.ops.arguments import OneLineParser, decimal, integer, number, run_seconds, with_range
from bot.ops.config import DEFAULT_CONFIG_PATH
from bot.venue.orders import MAX_SALT

PROG = "bot"

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
    parser = OneLineParser(prog=PROG, description="Prediction-market trading bot.")
    parser.add_argument("--config", dest="config_file", metavar="FILE",
                        help=f"bot config (default: {DEFAULT_CONFIG_PATH} if present, else built-in defaults)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    parser.add_argument("--log-level", choices=["debug", "info", "warning", "error", "critical"],
                        help="log level (logs go to stderr)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
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
    p.set_defaults(handler=market.cmd_markets)

    p = sub.add_parser("book", help="print a token's order book")
    p.add_argument("token_id", metavar="TOKEN_ID")
    p.add_argument("--depth", type=(r := integer(1, 10_000)), default=5,
                   help=with_range("levels per side (default 5)", r))
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=market.cmd_book)

    p = sub.add_parser("order", help="orders (offline)")
    order_sub = p.add_subparsers(dest="order_command", metavar="ACTION", parser_class=OneLineParser)
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
    b.set_defaults(handler=order.cmd_order_build)

    p = sub.add_parser("keys", help="API credentials")
    keys_sub = p.add_subparsers(dest="keys_command", metavar="ACTION", parser_class=OneLineParser)
    keys_sub.required = True
    k = keys_sub.add_parser("derive", help="create or derive the API credentials of the configured key (L1)")
    k.add_argument("--nonce", type=NONCE, default=0, help=with_range("key nonce (default 0)", NONCE))
    shown = k.add_mutually_exclusive_group()
    shown.add_argument("--show-secrets", action="store_true", help="print secret and passphrase")
    shown.add_argument("--export", action="store_true",
                       help="print `export BOT_API_...=` lines (with the secret values) for a shell")
    k.set_defaults(handler=keys.cmd_keys_derive)
    k = keys_sub.add_parser("new", help="make a new private key in an encrypted keystore file (mode 600)")
    k.add_argument("file", metavar="FILE", help="keystore file to write (never overwritten)")
    k.add_argument("--kdf", choices=("scrypt", "pbkdf2"), default="scrypt", help="key derivation (default scrypt)")
    k.add_argument("--work", type=KDF_WORK, metavar="N",
                   help=with_range("scrypt n (a power of two) or pbkdf2 rounds (default the standard: "
                                   "262144 or 1000000)", KDF_WORK))
    k.set_defaults(handler=keys.cmd_keys_new)

    p = sub.add_parser("new", help="start something new from a template that works as written")
    new_sub = p.add_subparsers(dest="new_command", metavar="WHAT", parser_class=OneLineParser)
    new_sub.required = True
    n = new_sub.add_parser("strategy", help="write NAME.py (a strategy), test_NAME.py (its test) and NAME.toml "
                                            "(its config)")
    n.add_argument("name", metavar="NAME", help="the strategy's module name, e.g. join_the_touch")
    n.add_argument("--dir", default=".", help="the folder to write into (default: the working directory)")
    n.set_defaults(handler=config.cmd_new_strategy)

    p = sub.add_parser("config", help="config files")
    config_sub = p.add_subparsers(dest="config_command", metavar="ACTION", parser_class=OneLineParser)
    config_sub.required = True
    c = config_sub.add_parser("check", help="validate a bot config file")
    c.add_argument("file", metavar="FILE")
    c.add_argument("--secrets", action="store_true", help="also load the secrets it names (values never shown)")
    c.add_argument("--venue", action="store_true",
                   help="also read the markets it trades from the venue: a warning for each order size below "
                        "a market's minimum order")
    c.set_defaults(handler=config.cmd_config_check)

    p = sub.add_parser("exchange", help="run the local exchange", formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_exchange_arguments(p)
    p.set_defaults(handler=run.cmd_exchange)

    p = sub.add_parser("cancel-all", help="cancel all open orders (or those of one market/token)")
    p.add_argument("--market", help="only this condition id")
    p.add_argument("--token", help="only this token id")
    p.add_argument("--json", action="store_true", help="print the venue's cancel result as JSON")
    p.set_defaults(handler=account.cmd_cancel_all)

    p = sub.add_parser("orders", help="list open orders")
    p.add_argument("--market", help="only this condition id")
    p.add_argument("--token", help="only this token id")
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.set_defaults(handler=account.cmd_orders)

    p = sub.add_parser("positions", help="list the wallet's positions")
    p.add_argument("--user", help="wallet address (default: the funder, else the key's address)")
    p.add_argument("--market", action="append", help="only this condition id (repeat)")
    p.add_argument("--limit", type=(r := integer(0, 500)), help=with_range("at most this many (venue default 100)", r))
    p.add_argument("--redeemable", action="store_true", help="only redeemable positions")
    p.add_argument("--mergeable", action="store_true", help="only mergeable positions")
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.set_defaults(handler=account.cmd_positions)

    p = sub.add_parser("run", help="run the configured strategy live")
    p.add_argument("--config", dest="config_file", metavar="FILE", default=argparse.SUPPRESS,
                   help="bot config (same as the global --config)")
    p.add_argument("--duration", type=DURATION,
                   help=with_range("stop after this many seconds (default: until interrupted)", DURATION))
    p.add_argument("--paper", action="store_true",
                   help="paper trading: live books, orders filled by the simulated venue ([sim]); never sends "
                        "an order, needs no key")
    p.add_argument("--log-format", choices=("view", "json"), default="view",
                   help="view (default): the live view on a terminal, JSON logs otherwise; json: JSON logs only")
    p.set_defaults(handler=run.cmd_run)

    p = sub.add_parser("backtest", help="backtest the configured strategy on recorded books")
    p.add_argument("--config", dest="config_file", metavar="FILE", default=argparse.SUPPRESS,
                   help="bot config (same as the global --config)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", nargs="+", metavar="PATH",
                      help="recordings: files, or folders holding them (merged by receive time)")
    source.add_argument("--synthetic", nargs="?", const="", metavar="FILE",
                      help="the seeded synthetic research market instead (its settings: a TOML file of "
                           "bot.backtest.synthetic.SyntheticConfig; the defaults without one)")
    p.add_argument("--seed", type=(r := integer(0, 2**63 - 1)), help=with_range("seed (default [backtest] seed)", r))
    p.add_argument("--out", metavar="DIR", help="results folder (default results/backtest-<time>)")
    p.add_argument("--force", action="store_true", help="replace the results an --out folder already holds")
    p.add_argument("--no-progress", action="store_true", help="no progress line")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--report", action="store_true", help="also write the HTML report into the results folder")
    p.add_argument("--jsonl", action="store_true",
                   help="write orders, fills and series as JSON lines, not Parquet (as [results] format = \"jsonl\")")
    _add_dataset_arguments(p)
    p.set_defaults(handler=backtest.cmd_backtest)

    p = sub.add_parser("compare", help="backtest a live or paper session's recording and compare it with the session")
    p.add_argument("--config", dest="config_file", metavar="FILE", default=argparse.SUPPRESS,
                   help="bot config of the session (same as the global --config)")
    p.add_argument("--journal", required=True, metavar="FILE", help="the session's journal (SQLite)")
    p.add_argument("--recording", required=True, nargs="+", metavar="PATH", help="recordings made during the session")
    p.add_argument("--out", metavar="DIR", help="folder of the backtest's results and the report (default results/compare-<time>)")
    p.add_argument("--force", action="store_true", help="replace the results an --out folder already holds")
    p.add_argument("--suggest", action="store_true",
                   help="also try latency and queue models and say which matched the session best")
    p.add_argument("--seed", type=(r := integer(0, 2**63 - 1)), help=with_range("backtest seed", r))
    p.set_defaults(handler=backtest.cmd_compare)
    p = sub.add_parser("sweep", help="backtest a grid of parameter sets (or an Optuna study) in parallel, ranked")
    p.add_argument("--config", dest="config_file", metavar="FILE", default=argparse.SUPPRESS,
                   help="the base config (same as the global --config)")
    p.add_argument("--grid", required=True, metavar="GRID.toml",
                   help="dotted config keys to lists of values, and [sweep] (bot/backtest/sweep.py)")
    p.add_argument("--data", nargs="+", required=True, metavar="PATH", help="recordings, as for bot backtest")
    p.add_argument("--workers", type=(r := integer(1, 1024)), help=with_range("backtests at once (default: CPUs)", r))
    p.add_argument("--ray", metavar="ADDRESS", help="run on the Ray cluster at ADDRESS, or `local`: a Ray instance here")
    p.add_argument("--out", metavar="DIR", help="results folder (default results/sweep-<time>)")
    p.add_argument("--force", action="store_true", help="replace the results an --out folder already holds")
    p.add_argument("--best", metavar="FILE", help="also write the best set's config file here (always OUT/best.toml)")
    p.add_argument("--keep-runs", action="store_true", help="write each run's results folder under OUT/runs")
    p.add_argument("--top", type=(r := integer(1, 10_000)), default=10, help=with_range("rows of the table", r))
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the ranking as JSON")
    _add_dataset_arguments(p)
    p.set_defaults(handler=backtest.cmd_sweep)

    p = sub.add_parser("report", help="write the HTML report of a run (results folder, or live/paper journal)")
    p.add_argument("results", metavar="RESULTS", help="a backtest's results folder, or a live or paper journal (SQLite)")
    p.add_argument("--out", metavar="FILE", help="HTML file (default RESULTS/report.html, or JOURNAL.report.html)")
    p.add_argument("--recording", nargs="+", default=(), metavar="PATH",
                   help="a journal's books: recordings of the run's time (marks, best bid and ask, markouts)")
    p.add_argument("--every", type=(r := number(ge=0.001, le=86_400.0)), default=1.0, metavar="SECONDS",
                   help=with_range("a journal's series: one sample every this many seconds (default 1)", r))
    p.set_defaults(handler=data.cmd_report)

    p = sub.add_parser("demo", help="run the demo (local exchange + market maker)")
    _add_demo_arguments(p)
    p.set_defaults(handler=run.cmd_demo)

    p = sub.add_parser("record", help="record the market stream of chosen markets to files (docs/recording-format.md)")
    _add_record_arguments(p)
    p.set_defaults(handler=data.cmd_record)
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

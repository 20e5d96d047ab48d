"""A new user's first week: the ordinary mistakes of every command and config file, each with the
one line (and exit code) that must answer it.

Each ``Mistake`` is run as a user would type it, in a scratch folder of its own holding only the
files it names, through ``bot.cli.main`` in this process (as ``python -m bot.cli`` would run it):
its answer is clean when stderr is exactly one line holding every expected word, without a
traceback, ``internal error`` or any secret of the case, the exit code is the expected one (2: a
user mistake, ``bot.ops.arguments``), nothing is printed on stdout, and nothing is written that
should not be. ``tests/integration/test_first_week_mistakes.py`` asserts every case;
``bench/mistakes.py`` counts the clean answers.

Placeholders in argv, files and env: ``{repo}`` the checkout, ``{down}`` the URL of a closed port
(a venue that is down), ``{clob}``, ``{catalog}``, ``{data}``, ``{ws}`` the local exchange's URLs,
``{busy}`` a port held open, ``{key}`` and ``{bad_key}`` a private key and a malformed one.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import socket
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bot.ops.config import MetricsConfig

REPO = Path(__file__).resolve().parent.parent
KEY = "0x0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
BAD_KEY = "0x0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg"  # one letter off hex
SECRETS_ENV = ("BOT_PRIVATE_KEY", "BOT_API_KEY", "BOT_API_SECRET", "BOT_API_PASSPHRASE", "BOT_KEYSTORE_PASSPHRASE")

MM = '[strategy]\npath = "strategies.market_maker:MarketMaker"\n'
PARAMS = MM + "[strategy.params]\n"
COND = "0x" + "ab" * 32
LOCAL = 'venue.clob_url = "{clob}"\nvenue.catalog_url = "{catalog}"\nvenue.data_url = "{data}"\nvenue.ws_url = "{ws}"\n'
DOWN = 'venue.clob_url = "{down}"\nvenue.catalog_url = "{down}"\nvenue.data_url = "{down}"\n'
RESULTS = {"old/summary.json": "{}\n", "old/orders.jsonl": ""}
OTHER = "0x" + "12" * 32  # a condition id the local exchange does not list
CREDS = {"BOT_PRIVATE_KEY": "{key}", "BOT_API_KEY": "00000000-1111-2222-3333-444444444444",
         "BOT_API_SECRET": "c2VjcmV0LXRoYXQtbXVzdC1uZXZlci1sZWFr", "BOT_API_PASSPHRASE": "ab" * 32}
RAY = importlib.util.find_spec("ray") is not None


@dataclass(frozen=True)
class Mistake:
    """One ordinary mistake: what the user did (``argv`` in a folder holding ``files``, with ``env``
    over an environment holding no secret), and the answer it must get."""

    id: str
    did: str
    argv: tuple[str, ...]
    words: tuple[str, ...]  # each in the one error line
    code: int = 2
    files: Mapping[str, str | bytes] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    absent: tuple[str, ...] = ()  # paths that must not exist afterwards (nothing written on refusal)
    kept: tuple[str, ...] = ()  # files of ``files`` that must be left exactly as they were
    secret: bool = False  # the case holds a secret: the answer must not show ``{key}`` or ``{bad_key}``
    venue: str = ""  # "up": needs the local exchange
    setup: str = ""  # a name of ``SETUPS``: a state the user is in before the command


def m(id: str, did: str, argv: str | list[str], *words: str, **kw) -> Mistake:
    """A ``Mistake``; ``argv`` as one string is split on spaces."""
    return Mistake(id, did, tuple(argv.split() if isinstance(argv, str) else argv), words, **kw)


MISTAKES: list[Mistake] = [
    # --- config files: where they are and what they hold ---
    m("config-missing", "checked a config that is not there", "config check bot.tml", "bot.tml"),
    m("global-config-missing", "gave --config a file that is not there", "--config conf.toml markets",
      "conf.toml"),
    m("config-is-dir", "gave a folder as the config", "config check config", "config", files={"config/x": ""}),
    m("run-config-is-dir", "gave a folder as the config of a run", "run --config config --duration 1",
      "config", files={"config/x": ""}),
    m("toml-syntax", "left a section header unclosed", "config check bot.toml", "bot.toml", "TOML",
      files={"bot.toml": "[venue\nclob_url = 'x'\n"}),
    m("toml-unquoted-string", "wrote a string without quotes", "config check bot.toml", "bot.toml", "TOML",
      files={"bot.toml": "[strategy]\npath = strategies.market_maker:MarketMaker\n"}),
    m("misspelt-section", "misspelt a section name", "config check bot.toml", "bot.toml", "venu",
      files={"bot.toml": "[venu]\nclob_url = 'http://127.0.0.1:8080'\n"}),
    m("misspelt-risk-key", "misspelt a risk limit", "config check bot.toml", "bot.toml", "max_order_sise",
      files={"bot.toml": "[risk]\nmax_order_sise = 10\n"}),
    m("wrong-type", "quoted a number that is an integer", "config check bot.toml", "bot.toml", "chain_id",
      files={"bot.toml": '[venue]\nchain_id = "137"\n'}),
    m("unknown-chain", "named a chain the venue is not on", "config check bot.toml", "bot.toml", "chain_id",
      files={"bot.toml": "[venue]\nchain_id = 1\n"}),
    m("secret-in-config", "pasted the private key into the config", "config check bot.toml", "bot.toml",
      "private_key", files={"bot.toml": '[venue]\nprivate_key = "{key}"\n'}, secret=True),
    m("secret-in-secrets-section", "put the API secret into [secrets]", "config check bot.toml", "bot.toml",
      "api_secret", files={"bot.toml": '[secrets]\napi_secret = "c2VjcmV0c2VjcmV0"\n'}),
    m("negative-limit", "wrote a loss limit below zero", "config check bot.toml", "bot.toml", "max_daily_loss",
      files={"bot.toml": "[risk]\nmax_daily_loss = -5\n"}),
    m("off-misspelt", "switched a limit off with a word other than off", "config check bot.toml", "bot.toml",
      "max_position", '"off"', files={"bot.toml": '[risk]\nmax_position = "none"\n'}),
    m("risk-micro-units", "wrote a size limit in micro-units", "config check bot.toml", "bot.toml",
      "max_order_size", "micro-units", files={"bot.toml": "[risk]\nmax_order_size = 1000000000\n"}),
    m("market-not-condition-id", "named a market by its slug", "config check bot.toml", "bot.toml", "markets",
      files={"bot.toml": MM + 'markets = ["will-it-rain"]\n'}),
    m("strategy-and-strategies", "set [strategy] and [[strategies]] both", "config check bot.toml", "bot.toml",
      "[[strategies]]",
      files={"bot.toml": MM + f'[[strategies]]\nname = "a"\npath = "strategies.bands:Bands"\nmarkets = ["{COND}"]\n'}),
    m("strategies-same-name", "gave two strategies one name", "config check bot.toml", "bot.toml", "a",
      files={"bot.toml": f'[[strategies]]\nname = "a"\npath = "strategies.bands:Bands"\nmarkets = ["{COND}"]\n'
             f'[[strategies]]\nname = "a"\npath = "strategies.bands:Bands"\nmarkets = ["0x{"cd" * 32}"]\n'}),
    m("strategies-no-markets", "listed a strategy of several without markets", "config check bot.toml",
      "bot.toml", "markets",
      files={"bot.toml": '[[strategies]]\nname = "a"\npath = "strategies.bands:Bands"\n'}),
    m("secrets-file-unset", "chose secrets from a file but named none", "config check bot.toml --secrets",
      "file", files={"bot.toml": '[secrets]\nsource = "file"\n'}),
    m("secrets-file-missing", "named a secrets file that is not there", "config check bot.toml --secrets",
      "secrets.toml", files={"bot.toml": '[secrets]\nsource = "file"\nfile = "secrets.toml"\n'}),
    m("secrets-file-readable", "left the secrets file readable by everyone", "config check bot.toml --secrets",
      "secrets.toml", "600", setup="world_readable_secrets", secret=True,
      files={"bot.toml": '[secrets]\nsource = "file"\nfile = "secrets.toml"\n',
             "secrets.toml": 'private_key = "{key}"\n'}),
    m("secrets-file-syntax", "broke the TOML of the secrets file", "config check bot.toml --secrets",
      "secrets.toml", setup="private_secrets", secret=True,
      files={"bot.toml": '[secrets]\nsource = "file"\nfile = "secrets.toml"\n',
             "secrets.toml": 'private_key = "{key}\n'}),
    m("keystore-missing", "named a keystore that is not there", "config check bot.toml --secrets",
      "key.json", "keystore", files={"bot.toml": '[secrets]\nsource = "keystore"\nfile = "key.json"\n'}),
    m("toml-duplicate-key", "wrote one key twice", "config check bot.toml", "bot.toml", "TOML",
      files={"bot.toml": "[risk]\nmax_position = 1\nmax_position = 2\n"}),
    m("config-is-strategy-file", "gave the strategy's .py as the config", "config check mine.py", "mine.py", "TOML",
      files={"mine.py": "from bot.strategy import Strategy\n\nclass Mine(Strategy):\n    pass\n"}),
    m("log-level-misspelt", "set a log level that does not exist", "config check bot.toml", "log.level",
      "verbose", files={"bot.toml": '[log]\nlevel = "verbose"\n'}),
    m("secrets-source-misspelt", "named a secrets source that does not exist", "config check bot.toml",
      "secrets.source", "environment", files={"bot.toml": '[secrets]\nsource = "environment"\n'}),
    m("secrets-file-unknown-key", "misspelt a key of the secrets file", "config check bot.toml --secrets",
      "secrets.toml", "privat_key", setup="private_secrets", secret=True,
      files={"bot.toml": '[secrets]\nsource = "file"\nfile = "secrets.toml"\n',
             "secrets.toml": 'privat_key = "{key}"\n'}),
    m("venue-url-no-scheme", "wrote a venue URL without http://", "--config bot.toml markets", "catalog_url",
      "127.0.0.1:8081", files={"bot.toml": '[venue]\ncatalog_url = "127.0.0.1:8081"\n'}),
    m("params-without-path", "wrote the strategy's params but not its path", "config check bot.toml",
      "strategy.params", "strategy.path", files={"bot.toml": "[strategy.params]\norder_size = 10\n"}),
    m("markets-without-path", "listed markets but no strategy", "config check bot.toml", "strategy.markets",
      "strategy.path", files={"bot.toml": f'[strategy]\nmarkets = ["{COND}"]\n'}),
    m("config-is-exchange-config", "gave the exchange's config to the bot", "--config {repo}/config/exchange.toml markets",
      "exchange.toml", "unknown field"),
    m("config-is-sweep-grid", "checked a sweep grid as a config", "config check {repo}/config/sweep.example.toml",
      "sweep.example.toml", "unknown field"),
    m("secrets-file-is-folder", "named a folder as the secrets file", "config check bot.toml --secrets", "secrets", "is a folder",
      files={"bot.toml": '[secrets]\nsource = "file"\nfile = "secrets"\n', "secrets/x": ""}),
    # --- the strategy a config names ---
    m("strategy-no-module", "named a module that does not exist", "config check bot.toml", "nosuch",
      files={"bot.toml": '[strategy]\npath = "nosuch:Thing"\n'}),
    m("strategy-no-colon", "left out the class of the strategy path", "config check bot.toml",
      "market_maker", "package.module:ClassName",
      files={"bot.toml": '[strategy]\npath = "strategies.market_maker"\n'}),
    m("strategy-no-class", "named a class the module lacks", "config check bot.toml", "MarketMakr",
      files={"bot.toml": '[strategy]\npath = "strategies.market_maker:MarketMakr"\n'}),
    m("strategy-not-strategy", "named a class that is not a Strategy", "config check bot.toml", "Strategy",
      files={"bot.toml": '[strategy]\npath = "plain_w1:Plain"\n', "plain_w1.py": "class Plain:\n    pass\n"}),
    m("strategy-syntax-error", "saved a strategy with a syntax error", "config check bot.toml", "broken_w1",
      files={"bot.toml": '[strategy]\npath = "broken_w1:Broken"\n',
             "broken_w1.py": "class Broken(\n    def on_book(self):\n"}),
    m("strategy-missing-dependency", "imported a package that is not installed", "config check bot.toml",
      "nosuchpackage",
      files={"bot.toml": '[strategy]\npath = "needs_w1:Needs"\n', "needs_w1.py": "import nosuchpackage\n"}),
    m("strategy-raises-on-import", "left a failing line at the top of the module", "config check bot.toml",
      "raising_w1", "ZeroDivisionError",
      files={"bot.toml": '[strategy]\npath = "raising_w1:R"\n', "raising_w1.py": "1 / 0\n"}),
    m("strategy-is-function", "named a function, not a class", "config check bot.toml", "fn_w1:make",
      "Strategy", files={"bot.toml": '[strategy]\npath = "fn_w1:make"\n', "fn_w1.py": "def make():\n    pass\n"}),
    m("params-misspelt", "misspelt a parameter", "config check bot.toml", "half_spread_tiks",
      files={"bot.toml": PARAMS + "half_spread_tiks = 2\n"}),
    m("params-wrong-type", "wrote a size in words", "config check bot.toml", "order_size",
      files={"bot.toml": PARAMS + 'order_size = "ten"\n'}),
    m("params-seven-decimals", "wrote a size with 7 decimals", "config check bot.toml", "order_size",
      "6 decimals", files={"bot.toml": PARAMS + 'order_size = "1.0000001"\n'}),
    m("params-micro-units", "wrote a size in the old micro-units", "config check bot.toml", "order_size",
      "micro-units", files={"bot.toml": PARAMS + "order_size = 10000000\n"}),
    m("params-not-a-table", "wrote params as a string", "config check bot.toml", "params",
      files={"bot.toml": MM + 'params = "order_size=10"\n'}),
    # --- commands that need a config naming a strategy ---
    m("run-no-config", "ran live without a config", "run --duration 1", "--config"),
    m("run-no-strategy", "ran live on a config naming no strategy", "run --config bot.toml --duration 1",
      "[strategy] path", files={"bot.toml": "[risk]\nmax_position = 10\n"}),
    m("paper-no-config", "paper-traded without a config", "run --paper --duration 1", "--config"),
    m("paper-venue-down", "paper-traded with the exchange not started",
      "run --paper --config bot.toml --duration 1 --log-format json", "cannot reach", "127.0.0.1",
      files={"bot.toml": DOWN + MM}),
    m("paper-market-misspelt", "listed a market id with a typo among good ones",
      "run --paper --config bot.toml --duration 1 --log-format json", OTHER[:12], "not listed",
      files={"bot.toml": LOCAL + MM + f'markets = ["{COND}", "{OTHER}"]\n'}, venue="up"),
    m("paper-market-unlisted", "traded a market the venue does not list",
      "run --paper --config bot.toml --duration 1 --log-format json", OTHER[:12], "not listed",
      files={"bot.toml": LOCAL + MM + f'markets = ["{OTHER}"]\n'}, venue="up"),
    m("backtest-no-strategy", "backtested on a config naming no strategy", "backtest --synthetic --no-progress",
      "[strategy] path"),
    # --- backtests ---
    m("backtest-data-nowhere", "pointed --data at a path that is not there",
      "backtest --config bot.toml --data recs --no-progress", "recs", files={"bot.toml": MM},
      absent=("results",)),
    m("backtest-data-not-recording", "gave a text file as a recording",
      "backtest --config bot.toml --data notes.txt --no-progress", "notes.txt",
      files={"bot.toml": MM, "notes.txt": "my notes\n"}, absent=("results",)),
    m("backtest-data-fake-zst", "gave a file named like a recording that is not one",
      "backtest --config bot.toml --data rec.jsonl.zst --no-progress", "rec.jsonl.zst",
      files={"bot.toml": MM, "rec.jsonl.zst": "not zstd at all\n"}, absent=("results",)),
    m("backtest-data-empty-folder", "pointed --data at an empty folder",
      "backtest --config bot.toml --data recs --no-progress", "recs", files={"bot.toml": MM, "recs/.keep": ""},
      absent=("results",)),
    m("backtest-data-journal", "gave the journal as a recording",
      "backtest --config bot.toml --data {repo}/data/sample-session/journal.sqlite --no-progress", "journal.sqlite",
      "not a recording", files={"bot.toml": MM}, absent=("results",)),
    m("backtest-out-existing", "backtested into an existing results folder without --force",
      "backtest --config bot.toml --synthetic --out old --no-progress", "old", "--force",
      files={"bot.toml": MM, **RESULTS}, kept=("old/summary.json",)),
    m("backtest-out-is-file", "gave a file as the results folder",
      "backtest --config bot.toml --synthetic --out out.txt --no-progress", "out.txt", "is a file",
      files={"bot.toml": MM, "out.txt": "keep me\n"}, kept=("out.txt",)),
    m("backtest-out-under-file", "gave a results folder inside a file",
      "backtest --config bot.toml --synthetic --out notes.txt/res --no-progress", "notes.txt/res",
      files={"bot.toml": MM, "notes.txt": "keep me\n"}, kept=("notes.txt",)),
    m("synthetic-settings-is-bot-config", "gave the bot's config as the synthetic market's settings",
      "backtest --config bot.toml --synthetic {repo}/config/bot.example.toml --no-progress", "bot.example.toml",
      "unknown field", files={"bot.toml": MM}, absent=("results",)),
    m("synthetic-settings-missing", "named synthetic settings that are not there",
      "backtest --config bot.toml --synthetic synth.toml --no-progress", "synth.toml", files={"bot.toml": MM},
      absent=("results",)),
    m("synthetic-settings-unknown-key", "misspelt a synthetic setting",
      "backtest --config bot.toml --synthetic synth.toml --no-progress", "synth.toml", "sigmaa",
      files={"bot.toml": MM, "synth.toml": "sigmaa = 0.1\n"}, absent=("results",)),
    m("backtest-market-not-in-data", "traded a market the recording does not hold",
      "backtest --config bot.toml --data {repo}/data/sample --no-progress --out res", COND[:10],
      files={"bot.toml": MM + f'markets = ["{COND}"]\n'}, absent=("res/summary.json",)),
    m("backtest-slug-no-match", "chose a market slug the dataset lacks",
      "backtest --config bot.toml --data {repo}/data/sample --market-slug nba-* --no-progress", "--market-slug",
      "top-of-book",
      files={"bot.toml": MM}, absent=("results",)),
    m("backtest-synthetic-slug", "chose a market slug of the synthetic market",
      "backtest --config bot.toml --synthetic --market-slug nba-* --no-progress", "--market-slug", "synthetic",
      files={"bot.toml": MM}, absent=("results",)),
    # --- reports and comparisons ---
    m("report-not-results", "asked a report of a folder that holds no results", "report notes", "notes",
      files={"notes/a.txt": "hello\n"}, absent=("notes/report.html",)),
    m("report-nowhere", "asked a report of a path that is not there", "report results/backtest-1", "backtest-1"),
    m("report-text-file", "asked a report of a text file", "report notes.txt", "notes.txt",
      files={"notes.txt": "hello\n"}, absent=("notes.txt.report.html",)),
    m("report-recording-on-folder", "gave a results folder a recording",
      "report old --recording {repo}/data/sample", "--recording", files=RESULTS, absent=("old/report.html",)),
    m("report-recording-nowhere", "gave a journal a recording that is not there",
      "report {repo}/data/sample-session/journal.sqlite --recording recs --out r.html", "recs", absent=("r.html",)),
    m("report-summary-damaged", "asked a report of results whose summary was edited by hand", "report old",
      "summary.json", files={"old/summary.json": "{not json", "old/orders.jsonl": ""}, absent=("old/report.html",)),
    m("report-recording-as-results", "asked a report of a recording file",
      "report {repo}/data/sample/sample-20261123T195355Z-61fd-00000.jsonl.zst --out r.html", "jsonl.zst",
      "not a journal", absent=("r.html",)),
    m("compare-journal-nowhere", "compared a journal that is not there",
      "compare --config bot.toml --journal state/journal.sqlite --recording {repo}/data/sample-session --out cmp",
      "journal.sqlite", files={"bot.toml": MM}, absent=("cmp",)),
    m("compare-journal-not-sqlite", "compared a text file as a journal",
      "compare --config bot.toml --journal notes.txt --recording {repo}/data/sample-session --out cmp",
      "notes.txt", files={"bot.toml": MM, "notes.txt": "hello\n"}, absent=("cmp/summary.json",)),
    m("compare-recording-not-covering", "compared a session with a recording of another time",
      "compare --config {repo}/data/sample-session/bot.toml --journal {repo}/data/sample-session/journal.sqlite "
      "--recording {repo}/data/sample --out cmp", "recording", absent=("cmp/summary.json",)),
    m("compare-no-recording", "compared a session without its recording", "compare --journal j.sqlite",
      "--recording"),
    m("compare-out-is-file", "compared into a file as the results folder",
      "compare --config {repo}/data/sample-session/bot.toml --journal {repo}/data/sample-session/journal.sqlite "
      "--recording {repo}/data/sample-session --out out.txt", "out.txt", "is a file", files={"out.txt": "keep me\n"},
      kept=("out.txt",)),
    # --- sweeps ---
    m("sweep-unknown-key", "swept a key the config does not have",
      "sweep --config bot.toml --grid grid.toml --data {repo}/data/sample --no-progress --out sw",
      "half_spred_ticks", files={"bot.toml": MM, "grid.toml": '"strategy.params.half_spred_ticks" = [1, 2]\n'},
      absent=("sw",)),
    m("sweep-empty-grid", "swept an empty grid",
      "sweep --config bot.toml --grid grid.toml --data {repo}/data/sample --no-progress --out sw", "grid.toml",
      "nothing to sweep", files={"bot.toml": MM, "grid.toml": "# nothing yet\n"}, absent=("sw",)),
    m("sweep-empty-list", "gave a grid key no values",
      "sweep --config bot.toml --grid grid.toml --data {repo}/data/sample --no-progress --out sw", "half_spread_ticks",
      files={"bot.toml": MM, "grid.toml": '"strategy.params.half_spread_ticks" = []\n'}, absent=("sw",)),
    m("sweep-grid-missing", "named a grid file that is not there",
      "sweep --config bot.toml --grid grid.toml --data {repo}/data/sample --no-progress --out sw", "grid.toml",
      files={"bot.toml": MM}, absent=("sw",)),
    m("sweep-bad-value", "swept a parameter over values of the wrong type",
      "sweep --config bot.toml --grid grid.toml --data {repo}/data/sample --no-progress --out sw", "half_spread_ticks",
      files={"bot.toml": MM, "grid.toml": '"strategy.params.half_spread_ticks" = ["wide"]\n'}, absent=("sw",)),
    m("sweep-unknown-metric", "ranked a sweep by a figure that does not exist",
      "sweep --config bot.toml --grid grid.toml --data {repo}/data/sample --no-progress --out sw", "profit",
      files={"bot.toml": MM, "grid.toml": '"strategy.params.half_spread_ticks" = [1]\n[sweep]\nmetric = "profit"\n'},
      absent=("sw",)),
    m("sweep-scalar-value", "gave a grid key one value, not a list",
      "sweep --config bot.toml --grid grid.toml --data {repo}/data/sample --no-progress --out sw", "half_spread_ticks",
      files={"bot.toml": MM, "grid.toml": '"strategy.params.half_spread_ticks" = 2\n'}, absent=("sw",)),
    m("sweep-data-nowhere", "swept over data that is not there",
      "sweep --config bot.toml --grid grid.toml --data recs --no-progress --out sw", "recs",
      files={"bot.toml": MM, "grid.toml": '"strategy.params.half_spread_ticks" = [1, 2]\n'}, absent=("sw",)),
    m("sweep-out-is-file", "swept into a file as the results folder",
      "sweep --config bot.toml --grid grid.toml --data {repo}/data/sample --no-progress --out out.txt", "out.txt",
      "is a file", files={"bot.toml": MM, "out.txt": "keep me\n",
                          "grid.toml": '"strategy.params.half_spread_ticks" = [1]\n'}, kept=("out.txt",)),
    m("sweep-ray-unreachable", "swept on a Ray cluster that is not running",
      "sweep --config bot.toml --grid grid.toml --data {repo}/data/sample --no-progress --out sw --ray 127.0.0.1:{down_port}",
      *(("Ray", "127.0.0.1:{down_port}") if RAY else ("Ray",)),
      files={"bot.toml": MM, "grid.toml": '"strategy.params.half_spread_ticks" = [1]\n'}),
    # --- starting a strategy ---
    m("new-strategy-bad-name", "named a strategy with dashes and capitals", "new strategy Join-The-Touch",
      "Join-The-Touch", absent=("Join-The-Touch.py",)),
    m("new-strategy-keyword", "named a strategy after a Python keyword", "new strategy class", "class",
      absent=("class.py",)),
    m("new-strategy-stdlib-name", "named a strategy after a module of the standard library", "new strategy json",
      "'json'", "standard library", absent=("json.py", "test_json.py", "json.toml")),
    m("new-strategy-package-name", "named a strategy after this project's package", "new strategy bot",
      "'bot'", "installed", absent=("bot.py", "test_bot.py", "bot.toml")),
    m("new-strategy-existing", "wrote a strategy over files already there", "new strategy mine", "mine.py",
      files={"mine.py": "# my work\n"}, kept=("mine.py",), absent=("test_mine.py", "mine.toml")),
    m("new-strategy-dir-is-file", "gave a file as the folder of a new strategy", "new strategy mine --dir notes.txt",
      "notes.txt", files={"notes.txt": "hello\n"}, kept=("notes.txt",)),
    # --- the venue: down, and asked about what it does not list ---
    m("venue-down-markets", "listed markets with the exchange not started", "--config bot.toml markets",
      "cannot reach", "127.0.0.1", files={"bot.toml": DOWN}),
    m("venue-down-book", "asked a book with the exchange not started", "--config bot.toml book 123",
      "cannot reach", "127.0.0.1", files={"bot.toml": DOWN}),
    m("venue-down-record", "recorded with the exchange not started",
      "--config bot.toml record --token 123 --duration 1 --out recs", "cannot reach", "127.0.0.1",
      files={"bot.toml": DOWN}),
    m("venue-down-cancel-all", "cancelled everything with the exchange not started", "--config bot.toml cancel-all",
      "cannot reach", "127.0.0.1", files={"bot.toml": DOWN},
      env={"BOT_PRIVATE_KEY": "{key}", "BOT_API_KEY": "k", "BOT_API_SECRET": "c2VjcmV0", "BOT_API_PASSPHRASE": "p"},
      secret=True),
    m("venue-down-keys-derive", "derived API keys with the exchange not started", "--config bot.toml keys derive",
      "cannot reach", "127.0.0.1", files={"bot.toml": DOWN}, env={"BOT_PRIVATE_KEY": "{key}"}, secret=True),
    m("venue-down-config-check", "checked order sizes at a venue not started", "config check bot.toml --venue",
      "cannot reach", "127.0.0.1", files={"bot.toml": DOWN + MM}),
    m("venue-down-order-fetch", "fetched an order's tick with the exchange not started",
      "--config bot.toml order build --token 1 --side BUY --price 0.5 --size 10 --fetch --body-only --owner me",
      "cannot reach", "127.0.0.1", files={"bot.toml": DOWN}, env={"BOT_PRIVATE_KEY": "{key}"}, secret=True),
    m("markets-limit-zero", "asked for zero markets", "markets --limit 0", "--limit", "1..100"),
    m("markets-offset-negative", "gave a negative offset", "markets --offset -5", "--offset"),
    m("markets-tag-id-word", "gave a tag slug as a tag id", "markets --tag-id politics", "--tag-id", "politics"),
    m("book-unknown-token", "asked the book of a token the venue does not list", "--config bot.toml book 123",
      "token 123", files={"bot.toml": LOCAL}, venue="up"),
    m("record-unknown-token", "recorded a token the venue does not list",
      "--config bot.toml record --token 123 --duration 1 --out recs", "123", files={"bot.toml": LOCAL},
      venue="up", absent=("recs",)),
    m("record-unknown-market", "recorded a condition id the venue does not list",
      "--config bot.toml record --market 0x12 --duration 1 --out recs", "market 0x12", files={"bot.toml": LOCAL},
      venue="up"),
    m("record-unknown-event", "recorded an event slug the venue does not list",
      "--config bot.toml record --event no-such-event --duration 1 --out recs", "no-such-event",
      files={"bot.toml": LOCAL}, venue="up"),
    m("record-unknown-tag", "recorded a tag the venue does not use",
      "--config bot.toml record --tag no-such-tag --duration 1 --out recs", "--tag no-such-tag",
      files={"bot.toml": LOCAL}, venue="up"),
    m("record-out-is-file", "recorded onto an existing file", "record --token 123 --out notes.txt", "notes.txt",
      files={"notes.txt": "keep me\n"}, kept=("notes.txt",)),
    m("record-nothing-chosen", "recorded without choosing markets", "record --duration 5", "--token"),
    # --- secrets ---
    m("orders-no-key", "listed orders with no key set", "orders", "BOT_PRIVATE_KEY"),
    m("orders-no-api-key", "listed orders with the key but no API credentials", "orders", "BOT_API_KEY",
      env={"BOT_PRIVATE_KEY": "{key}"}, secret=True),
    m("keys-derive-no-key", "derived API keys with no key set", "keys derive", "BOT_PRIVATE_KEY"),
    m("malformed-key", "set a private key with a typo", "keys derive", "BOT_PRIVATE_KEY",
      env={"BOT_PRIVATE_KEY": "{bad_key}"}, secret=True),
    m("short-key", "set a private key cut short", "orders", "BOT_PRIVATE_KEY",
      env={"BOT_PRIVATE_KEY": KEY[:-1], "BOT_API_KEY": "k", "BOT_API_SECRET": "c2VjcmV0",
           "BOT_API_PASSPHRASE": "p"}, secret=True),
    m("check-malformed-key", "checked secrets with a malformed key", "config check bot.toml --secrets",
      "BOT_PRIVATE_KEY", files={"bot.toml": ""}, env={"BOT_PRIVATE_KEY": "{bad_key}"}, secret=True),
    m("api-secret-malformed", "pasted an API secret that is not base64", "--config bot.toml orders",
      "BOT_API_SECRET", files={"bot.toml": DOWN},
      env={"BOT_PRIVATE_KEY": "{key}", "BOT_API_KEY": "k", "BOT_API_SECRET": "not base64!!", "BOT_API_PASSPHRASE": "p"},
      secret=True),
    m("keys-new-no-passphrase", "made a keystore with no passphrase and no terminal", "keys new key.json",
      "BOT_KEYSTORE_PASSPHRASE", absent=("key.json",)),
    m("api-passphrase-missing", "exported the key and API key and secret but not the passphrase", "orders",
      "BOT_API_PASSPHRASE", env={k: v for k, v in CREDS.items() if k != "BOT_API_PASSPHRASE"}, secret=True),
    m("keys-new-bad-work", "asked scrypt for a work factor that is not a power of two", "keys new key.json --work 3",
      "--work 3", "power of two", env={"BOT_KEYSTORE_PASSPHRASE": "correct horse"}),
    m("keys-new-existing", "made a new keystore over an existing file", "keys new key.json", "key.json",
      files={"key.json": "{}\n"}, kept=("key.json",), env={"BOT_KEYSTORE_PASSPHRASE": "correct horse"}),
    # --- orders built offline ---
    m("order-no-size", "built an order without a size", "order build --token 1 --side BUY --price 0.5",
      "needs --size", env={"BOT_PRIVATE_KEY": "{key}"}, secret=True),
    m("order-seven-decimals", "built an order of 7 decimals",
      "order build --token 1 --side BUY --price 0.5 --size 1.0000001 --body-only --owner me", "1.0000001",
      env={"BOT_PRIVATE_KEY": "{key}"}, secret=True),
    m("order-off-tick", "priced an order off the tick", "order build --token 1 --side BUY --price 0.505 --size 10 "
      "--body-only --owner me", "0.505", env={"BOT_PRIVATE_KEY": "{key}"}, secret=True),
    m("order-bad-tick", "gave a tick the venue does not use",
      "order build --token 1 --side BUY --price 0.5 --size 10 --tick 0.05 --body-only --owner me", "0.05",
      env={"BOT_PRIVATE_KEY": "{key}"}, secret=True),
    m("order-side-word", "wrote the side as a word", "order build --token 1 --side long --price 0.5 --size 10",
      "--side", "LONG"),
    # --- the command line itself ---
    m("command-typo", "misspelt a command", "backtst --synthetic", "backtst"),
    m("log-level-word", "asked for verbose logs", "--log-level verbose markets", "--log-level", "verbose"),
    m("backtest-no-source", "backtested without saying on what", "backtest", "--data", "--synthetic"),
    m("demo-unknown-strategy", "asked the demo for a strategy it does not ship", "demo --strategy nosuch",
      "nosuch"),
    m("positions-bad-user", "gave a name as the wallet", "--config bot.toml positions --user alice",
      "alice", "wallet address", files={"bot.toml": LOCAL}, venue="up"),
    # --- one process at a time, one port per server ---
    m("run-journal-held", "started a second run on a journal another run holds",
      "run --config bot.toml --duration 1", "in use by process", setup="held_journal",
      files={"bot.toml": LOCAL + MM + '[journal]\npath = "state/journal.sqlite"\n'},
      env={"BOT_PRIVATE_KEY": "{key}", "BOT_API_KEY": "k", "BOT_API_SECRET": "c2VjcmV0", "BOT_API_PASSPHRASE": "p"},
      venue="up", secret=True),
    m("exchange-config-misspelt", "misspelt a key of the exchange config", "exchange --config exch.toml",
      "exch.toml", "markts", files={"exch.toml": "markts = 3\n"}),
    m("exchange-port-busy", "started the exchange on a port in use",
      "exchange --clob-port {busy} --catalog-port 0 --data-port 0", "{busy}", setup="busy_port"),
    m("demo-journal-is-folder", "gave the demo a folder as its journal", "demo --journal state --duration 1 --no-view",
      "journal state", "cannot be written", files={"state/x": ""}),
    m("exchange-config-missing", "gave the exchange a config that is not there", "exchange --config exch.toml",
      "exch.toml"),
]


# --- running one ---------------------------------------------------------------------------------


@dataclass
class Answer:
    code: int | None
    out: str
    err: str
    raised: str = ""  # an exception that escaped ``main``


class Places:
    """Where the placeholders point: the checkout, a closed port, the local exchange, a busy port."""

    def __init__(self, urls: Mapping[str, str] | None = None) -> None:
        port = closed_port()
        self.values = {"repo": str(REPO), "down": f"http://127.0.0.1:{port}", "down_port": str(port), "key": KEY,
                       "bad_key": BAD_KEY, **(urls or {})}

    def fill(self, text: str, extra: Mapping[str, str] = {}) -> str:
        for name, value in {**self.values, **extra}.items():
            text = text.replace("{" + name + "}", value)
        return text


def closed_port() -> int:
    """A port nothing listens on (the system's pick, released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def exchange_urls(ex) -> dict[str, str]:
    return {"clob": ex.urls.clob, "catalog": ex.urls.catalog, "data": ex.urls.data, "ws": ex.urls.ws}


@contextlib.contextmanager
def _world_readable_secrets(folder: Path, extra: dict) -> Iterator[None]:
    (folder / "secrets.toml").chmod(0o644)
    yield


@contextlib.contextmanager
def _private_secrets(folder: Path, extra: dict) -> Iterator[None]:
    (folder / "secrets.toml").chmod(0o600)
    yield


@contextlib.contextmanager
def _held_journal(folder: Path, extra: dict) -> Iterator[None]:
    from bot.execution.exclusive import Exclusive

    held = Exclusive(folder / "state" / "journal.sqlite")
    try:
        yield
    finally:
        held.release()


@contextlib.contextmanager
def _busy_port(folder: Path, extra: dict) -> Iterator[None]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        extra["busy"] = str(s.getsockname()[1])
        yield


SETUPS: dict[str, Callable[[Path, dict], contextlib.AbstractContextManager]] = {
    "world_readable_secrets": _world_readable_secrets, "private_secrets": _private_secrets,
    "held_journal": _held_journal, "busy_port": _busy_port,
}


@contextlib.contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in (*SECRETS_ENV, *env)}
    for k in SECRETS_ENV:
        os.environ.pop(k, None)
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def _inside(folder: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def run(mistake: Mistake, folder: Path, places: Places, *, subprocess: bool = False) -> tuple[Answer, list[str]]:
    """Make ``mistake`` in the empty ``folder``: its answer, and what is wrong with it (empty: clean).
    In this process through ``bot.cli.main`` (no terminal on stdin), or with ``subprocess`` as
    ``python -m bot.cli`` in a process of its own."""
    extra: dict[str, str] = {}
    for name, content in mistake.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(places.fill(content))
    before = {name: (folder / name).read_bytes() for name in mistake.kept}
    setup = SETUPS[mistake.setup](folder, extra) if mistake.setup else contextlib.nullcontext()
    with setup:
        argv = [places.fill(a, extra) for a in mistake.argv]
        env = {k: places.fill(v, extra) for k, v in mistake.env.items()}
        present = _listing(folder)
        served_before = _serving(METRICS_PORT)
        answer = (_in_subprocess if subprocess else _in_process)(argv, env, folder)
        written = sorted(_listing(folder) - present)
        words = [places.fill(w, extra) for w in mistake.words]
    wrong = faults(mistake, answer, folder, before, words, places)
    if written and mistake.code != 0:
        wrong.append(f"wrote {', '.join(written[:3])}")
    if not subprocess and not served_before and _serving(METRICS_PORT) and mistake.code != 0:
        wrong.append(f"left the metrics port {METRICS_PORT} served")  # a refusal serves nothing
    return answer, wrong


METRICS_PORT = MetricsConfig().port  # where a run or the demo serves its metrics by default


def _serving(port: int) -> bool:
    """Whether this very process listens on ``port`` (Linux: its sockets among the listening ones of
    ``/proc/net/tcp``); another process on the port, a test running beside this one, does not count."""
    mine = set()
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            mine.add(target[8:-1])
    with open("/proc/net/tcp") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port and fields[9] in mine:
                return True
    return False


def _in_process(argv: list[str], env: Mapping[str, str], folder: Path) -> Answer:
    import structlog

    from bot.cli import main

    saved_logging, saved_stdin = structlog.get_config(), sys.stdin
    saved_path, saved_modules = list(sys.path), set(sys.modules)
    out, err = io.StringIO(), io.StringIO()
    sys.stdin = io.StringIO()  # no terminal: nothing waits for a passphrase typed
    with _environment(env), _inside(folder), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            answer = Answer(main(argv), "", "")
        except BaseException as exc:  # noqa: BLE001 - what escaped is the finding
            answer = Answer(None, "", "", raised=f"{type(exc).__name__}: {exc}")
        finally:
            structlog.configure(**saved_logging)
            sys.stdin = saved_stdin
    sys.path[:] = saved_path  # the scratch folder's modules go with it (each case names its own)
    for name in set(sys.modules) - saved_modules:
        if str(getattr(sys.modules[name], "__file__", None) or "").startswith(str(folder)):
            del sys.modules[name]
    answer.out, answer.err = out.getvalue(), err.getvalue()
    return answer


def _in_subprocess(argv: list[str], env: Mapping[str, str], folder: Path) -> Answer:
    import subprocess

    base = {k: v for k, v in os.environ.items() if k not in SECRETS_ENV}
    done = subprocess.run([sys.executable, "-m", "bot.cli", *argv], cwd=folder, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120, env={**base, **env, "PYTHONPATH": str(REPO)})
    return Answer(done.returncode, done.stdout, done.stderr)


def _listing(folder: Path) -> set[str]:
    """Every file and folder under ``folder`` (but Python's bytecode caches of imported modules)."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if "__pycache__" not in p.parts}


def faults(mistake: Mistake, answer: Answer, folder: Path, before: Mapping[str, bytes], words: list[str],
           places: Places) -> list[str]:
    """What is unclean about ``answer`` (empty: a clean answer)."""
    wrong: list[str] = []
    if answer.raised:
        wrong.append(f"raised {answer.raised}")
    lines = answer.err.splitlines()
    if answer.code != mistake.code:
        wrong.append(f"exit {answer.code}, expected {mistake.code}")
    if len(lines) != 1:
        wrong.append(f"{len(lines)} lines on stderr")
    text = answer.out + answer.err
    if "Traceback" in text:
        wrong.append("a traceback")
    if "internal error" in answer.err:
        wrong.append("an internal error")
    if answer.out:
        wrong.append("printed on stdout")
    line = lines[0] if lines else ""
    missing = [w for w in words if w not in line]
    if missing:
        wrong.append(f"the line lacks {missing}")
    if mistake.secret and (KEY[2:] in text or BAD_KEY[2:] in text or KEY[2:-1] in text):
        wrong.append("a secret shown")
    for name in mistake.absent:
        if (folder / name).exists():
            wrong.append(f"{name} written")
    for name, content in before.items():
        if not (folder / name).is_file() or (folder / name).read_bytes() != content:
            wrong.append(f"{name} changed")
    return wrong


def needs_venue() -> bool:
    return any(x.venue == "up" for x in MISTAKES)


def first_line(answer: Answer) -> str:
    return (answer.err.splitlines() or [answer.raised or "(nothing on stderr)"])[0]


__all__ = ["MISTAKES", "Mistake", "Places", "exchange_urls", "first_line", "run"]

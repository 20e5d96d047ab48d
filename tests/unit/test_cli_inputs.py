"""Bad input on the command line and in config files: one line on stderr naming the option (or key
and file), the value and the allowed range, exit code 2, never a traceback; and nothing a parser
accepts is out of its declared range."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import threading
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bot.commands
from bot import cli
from bot.cli import main
from bot.exchange import cli as exchange_cli
from bot.exchange.config import load_config
from bot.ops.arguments import Range

KEY = "0x0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
API_KEY = "00000000-1111-2222-3333-444444444444"
BUILD = ["order", "build", "--token", "1", "--side", "BUY", "--price", "0.5"]
DIGITS_80 = "1234567890" * 8
DIGITS_33 = "123456789012345678901234567890123"
RUN_EXCHANGE = exchange_cli.run
COMMAND_MODULES = [importlib.import_module(f"bot.commands.{m.name}") for m in pkgutil.iter_modules(bot.commands.__path__)]


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """No config/bot.toml of the checkout, a signing key, and no exchange ever started."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BOT_PRIVATE_KEY", KEY)
    for name in ("BOT_API_KEY", "BOT_API_SECRET", "BOT_API_PASSPHRASE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(exchange_cli, "run", lambda args, **kw: pytest.fail("the exchange was started"))


def one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err
    return lines[0]


# Every bad input of the review, then their neighbours: (argv, words the one error line must hold).
BAD_ARGV = [
    (["keys", "derive", "--nonce", DIGITS_80], ["--nonce", DIGITS_80[:20], "0..2^256-1"]),
    ([*BUILD, "--size", "1e30"], ["--size", "'1e30'", "(0, 1000000000]"]),
    ([*BUILD, "--amount", "1e40"], ["--amount", "'1e40'", "(0, 1000000000]"]),
    ([*BUILD, "--size", "1", "--timestamp-ms", DIGITS_33], ["--timestamp-ms", DIGITS_33, "1000000000000..9999999999999"]),
    (["exchange", "--error-rate", "5"], ["--error-rate", "'5'", "[0, 1]"]),
    (["exchange", "--markets", "-3"], ["--markets", "'-3'", "0..1000"]),
    (["exchange", "--heartbeat-timeout", "-5"], ["--heartbeat-timeout", "'-5'", "(0, 86400]"]),
    (["exchange", "--flow-interval", "0"], ["--flow-interval", "'0'", "(0, 86400]"]),
    (["exchange", "--flow-interval", "nan"], ["--flow-interval", "'nan'"]),
    (["exchange", "--clob-port", "70000"], ["--clob-port", "'70000'", "0..65535"]),
    (["exchange", "--latency-ms", "1", "inf"], ["--latency-ms", "'inf'"]),
    (["exchange", "--fault-seed", "-1"], ["--fault-seed", "'-1'", "0..2^63-1"]),
    (["exchange", "--demo-usdc", "1e99"], ["--demo-usdc", "'1e99'"]),
    ([*BUILD, "--size", "1", "--type", "GTD", "--expiration", "+" + DIGITS_33], ["--expiration", "+SECONDS"]),
    ([*BUILD, "--size", "1", "--salt", str(2**53)], ["--salt", str(2**53), "0..2^53-1"]),
    ([*BUILD, "--size", "NaN"], ["--size", "'NaN'"]),
    ([*BUILD, "--size", "Infinity"], ["--size", "'Infinity'"]),
    ([*BUILD[:-1], "1.5", "--size", "1"], ["--price", "'1.5'", "(0, 1)"]),
    ([*BUILD, "--size", "1", "--tick", "1e99999"], ["--tick", "'1e99999'"]),
    ([*BUILD, "--size", "1", "--min-size", "-1"], ["--min-size", "'-1'"]),
    (["book", "1", "--depth", "0"], ["--depth", "'0'", "1..10000"]),
    (["markets", "--limit", "101"], ["--limit", "'101'", "1..100"]),
    (["positions", "--limit", "501"], ["--limit", "'501'", "0..500"]),
    (["run", "--duration", "0"], ["--duration", "'0'"]),
    (["demo", "--duration", "nan"], ["--duration", "'nan'"]),
    (["demo", "--metrics-port", "99999"], ["--metrics-port", "'99999'", "0..65535"]),
    (["demo", "--markets", "0"], ["--markets", "'0'", "1..100"]),
    (["demo", "--seed", "x"], ["--seed", "'x'"]),
]


@pytest.mark.parametrize("argv, words", BAD_ARGV, ids=lambda v: " ".join(v)[:60] if isinstance(v, list) else "")
def test_bad_option_is_one_line_naming_option_value_and_range(capsys, argv, words):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    line = one_line(err)
    for word in words:
        assert word in line, line


BAD_FILES = [
    ("[venue.timeouts]\nconnect = -1\n", ["connect", "> 0", "(got -1)"]),
    ("[venue.timeouts]\nread = 0\n", ["read", "> 0", "(got 0)"]),
    ("[venue.timeouts]\nconnect = nan\n", ["venue.timeouts.connect", "finite", "nan"]),
    ("[risk]\nrate_window_s = inf\n", ["risk.rate_window_s", "finite", "inf"]),
    ("[metrics]\nport = 70000\n", ["metrics.port", "(got 70000)"]),
    (b"\x00\xff\xfe binary", ["not valid TOML", "not UTF-8"]),
]


@pytest.mark.parametrize("text, words", BAD_FILES)
def test_bad_config_file_is_one_line_naming_file_key_and_value(capsys, tmp_path, text, words):
    f = tmp_path / "bot.toml"
    f.write_bytes(text if isinstance(text, bytes) else text.encode())
    for argv in (["config", "check", str(f)], ["--config", str(f), "book", "1"]):
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == 2 and out == ""
        line = one_line(err)
        assert f"error: {f}: " in line
        for word in words:
            assert word in line, line


@pytest.mark.parametrize("text, words", [
    (b"\xff\xfe", ["not valid TOML"]),
    ("markets = -3\n", ["$.markets", "(got -3)"]),
    ("[faults]\nerror_rate = 5\n", ["$.faults.error_rate", "<= 1", "(got 5)"]),
    ("[flow]\ninterval_s = 0\n", ["$.flow.interval_s", "> 0"]),
])
def test_bad_exchange_config_file_names_the_file(capsys, tmp_path, text, words):
    f = tmp_path / "exchange.toml"
    f.write_bytes(text if isinstance(text, bytes) else text.encode())
    stop = threading.Event()
    stop.set()  # were the file accepted, the exchange would stop at once (and the test fail)
    assert RUN_EXCHANGE(exchange_cli.build_parser().parse_args(["--config", str(f), "--free-ports"]), stop=stop) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"bot exchange: {f}: ")
    for word in words:
        assert word in line, line


def test_exchange_config_loader_names_the_file(tmp_path):
    f = tmp_path / "exchange.toml"
    for content in (b"\xff\xfe", b"markets = 'many'\n", b"[flow\n"):
        f.write_bytes(content)
        with pytest.raises(ValueError, match=re.escape(f"{f}: ")):
            load_config(f)


def test_body_only_takes_the_owner_from_the_configured_api_key(capsys, monkeypatch):
    monkeypatch.setenv("BOT_API_KEY", API_KEY)  # no secret, no passphrase: --body-only needs neither
    code = main([*BUILD, "--size", "10", "--body-only"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out.splitlines()[-1])["owner"] == API_KEY
    monkeypatch.delenv("BOT_API_KEY")
    assert main([*BUILD, "--size", "10", "--body-only"]) == 2
    assert "--owner" in one_line(capsys.readouterr().err)


# -- any argument vector: 0 or 2, one line, never a traceback -----------------------------------

COMMANDS = [[], ["markets"], ["book"], ["order", "build"], ["keys", "derive"], ["config", "check"], ["exchange"],
            ["cancel-all"], ["orders"], ["positions"], ["run"], ["demo"], ["nope"]]


def _subparser(parser, path: list[str]):
    for word in path:
        sub = next((a for a in parser._actions if a.choices and isinstance(a.choices, dict)), None)
        if sub is None or word not in sub.choices:
            return None
        parser = sub.choices[word]
    return parser


def _options(parser, path: list[str]) -> list[str]:
    """The option strings of the (sub)parser ``path`` names."""
    p = _subparser(parser, path)
    return [s for a in (p._actions if p else ()) for s in a.option_strings if s not in ("-h", "--help")]


PARSER = cli.build_parser()
OPTIONS = {tuple(c): _options(PARSER, c) + _options(PARSER, []) for c in COMMANDS}
ODD = ["nan", "NaN", "inf", "-inf", "Infinity", "1e40", "1e-30", "-0", "0", "1", "0.5", "-1", "0x10", "1_000",
       "٣", " 7 ", "", "+5", "+", DIGITS_80, "9" * 5000, "1e999999999999999999", "0.1", "0.001", "65536", "BUY",
       "GTD", "on", "\n", "a\nb"]
VALUE = st.sampled_from(ODD) | st.text(max_size=12) | st.integers().map(str) | st.floats().map(str) | \
    st.decimals(allow_nan=True).map(str)


@st.composite
def argv(draw) -> list[str]:
    command = draw(st.sampled_from(COMMANDS))
    options = OPTIONS[tuple(command)]
    tokens = draw(st.lists(st.sampled_from(options) | VALUE if options else VALUE, max_size=6))
    return [*command, *tokens]


def _in_range(action, value) -> bool:
    """Whether a parsed ``value`` lies in the range the option declares (True for other options)."""
    check = getattr(action.type, "range", action.type)
    if not isinstance(check, Range) or value is None:
        return True
    values = value if isinstance(value, list) else [value]
    return all((Decimal(v) if check.kind is Decimal else v) in check for v in values)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv())
def test_any_argument_vector_exits_0_or_2_with_one_line(capsys, monkeypatch, argv):
    parsed = []
    for module in COMMAND_MODULES:  # parsing alone: no command runs, nothing is sent or served
        for name in dir(module):
            if name.startswith("cmd_"):
                monkeypatch.setattr(module, name, lambda session: parsed.append(session.args) or 0)
    code = main(argv)
    out, err = capsys.readouterr()
    assert code in (0, 2), (argv, err)
    assert "Traceback" not in out + err
    if code == 2:
        assert len(err.splitlines()) == 1, (argv, err)
    for args in parsed:  # whatever was accepted is within its declared range
        path = [w for w in (args.command, *(getattr(args, f"{args.command}_command", None) or "",)) if w]
        sub = _subparser(PARSER, path)
        for action in (sub._actions if sub else []):
            assert _in_range(action, getattr(args, action.dest, None)), (argv, action.dest)

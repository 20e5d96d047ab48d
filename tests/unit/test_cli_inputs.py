"""Bad input in config files: one line on stderr naming the file, the key and the value, exit code
2, never a traceback."""

from __future__ import annotations

import re

import pytest

from bot.cli import main
from bot.exchange import cli as exchange_cli
from bot.exchange.config import load_config

KEY = "0x0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"


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


def test_exchange_config_loader_names_the_file(tmp_path):
    f = tmp_path / "exchange.toml"
    for content in (b"\xff\xfe", b"markets = 'many'\n", b"[flow\n"):
        f.write_bytes(content)
        with pytest.raises(ValueError, match=re.escape(f"{f}: ")):
            load_config(f)

"""The shipped config files, mutated (bytes flipped, cut short, lines dropped or doubled, a value
swapped for another TOML type, huge or non-finite numbers, deep nesting): each loader gives a
config or its one typed error, on one line, in bounded time; a secrets file's error never shows a
secret it held."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.backtest.sweep import SweepError, parse_grid
from bot.exchange.config import ExchangeConfig, load_config
from bot.ops.config import BotConfig, ConfigError, decode_bot_config
from bot.ops.secrets import secrets_from_file

REPO = Path(__file__).resolve().parents[2]
FILES = {name: (REPO / "config" / name).read_bytes()
         for name in ("bot.example.toml", "exchange.toml", "sweep.example.toml", "secrets.example.toml")}
KEY = "0x" + "7d" * 32
SECRETS = (FILES["secrets.example.toml"].replace(b'private_key = ""', f'private_key = "{KEY}"'.encode())
           .replace(b'api_secret = ""', b'api_secret = "c2VjcmV0LXZhbHVl"'))
FILES["secrets.example.toml"] = SECRETS
ODD = ("nan", "inf", "-inf", "1e999", "9" * 400, "-1", "0", "true", '""', '"x"', "[]", "{}", "[[1], [2]]",
       "1979-05-27T07:32:00Z", '"""a\nb"""', "{ a = { b = { c = 1 } } }", "[" * 500 + "]" * 500)


def load(name: str, data: bytes, tmp: Path) -> None:
    """Load ``data`` as the file ``name``; assert the result or the typed, one-line error."""
    try:
        if name == "bot.example.toml":
            assert isinstance(decode_bot_config(data, "bot.toml"), BotConfig)
        elif name == "exchange.toml":
            path = tmp / "exchange.toml"
            path.write_bytes(data)
            try:
                assert isinstance(load_config(path), ExchangeConfig)
            except ValueError as exc:  # the exchange loader's one error type
                assert str(exc).startswith(f"{path}: ")
                raise ConfigError(str(exc)) from None
        elif name == "sweep.example.toml":
            parse_grid(data, BotConfig(), "grid.toml")
        else:
            path = tmp / "secrets.toml"
            path.write_bytes(data)
            path.chmod(0o600)
            secrets_from_file(path)
    except (ConfigError, SweepError) as exc:
        text = str(exc)
        assert text and len(text.splitlines()) == 1, text
        assert KEY[2:] not in text and "c2VjcmV0LXZhbHVl" not in text, text


def swap_value(data: bytes, line_no: int, value: str) -> bytes:
    lines = data.split(b"\n")
    i = line_no % len(lines)
    lines[i] = re.sub(rb"=\s*.*$", b"= " + value.encode(), lines[i], count=1)
    return b"\n".join(lines)


def test_every_file_under_every_kind_of_mutation(tmp_path):
    for name, data in FILES.items():
        n = len(data)
        spots = 8 if name == "sweep.example.toml" else 31  # a grid that loads checks every set: slower
        for cut in range(0, n, max(1, n // spots)):
            load(name, data[:cut], tmp_path)
        for pos in range(0, n, max(1, n // spots)):
            for byte in (0x00, 0x22, 0x3D, 0x5B, 0xFF):
                load(name, data[:pos] + bytes([byte]) + data[pos + 1:], tmp_path)
        lines = data.split(b"\n")
        for i in range(0, len(lines), 1 if spots > 8 else 3):
            load(name, b"\n".join(lines[:i] + lines[i + 1:]), tmp_path)  # a line dropped
            load(name, b"\n".join(lines[: i + 1] + lines[i:]), tmp_path)  # a line doubled
            load(name, swap_value(data, i, ODD[i % len(ODD)]), tmp_path)
        load(name, b"a = " + b"[" * 100_000 + b"]" * 100_000, tmp_path)
        load(name, b"a = " + b"{ b = " * 5_000 + b"1" + b" }" * 5_000, tmp_path)


@st.composite
def mutated(draw) -> tuple[str, bytes]:
    name = draw(st.sampled_from(sorted(FILES)))
    data = FILES[name]
    how = draw(st.sampled_from(["flip", "cut", "swap", "splice"]))
    if how == "flip":
        pos = draw(st.integers(0, len(data) - 1))
        return name, data[:pos] + bytes([draw(st.integers(0, 255))]) + data[pos + 1:]
    if how == "cut":
        return name, data[: draw(st.integers(0, len(data)))]
    if how == "splice":
        pos = draw(st.integers(0, len(data)))
        return name, data[:pos] + draw(st.binary(max_size=40)) + data[pos:]
    value = draw(st.one_of(st.sampled_from(ODD), st.integers().map(str), st.floats().map(repr),
                           st.text(max_size=20).map(lambda t: '"' + t.replace("\\", "").replace('"', "") + '"')))
    return name, swap_value(data, draw(st.integers(0, 1000)), value)


@settings(max_examples=300, deadline=5000, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(mutated())
def test_any_mutation_of_a_shipped_config_loads_or_is_one_typed_line(tmp_path, case):
    load(*case, tmp_path)

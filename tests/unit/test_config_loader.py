import os

import msgspec
import pytest

from bot.ops.config import ConfigError, decode_config, load_config, read_owner_only


class Sample(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str
    size: int = 5


def test_decode_and_reject_unknown(tmp_path):
    assert decode_config(b'name = "a"', Sample) == Sample("a", 5)
    with pytest.raises(ConfigError, match="unknown field `sise`"):
        decode_config(b'name = "a"\nsise = 3', Sample)
    with pytest.raises(ConfigError, match="Expected `int`"):
        decode_config(b'name = "a"\nsize = "x"', Sample)
    with pytest.raises(ConfigError, match="not valid TOML"):
        decode_config(b"name = ", Sample)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.toml", Sample)


class Window(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    seconds: float | None = 1.0
    label: str = "off"


class Nested(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    limit: int | None = 5
    inner: Window = Window()
    windows: tuple[Window, ...] = ()
    maybe: Window | None = None


def test_off_is_none_for_optional_fields_at_any_depth():
    text = b'''
limit = "off"
inner = { seconds = "off", label = "off" }
windows = [{ seconds = "off" }, { seconds = 2.0 }]
maybe = { seconds = "off" }
'''
    assert decode_config(text, Nested) == Nested(
        limit=None, inner=Window(None, "off"), windows=(Window(None), Window(2.0)), maybe=Window(None)
    )
    assert decode_config({"maybe": "off"}, Nested).maybe is None
    assert decode_config(b"", Nested) == Nested()  # absent: the default, on
    with pytest.raises(ConfigError, match='Expected `int` or "off", got `str` - at `\\$.limit`'):
        decode_config(b'limit = "none"', Nested, source="n.toml")


def test_secrets_file_must_be_owner_only(tmp_path):
    f = tmp_path / "secrets.toml"
    f.write_text("x = 1")
    os.chmod(f, 0o644)
    with pytest.raises(ConfigError, match="owner only"):
        read_owner_only(f)
    os.chmod(f, 0o600)
    assert read_owner_only(f) == b"x = 1"


def test_toml_nested_too_deeply_is_a_config_error_naming_the_file(tmp_path):
    import pytest

    from bot.exchange.config import load_config
    from bot.ops.config import ConfigError, decode_bot_config
    from bot.ops.secrets import secrets_from_file

    deep = b"a = " + b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(ConfigError, match="^bot.toml: not valid TOML .*nested too deeply"):
        decode_bot_config(deep, "bot.toml")
    f = tmp_path / "deep.toml"
    f.write_bytes(deep)
    with pytest.raises(ValueError, match=f"^{f}: not valid TOML .*nested too deeply"):
        load_config(f)
    f.chmod(0o600)
    with pytest.raises(ConfigError, match="secrets file is not valid TOML"):
        secrets_from_file(f)

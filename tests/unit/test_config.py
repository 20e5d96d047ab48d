"""The bot config file and the secrets loader: strict decoding, defaults, and no secret leaks."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import msgspec
import pytest

from bot.ops import logging as bot_logging
from bot.ops.config import (
    BotConfig,
    ConfigError,
    SecretsConfig,
    decode_bot_config,
    load_bot_config,
    resolve_bot_config,
    summarize,
)
from bot.ops.secrets import (
    ENV_API_PASSPHRASE,
    ENV_API_SECRET,
    ENV_PRIVATE_KEY,
    MissingSecret,
    load_secrets,
    secrets_from_env,
    secrets_from_file,
)
from bot.risk import RiskLimits
from bot.venue.units import UNIT

REPO = Path(__file__).resolve().parents[2]
KEY = "0x0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
ADDRESS = "0xFCAd0B19bB29D4674531d6f115237E16AfCE377c"
API_SECRET = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
PASSPHRASE = "passphrase-for-tests-0123"
COND = "0x" + "ab" * 32


def full_env() -> dict[str, str]:
    return {"BOT_PRIVATE_KEY": KEY, "BOT_API_KEY": "00000000-1111-2222-3333-444444444444",
            "BOT_API_SECRET": API_SECRET, "BOT_API_PASSPHRASE": PASSPHRASE}


# -- config ------------------------------------------------------------------------------------


def test_defaults_point_at_the_local_exchange():
    c = BotConfig()
    assert c.venue.clob_url == "http://127.0.0.1:8080"
    assert c.venue.catalog_url == "http://127.0.0.1:8081"
    assert c.venue.data_url == "http://127.0.0.1:8082"
    assert c.venue.ws_url == "ws://127.0.0.1:8080"
    assert (c.venue.chain_id, c.venue.signature_type, c.venue.funder, c.venue.timestamp_unit) == (137, 0, None, "ms")
    assert (c.metrics.host, c.metrics.port, c.metrics.enabled) == ("127.0.0.1", 9464, True)
    assert c.secrets.source == "env" and c.strategy.path == "" and c.log.level == "info"
    assert isinstance(c.risk, RiskLimits)
    assert decode_bot_config(b"") == c


def test_example_file_validates_and_sets_what_it_shows():
    c = load_bot_config(REPO / "config" / "bot.example.toml")
    assert c.strategy.path == "strategies.market_maker:MarketMaker"
    assert c.strategy.params["half_spread_ticks"] == 2
    assert c.venue.limits.scale == 1.0
    assert c.router.max_batch == 15
    assert c.journal.path == "state/journal.sqlite"
    assert c.risk == RiskLimits()  # the [risk] shown is the default, "off" where it is off
    assert c.risk.max_daily_loss is None and c.risk.price_band_ticks is None


def test_sections_decode_into_their_structs():
    c = decode_bot_config(
        f"""
        [venue]
        clob_url = "https://clob.example"
        chain_id = 80002
        signature_type = 2
        funder = "{ADDRESS}"
        timestamp_unit = "s"
        [venue.limits]
        scale = 0.5
        [strategy]
        path = "strategies.market_maker:MarketMaker"
        markets = ["{COND}"]
        params = {{ half_spread_ticks = 3 }}
        [risk]
        max_open_orders = 7
        [router]
        max_batch = 5
        [metrics]
        port = 9999
        enabled = false
        [journal]
        path = "/tmp/j.sqlite"
        [log]
        level = "debug"
        json = false
        """
    )
    assert c.venue.chain_id == 80002 and c.venue.signature_type == 2 and c.venue.funder == ADDRESS
    assert c.venue.limits.scale == 0.5 and c.venue.timestamp_unit == "s"
    assert c.strategy.markets == (COND,) and c.strategy.params == {"half_spread_ticks": 3}
    assert c.risk.max_open_orders == 7 and c.router.max_batch == 5
    assert (c.metrics.port, c.metrics.enabled) == (9999, False)
    assert c.journal.path == "/tmp/j.sqlite" and (c.log.level, c.log.json) == ("debug", False)


@pytest.mark.parametrize(
    "text, needle",
    [
        ("[venue]\nclob_urll = 'http://x'", "unknown field `clob_urll`"),
        ("[venu]\n", "unknown field `venu`"),
        ("[venue]\nchain_id = 1", "$.venue.chain_id"),
        ("[venue]\nsignature_type = 4", "$.venue.signature_type"),
        ("[venue]\nsignature_type = 3", "needs venue.funder"),
        ("[venue]\nfunder = '0x12'", "$.venue.funder"),
        ("[venue]\nclob_url = 'ftp://x'", "venue.clob_url must be a http or https URL"),
        ("[venue]\nws_url = 'http://x'", "venue.ws_url must be a ws or wss URL"),
        ("[venue]\ntimestamp_unit = 'us'", "$.venue.timestamp_unit"),
        ("[venue.limits]\nscale = 0", "scale"),
        ("[secrets]\nsource = 'file'", "needs secrets.file"),
        ("[strategy]\nmarkets = ['abc']", "$.strategy.markets[0]"),
        ("[strategy]\npath = 'not a path'", "strategy.path"),
        ("[risk]\nmax_order_size = -1", "must not be negative"),
        ("[risk]\nmax_ordr_size = 1", "unknown field `max_ordr_size`"),
        ("[router]\nmax_batch = 16", "max_batch"),
        ("[metrics]\nport = 70000", "$.metrics.port"),
        ("[log]\nlevel = 'loud'", "$.log.level"),
        ("[shell]\nevent_loop = 'trio'", "Invalid enum value 'trio' - at `$.shell.event_loop`"),
        ("[venue\n", "not valid TOML"),
        ("[risk]\nmax_daily_loss = 'of'", '`risk.max_daily_loss`: expected USDC as a number (10, 10.5 or "10.5") or "off", '
                                            "got 'of'"),
        ("[risk]\nstale_halt_s = 'OFF'", 'Expected `float` or "off", got `str` - at `$.risk.stale_halt_s`'),
        ("[risk]\nmax_position = 1.5555555", "`risk.max_position`: 1.5555555 shares has more than 6 decimals"),
        ("[risk]\nmax_position = true", "`risk.max_position`: expected a number of shares or \"off\", got true"),
        ("[risk]\nmax_errors = false", 'Expected `int` or "off", got `bool` - at `$.risk.max_errors`'),
        ("[risk]\nrate_window_s = 'off'", "Expected `float`, got `str` - at `$.risk.rate_window_s`"),  # never off
        ("[venue]\nfunder = 7", 'Expected `str` or "off", got `int` - at `$.venue.funder`'),
    ],
)
def test_bad_values_are_one_line_errors_naming_the_key(text, needle):
    with pytest.raises(ConfigError) as info:
        decode_bot_config(text, source="bot.toml")
    message = str(info.value)
    assert message.startswith("bot.toml: ")
    assert needle in message
    assert "\n" not in message


@pytest.mark.parametrize(
    "text",
    [
        f"[secrets]\nprivate_key = '{KEY}'",
        f"[venue]\napi_secret = '{API_SECRET}'",
        f"passphrase = '{PASSPHRASE}'",
    ],
)
def test_secrets_in_the_config_file_are_refused_without_echoing_them(text):
    with pytest.raises(ConfigError, match="looks like a secret") as info:
        decode_bot_config(text, source="bot.toml")
    for value in (KEY, API_SECRET, PASSPHRASE):
        assert value not in str(info.value)


def optional_limits() -> list[str]:
    """Every risk limit whose "none" is None (found from the struct, so a new one is covered)."""
    info = msgspec.inspect.type_info(RiskLimits)
    return [f.name for f in info.fields
            if isinstance(f.type, msgspec.inspect.UnionType)
            and any(isinstance(t, msgspec.inspect.NoneType) for t in f.type.types)]


def test_every_optional_limit_is_listed():
    assert set(optional_limits()) == {
        "max_order_size", "price_band_ticks", "price_band_bps", "max_position", "max_market_notional",
        "max_event_notional", "max_net_exposure", "max_event_loss", "max_open_orders", "max_orders_per_window",
        "max_daily_loss", "max_total_loss", "stale_halt_s", "max_errors", "max_reject_streak", "disconnect_halt_s",
    }


AMOUNTS = {"max_order_size", "max_position", "max_market_notional", "max_event_notional", "max_net_exposure",
           "max_event_loss", "max_daily_loss", "max_total_loss"}  # shares or USDC in a config file


@pytest.mark.parametrize("name", optional_limits())
def test_any_optional_risk_limit_is_switched_off_with_off(name):
    on = decode_bot_config(f"[risk]\n{name} = 7")
    assert getattr(on.risk, name) == (7 * UNIT if name in AMOUNTS else 7)  # shares, USDC: micro-units inside
    if name in AMOUNTS:
        assert decode_bot_config(f'[risk]\n{name} = "7.25"').risk == decode_bot_config(f"[risk]\n{name} = 7.25").risk \
            == msgspec.structs.replace(RiskLimits(), **{name: 7_250_000})
    off = decode_bot_config(f'[risk]\n{name} = "off"')
    assert getattr(off.risk, name) is None
    assert off.risk == msgspec.structs.replace(RiskLimits(), **{name: None})  # nothing else moves


def test_limits_that_default_on_stay_on_unless_switched_off():
    c = decode_bot_config('[risk]\nmax_order_size = "off"\ndisconnect_halt_s = "off"\nmax_daily_loss = 50')
    assert c.risk.max_order_size is None and c.risk.disconnect_halt_s is None
    assert c.risk.max_daily_loss == 50_000_000
    assert c.risk.max_position == RiskLimits().max_position  # untouched default: still on
    assert c.risk.stale_halt_s == 30.0


def test_off_applies_to_every_optional_setting_and_nowhere_else():
    c = decode_bot_config('[venue]\nfunder = "off"\n[strategy]\npath = "m:S"\n[strategy.params]\nmode = "off"')
    assert c.venue.funder is None
    assert c.strategy.params == {"mode": "off"}  # a plain table: the strategy's Params decide


def test_strategy_params_may_use_any_key_names():
    c = decode_bot_config('[strategy]\npath = "m:S"\n[strategy.params]\nsecret_sauce = 1')
    assert c.strategy.params == {"secret_sauce": 1}


def test_resolution_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_bot_config(None) == (BotConfig(), None)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "bot.toml").write_text("[metrics]\nport = 1234\n")
    config, path = resolve_bot_config(None)
    assert config.metrics.port == 1234 and path == Path("config/bot.toml")
    other = tmp_path / "other.toml"
    other.write_text("[metrics]\nport = 4321\n")
    assert resolve_bot_config(other)[0].metrics.port == 4321
    with pytest.raises(ConfigError, match="cannot read"):
        resolve_bot_config(tmp_path / "missing.toml")


def test_summary_is_one_line_without_secrets():
    line = summarize(decode_bot_config("[secrets]\nsource = 'file'\nfile = 's.toml'"))
    assert "\n" not in line and "secrets from file s.toml" in line and "chain 137" in line


# -- secrets -----------------------------------------------------------------------------------


def test_env_secrets_are_wrapped_redacted_and_registered():
    found = secrets_from_env(full_env())
    assert found.wallet().address == ADDRESS
    creds = found.credentials()
    assert creds.api_key == "00000000-1111-2222-3333-444444444444"
    for text in (repr(found), repr(creds), str(found.private_key), found.describe()):
        assert KEY not in text and KEY[2:] not in text and API_SECRET not in text and PASSPHRASE not in text
    # registered with the log redactor: a log line quoting them is masked
    stream = io.StringIO()
    bot_logging.configure("info", json=True, stream=stream)
    bot_logging.get_logger("t").info("oops", detail=f"key {KEY} pass {PASSPHRASE} sec {API_SECRET}")
    line = json.loads(stream.getvalue())
    assert KEY[2:] not in line["detail"] and PASSPHRASE not in line["detail"] and API_SECRET not in line["detail"]


@pytest.mark.parametrize(
    "drop, env_var",
    [("BOT_PRIVATE_KEY", ENV_PRIVATE_KEY), ("BOT_API_SECRET", ENV_API_SECRET),
     ("BOT_API_PASSPHRASE", ENV_API_PASSPHRASE)],
)
def test_missing_env_secret_names_the_variable(drop, env_var):
    env = full_env()
    del env[drop]
    found = secrets_from_env(env)
    with pytest.raises(MissingSecret, match=env_var):
        found.wallet() if drop == "BOT_PRIVATE_KEY" else found.credentials()


def test_malformed_secrets_are_reported_without_their_value():
    bad_key = "0x" + "zz" * 32
    with pytest.raises(ConfigError) as info:
        secrets_from_env({"BOT_PRIVATE_KEY": bad_key}).wallet()
    assert "BOT_PRIVATE_KEY" in str(info.value) and bad_key not in str(info.value)
    env = {**full_env(), "BOT_API_SECRET": "not base64 !!"}
    with pytest.raises(ConfigError, match="BOT_API_SECRET") as info:
        secrets_from_env(env).credentials()
    assert "not base64 !!" not in str(info.value)


def write_secrets(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    os.chmod(path, mode)
    return path


def test_file_secrets(tmp_path):
    f = write_secrets(tmp_path / "secrets.toml", f'private_key = "{KEY}"\napi_key = "k"\n'
                                                   f'api_secret = "{API_SECRET}"\napi_passphrase = "{PASSPHRASE}"\n')
    found = load_secrets(SecretsConfig(source="file", file=str(f)))
    assert found.wallet().address == ADDRESS and found.credentials().api_key == "k"
    assert found.origin == str(f)


def test_file_secrets_must_be_owner_only(tmp_path):
    f = write_secrets(tmp_path / "secrets.toml", f'private_key = "{KEY}"\n', mode=0o640)
    with pytest.raises(ConfigError, match="owner only"):
        secrets_from_file(f)


def test_file_missing_key_names_the_file_key(tmp_path):
    f = write_secrets(tmp_path / "secrets.toml", 'api_key = "k"\n')
    with pytest.raises(MissingSecret, match="private_key") as info:
        secrets_from_file(f).wallet()
    assert str(f) in str(info.value) and ENV_PRIVATE_KEY in str(info.value)


@pytest.mark.parametrize(
    "text, needle",
    [
        (f'privat_key = "{KEY}"\n', "unknown key `privat_key`"),
        (f'private_key = "{KEY}\n', "not valid TOML"),
        ("private_key = 12\n", "must be a string"),
    ],
)
def test_bad_secrets_file_never_echoes_its_content(tmp_path, text, needle):
    f = write_secrets(tmp_path / "secrets.toml", text)
    with pytest.raises(ConfigError, match=needle) as info:
        secrets_from_file(f)
    assert KEY[2:] not in str(info.value)


def test_env_is_the_default_source(monkeypatch):
    monkeypatch.setenv("BOT_PRIVATE_KEY", KEY)
    assert load_secrets(SecretsConfig()).wallet().address == ADDRESS


def test_reconciler_section():
    assert decode_bot_config("[reconciler]\norphan_policy = 'adopt'").reconciler.orphan_policy == "adopt"
    with pytest.raises(ConfigError, match="orphan_policy"):
        decode_bot_config("[reconciler]\norphan_policy = 'keep'")
    with pytest.raises(ConfigError, match="max_held_trades"):
        decode_bot_config("[reconciler]\nmax_held_trades = -1")

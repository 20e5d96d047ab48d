"""Configuration files: TOML decoded into frozen msgspec Structs that reject unknown keys.

Invariant: a config either decodes completely and validly or raises ``ConfigError`` with one line
naming the file and the offending key; secrets never come from the config file itself. TOML has no
null, so a setting whose "none" is ``None`` (a limit that can be off) is switched off with ``OFF``.
"""

from __future__ import annotations

import math
import os
import re
import stat
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import msgspec

from bot.core.feed import FeedConfig
from bot.core.quantities import QuantityError, in_units, map_table
from bot.engine.engine import EngineConfig
from bot.execution.journal import JournalConfig
from bot.execution.reconciler import ReconcilerConfig
from bot.execution.router import RouterConfig
from bot.exits import ExitRules
from bot.risk.limits import RiskLimits, StrategyLimits
from bot.sim.venue import SimVenueConfig
from bot.venue.limits import LimitsConfig
from bot.venue.shared_throttle import SharedLimitsConfig
from bot.venue.stream import StreamConfig
from bot.venue.transport import TransportConfig

T = TypeVar("T")

DEFAULT_CONFIG_PATH = Path("config/bot.toml")
"""Read when no ``--config`` is given and the file exists (relative to the working directory)."""

LOCAL_HOST = "127.0.0.1"
LOCAL_CLOB_PORT = 8080
LOCAL_CATALOG_PORT = 8081
LOCAL_DATA_PORT = 8082
"""Where the bot looks by default, and where ``bot exchange`` listens by default (the CLOB port
also serves the WebSockets); ``config/exchange.toml`` and ``config/bot.example.toml`` show them."""

_ADDRESS = re.compile(r"^0x[0-9a-fA-F]{40}$")
_CONDITION_ID = re.compile(r"^0x[0-9a-fA-F]{64}$")
_STRATEGY_PATH = re.compile(r"^[A-Za-z_][\w.]*[:.][A-Za-z_]\w*$")


def is_address(text: str) -> bool:
    """Whether ``text`` is a wallet address (``0x`` + 40 hex), as ``venue.funder`` must be."""
    return _ADDRESS.fullmatch(text) is not None


OFF = "off"
"""The config-file value of any setting that may be ``None`` (``max_daily_loss = "off"``): that
setting is off, whatever its default. TOML has no null, so nothing else can say it."""


class ConfigError(ValueError):
    """A configuration that cannot be used, explained in one line."""


def decode_config(data: bytes | str | dict[str, Any], type_: type[T], source: str = "config", *,
                  written: bool = True) -> T:
    """Decode TOML text (or an already-parsed table) into ``type_``, strictly; ``OFF`` stands for
    ``None`` wherever ``type_`` allows ``None``. Sizes, amounts and prices (``Shares``, ``Usdc``,
    ``Price`` fields) are read as written, in shares and USDC (``bot.core.quantities``), unless
    ``written`` is false: a table built from decoded structs, already in micro-units. A number
    that is not finite (TOML ``nan``, ``inf``) is refused wherever it appears; an out-of-range
    value is named with its key."""
    table = data if isinstance(data, dict) else decode_toml(data, source)
    _refuse_non_finite(table, source)
    try:
        table = switch_off(table, type_)
        if written:
            table = in_units(table, type_, off=OFF)
        return msgspec.convert(table, type=type_, strict=True)
    except QuantityError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    except msgspec.ValidationError as exc:
        # in a config file, the None of an optional setting is spelt OFF
        message = str(exc).replace(" | null`", f'` or "{OFF}"')
        raise ConfigError(f"{source}: {message}{_offending_value(table, message)}") from None


def decode_toml(data: bytes | str, source: str = "config") -> dict[str, Any]:
    """Parse TOML text; text that is not TOML (or not UTF-8) is a ``ConfigError`` naming ``source``."""
    try:
        return msgspec.toml.decode(data)
    except msgspec.DecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML ({exc})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML (not UTF-8 text: byte {exc.object[exc.start]:#04x} "
                          f"at offset {exc.start})") from None
    except RecursionError:
        raise ConfigError(f"{source}: not valid TOML (arrays or tables nested too deeply)") from None


def _refuse_non_finite(value: Any, source: str, where: str = "") -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{source}: `{where}` must be a finite number, got {value}")
    if isinstance(value, dict):
        for k, v in value.items():
            _refuse_non_finite(v, source, f"{where}.{k}" if where else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _refuse_non_finite(v, source, f"{where}[{i}]")


_AT = re.compile(r" - at `\$((?:\.[^.\[`]+|\[\d+\])*)`$")
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]")


def _offending_value(table: Any, message: str) -> str:
    """`` (got VALUE)`` for the scalar the decoder's ``message`` points at, else ``""``."""
    at = _AT.search(message)
    if at is None:
        return ""
    value = table
    for key, index in _STEP.findall(at.group(1)):
        try:
            value = value[int(index)] if index else value[key]
        except (KeyError, IndexError, TypeError, ValueError):
            return ""
    if isinstance(value, bool):
        return f" (got {str(value).lower()})"
    if isinstance(value, (int, float)):
        return f" (got {value})"
    if isinstance(value, str):
        return f" (got {value if len(value) <= 40 else value[:40] + '…'!r})"
    return ""


def switch_off(table: Any, type_: Any) -> Any:
    """A copy of the parsed ``table`` with ``OFF`` as ``None`` in every field of ``type_`` (nested
    structs, lists and tables included) that may be ``None``; anything else is left for the
    decoder to judge."""
    return map_table(table, type_, lambda value, _t, _key, optional: None if optional and value == OFF else value)


def load_config(path: str | os.PathLike[str], type_: type[T]) -> T:
    """Read and decode a TOML config file."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read ({exc.strerror})") from None
    return decode_config(raw, type_, source=str(p))


def read_owner_only(path: str | os.PathLike[str], what: str = "secrets file") -> bytes:
    """Read a secrets file (or a keystore: ``what``), refusing one that anybody but its owner can
    read or write."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read {what} ({exc.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{p}: is a folder; the {what} is a file")
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(f"{p}: {what} must be readable by its owner only (chmod 600)")
    try:
        return p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read {what} ({exc.strerror})") from None


# --------------------------------------------------------------------------------------------
# The bot's config file


def _check_url(name: str, url: str, schemes: tuple[str, ...]) -> None:
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in schemes or not rest or rest.startswith("/"):
        raise ValueError(f"venue.{name} must be a {' or '.join(schemes)} URL, got {url!r}")


class VenueConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Where each surface lives and how orders are signed.

    Each surface has its own base URL (the defaults are where ``bot exchange`` listens by
    default); ``funder`` is the maker for proxy/safe (types 1, 2) and the
    deposit wallet for type 3, which cannot do without it.
    """

    clob_url: str = f"http://{LOCAL_HOST}:{LOCAL_CLOB_PORT}"
    catalog_url: str = f"http://{LOCAL_HOST}:{LOCAL_CATALOG_PORT}"
    data_url: str = f"http://{LOCAL_HOST}:{LOCAL_DATA_PORT}"
    ws_url: str = f"ws://{LOCAL_HOST}:{LOCAL_CLOB_PORT}"
    chain_id: Literal[137, 80002] = 137
    signature_type: Annotated[int, msgspec.Meta(ge=0, le=3)] = 0
    funder: Annotated[str, msgspec.Meta(pattern=_ADDRESS.pattern)] | None = None
    builder_code: str = ""  # builder attribution code (address or bytes32 hex); empty = none
    timestamp_unit: Literal["ms", "s"] = "ms"  # SERVICE_TIMESTAMP unit of L2 requests
    limits: LimitsConfig = LimitsConfig()  # client-side rate limits; ``scale`` shrinks them all
    timeouts: TransportConfig = TransportConfig()

    def __post_init__(self) -> None:
        for name in ("clob_url", "catalog_url", "data_url"):
            _check_url(name, getattr(self, name), ("http", "https"))
        _check_url("ws_url", self.ws_url, ("ws", "wss"))
        if self.signature_type == 3 and self.funder is None:
            raise ValueError("venue.signature_type 3 (deposit wallet) needs venue.funder")


class SecretsConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Where the private key and API credentials come from: environment variables (``env``), an
    owner-only TOML file (``file``), or an encrypted Ethereum keystore holding the key
    (``keystore``: the file is its path, its passphrase comes from ``BOT_KEYSTORE_PASSPHRASE`` or
    the terminal, API credentials from the environment); never from this config file."""

    source: Literal["env", "file", "keystore"] = "env"
    file: str = ""

    def __post_init__(self) -> None:
        if self.source == "file" and not self.file:
            raise ValueError('secrets.source = "file" needs secrets.file (path of an owner-only TOML file)')
        if self.source == "keystore" and not self.file:
            raise ValueError('secrets.source = "keystore" needs secrets.file (path of an encrypted keystore file)')


class StrategyConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Which strategy runs (``"package.module:Class"``), on which markets, with which params.

    ``params`` stays a plain table here; the strategy's own ``Params`` struct validates it when
    the strategy is loaded. An empty ``path`` means no strategy is configured.
    """

    path: str = ""
    markets: tuple[Annotated[str, msgspec.Meta(pattern=_CONDITION_ID.pattern)], ...] = ()
    params: dict[str, Any] = {}
    exits: ExitRules = ExitRules()  # when it stops quoting and flattens (bot/exits.py)

    def __post_init__(self) -> None:
        if self.path and not _STRATEGY_PATH.match(self.path):
            raise ValueError(f"strategy.path must look like 'package.module:ClassName', got {self.path!r}")
        if not self.path:  # settings of no strategy would be read by nothing: a path left out, not meant
            unset = {"markets": (), "params": {}, "exits": ExitRules()}
            given = [k for k, value in unset.items() if getattr(self, k) != value]
            if given:
                raise ValueError(f"strategy.{given[0]} is set but strategy.path is not: name the strategy it is for "
                                 "('package.module:ClassName')")


_INSTANCE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class StrategyInstanceConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One of several strategies sharing the account (``[[strategies]]``): its ``name`` (in its
    logs and metrics), its class, its markets, its params and its own limits (``risk``)."""

    name: str
    path: str
    markets: tuple[Annotated[str, msgspec.Meta(pattern=_CONDITION_ID.pattern)], ...]
    params: dict[str, Any] = {}
    risk: StrategyLimits = StrategyLimits()
    exits: ExitRules = ExitRules()

    def __post_init__(self) -> None:
        if not _INSTANCE_NAME.match(self.name):
            raise ValueError(f"strategies.name must be 1-64 letters, digits, '.', '_' or '-', got {self.name!r}")
        if not _STRATEGY_PATH.match(self.path):
            raise ValueError(f"strategies.path of {self.name!r} must look like 'package.module:ClassName', "
                             f"got {self.path!r}")
        if not self.markets:
            raise ValueError(f"strategy {self.name!r} names no market: each of several strategies lists its own")


def check_strategies(instances: tuple[StrategyInstanceConfig, ...]) -> None:
    """Several strategies on one account: unique names, and no market (so no token) quoted by two
    of them. Raises ``ValueError`` with one line naming both strategies."""
    names: set[str] = set()
    owner: dict[str, str] = {}
    for s in instances:
        if s.name in names:
            raise ValueError(f"two strategies are named {s.name!r}: each needs its own name")
        names.add(s.name)
        for m in s.markets:
            if m in owner:
                raise ValueError(f"strategies {owner[m]!r} and {s.name!r} both quote market {m}: "
                                 "a token is quoted by one strategy only")
            owner[m] = s.name


def traded_markets(config: "BotConfig") -> tuple[str, ...]:
    """The condition ids the config trades: ``[strategy]``'s, or those of all ``[[strategies]]``."""
    if config.strategies:
        return tuple(m for s in config.strategies for m in s.markets)
    return tuple(config.strategy.markets)


def has_strategy(config: "BotConfig") -> bool:
    """True when the config names a strategy to run (``[strategy]`` or ``[[strategies]]``)."""
    return bool(config.strategy.path or config.strategies)


class MetricsConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The Prometheus endpoint (local only by default)."""

    enabled: bool = True
    host: str = LOCAL_HOST
    port: Annotated[int, msgspec.Meta(ge=0, le=65535)] = 9464


class LogConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Log level and format (JSON lines on stderr by default)."""

    level: Literal["debug", "info", "warning", "error", "critical"] = "info"
    json: bool = True


# --------------------------------------------------------------------------------------------
# The live shell (``[shell]``) and backtests (``[backtest]``)

# tighter than the venue's minimum keepalive: a dead connection is noticed within seconds
LIVE_STREAM = StreamConfig(ping_interval_s=5.0, stale_after_s=15.0, check_interval_s=1.0,
                           backoff_base_s=0.1, backoff_cap_s=2.0)
_OPTIONAL = ("orders_sync_s", "trades_poll_s", "positions_poll_s", "book_poll_s")
_MAX_S = 86_400.0


class ShellConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Cadences of the shell's periodic tasks, in seconds, and the streams' settings."""

    timer_interval_s: float = 0.5
    heartbeat_interval_s: float = 5.0
    heartbeats: bool = True
    trades_poll_s: float = 3.0
    orders_sync_s: float = 5.0  # the complete open-order listing, checked against ours (0 = never)
    positions_poll_s: float = 10.0
    book_poll_s: float = 1.0
    stop_timeout_s: float = 5.0
    stream: StreamConfig = LIVE_STREAM
    # the run's event loop (bot.live.event_loop): uvloop when installed, else asyncio; or either by name
    event_loop: Literal["auto", "asyncio", "uvloop"] = "auto"

    def __post_init__(self) -> None:
        for name in ("timer_interval_s", "heartbeat_interval_s", "stop_timeout_s") + _OPTIONAL:
            value = getattr(self, name)
            low_ok = value >= 0 if name in _OPTIONAL else value > 0
            if not (low_ok and value <= _MAX_S):
                bound = ">= 0" if name in _OPTIONAL else "> 0"
                raise ValueError(f"shell.{name} must be {bound} and at most {_MAX_S:g} seconds, got {value}")


class BacktestConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``[backtest]``: how a backtest runs (the simulated venue itself is ``[sim]``)."""

    seed: int = 1  # order ids, latency draws and trade ids
    sample_every_s: float = 1.0  # PnL and inventory series cadence, simulated seconds
    cache: bool = True  # build and read a recording's derived binary cache
    feed_delay: bool = True  # the venue sees events at their exchange time (else at receive time)
    # markets taken from top-of-book files (.parquet, .csv: bot.backtest.dataset), after the filters
    # below, in rank order; unset: every market dataset_slugs names, else 1
    dataset_markets: int | None = None
    dataset_slugs: tuple[str, ...] = ()  # slugs, or shell patterns of them ("nba-*"); empty: any
    dataset_category: str = ""  # the dataset's category column ("politics", "sports", ...); empty: any
    dataset_rank: Literal["snapshots", "spread"] = "snapshots"  # most polls first, or narrowest mean spread
    dataset_depth: int = 1000  # shares assumed behind each polled best price (the dataset has no depth)
    dataset_stale_polls: float = 3.0  # a dataset book is stale after this many polling intervals without a poll
    own_orders_recorded: bool = False  # the recordings were made while this account quoted: their books show its orders

    def __post_init__(self) -> None:
        if not 0 < self.sample_every_s <= 86_400:
            raise ValueError(f"backtest.sample_every_s must be within (0, 86400], got {self.sample_every_s}")
        if self.dataset_markets is not None and not 1 <= self.dataset_markets <= 10_000:
            raise ValueError(f"backtest.dataset_markets must be within 1..10000, got {self.dataset_markets}")
        if not 1 <= self.dataset_depth <= 10**9:
            raise ValueError(f"backtest.dataset_depth must be within 1..1000000000 shares, got {self.dataset_depth}")
        if not 1.0 <= self.dataset_stale_polls <= 1000.0:
            raise ValueError(f"backtest.dataset_stale_polls must be within 1..1000, got {self.dataset_stale_polls}")


class ResultsConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``[results]``: how a run's results folder is written (``bot.results.folder``)."""

    format: Literal["parquet", "jsonl"] = "parquet"  # orders, fills and series as Parquet, or JSON lines


class BotConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The whole bot config file; every section and key is optional.

    ``BotConfig()`` is a complete config that talks to the local exchange with the venue's limits.
    """

    venue: VenueConfig = VenueConfig()
    secrets: SecretsConfig = SecretsConfig()
    strategy: StrategyConfig = StrategyConfig()
    strategies: tuple[StrategyInstanceConfig, ...] = ()  # several strategies on one account
    risk: RiskLimits = RiskLimits()  # the account's limits (with several strategies: in total)
    router: RouterConfig = RouterConfig()
    reconciler: ReconcilerConfig = ReconcilerConfig()
    engine: EngineConfig = EngineConfig()
    feed: FeedConfig = FeedConfig()
    shell: ShellConfig = ShellConfig()
    sim: SimVenueConfig = SimVenueConfig()  # the simulated venue of paper trading and backtests
    backtest: BacktestConfig = BacktestConfig()
    results: ResultsConfig = ResultsConfig()
    metrics: MetricsConfig = MetricsConfig()
    journal: JournalConfig = JournalConfig()
    log: LogConfig = LogConfig()
    throttle: SharedLimitsConfig = SharedLimitsConfig()  # rate windows in memory, or shared on Redis

    def __post_init__(self) -> None:
        if self.strategies and (self.strategy.path or self.strategy.markets):
            raise ValueError("[strategy] and [[strategies]] are both set: use one (several strategies "
                             "are listed as [[strategies]])")
        check_strategies(self.strategies)


_SECRET_KEYS = ("private_key", "secret", "passphrase", "api_key", "password")


def _refuse_secrets(table: object, where: str = "") -> None:
    """A secret-looking key anywhere in the config file is an error (secrets have their own home)."""
    if isinstance(table, list):  # an array of tables: [[strategies]]
        for i, item in enumerate(table):
            _refuse_secrets(item, f"{where}[{i}]")
        return
    if not isinstance(table, dict):
        return
    for key, value in table.items():
        path = f"{where}.{key}" if where else str(key)
        if path == "strategy.params" or (path.startswith("strategies[") and path.endswith("].params")):
            continue
        if path != "secrets" and any(s in str(key).lower() for s in _SECRET_KEYS):
            raise ConfigError(
                f"`{path}` looks like a secret; secrets come from environment variables or the "
                "owner-only secrets file, never from the config file"
            )
        _refuse_secrets(value, path)


def decode_bot_config(data: bytes | str, source: str = "config") -> BotConfig:
    """Decode a bot config from TOML text; refuses unknown keys and secrets in the file."""
    table = decode_toml(data, source)
    try:
        _refuse_secrets(table)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    return decode_config(table, BotConfig, source=source)


def load_bot_config(path: str | os.PathLike[str]) -> BotConfig:
    """Read and decode a bot config file."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read ({exc.strerror})") from None
    return decode_bot_config(raw, source=str(p))


def resolve_bot_config(path: str | os.PathLike[str] | None) -> tuple[BotConfig, Path | None]:
    """The config to use: ``path`` if given, else ``config/bot.toml`` if present, else defaults.

    Returns the config and the file it came from (``None`` for the built-in defaults).
    """
    if path is not None:
        return load_bot_config(path), Path(path)
    if DEFAULT_CONFIG_PATH.is_file():
        return load_bot_config(DEFAULT_CONFIG_PATH), DEFAULT_CONFIG_PATH
    return BotConfig(), None


def summarize(config: BotConfig) -> str:
    """One line describing a config, without any secret."""
    v, s = config.venue, config.strategy
    strategy = f"strategy {s.path} on {len(s.markets)} market(s)" if s.path else "no strategy"
    if config.strategies:
        strategy = f"{len(config.strategies)} strategies ({', '.join(i.name for i in config.strategies)}) " \
                   f"on {len(traded_markets(config))} market(s)"
    secrets = "secrets from env" if config.secrets.source == "env" else f"secrets from file {config.secrets.file}"
    return (
        f"clob {v.clob_url}, chain {v.chain_id}, signature type {v.signature_type}, {strategy}, {secrets}, "
        f"metrics {'on ' + config.metrics.host + ':' + str(config.metrics.port) if config.metrics.enabled else 'off'}"
    )

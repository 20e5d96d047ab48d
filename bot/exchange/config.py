"""Configuration of the local exchange: frozen msgspec Structs that reject unknown fields.

Invariant: every field has a default, so ``ExchangeConfig()`` is a complete, runnable exchange
(one funded demo account, a seeded catalog, live synthetic books, the venue's limits, no faults),
and every number has a declared range (``msgspec.Meta``), checked whenever a config is decoded
from TOML or from ``bot exchange`` flags (which read their ranges from here).
Configs load from TOML (``load_config``) with the same field names as the Structs.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Literal

import msgspec

DAY_S = 86_400.0

SignatureTypeField = Annotated[int, msgspec.Meta(ge=0, le=3)]  # venue.md 2.4: 0 EOA .. 3 POLY_1271
Port = Annotated[int, msgspec.Meta(ge=0, le=65535)]  # 0 = a free port
Seed = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
Rate = Annotated[float, msgspec.Meta(ge=0, le=1)]  # a probability
Seconds = Annotated[float, msgspec.Meta(ge=0, le=DAY_S)]  # 0 = at once (or off, for a period)
Wait = Annotated[float, msgspec.Meta(gt=0, le=DAY_S)]  # a period that must pass before anything happens
Millis = Annotated[float, msgspec.Meta(ge=0, le=DAY_S * 1000)]
Count = Annotated[int, msgspec.Meta(ge=0, le=10_000)]


class FaultConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Deliberate misbehaviour, off by default. Rates are probabilities in [0, 1]."""

    latency_ms_min: Millis = 0.0  # added latency, uniform in [min, max] per request
    latency_ms_max: Millis = 0.0
    error_rate: Rate = 0.0  # share of requests answered 500 internal_error (any route)
    error_routes: tuple[str, ...] = ()  # restrict error_rate to these paths (empty = all)
    rate_limit_burst_every_s: Seconds = 0.0  # every N s, answer 429 to everything for burst_s
    rate_limit_burst_s: Seconds = 0.0
    restart_every_s: Seconds = 0.0  # engine restart cycle: 425 for restart_s, then post-only
    restart_s: Seconds = 0.0
    post_only_s: Seconds = 0.0
    ws_drop_every_s: Seconds = 0.0  # close every WebSocket connection this often
    user_event_delay_ms: Millis = 0.0  # delay user-channel events by this much
    user_event_duplicate_rate: Rate = 0.0  # send some user events twice
    user_event_reorder_rate: Rate = 0.0  # swap some adjacent user events
    settlement_fail_rate: Rate = 0.0  # trades that end FAILED (passed to the sim settlement)
    version_mismatch_rate: Rate = 0.0  # POST /order(s) answered {"error": "order_version_mismatch"}
    seed: Seed = 7

    def __post_init__(self) -> None:
        if self.latency_ms_min > self.latency_ms_max:
            raise ValueError(f"faults.latency_ms_min ({self.latency_ms_min}) is above "
                             f"faults.latency_ms_max ({self.latency_ms_max})")


class ServerFlowConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Synthetic background traders (bot/sim/flow.py) driven on the server clock."""

    enabled: bool = True
    interval_s: Wait = 0.25  # the longest wait between flow steps (a trader due sooner is stepped then)
    markets: Count = 0  # how many markets get traders (0 = all)
    speed: Annotated[float, msgspec.Meta(gt=0, le=1000)] = 1.0  # the traders' clock runs this much faster

    def __post_init__(self) -> None:
        if not 0 < self.speed <= 1000:
            raise ValueError(f"flow.speed must be within (0, 1000], got {self.speed}")


class ServerSettlementConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How long trades take through MATCHED -> MINED -> CONFIRMED."""

    mined_after_s: Seconds = 0.3
    confirmed_after_s: Seconds = 0.6


class AccountSeed(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """An extra funded account; with fixed API credentials when given (e.g. test vectors).

    Its funds sit in its wallet of ``signature_type`` (the EOA itself for 0); ``funder`` registers
    a given proxy, safe or deposit wallet for that type instead of the derived one.
    """

    private_key: str = ""  # 0x-hex; empty with an address = funds without a key
    address: str = ""
    api_key: str = ""
    secret: str = ""
    passphrase: str = ""
    usdc: str = "10000"
    tokens: dict[str, str] = {}  # token id -> shares held at start
    signature_type: SignatureTypeField = 0
    funder: str = ""

    def __post_init__(self) -> None:
        if self.funder and self.signature_type == 0:
            raise ValueError("an account's funder needs signature_type 1, 2 or 3")


class MarketSeed(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A market with fixed ids (for replaying known vectors); the complement token is made up."""

    condition_id: str
    token_id: str
    complement_token_id: str = ""
    tick_size: str = "0.01"
    neg_risk: bool = False
    question: str = ""
    mid: str = "0.5"
    fee_rate_bps: Annotated[int, msgspec.Meta(ge=0, le=10_000)] = 0  # the market's fee rule (bot.venue.fees)
    fee_exponent: Annotated[int, msgspec.Meta(ge=1, le=8)] = 1
    fee_rebate_bps: Annotated[int, msgspec.Meta(ge=0, le=10_000)] = 0  # makers' share of the fee worth


class ExchangeConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    host: str = "127.0.0.1"
    catalog_port: Port = 0  # 0 = a free port (``bot exchange`` defaults to the bot's ports instead)
    clob_port: Port = 0
    data_port: Port = 0
    single_port: bool = False  # serve every surface (and WebSockets) on one port
    port: Port = 0  # the port when single_port
    seed: Seed = 1
    catalog_file: str = ""  # JSON catalog to load instead of generating one
    markets: Annotated[int, msgspec.Meta(ge=0, le=1000)] = 8  # generated binary markets (neg-risk events on top)
    neg_risk_events: Annotated[int, msgspec.Meta(ge=0, le=100)] = 1
    neg_risk_outcomes: Annotated[int, msgspec.Meta(ge=2, le=26)] = 3
    extra_markets: tuple[MarketSeed, ...] = ()
    chain_id: Literal[137, 80002] = 137
    demo_usdc: str = "100000"  # the demo account's starting USDC
    demo_shares: str = "1000"  # shares of every outcome token the demo account starts with
    demo_signature_type: SignatureTypeField = 0  # the demo's funds sit in its wallet of this type
    # "random": the demo accounts' keys and API credentials come from the CSPRNG (shown once);
    # "deterministic": computed from the seed, so anyone who knows it can trade as them (tests, demos)
    demo_credentials: Literal["random", "deterministic"] = "random"
    accounts: tuple[AccountSeed, ...] = ()
    limits_scale: Annotated[float, msgspec.Meta(gt=0, le=1000)] = 1.0  # multiply every limit capacity
    limits_enabled: bool = True
    limits_queue_s: Annotated[float, msgspec.Meta(ge=0, le=60)] = 0.25  # held this long before a 429
    allow_ips: tuple[str, ...] = ("127.0.0.1", "::1", "localhost")  # for /positions, /holders
    auth_window_s: Annotated[float, msgspec.Meta(gt=0, le=1e9)] = 30.0  # L2/L1 timestamp freshness
    heartbeat_timeout_s: Wait = 10.0
    clob_markets_variant: Literal["A", "B"] = "B"  # the shape of GET /markets listings: "A" or "B"
    # Where captures of the live venue contradict the spec's text: answer as the live venue does
    # ("live": snake_case open orders, /data/order/{id} unwrapped, every list ending "LTE=", base_fee
    # a string) or as the spec
    # writes it ("seed"). Requests are read in both spellings either way.
    spelling: Literal["live", "seed"] = "live"
    flow: ServerFlowConfig = ServerFlowConfig()
    settlement: ServerSettlementConfig = ServerSettlementConfig()
    faults: FaultConfig = FaultConfig()
    log_requests: bool = False  # one log line per HTTP request: method, path, status, account, latency
    # bounds that hold the exchange up when a user of a shared venue is careless or hostile
    # open connections per IP on one port (HTTP and WebSocket): one more is refused 429 where it is accepted
    connections_per_client: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] = 256
    ws_connections_per_client: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 64  # open WebSockets per IP
    # read from one IP's WebSockets a second, once 4 MiB came at once (a text frame counts its characters)
    ws_input_bytes_per_client_s: Annotated[int, msgspec.Meta(ge=1024, le=1 << 30)] = 1 << 20
    header_timeout_s: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 10.0  # to send a whole request head
    max_header_bytes: Annotated[int, msgspec.Meta(ge=1024, le=1 << 20)] = 16 * 1024  # request line + headers
    max_headers: Annotated[int, msgspec.Meta(ge=8, le=10_000)] = 100  # header fields in one request
    waiting_per_client: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] = 256  # conns awaiting a head, per IP
    waiting_total: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] = 1024  # in all (and below half the file limit)
    keep_alive_s: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 5.0  # an idle keep-alive connection is closed
    expose: bool = False  # listen on a host beyond loopback: never by default, only when asked

    def __post_init__(self) -> None:
        if not self.expose and not is_loopback(self.host):
            raise ValueError(f"host {self.host!r} is not a loopback address: the local exchange listens beyond "
                             "this machine only with expose = true (--expose)")


def is_loopback(host: str) -> bool:
    """``host`` names this machine only (``localhost``, 127.0.0.0/8, ``::1``)."""
    import ipaddress

    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def load_config(path: str | Path, **overrides: object) -> ExchangeConfig:
    """Read a TOML file (sections ``[flow]``, ``[faults]``...); ``overrides`` win over it.

    Every failure (unreadable, not UTF-8 TOML, a bad value) is a ``ValueError`` naming the file."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_bytes().decode("utf-8")) if path else {}
        data.update({k: v for k, v in overrides.items() if v is not None})
        return msgspec.convert(data, ExchangeConfig)
    except OSError as exc:
        raise ValueError(f"{p}: cannot read ({exc.strerror})") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{p}: not valid TOML ({exc})") from None
    except RecursionError:
        raise ValueError(f"{p}: not valid TOML (arrays or tables nested too deeply)") from None
    except (msgspec.ValidationError, ValueError) as exc:
        raise ValueError(f"{p}: {exc}") from None

"""``bot exchange``: run the local exchange and print its URLs and a funded demo account.

Invariants: every option maps onto one ``ExchangeConfig`` field (built-in defaults, then the TOML
file, then flags) and takes its range from that field; bad options exit with code 2 and one line
naming the option, the value and the allowed range, never a traceback. Without ``--config`` or
port flags the exchange listens where the bot's default config looks (``bot.ops.config``); a
busy port is named, with what to do about it.
"""

from __future__ import annotations

import argparse
import errno
import os
import shlex
import socket
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from bot.exchange.config import ExchangeConfig, FaultConfig, ServerFlowConfig, ServerSettlementConfig
from bot.ops.arguments import EXIT_USAGE, OneLineParser, decimal, field_range, with_range
from bot.ops.config import (
    LOCAL_CATALOG_PORT,
    LOCAL_CLOB_PORT,
    LOCAL_DATA_PORT,
    LOCAL_HOST,
    ConfigError,
    decode_config,
    decode_toml,
)


# Where the bot's default config looks; ``bot exchange`` listens there unless told otherwise.
DEFAULT_PORTS = {"catalog_port": LOCAL_CATALOG_PORT, "clob_port": LOCAL_CLOB_PORT, "data_port": LOCAL_DATA_PORT}

EPILOG = f"""\
Every option overrides the same-named field of the --config TOML file (see config/exchange.toml);
unset options keep the file's value or the built-in default. By default the surfaces listen
where the bot's default config looks: {LOCAL_HOST}:{LOCAL_CLOB_PORT} (CLOB and WebSocket),
:{LOCAL_CATALOG_PORT} (catalog) and :{LOCAL_DATA_PORT} (account data); --free-ports lets the system pick instead.
The URLs, the demo account and `export BOT_...=` lines for its key and API credentials are
printed once every port listens. Fault options are off by default; rates are probabilities in [0, 1].
"""

_DEMO_AMOUNT = decimal(ge=0, le=10**12).text()


def add_arguments(p: argparse.ArgumentParser) -> None:
    if p.epilog is None:
        p.epilog = EPILOG
        p.formatter_class = argparse.RawDescriptionHelpFormatter

    def number(group: Any, flag: str, struct: type, field: str, help_text: str, **kw: Any) -> None:
        rng = field_range(struct, field)
        group.add_argument(flag, type=rng, help=with_range(help_text, rng), **kw)

    x = ExchangeConfig
    g = p.add_argument_group("network")
    g.add_argument("--config", help="TOML config file (see config/exchange.toml)")
    g.add_argument("--host", help=f"interface to listen on (default {LOCAL_HOST}; beyond loopback only with --expose)")
    g.add_argument("--expose", action="store_true", default=None,
                   help="allow a --host beyond loopback (the exchange is then reachable from other machines)")
    number(g, "--catalog-port", x, "catalog_port", f"catalog surface port (default {LOCAL_CATALOG_PORT})")
    number(g, "--clob-port", x, "clob_port", f"CLOB surface + WebSocket port (default {LOCAL_CLOB_PORT})")
    number(g, "--data-port", x, "data_port", f"account-data surface port (default {LOCAL_DATA_PORT})")
    g.add_argument("--free-ports", action="store_true", default=None,
                   help="let the system pick free ports (instead of the file's or the defaults; "
                        "port flags still win)")
    g.add_argument("--single-port", action="store_true", default=None,
                   help="serve all surfaces on one port under /catalog, /clob, /data-api (+ /ws)")
    number(g, "--port", x, "port", "the port in --single-port mode (default 0 = a free port)")
    g.add_argument("--log-requests", action="store_true", default=None,
                   help="log one line per HTTP request: method, path, status, account, latency (never a secret)")
    g.add_argument("--env-file", metavar="FILE",
                   help="also write the demo account's `export BOT_...=` lines to FILE (owner-only, removed on "
                        "exit) once listening: `. FILE` in the shell that runs the bot")
    g.add_argument("--spelling", choices=["live", "seed"],
                   help="where captures of the live venue and the spec's text differ, answer as the live venue "
                        "does (live, the default) or as the spec writes it (seed)")
    g = p.add_argument_group("markets and accounts")
    number(g, "--seed", x, "seed",
           "seed of the catalog and engine (and of the demo key with --demo-credentials deterministic; default 1)")
    g.add_argument("--catalog-file", help="JSON catalog to load instead of generating one")
    number(g, "--markets", x, "markets", "number of generated binary markets (default 8)")
    number(g, "--neg-risk-events", x, "neg_risk_events", "generated neg-risk events (default 1)")
    g.add_argument("--chain-id", type=int, choices=[137, 80002], help="EIP-712 chain id (default 137)")
    g.add_argument("--demo-usdc", type=_DEMO_AMOUNT, help=with_range("demo account USDC (default 100000)",
                                                                    _DEMO_AMOUNT))
    g.add_argument("--demo-shares", type=_DEMO_AMOUNT,
                   help=with_range("demo account shares of every token (default 1000)", _DEMO_AMOUNT))
    number(g, "--demo-signature-type", x, "demo_signature_type",
           "the demo's funds sit in its EOA (0), proxy (1), safe (2) or deposit wallet (3) (default 0)")
    g.add_argument("--demo-credentials", choices=["random", "deterministic"],
                   help="the demo account's key and API credentials: random, shown once (default), or "
                        "deterministic, computed from --seed (anyone who knows the seed can trade as it)")
    number(g, "--heartbeat-timeout", x, "heartbeat_timeout_s",
           "seconds without an accepted heartbeat before orders are canceled (default 10)")
    number(g, "--mined-after", ServerSettlementConfig, "mined_after_s", "seconds from MATCHED to MINED (default 0.3)")
    number(g, "--confirmed-after", ServerSettlementConfig, "confirmed_after_s",
           "seconds from MINED to CONFIRMED (default 0.6)")
    g = p.add_argument_group("synthetic flow")
    g.add_argument("--flow", choices=["on", "off"], help="synthetic background traders (default on)")
    number(g, "--flow-interval", ServerFlowConfig, "interval_s", "seconds between flow steps (default 0.25)")
    number(g, "--flow-markets", ServerFlowConfig, "markets", "markets that get traders (default 0 = all)")
    g = p.add_argument_group("rate limits")
    number(g, "--limits-scale", x, "limits_scale", "multiply every rate-limit capacity (default 1)")
    number(g, "--limits-queue", x, "limits_queue_s",
           "seconds an over-limit request is held before a 429 (default 0.25)")
    g.add_argument("--no-limits", action="store_true", help="disable the rate limits")
    g.add_argument("--allow-ip", action="append", help="IP/network allowed on /positions and /holders (repeat)")
    g = p.add_argument_group("bounds for a shared venue (what one careless or hostile client can hold)")
    number(g, "--connections-per-client", x, "connections_per_client",
           "open connections per client IP on one port; one more is refused 429 at once (default 256)")
    number(g, "--ws-connections-per-client", x, "ws_connections_per_client",
           "open WebSocket connections per client IP; one more is closed with 1008 (default 64)")
    number(g, "--ws-bytes-per-client", x, "ws_input_bytes_per_client_s",
           "bytes a second read from a client IP's WebSockets once 4 MiB came at once (default 1048576)")
    number(g, "--header-timeout", x, "header_timeout_s",
           "seconds to send a whole request head before 408 (default 10)")
    number(g, "--max-header-bytes", x, "max_header_bytes", "bytes of a request head before 431 (default 16384)")
    number(g, "--max-headers", x, "max_headers", "header fields of a request before 431 (default 100)")
    number(g, "--waiting-per-client", x, "waiting_per_client",
           "connections per client IP waiting for a request head; the longest waiting is closed (default 256)")
    number(g, "--waiting-total", x, "waiting_total",
           "connections waiting for a request head in all, at most half the open-file limit (default 1024)")
    number(g, "--keep-alive", x, "keep_alive_s", "seconds an idle keep-alive connection stays open (default 5)")
    f = FaultConfig
    g = p.add_argument_group("faults")
    number(g, "--latency-ms", f, "latency_ms_min", "added latency per request, uniform in [MIN, MAX] ms",
           nargs=2, metavar=("MIN", "MAX"))
    number(g, "--error-rate", f, "error_rate", "share of requests answered 500 internal_error")
    g.add_argument("--error-route", action="append",
                   help="restrict --error-rate to this path, e.g. /book (repeat; default all)")
    number(g, "--rate-limit-burst", f, "rate_limit_burst_every_s",
           "every EVERY_S seconds answer 429 to everything for BURST_S seconds", nargs=2,
           metavar=("EVERY_S", "BURST_S"))
    number(g, "--restart-every", f, "restart_every_s",
           "engine restart cycle: 425 for RESTART_S, then post-only 503 for POST_ONLY_S", nargs=3,
           metavar=("EVERY", "RESTART_S", "POST_ONLY_S"))
    number(g, "--ws-drop-every", f, "ws_drop_every_s", "close all WebSockets every N seconds")
    number(g, "--user-event-delay-ms", f, "user_event_delay_ms", "delay user-channel events by this many ms")
    number(g, "--user-event-duplicate-rate", f, "user_event_duplicate_rate", "share of user events sent twice")
    number(g, "--user-event-reorder-rate", f, "user_event_reorder_rate", "share of user events swapped with the next")
    number(g, "--settlement-fail-rate", f, "settlement_fail_rate", "share of trades ending FAILED (balances reversed)")
    number(g, "--version-mismatch-rate", f, "version_mismatch_rate",
           "share of order posts answered order_version_mismatch")
    number(g, "--fault-seed", f, "seed", "seed of the fault randomness (default 7)")


# flag attribute -> FaultConfig field, for the single-valued fault flags
_FAULT_FLAGS = {
    "error_rate": "error_rate", "settlement_fail_rate": "settlement_fail_rate",
    "version_mismatch_rate": "version_mismatch_rate", "ws_drop_every": "ws_drop_every_s",
    "user_event_delay_ms": "user_event_delay_ms", "user_event_duplicate_rate": "user_event_duplicate_rate",
    "user_event_reorder_rate": "user_event_reorder_rate", "fault_seed": "seed",
}


def build_config(args: argparse.Namespace) -> ExchangeConfig:
    """The config of ``args``: the bot's default ports, then the ``--config`` file, then flags.

    Raises ``ConfigError`` (one line, naming the file or the field) on a value out of range."""
    path = getattr(args, "config", None)
    base: dict[str, Any] = dict(DEFAULT_PORTS)
    if path:
        p = Path(path)
        try:
            raw = p.read_bytes()
        except OSError as exc:
            raise ConfigError(f"{p}: cannot read ({exc.strerror})") from None
        table = decode_toml(raw, source=str(p))
        decode_config(table, ExchangeConfig, source=str(p))  # the file alone must be valid
        base.update(table)
    if getattr(args, "free_ports", None):
        base.update({name: 0 for name in (*DEFAULT_PORTS, "port")})
    simple = {
        "host": args.host, "catalog_port": args.catalog_port, "clob_port": args.clob_port,
        "data_port": args.data_port, "single_port": args.single_port, "port": args.port, "seed": args.seed,
        "catalog_file": args.catalog_file, "markets": args.markets, "limits_scale": args.limits_scale,
        "chain_id": args.chain_id, "demo_usdc": args.demo_usdc, "demo_shares": args.demo_shares,
        "demo_signature_type": args.demo_signature_type, "demo_credentials": args.demo_credentials,
        "neg_risk_events": args.neg_risk_events, "heartbeat_timeout_s": args.heartbeat_timeout,
        "limits_queue_s": args.limits_queue, "log_requests": args.log_requests, "expose": args.expose,
        "spelling": args.spelling,
        "connections_per_client": args.connections_per_client,
        "ws_input_bytes_per_client_s": args.ws_bytes_per_client,
        "ws_connections_per_client": args.ws_connections_per_client, "header_timeout_s": args.header_timeout,
        "max_header_bytes": args.max_header_bytes, "max_headers": args.max_headers,
        "waiting_per_client": args.waiting_per_client, "waiting_total": args.waiting_total,
        "keep_alive_s": args.keep_alive,
    }
    base.update({k: v for k, v in simple.items() if v is not None})
    if args.no_limits:
        base["limits_enabled"] = False
    if args.allow_ip:
        base["allow_ips"] = args.allow_ip
    flow = base.setdefault("flow", {})
    if args.flow:
        flow["enabled"] = args.flow == "on"
    if args.flow_interval is not None:
        flow["interval_s"] = args.flow_interval
    if args.flow_markets is not None:
        flow["markets"] = args.flow_markets
    settlement = base.setdefault("settlement", {})
    if args.mined_after is not None:
        settlement["mined_after_s"] = args.mined_after
    if args.confirmed_after is not None:
        settlement["confirmed_after_s"] = args.confirmed_after
    faults = base.setdefault("faults", {})
    if args.latency_ms:
        faults["latency_ms_min"], faults["latency_ms_max"] = args.latency_ms
    for name, key in _FAULT_FLAGS.items():
        if getattr(args, name) is not None:
            faults[key] = getattr(args, name)
    if args.error_route:
        faults["error_routes"] = args.error_route
    if args.rate_limit_burst:
        faults["rate_limit_burst_every_s"], faults["rate_limit_burst_s"] = args.rate_limit_burst
    if args.restart_every:
        faults["restart_every_s"], faults["restart_s"], faults["post_only_s"] = args.restart_every
    return decode_config(base, ExchangeConfig, source=f"{path} with the options given" if path else "options")


def build_parser() -> argparse.ArgumentParser:
    """The standalone parser of ``python -m bot.exchange.cli`` (``bot exchange`` adds the same options)."""
    parser = OneLineParser(prog="bot exchange", description="Run the local exchange.")
    add_arguments(parser)
    return parser


def banner(ex, seed: int) -> str:
    """The URLs of every surface, the funded demo account and ``export`` lines for a shell that
    runs the bot (the local exchange's own test credentials: printing them is the point); when
    the ports are not the bot's defaults, the ``[venue]`` lines its config needs."""
    u, d = ex.urls, ex.demo_account
    w, kind = d.wallets, ex.config.demo_signature_type
    lines = [
        f"catalog  {u.catalog}",
        f"clob     {u.clob}",
        f"data     {u.data}",
        f"ws       {u.ws}/ws/market  {u.ws}/ws/user",
        f"demo address     {d.address}  ({_key_origin(ex.config, seed)})",
        f"demo wallets     proxy {w.proxy}  safe {w.safe}  deposit {w.deposit}",
        f"demo funds in    {w.of(kind)}  (signature type {kind}{'' if kind == 0 else '; set it as the funder'})",
        "# its key and API credentials, for the bot (paste into the shell that runs it):",
        *export_lines(d),
    ]
    venue = _venue_lines(u, kind, w.of(kind))
    if venue:
        lines += ["# the bot's defaults do not fit this exchange: give its config file these [venue] lines", *venue]
    return "\n".join(lines)


def _key_origin(config: ExchangeConfig, seed: int) -> str:
    if config.demo_credentials == "deterministic":
        return f"local test key from seed {seed}: anyone who knows the seed can trade as it"
    return "local test key, random: shown once, here"


def write_env_file(path: str, lines: list[str]) -> None:
    """``lines`` to ``path``, readable by its owner only from the moment it exists (it holds a key)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        os.fchmod(fh.fileno(), 0o600)
        fh.write("\n".join(lines) + "\n")


def export_lines(account) -> list[str]:
    """``export BOT_...=`` lines that hand ``account``'s key and API credentials to ``bot``."""
    from bot.ops.secrets import ENV_API_KEY, ENV_API_PASSPHRASE, ENV_API_SECRET, ENV_PRIVATE_KEY

    c = account.creds
    return [f"export {name}={shlex.quote(value)}" for name, value in (
        (ENV_PRIVATE_KEY, account.private_key), (ENV_API_KEY, c.apiKey), (ENV_API_SECRET, c.secret),
        (ENV_API_PASSPHRASE, c.passphrase))]


def _venue_lines(urls, signature_type: int = 0, funder: str = "") -> list[str]:
    """``#   clob_url = "..."`` lines (and the signature type and funder of funds held in a wallet)
    for a bot config, when they differ from its defaults; none when nothing does."""
    from bot.ops.config import VenueConfig

    default = VenueConfig()
    mine = urls.venue_settings()
    if signature_type == default.signature_type and all(getattr(default, k) == v for k, v in mine.items()):
        return []
    lines = [f'#   {k} = "{v}"' for k, v in mine.items()]
    if signature_type:
        lines += [f"#   signature_type = {signature_type}", f'#   funder = "{funder}"']
    return lines


def busy_port_message(config: ExchangeConfig, exc: OSError) -> str:
    """One line saying which port could not be opened and what to do about it."""
    plan = [("single port", config.port)] if config.single_port else [
        ("clob", config.clob_port), ("catalog", config.catalog_port), ("data", config.data_port)]
    for name, port in plan:
        if port and not _can_listen(config.host, port):
            if exc.errno == errno.EADDRINUSE:
                return (f"port {port} ({name}) on {config.host} is in use (another exchange running?): stop it, "
                        "pick ports with --clob-port/--catalog-port/--data-port or --config FILE, or use "
                        "--free-ports and give the bot the URLs printed")
            return f"cannot listen on {config.host}:{port} ({name}): {exc.strerror or exc}"
    return f"cannot listen on {config.host}: {exc.strerror or exc}"


def _can_listen(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
            s.listen(1)
        except OSError:
            return False
    return True


def run(args: argparse.Namespace, *, stop: threading.Event | None = None) -> int:
    """Serve until interrupted (or until ``stop`` is set); 2 on a bad option or a busy port."""
    try:
        config = build_config(args)
    except (OSError, ValueError) as exc:
        print(f"bot exchange: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from bot.exchange.listener import raise_open_file_limit
    from bot.exchange.server import LocalExchange

    raise_open_file_limit()  # every connection is an open file: the whole hard limit, not the soft default
    if config.log_requests and getattr(args, "log_level", None) is None:
        from bot.ops.logging import configure

        configure("info")  # the request lines are info: shown unless a --log-level says otherwise

    env_file = getattr(args, "env_file", None)
    written: list[Path] = []  # the env file, once this run wrote it (removed at exit)

    async def main() -> None:
        async with LocalExchange(config) as ex:
            if env_file:
                write_env_file(env_file, export_lines(ex.demo_account))
                written.append(Path(env_file))
            print(banner(ex, config.seed), flush=True)
            if stop is None:
                await anyio.sleep_forever()
            while not stop.is_set():
                await anyio.sleep(0.05)

    try:
        anyio.run(main)
    except KeyboardInterrupt:
        pass
    except OSError as exc:  # a busy or forbidden port
        print(f"bot exchange: {busy_port_message(config, exc)}", file=sys.stderr)
        return EXIT_USAGE
    except (OverflowError, ValueError) as exc:  # bad amounts: no traceback
        print(f"bot exchange: {exc}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        for path in written:
            path.unlink(missing_ok=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bot.exchange.cli [...]``: parse, then ``run``; returns the exit code."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error already printed on one line
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    return run(args)


if __name__ == "__main__":
    sys.exit(main())

"""``bot exchange``: run the local exchange and print its URLs and a funded demo account.

Invariant: every option maps onto one ``ExchangeConfig`` field (TOML file first, flags override);
bad options exit with code 2 and a one-line message, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
import threading

import anyio
import msgspec

from bot.exchange.config import ExchangeConfig, FaultConfig, FlowConfig, SettlementConfig, load_config


EPILOG = """\
Every option overrides the same-named field of the --config TOML file (see config/exchange.toml);
unset options keep the file's value or the built-in default. Ports default to 0 (a free port);
the chosen URLs, the demo account and its API credentials are printed once every port listens.
Fault options are off by default; rates are probabilities in [0, 1].
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    if p.epilog is None:
        p.epilog = EPILOG
        p.formatter_class = argparse.RawDescriptionHelpFormatter
    g = p.add_argument_group("network")
    g.add_argument("--config", help="TOML config file (see config/exchange.toml)")
    g.add_argument("--host", help="interface to listen on (default 127.0.0.1)")
    g.add_argument("--catalog-port", type=int, help="catalog surface port (default 0 = a free port)")
    g.add_argument("--clob-port", type=int, help="CLOB surface + WebSocket port (default 0 = a free port)")
    g.add_argument("--data-port", type=int, help="account-data surface port (default 0 = a free port)")
    g.add_argument("--single-port", action="store_true", default=None,
                   help="serve all surfaces on one port under /catalog, /clob, /data-api (+ /ws)")
    g.add_argument("--port", type=int, help="the port in --single-port mode (default 0 = a free port)")
    g.add_argument("--log-requests", action="store_true", default=None, help="log every HTTP request")
    g = p.add_argument_group("markets and accounts")
    g.add_argument("--seed", type=int, help="seed of the catalog, demo key and engine (default 1)")
    g.add_argument("--catalog-file", help="JSON catalog to load instead of generating one")
    g.add_argument("--markets", type=int, help="number of generated binary markets (default 8)")
    g.add_argument("--neg-risk-events", type=int, help="generated neg-risk events (default 1)")
    g.add_argument("--chain-id", type=int, choices=[137, 80002], help="EIP-712 chain id (default 137)")
    g.add_argument("--demo-usdc", help="demo account USDC (default 100000)")
    g.add_argument("--demo-shares", help="demo account shares of every token (default 1000)")
    g.add_argument("--demo-signature-type", type=int, choices=[0, 1, 2, 3],
                   help="the demo's funds sit in its EOA (0), proxy (1), safe (2) or deposit wallet (3) (default 0)")
    g.add_argument("--heartbeat-timeout", type=float,
                   help="seconds without an accepted heartbeat before orders are canceled (default 10)")
    g.add_argument("--mined-after", type=float, help="seconds from MATCHED to MINED (default 0.3)")
    g.add_argument("--confirmed-after", type=float, help="seconds from MINED to CONFIRMED (default 0.6)")
    g = p.add_argument_group("synthetic flow")
    g.add_argument("--flow", choices=["on", "off"], help="synthetic background traders (default on)")
    g.add_argument("--flow-interval", type=float, help="seconds between flow steps (default 0.25)")
    g.add_argument("--flow-markets", type=int, help="markets that get traders (default 0 = all)")
    g = p.add_argument_group("rate limits")
    g.add_argument("--limits-scale", type=float, help="multiply every rate-limit capacity (default 1)")
    g.add_argument("--limits-queue", type=float,
                   help="seconds an over-limit request is held before a 429 (default 0.25)")
    g.add_argument("--no-limits", action="store_true", help="disable the rate limits")
    g.add_argument("--allow-ip", action="append", help="IP/network allowed on /positions and /holders (repeat)")
    g = p.add_argument_group("faults")
    g.add_argument("--latency-ms", type=float, nargs=2, metavar=("MIN", "MAX"),
                   help="added latency per request, uniform in [MIN, MAX] ms")
    g.add_argument("--error-rate", type=float, help="share of requests answered 500 internal_error")
    g.add_argument("--error-route", action="append",
                   help="restrict --error-rate to this path, e.g. /book (repeat; default all)")
    g.add_argument("--rate-limit-burst", type=float, nargs=2, metavar=("EVERY_S", "BURST_S"),
                   help="every EVERY_S seconds answer 429 to everything for BURST_S seconds")
    g.add_argument("--restart-every", type=float, nargs=3, metavar=("EVERY", "RESTART_S", "POST_ONLY_S"),
                   help="engine restart cycle: 425 for RESTART_S, then post-only 503 for POST_ONLY_S")
    g.add_argument("--ws-drop-every", type=float, help="close all WebSockets every N seconds")
    g.add_argument("--user-event-delay-ms", type=float, help="delay user-channel events by this many ms")
    g.add_argument("--user-event-duplicate-rate", type=float, help="share of user events sent twice")
    g.add_argument("--user-event-reorder-rate", type=float, help="share of user events swapped with the next")
    g.add_argument("--settlement-fail-rate", type=float,
                   help="share of trades ending FAILED (balances reversed)")
    g.add_argument("--version-mismatch-rate", type=float,
                   help="share of order posts answered order_version_mismatch")
    g.add_argument("--fault-seed", type=int, help="seed of the fault randomness (default 7)")


# flag attribute -> FaultConfig field, for the single-valued fault flags
_FAULT_FLAGS = {
    "error_rate": "error_rate", "settlement_fail_rate": "settlement_fail_rate",
    "version_mismatch_rate": "version_mismatch_rate", "ws_drop_every": "ws_drop_every_s",
    "user_event_delay_ms": "user_event_delay_ms", "user_event_duplicate_rate": "user_event_duplicate_rate",
    "user_event_reorder_rate": "user_event_reorder_rate", "fault_seed": "seed",
}


def build_config(args: argparse.Namespace) -> ExchangeConfig:
    base = msgspec.to_builtins(load_config(args.config)) if getattr(args, "config", None) else {}
    simple = {
        "host": args.host, "catalog_port": args.catalog_port, "clob_port": args.clob_port,
        "data_port": args.data_port, "single_port": args.single_port, "port": args.port, "seed": args.seed,
        "catalog_file": args.catalog_file, "markets": args.markets, "limits_scale": args.limits_scale,
        "chain_id": args.chain_id, "demo_usdc": args.demo_usdc, "demo_shares": args.demo_shares,
        "demo_signature_type": args.demo_signature_type,
        "neg_risk_events": args.neg_risk_events, "heartbeat_timeout_s": args.heartbeat_timeout,
        "limits_queue_s": args.limits_queue, "log_requests": args.log_requests,
    }
    base.update({k: v for k, v in simple.items() if v is not None})
    if args.no_limits:
        base["limits_enabled"] = False
    if args.allow_ip:
        base["allow_ips"] = args.allow_ip
    flow = base.setdefault("flow", msgspec.to_builtins(FlowConfig()))
    if args.flow:
        flow["enabled"] = args.flow == "on"
    if args.flow_interval is not None:
        flow["interval_s"] = args.flow_interval
    if args.flow_markets is not None:
        flow["markets"] = args.flow_markets
    settlement = base.setdefault("settlement", msgspec.to_builtins(SettlementConfig()))
    if args.mined_after is not None:
        settlement["mined_after_s"] = args.mined_after
    if args.confirmed_after is not None:
        settlement["confirmed_after_s"] = args.confirmed_after
    faults = base.setdefault("faults", msgspec.to_builtins(FaultConfig()))
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
    return msgspec.convert(base, ExchangeConfig)


def build_parser() -> argparse.ArgumentParser:
    """The standalone parser of ``python -m bot.exchange.cli`` (``bot exchange`` adds the same options)."""
    parser = argparse.ArgumentParser(prog="bot exchange", description="Run the local exchange.")
    add_arguments(parser)
    return parser


def banner(ex, seed: int) -> str:
    """The URLs of every surface and the funded demo account with ready-to-use API credentials."""
    u, d = ex.urls, ex.demo_account
    w, kind = d.wallets, ex.config.demo_signature_type
    return "\n".join([
        f"catalog  {u.catalog}",
        f"clob     {u.clob}",
        f"data     {u.data}",
        f"ws       {u.ws}/ws/market  {u.ws}/ws/user",
        f"demo address     {d.address}",
        f"demo private key {d.private_key}  (local test key, seed {seed})",
        f"demo wallets     proxy {w.proxy}  safe {w.safe}  deposit {w.deposit}",
        f"demo funds in    {w.of(kind)}  (signature type {kind}{'' if kind == 0 else '; set it as the funder'})",
        f"apiKey     {d.creds.apiKey}",
        f"secret     {d.creds.secret}",
        f"passphrase {d.creds.passphrase}",
    ])


def run(args: argparse.Namespace, *, stop: threading.Event | None = None) -> int:
    """Serve until interrupted (or until ``stop`` is set); 2 on a bad option or a busy port."""
    try:
        config = build_config(args)
    except (msgspec.ValidationError, OSError, ValueError) as exc:
        print(f"bot exchange: {exc}", file=sys.stderr)
        return 2
    from bot.exchange.server import LocalExchange

    async def main() -> None:
        async with LocalExchange(config) as ex:
            print(banner(ex, config.seed), flush=True)
            if stop is None:
                await anyio.sleep_forever()
            while not stop.is_set():
                await anyio.sleep(0.05)

    try:
        anyio.run(main)
    except KeyboardInterrupt:
        pass
    except (OSError, OverflowError, ValueError) as exc:  # busy/invalid port, bad amounts: no traceback
        print(f"bot exchange: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(run(build_parser().parse_args()))

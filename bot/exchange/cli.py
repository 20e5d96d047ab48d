"""``bot exchange``: run the local exchange and print its URLs and a funded demo account.

Invariant: every option maps onto one ``ExchangeConfig`` field (TOML file first, flags override);
bad options exit with code 2 and a one-line message, never a traceback.
"""

from __future__ import annotations

import argparse
import sys

import anyio
import msgspec

from bot.exchange.config import ExchangeConfig, FaultConfig, FlowConfig, load_config


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="TOML config file (see config/exchange.toml)")
    p.add_argument("--host", help="interface to listen on (default 127.0.0.1)")
    p.add_argument("--catalog-port", type=int, help="catalog surface port (0 = free port)")
    p.add_argument("--clob-port", type=int, help="CLOB surface + WebSocket port (0 = free port)")
    p.add_argument("--data-port", type=int, help="account-data surface port (0 = free port)")
    p.add_argument("--single-port", action="store_true", default=None,
                   help="serve all surfaces on one port under /catalog, /clob, /data-api (+ /ws)")
    p.add_argument("--port", type=int, help="the port in --single-port mode")
    p.add_argument("--seed", type=int, help="seed of the catalog, demo key and engine (default 1)")
    p.add_argument("--catalog-file", help="JSON catalog to load instead of generating one")
    p.add_argument("--markets", type=int, help="number of generated binary markets (default 8)")
    p.add_argument("--flow", choices=["on", "off"], help="synthetic background traders (default on)")
    p.add_argument("--flow-interval", type=float, help="seconds between flow steps (default 0.25)")
    p.add_argument("--limits-scale", type=float, help="multiply every rate-limit capacity (default 1)")
    p.add_argument("--no-limits", action="store_true", help="disable the edge rate limits")
    p.add_argument("--allow-ip", action="append", help="IP/network allowed on /positions and /holders (repeat)")
    p.add_argument("--chain-id", type=int, choices=[137, 80002], help="EIP-712 chain id (default 137)")
    p.add_argument("--demo-usdc", help="demo account USDC (default 100000)")
    p.add_argument("--demo-shares", help="demo account shares of every token (default 1000)")
    p.add_argument("--latency-ms", type=float, nargs=2, metavar=("MIN", "MAX"), help="fault: added latency")
    p.add_argument("--error-rate", type=float, help="fault: share of requests answered 500")
    p.add_argument("--settlement-fail-rate", type=float, help="fault: share of trades ending FAILED")
    p.add_argument("--version-mismatch-rate", type=float, help="fault: share of order posts answered order_version_mismatch")
    p.add_argument("--restart-every", type=float, nargs=3, metavar=("EVERY", "RESTART_S", "POST_ONLY_S"),
                   help="fault: engine restart cycle (425, then post-only 503)")
    p.add_argument("--ws-drop-every", type=float, help="fault: close all WebSockets every N seconds")


def build_config(args: argparse.Namespace) -> ExchangeConfig:
    base = msgspec.to_builtins(load_config(args.config)) if getattr(args, "config", None) else {}
    simple = {
        "host": args.host, "catalog_port": args.catalog_port, "clob_port": args.clob_port,
        "data_port": args.data_port, "single_port": args.single_port, "port": args.port, "seed": args.seed,
        "catalog_file": args.catalog_file, "markets": args.markets, "limits_scale": args.limits_scale,
        "chain_id": args.chain_id, "demo_usdc": args.demo_usdc, "demo_shares": args.demo_shares,
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
    faults = base.setdefault("faults", msgspec.to_builtins(FaultConfig()))
    if args.latency_ms:
        faults["latency_ms_min"], faults["latency_ms_max"] = args.latency_ms
    for name, key in (("error_rate", "error_rate"), ("settlement_fail_rate", "settlement_fail_rate"),
                      ("version_mismatch_rate", "version_mismatch_rate"), ("ws_drop_every", "ws_drop_every_s")):
        if getattr(args, name) is not None:
            faults[key] = getattr(args, name)
    if args.restart_every:
        faults["restart_every_s"], faults["restart_s"], faults["post_only_s"] = args.restart_every
    return msgspec.convert(base, ExchangeConfig)


def run(args: argparse.Namespace) -> int:
    try:
        config = build_config(args)
    except (msgspec.ValidationError, OSError, ValueError) as exc:
        print(f"bot exchange: {exc}", file=sys.stderr)
        return 2
    from bot.exchange.server import LocalExchange

    async def main() -> None:
        async with LocalExchange(config) as ex:
            u, d = ex.urls, ex.demo_account
            print(f"catalog  {u.catalog}\nclob     {u.clob}\ndata     {u.data}\nws       {u.ws}/ws/market  {u.ws}/ws/user")
            print(f"demo address     {d.address}\ndemo private key {d.private_key}  (local test key, seed {config.seed})")
            print(f"apiKey     {d.creds.apiKey}\nsecret     {d.creds.secret}\npassphrase {d.creds.passphrase}", flush=True)
            await anyio.sleep_forever()

    try:
        anyio.run(main)
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        print(f"bot exchange: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="bot exchange", description="Run the local exchange.")
    add_arguments(parser)
    sys.exit(run(parser.parse_args()))

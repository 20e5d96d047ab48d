"""Chaos run: the market maker as a real ``bot run`` process against the local exchange with every
fault injection on at once, for a set duration and seed, then an audit of the bot's journal
against the exchange's own books.

Faults (``chaos_faults``; rates are per request or per event): latency spikes, 5xx answers, 429
bursts, engine restarts (425, then a post-only window), WebSocket drops, user events delayed,
duplicated and reordered, trades that end FAILED, and order version mismatches.

During the run the exchange's open orders are sampled every ``--interval`` seconds and compared
with the journal (orphans: live at the exchange, not working in the bot; duplicates: two live
orders at one token, side and price that the bot has not closed, in two samples running; risk: a
position above ``max_position`` or more open orders than ``max_open_orders``). After the bot stops, fills, positions, cash and PnL are compared with
the exchange's trades and ledger, and whatever is still open is counted. Every error figure must
be 0; the exit code is 1 otherwise.

    .venv/bin/python -m bench.chaos --duration 1800 --seed 1
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import anyio
import msgspec

from bench.audit import audit_books, duplicate_groups, journal_states, journal_view, lasting_duplicates, untracked
from bot.exchange.config import ExchangeConfig, FaultConfig, ServerFlowConfig
from bot.exchange.server import LocalExchange
from bot.venue.units import UNIT

REPO = Path(__file__).resolve().parent.parent

MAX_POSITION = 300_000_000  # 300 shares per token: the bot's risk limit, checked at the exchange
MAX_OPEN_ORDERS = 40
START_SHARES = "100"  # of every token, at the exchange, before the run

BOT_CONFIG = """
{venue}
[strategy]
path = "strategies.market_maker:MarketMaker"

[strategy.params]
half_spread_ticks = 1
order_size = 10
max_inventory = 60

[risk]
max_position = {max_position}
max_open_orders = {max_open_orders}
max_errors = 1000  # injected 5xx and 429s are errors: the default budget would halt the run at once
max_reject_streak = 100

[reconciler]
orphan_policy = "cancel"

[shell]
orders_sync_s = 2.0
trades_poll_s = 2.0

[metrics]
enabled = false

[journal]
path = "{journal}"
synchronous = "NORMAL"

[log]
level = "info"
"""


def chaos_faults(seed: int) -> FaultConfig:
    """Every fault the local exchange can inject, all at once, at rates a bot must live with."""
    return FaultConfig(
        latency_ms_min=5.0, latency_ms_max=250.0,
        error_rate=0.03,
        rate_limit_burst_every_s=11.0, rate_limit_burst_s=0.6,
        restart_every_s=17.0, restart_s=1.0, post_only_s=2.0,
        ws_drop_every_s=13.0,
        user_event_delay_ms=150.0, user_event_duplicate_rate=0.1, user_event_reorder_rate=0.1,
        settlement_fail_rate=0.1,
        version_mismatch_rate=0.03,
        seed=seed,
    )


def exchange_config(seed: int, faults: FaultConfig, flow_speed: float = 5.0) -> ExchangeConfig:
    return ExchangeConfig(seed=seed, markets=3, neg_risk_events=0, demo_shares=START_SHARES, demo_usdc="10000",
                          flow=ServerFlowConfig(enabled=True, speed=flow_speed), faults=faults)


class ChaosReport(msgspec.Struct, kw_only=True):
    """A chaos run's figures; ``errors()`` names those that are not 0."""

    duration_s: float
    seed: int
    exit_code: int
    samples: int
    orders_sent: int  # orders the bot journaled (each is committed before it is sent)
    orders_received: int  # orders the exchange accepted from the bot's account
    orders_unknown: int  # accepted by the exchange, never journaled by the bot
    duplicates: int  # most extra orders at one token, side and price, in two samples running
    orphans: int  # distinct orders seen live at the exchange, not working in the bot
    fills: int  # the exchange's fills of the account
    fills_missed: int
    fills_double_counted: int
    fills_pending_at_stop: int  # failed after the bot's last word: counted as pending (not an error)
    position_diff: dict[str, int]  # token -> bot minus exchange, share micro-units
    cash_diff: int  # USDC micro-units, bot minus exchange
    pnl_diff: int  # USDC micro-units, at the exchange's last mids
    answered_429: int  # 429s the exchange answered the bot
    answered_5xx: int
    risk_exceeded: int  # samples with a position or an open-order count above the bot's limits
    left_open: int  # the account's orders still open at the exchange after the bot stopped
    halts: int  # risk halts the bot logged (not an error: a halt cancels and waits)

    def errors(self) -> list[str]:
        out = [name for name in ("orders_unknown", "duplicates", "orphans", "fills_missed", "fills_double_counted",
                                 "cash_diff", "pnl_diff", "risk_exceeded", "left_open") if getattr(self, name)]
        if any(self.position_diff.values()):
            out.append("position_diff")
        if self.exit_code != 0:
            out.append("exit_code")
        return out


def bot_env(acct) -> dict[str, str]:
    return dict(os.environ, BOT_PRIVATE_KEY=acct.private_key, BOT_API_KEY=acct.creds.apiKey,
                BOT_API_SECRET=acct.creds.secret, BOT_API_PASSPHRASE=acct.creds.passphrase)


def write_bot_config(path: Path, urls, journal: Path) -> None:
    path.write_text(BOT_CONFIG.format(venue=urls.venue_toml(),
                                      journal=journal, max_position=MAX_POSITION // UNIT,  # shares, as a config writes them
                                      max_open_orders=MAX_OPEN_ORDERS))


async def chaos(duration: float, seed: int, workdir: Path, *, faults: FaultConfig | None = None,
                interval: float = 0.5, flow_speed: float = 5.0, verbose: bool = False) -> ChaosReport:
    """One chaos run in ``workdir`` (journal, config and the bot's log are left there)."""
    config = exchange_config(seed, faults or chaos_faults(seed), flow_speed)
    journal, cfg, log = workdir / "journal.sqlite", workdir / "bot.toml", workdir / "bot.log"
    async with LocalExchange(config) as ex:
        acct = ex.demo_account
        engine = ex.state.engine
        holder = acct.address
        start = engine.balance(holder)
        write_bot_config(cfg, ex.urls, journal)
        cmd = [sys.executable, "-m", "bot.cli", "run", "--config", str(cfg), "--duration", str(duration)]
        samples, worst_dup, risk, orphans = 0, 0, 0, set()
        last_groups: list[frozenset[str]] = []
        began = time.monotonic()
        with log.open("w") as err, (workdir / "bot.out").open("w") as out:
            async with await anyio.open_process(cmd, env=bot_env(acct), cwd=REPO, stdout=out, stderr=err) as bot:
                while bot.returncode is None:
                    with anyio.move_on_after(interval):
                        await bot.wait()
                    if bot.returncode is not None or not journal.exists():
                        continue
                    asked_at = time.time()
                    live = engine.open_orders(by=holder)  # the exchange's own book, read between awaits
                    try:
                        known = journal_view(journal)
                    except sqlite3.Error:  # the bot is still creating its journal
                        continue
                    lost = untracked([o.id for o in live], known, asked_at)
                    samples += 1
                    orphans.update(lost)
                    groups = duplicate_groups(((o.asset_id, o.side.value, o.price, o.id) for o in live),
                                              journal_states(journal))
                    dup = lasting_duplicates(last_groups, groups)
                    last_groups = groups
                    worst_dup = max(worst_dup, dup)
                    held = engine.balance(holder).tokens
                    if len(live) > MAX_OPEN_ORDERS or any(v > MAX_POSITION for v in held.values()):
                        risk += 1
                    if verbose and (lost or dup or samples % 20 == 0):
                        print(f"{time.monotonic() - began:7.1f}s open {len(live):3d} untracked {lost} duplicates "
                              f"{[(o.id[:10], o.asset_id[-6:], o.side.value, o.price) for o in live] if dup else 0}",
                              flush=True)
        # trades matched before the stop settle (CONFIRMED or FAILED) within the settlement delays
        with anyio.move_on_after(10):
            while any(t.status.value not in ("CONFIRMED", "FAILED") for t in engine.trades_of(holder)):
                await anyio.sleep(0.1)
        left = engine.open_orders(by=holder)
        books = audit_books(engine, holder, start, journal)
        if verbose:
            for kind, keys in (("missed", books.fill_audit.missed), ("double", books.fill_audit.double_counted)):
                for tid, oid in keys:
                    t = engine.trade(tid)
                    print(f"fill {kind}: trade {tid} order {oid[:12]} status {t.status.value if t else None} "
                          f"taker {t.taker_order_id[:12] if t else None} matched {t.match_time if t else None}")
        answered = ex.exchange.answered
    halts = sum(1 for line in log.read_text().splitlines() if '"risk_halt"' in line)
    fa = books.fill_audit
    return ChaosReport(
        duration_s=duration, seed=seed, exit_code=bot.returncode if bot.returncode is not None else -1,
        samples=samples, orders_sent=books.orders_sent, orders_received=books.orders_received,
        orders_unknown=len(books.orders_unknown), duplicates=worst_dup, orphans=len(orphans),
        fills=books.fills, fills_missed=len(fa.missed), fills_double_counted=len(fa.double_counted),
        fills_pending_at_stop=len(fa.pending_at_stop), position_diff=books.position_diff, cash_diff=books.cash_diff,
        pnl_diff=books.pnl_diff, answered_429=answered[429],
        answered_5xx=sum(n for s, n in answered.items() if s >= 500),
        risk_exceeded=risk, left_open=len(left), halts=halts,
    )


def describe(report: ChaosReport, faults: FaultConfig) -> str:
    """The report as printed: every figure, the error figures marked."""
    r = report
    rates = ", ".join(f"{k} {v:g}" for k, v in msgspec.structs.asdict(faults).items()
                      if k not in ("seed", "error_routes") and v)
    rows = [
        ("orders sent by the bot", r.orders_sent, False),
        ("orders the exchange received", r.orders_received, False),
        ("orders received, never journaled", r.orders_unknown, True),
        ("duplicates (most at once, lasting)", r.duplicates, True),
        (f"orphans ({r.samples} samples)", r.orphans, True),
        ("fills at the exchange", r.fills, False),
        ("fills missed", r.fills_missed, True),
        ("fills double-counted", r.fills_double_counted, True),
        ("fills failed after the bot's last word", r.fills_pending_at_stop, False),
        ("tokens with a position difference", len(r.position_diff), True),
        ("cash difference (USDC micro-units)", r.cash_diff, True),
        ("PnL difference (USDC micro-units)", r.pnl_diff, True),
        ("429s received", r.answered_429, False),
        ("5xx received", r.answered_5xx, False),
        ("risk limits exceeded (samples)", r.risk_exceeded, True),
        ("orders left open after stop", r.left_open, True),
        ("risk halts", r.halts, False),
    ]
    lines = [f"chaos run: {r.duration_s:g} s, seed {r.seed}, bot exit code {r.exit_code}", f"  faults: {rates}"]
    lines += [f"  {name:40s} {value:>10}{'   (must be 0)' if must else ''}" for name, value, must in rows]
    for token, diff in r.position_diff.items():
        lines.append(f"    position difference {token[-10:]}: {diff}")
    errors = r.errors()
    lines.append("  audit: clean" if not errors else f"  audit: NOT CLEAN ({', '.join(errors)})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=60.0, help="seconds the bot runs (default 60)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the exchange and its faults (default 1)")
    ap.add_argument("--interval", type=float, default=0.5, help="seconds between samples (default 0.5)")
    ap.add_argument("--flow-speed", type=float, default=5.0, help="synthetic traders' speed-up (default 5)")
    ap.add_argument("--keep", metavar="DIR", help="keep the journal, config and bot log in DIR")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.duration <= 0 or args.interval <= 0 or args.seed < 0:
        print("chaos: --duration and --interval must be positive, --seed not negative", file=sys.stderr)
        return 2
    faults = chaos_faults(args.seed)

    def run(workdir: Path) -> ChaosReport:
        return anyio.run(lambda: chaos(args.duration, args.seed, workdir, faults=faults, interval=args.interval,
                                       flow_speed=args.flow_speed, verbose=args.verbose))

    if args.keep:
        Path(args.keep).mkdir(parents=True, exist_ok=True)
        report = run(Path(args.keep))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            report = run(Path(tmp))
    print(describe(report, faults))
    return 0 if not report.errors() else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Order build + sign + serialize per order: ours against eth-account's generic EIP-712 path.

Run: ``.venv/bin/python bench/bench_signing.py``. Prints the median microseconds per order over
several runs of a few thousand orders each, pinned to one core when the OS allows it, and the
ratio against the baseline measured in the same run.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.venue.enums import Side
from bot.venue.orders import OrderBuilder, order_body
from bot.venue.eip712 import Wallet

KEY = "0x" + "0123456789abcdef" * 4  # the public throwaway test key of the vectors
TOKEN = "71321045679252212594626385532706912750332728571942532289631379312455583992563"
COND = "0x" + "ab" * 32
OWNER = "00000000-1111-2222-3333-444444444444"
TS = 1767225600123


def _pin_one_core() -> set[int] | None:
    """Pin to one core; returns the previous affinity to restore, or None if not supported."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    previous = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(previous)})
    except OSError:
        return None
    return previous


def ours(n: int) -> float:
    """Seconds for n orders: amounts, struct hash, digest, signature, exact body bytes."""
    builder = OrderBuilder(Wallet(KEY), 137)
    limit = builder.limit
    start = time.perf_counter()
    for i in range(n):
        signed = limit(TOKEN, Side.BUY if i & 1 else Side.SELL, 400_000 + (i % 50) * 10_000,
                       10_000_000 + i * 10_000, 10_000, False, salt=i + 1, timestamp_ms=TS + i,
                       condition_id=COND)
        order_body(signed, OWNER)
    return time.perf_counter() - start


def baseline(n: int) -> float:
    """Seconds for n orders the generic way: eth-account typed data, Account.sign_message, json."""
    from eth_account import Account
    from eth_account.messages import encode_typed_data

    account = Account.from_key(KEY)
    address = account.address
    types = {
        "EIP712Domain": [
            {"name": "name", "type": "string"}, {"name": "version", "type": "string"},
            {"name": "chainId", "type": "uint256"}, {"name": "verifyingContract", "type": "address"},
        ],
        "Order": [
            {"name": "salt", "type": "uint256"}, {"name": "maker", "type": "address"},
            {"name": "signer", "type": "address"}, {"name": "tokenId", "type": "uint256"},
            {"name": "makerAmount", "type": "uint256"}, {"name": "takerAmount", "type": "uint256"},
            {"name": "side", "type": "uint8"}, {"name": "signatureType", "type": "uint8"},
            {"name": "timestamp", "type": "uint256"}, {"name": "metadata", "type": "bytes32"},
            {"name": "builder", "type": "bytes32"},
        ],
    }
    domain = {"name": "Polymarket CTF Exchange", "version": "2", "chainId": 137,
              "verifyingContract": "0xE111180000d2663C0091e4f400237545B87B996B"}
    zero = "0x" + "00" * 32
    start = time.perf_counter()
    for i in range(n):
        side = 0 if i & 1 else 1
        price = 400_000 + (i % 50) * 10_000
        shares = 10_000_000 + i * 10_000
        usdc = price * shares // 1_000_000
        maker_amount, taker_amount = (usdc, shares) if side == 0 else (shares, usdc)
        message = {"salt": i + 1, "maker": address, "signer": address, "tokenId": int(TOKEN),
                   "makerAmount": maker_amount, "takerAmount": taker_amount, "side": side,
                   "signatureType": 0, "timestamp": TS + i, "metadata": zero, "builder": zero}
        signable = encode_typed_data(full_message={"types": types, "primaryType": "Order",
                                                   "domain": domain, "message": message})
        sig = account.sign_message(signable).signature.hex()
        body = {"order": {"salt": i + 1, "maker": address, "signer": address, "tokenId": TOKEN,
                          "conditionId": COND, "makerAmount": str(maker_amount),
                          "takerAmount": str(taker_amount), "side": "BUY" if side == 0 else "SELL",
                          "signatureType": 0, "timestamp": str(TS + i), "metadata": zero, "builder": zero,
                          "signature": "0x" + sig.removeprefix("0x")},
                "owner": OWNER, "orderType": "GTC", "deferExec": False, "postOnly": False}
        json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
    return time.perf_counter() - start


def _median_us(fn, n: int, runs: int) -> float:
    fn(min(n, 200))  # warm up imports and caches
    return statistics.median(fn(n) / n * 1e6 for _ in range(runs))


def main(n: int = 5000, runs: int = 5, baseline_n: int = 500) -> None:
    previous = _pin_one_core()
    try:
        ours_us = _median_us(ours, n, runs)
        base_us = _median_us(baseline, baseline_n, runs)
    finally:
        if previous is not None:
            os.sched_setaffinity(0, previous)
    print(f"signing: build+sign+serialize per order, median of {runs} runs, one core")
    print(f"  ours (coincurve + safe-pysha3 keccak, template body)  {ours_us:8.1f} us/order  (n={n})")
    print(f"  baseline (eth-account encode_typed_data + sign_message) {base_us:8.1f} us/order  (n={baseline_n})")
    print(f"  speed-up: {base_us / ours_us:.1f}x   target <= 60 us/order: {'met' if ours_us <= 60 else 'MISSED'}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""CPU time of ``minimcp.jsonrpc.decode`` on hostile and ordinary 4 MB bodies (issue 18's target:
a maximally nested or maximally wide 4 MB body refused or parsed in under 50 ms of CPU).

    python benchmarks/json_limits.py [--runs 5]

Each body is decoded ``--runs`` times in this process; the table shows the median CPU time
(``time.process_time``) and what ``decode`` did, beside ``json.loads`` alone on the same bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from minimcp.jsonrpc import MCPError, decode  # noqa: E402

FOUR_MB = 4 * 1024 * 1024


def wide(item: bytes) -> bytes:
    return b"[" + b",".join([item] * (FOUR_MB // (len(item) + 1))) + b"]"


BODIES: dict[str, bytes] = {
    "nested [[[...]]]": b"[" * (FOUR_MB // 2) + b"]" * (FOUR_MB // 2),
    'nested {"a":{"a":...}}': b'{"a":' * (FOUR_MB // 6) + b"1" + b"}" * (FOUR_MB // 6),
    "wide [],[],...": wide(b"[]"),
    "wide {},{},...": wide(b"{}"),
    'wide ["["],...': wide(b'["["]'),
    'strings "[","[",...': wide(b'"["'),
    "numbers 1,1,...": wide(b"1"),
    "one string of brackets": json.dumps({"s": "[{" * (FOUR_MB // 2 - 8)}).encode(),
    "100,000 containers (the limit)": b"[" + b",".join([b"{}"] * 99_999) + b"]",
    "echo request": json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                "params": {"name": "echo", "arguments": {"text": "hello"}}}).encode(),
}


def cpu_ms(fn: Callable[[], Any], runs: int) -> tuple[float, str]:
    times, outcome = [], ""
    for _ in range(runs):
        start = time.process_time()
        try:
            value = fn()
            outcome = f"parsed ({type(value).__name__})"
        except MCPError as refused:
            outcome = f"refused: {str(refused).removeprefix('Parse error: ')}"
        except (ValueError, RecursionError) as failed:
            outcome = f"json.loads raised {type(failed).__name__}"
        times.append((time.process_time() - start) * 1000)
    return statistics.median(times), outcome


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    print("| body | bytes | decode CPU ms | decode | json.loads alone CPU ms |")
    print("|---|---|---|---|---|")
    for name, body in BODIES.items():
        ms, outcome = cpu_ms(lambda: decode(body), args.runs)
        alone, _ = cpu_ms(lambda: json.loads(body), args.runs)
        print(f"| {name} | {len(body):,} | {ms:.1f} | {outcome} | {alone:.1f} |")


if __name__ == "__main__":
    main()

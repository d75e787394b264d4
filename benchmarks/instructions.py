#!/usr/bin/env python3
"""minimcp's own layer in machine instructions per call: a figure that does not move with the machine.

    python benchmarks/instructions.py [--flow echo-2026|echo-legacy|elicit-2026|elicit-legacy|all]
                                      [--baseline REV ...] [-n 300]

CPU time per call swings by a third between runs on a shared machine, more than most single
changes of the request path are worth; an instruction count does not. This runs ``inprocess.py``'s
flows (the WSGI app of ``bench_server.py`` called directly, no socket) under valgrind's callgrind,
once with the warm-up alone and once with ``-n`` more calls, and prints the difference per call:
the instructions of one call, start-up and warm-up taken out. ``PYTHONHASHSEED`` is fixed so that
dict layouts are the same in every run; the 2026-07-28 and echo flows then repeat to the
instruction, and the legacy elicitation to within a fraction of a percent (its worker threads wake
in a different order each run). ``--baseline REV`` measures git revision REV (or a checkout
folder) beside this tree, for a before/after of one change.

An instruction is not a microsecond: a thread hand-off costs few instructions and much time (the
legacy elicitation runs about half the 2026-07-28 round trip's instructions and takes longer), so
the served figures of ``cpu.py`` stay the ones the targets name. Needs ``valgrind`` on the PATH
(Debian: ``apt-get install valgrind``).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from load import FLOWS
from run import HERE, checkout, git_describe

#: The calls ``inprocess.py`` makes before it measures (``min(200, n)``): both runs make them all.
WARMUP = 200
#: Seconds one run under callgrind may take (about fifty times its speed without): past it, it hangs.
RUN_TIMEOUT = 1800
_COLLECTED = re.compile(rb"Collected : (\d+)")


def instructions(folder: Path, flow: str, n: int) -> int:
    """Instructions callgrind counts for ``inprocess.py --flow FLOW -n n`` run from ``folder``."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    try:
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
             str(folder / "benchmarks" / "inprocess.py"), "--flow", flow, "-n", str(n)],
            cwd=folder / "benchmarks", env=env, capture_output=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"{flow} under callgrind ran past {RUN_TIMEOUT} s (-n {n}); try a smaller -n") from None
    found = _COLLECTED.search(run.stderr)
    if run.returncode != 0 or found is None:
        raise SystemExit(f"{flow} under callgrind failed ({run.returncode}):\n{run.stderr.decode()[-2000:]}")
    return int(found.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flow", choices=[*FLOWS, "all"], default="all")
    ap.add_argument("--baseline", metavar="REV", action="append", default=[],
                    help="also count git revision REV (or a checkout folder); repeatable")
    ap.add_argument("-n", type=int, default=300, help="calls counted beyond the warm-up")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not on the PATH (Debian: apt-get install valgrind)")
    trees: dict[str, Path] = {"this": HERE.parent}
    for rev in args.baseline:
        if Path(rev).is_dir():
            trees[rev] = Path(rev)
        else:
            trees[rev] = checkout(rev)
            print(f"# {rev}: {git_describe(rev)}")
    flows = list(FLOWS) if args.flow == "all" else [args.flow]
    print(f"| flow | {' | '.join(trees)} |" + "".join(f" this / {rev} |" for rev in args.baseline))
    print("|---|" + "---|" * (len(trees) + len(args.baseline)))
    # Every run is single-threaded under valgrind (it serialises a program's threads): one per core at once.
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        runs = {(flow, name, calls): pool.submit(instructions, folder, flow, calls)
                for flow in flows for name, folder in trees.items() for calls in (WARMUP, WARMUP + args.n)}
        for flow in flows:
            counts = {name: (runs[flow, name, WARMUP + args.n].result() - runs[flow, name, WARMUP].result()) / args.n
                      for name in trees}
            ratios = "".join(f" {counts['this'] / counts[rev]:.3f} |" for rev in args.baseline)
            print(f"| {flow} | {' | '.join(f'{value:,.0f}' for value in counts.values())} |{ratios}", flush=True)


if __name__ == "__main__":
    main()

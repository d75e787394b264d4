#!/usr/bin/env python3
"""Server CPU time per request: a load-independent measure of the request path's cost.

    python benchmarks/cpu.py [--baseline REV ...] [-n 3000] [-c 8] [--repeats 3] [--only echo|elicit]

Wall-clock requests/s swing several-fold when other work shares the machine; the CPU time the
server process spends per request does not (much). Every server runs as a subprocess (as in
``run.py``); load.py drives a fixed number of calls at it, and the server's utime+stime (from
``/proc/PID/stat``, all threads) before and after gives microseconds of server CPU per call (per
round trip in elicit mode: both POSTs). Configurations are interleaved per repeat; the table shows
medians and same-repeat ratios against the official SDK and, with ``--baseline``, the same server
from git revision REV; the wall-clock calls/s of the same runs are shown beside them (those swing
with the machine's load, the CPU figures much less).

Servers: minimcp/httpd (this tree), minimcp/httpd@REV (each --baseline), null/httpd (``null_wsgi.py``: the
cost of the HTTP server alone, echo rows), official/fast (2026-07-28 rows), official/stateful
(legacy rows), as ``run.py`` starts them. The official server is the last name of each row group.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from run import (HERE, LEGACY, MODERN, PY, Loader, Server, checkout, find_ref_dir, git_describe, loadavg, log, med,
                 process_tree)

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of the process tree rooted at ``pid`` (all threads), in seconds."""
    total = 0
    for p in process_tree(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # fields 14 and 15 of proc(5), counted after "comm)"
    return total / TICK


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", metavar="REV", action="append", default=[],
                    help="also measure the server of git revision REV (or of a checkout folder REV); repeatable, "
                         "the first is the one the 'this / base' columns compare with")
    ap.add_argument("-n", type=int, default=3000, help="calls per measured run (echo; elicit runs n/3 round trips)")
    ap.add_argument("-c", type=int, default=8, help="load.py concurrency")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", choices=["echo", "elicit"])
    ap.add_argument("--ref-dir", help="directory holding load.py and official_server.py")
    args = ap.parse_args()
    ref = find_ref_dir(args.ref_dir)
    loader = Loader(ref, 1)
    bench = str(HERE / "bench_server.py")
    specs = {
        "minimcp/httpd": ([PY, bench, "{PORT}"], None),
        "official/fast": ([PY, str(ref / "official_server.py"), "{PORT}", "--profile", "fast"], None),
        "official/stateful": ([PY, str(ref / "official_server.py"), "{PORT}", "--profile", "stateful"], None),
        "null/httpd": ([PY, str(HERE / "null_wsgi.py"), "{PORT}"], None),
    }
    bases = []
    for rev in args.baseline:
        if Path(rev).is_dir():
            tree = Path(rev).resolve()
            log(f"baseline {tree.name}: the tree in {tree}")
        else:
            tree = checkout(rev)
            log(f"baseline {rev}: {git_describe(rev)}")
        name = f"minimcp/httpd@{tree.name if Path(rev).is_dir() else rev}"
        specs[name] = ([PY, str(tree / "benchmarks" / "bench_server.py"), "{PORT}"], tree)
        bases.append(name)
    servers = {name: Server(name, argv, root=root) if root else Server(name, argv)
               for name, (argv, root) in specs.items()}
    minis = ["minimcp/httpd", *bases]
    configs = [(mode, era, minis + (["null/httpd"] if mode == "echo" else [])
                + ["official/fast" if era == MODERN else "official/stateful"])
               for mode in (["echo", "elicit"] if not args.only else [args.only]) for era in (MODERN, LEGACY)]
    us: dict[tuple[str, str, str], list[float]] = {}
    rps: dict[tuple[str, str, str], list[float]] = {}
    try:
        for s in servers.values():
            s.start()
        for s in servers.values():
            s.wait_ready()
        for mode, era, names in configs:  # warm-up: imports, pools, caches
            for name in names:
                loader.run(servers[name].url, era, mode, 300, args.c)
        for rep in range(args.repeats):
            log(f"== repeat {rep + 1}/{args.repeats} (load average {loadavg()})")
            for mode, era, names in configs:
                n = args.n if mode == "echo" else max(args.n // 3, 100)
                for name in names[rep % len(names):] + names[:rep % len(names)]:
                    s = servers[name]
                    before = cpu_seconds(s.pid)
                    r = loader.run(s.url, era, mode, n, args.c, warmup=0)
                    spent = cpu_seconds(s.pid) - before
                    if r["errors"]:
                        log(f"  {name} {mode} {era}: {r['errors']} errors {r.get('first_error')}")
                    us.setdefault((mode, era, name), []).append(spent / n * 1e6)
                    rps.setdefault((mode, era, name), []).append(r["rps"])
                    log(f"  {mode:6} {era} {name:20} {spent / n * 1e6:7.0f} us/call  ({r['rps']:.0f}/s wall)")
    finally:
        for s in servers.values():
            s.stop()
    log(f"\n### server CPU per call, c={args.c}, medians of {args.repeats} (lower is better)\n")
    log(f"base: {bases[0] if bases else '-'}\n")
    log("| mode | era | server | us/call | official / this | this / base | wall calls/s | / official | / base |")
    log("|---|---|---|---|---|---|---|---|---|")
    for mode, era, names in configs:
        official = names[-1]
        for name in names:
            vals = us[(mode, era, name)]
            vs_official = med([o / v for o, v in zip(us[(mode, era, official)], vals)]) if name != official else None
            vs_base = (med([v / b for v, b in zip(vals, us[(mode, era, bases[0])])])
                       if name != bases[0] and name in minis and bases else None)
            walls = rps[(mode, era, name)]
            wall_official = med([w / o for w, o in zip(walls, rps[(mode, era, official)])]) if name != official else None
            wall_base = (med([w / b for w, b in zip(walls, rps[(mode, era, bases[0])])])
                         if name != bases[0] and name in minis and bases else None)
            log(f"| {mode} | {era} | {name} | {med(vals):.0f} | "
                f"{'' if vs_official is None else f'{vs_official:.2f}x'} | {'' if vs_base is None else f'{vs_base:.2f}'} | "
                f"{med(walls):.0f} | {'' if wall_official is None else f'{wall_official:.2f}x'} | "
                f"{'' if wall_base is None else f'{wall_base:.2f}x'} |")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()

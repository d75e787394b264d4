#!/usr/bin/env python3
"""Server CPU time per request: a load-independent measure of the request path's cost.

    python benchmarks/cpu.py [--baseline REV ...] [-n 3000] [-c 8[,32]] [--repeats 3] [--only echo|elicit]
                             [--servers httpd[,gunicorn,gunicorn-httpd,granian,waitress,uwsgi]] [--threads 64] [--peer-h11]
                             [--null-asgi] [--nulls-only]

Wall-clock requests/s swing several-fold when other work shares the machine; the CPU time the
server process spends per request does not (much). Every server runs as a subprocess (as in
``run.py``); load.py drives a fixed number of calls at it, and the server's utime+stime (from
``/proc/PID/stat``, all threads) before and after gives microseconds of server CPU per call (per
round trip in elicit mode: both POSTs). Configurations are interleaved per repeat; the table shows
medians and same-repeat ratios against the official SDK and, with ``--baseline``, the same server
from git revision REV; the wall-clock calls/s of the same runs are shown beside them (those swing
with the machine's load, the CPU figures much less).

Servers: minimcp/S for each WSGI server S of ``--servers`` (``serving.py`` starts them: one process,
``--threads`` request threads, 64 by default, so that 32 legacy elicitations, each holding two requests at once, fit; minimcp's own server keeps its own pool), minimcp/httpd@REV (each --baseline), null/S (``null_wsgi.py`` on the same
server: the cost of that HTTP server alone, echo rows; the difference is minimcp's own share),
official/fast (2026-07-28 rows) and official/stateful (legacy rows): the official SDK on uvicorn
with httptools and uvloop, as ``uvicorn[standard]`` installs it (``--peer-h11`` adds it on h11 and
asyncio too). The official server is the last name of each row group. ``--null-asgi`` adds
null/uvicorn (``null_asgi.py``: the null app on uvicorn with httptools and uvloop) to the echo rows;
``--nulls-only`` measures the null apps alone (echo rows of one era; each --baseline as null/httpd@REV),
with null/uvicorn the last name: the HTTP servers' own cost, minimcp's against uvicorn's.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from run import HERE, LEGACY, MODERN, PY, Loader, Server, checkout, git_describe, loadavg, log, med, process_tree
from serving import SERVERS

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
    ap.add_argument("-c", type=lambda text: [int(c) for c in text.split(",")], default=[8],
                    help="load.py concurrency; several, comma-separated, make a row group each")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", choices=["echo", "elicit"])
    ap.add_argument("--servers", type=lambda text: text.split(","), default=["httpd"],
                    help=f"the WSGI servers minimcp and the null app run on, comma-separated, of {', '.join(SERVERS)}")
    ap.add_argument("--threads", type=int, default=64,
                    help="request threads of the production servers (two per open legacy elicitation)")
    ap.add_argument("--peer-h11", action="store_true", help="also the official SDK on uvicorn with h11 and asyncio")
    ap.add_argument("--null-asgi", action="store_true", help="also the null ASGI app on uvicorn (httptools, uvloop)")
    ap.add_argument("--nulls-only", action="store_true",
                    help="only the null apps, echo rows, null/uvicorn last (implies --null-asgi)")
    args = ap.parse_args()
    loader = Loader(1)
    bench = str(HERE / "bench_server.py")
    official = [PY, str(HERE / "official_server.py"), "{PORT}"]
    specs: dict[str, tuple[list[str], Path | None]] = {}
    for server in args.servers:
        threads = ["--threads", str(args.threads)]
        specs[f"minimcp/{server}"] = ([PY, bench, "{PORT}", "--server", server, *threads], None)
        specs[f"null/{server}"] = ([PY, str(HERE / "null_wsgi.py"), "{PORT}", "--server", server, *threads], None)
    specs["official/fast"] = ([*official, "--profile", "fast"], None)
    specs["official/stateful"] = ([*official, "--profile", "stateful"], None)
    peers = {MODERN: ["official/fast"], LEGACY: ["official/stateful"]}
    if args.peer_h11:
        for era, profile in ((MODERN, "fast"), (LEGACY, "stateful")):
            specs[f"official/{profile}-h11"] = ([*official, "--profile", profile, "--http", "h11", "--loop", "asyncio"],
                                                None)
            peers[era].insert(0, f"official/{profile}-h11")
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
        if args.nulls_only:
            specs["null/" + name.split("/", 1)[1]] = ([PY, str(tree / "benchmarks" / "null_wsgi.py"), "{PORT}"], tree)
    if args.null_asgi or args.nulls_only:
        specs["null/uvicorn"] = ([PY, str(HERE / "null_asgi.py"), "{PORT}"], None)
    minis = [f"minimcp/{server}" for server in args.servers] + bases
    nulls = [f"null/{server}" for server in args.servers] + (["null/uvicorn"] if args.null_asgi else [])
    if args.nulls_only:
        # The null app answers either era alike: one era's rows; the null rows are this run's and the bases'.
        bases = ["null/" + b.split("/", 1)[1] for b in bases]
        minis = [f"null/{server}" for server in args.servers] + bases
        configs = [("echo", MODERN, c, [*minis, "null/uvicorn"]) for c in args.c]
        specs = {name: spec for name, spec in specs.items() if name.startswith("null/")}
    else:
        configs = [(mode, era, c, minis + (nulls if mode == "echo" else []) + peers[era])
                   for c in args.c for mode in (["echo", "elicit"] if not args.only else [args.only])
                   for era in (MODERN, LEGACY)]
    servers = {name: Server(name, argv, root=root) if root else Server(name, argv)
               for name, (argv, root) in specs.items()}
    us: dict[tuple[str, str, int, str], list[float]] = {}
    rps: dict[tuple[str, str, int, str], list[float]] = {}
    p99: dict[tuple[str, str, int, str], list[float]] = {}
    try:
        for s in servers.values():
            s.start()
        for s in servers.values():
            s.wait_ready()
        for mode, era, c, names in configs:  # warm-up: imports, pools, caches
            for name in names:
                loader.run(servers[name].url, era, mode, 300, c)
        for rep in range(args.repeats):
            log(f"== repeat {rep + 1}/{args.repeats} (load average {loadavg()})")
            for mode, era, c, names in configs:
                n = args.n if mode == "echo" else max(args.n // 3, 100)
                for name in names[rep % len(names):] + names[:rep % len(names)]:
                    s = servers[name]
                    before = cpu_seconds(s.pid)
                    r = loader.run(s.url, era, mode, n, c, warmup=0)
                    spent = cpu_seconds(s.pid) - before
                    if r["errors"]:
                        log(f"  {name} {mode} {era}: {r['errors']} errors {r.get('first_error')}")
                    calls = max(r["ok"], 1)
                    us.setdefault((mode, era, c, name), []).append(spent / calls * 1e6)
                    rps.setdefault((mode, era, c, name), []).append(r["rps"])
                    p99.setdefault((mode, era, c, name), []).append(r["p99_ms"])
                    log(f"  {mode:6} {era} c={c:<2} {name:22} {spent / calls * 1e6:7.0f} us/call  "
                        f"({r['rps']:.0f}/s wall, p99 {r['p99_ms']:.1f} ms)")
    finally:
        for s in servers.values():
            s.stop()
    log(f"\n### server CPU per call, medians of {args.repeats} (lower is better)\n")
    log(f"base: {bases[0] if bases else '-'}; own: minimcp's echo minus the null app's on the same server\n")
    log("| mode | era | c | server | us/call | own us | official / this | this / base | wall calls/s | / official "
        "| / base | p99 ms |")
    log("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for mode, era, c, names in configs:
        official = names[-1]
        for name in names:
            vals = us[(mode, era, c, name)]
            vs_official = med([o / v for o, v in zip(us[(mode, era, c, official)], vals)]) if name != official else None
            vs_base = (med([v / b for v, b in zip(vals, us[(mode, era, c, bases[0])])])
                       if bases and name != bases[0] and name in minis else None)
            null = (mode, era, c, "null/" + name.split("/", 1)[1])
            own = med([v - z for v, z in zip(vals, us[null])]) if name in minis and null in us and null[3] != name else None
            walls = rps[(mode, era, c, name)]
            wall_official = (med([w / o for w, o in zip(walls, rps[(mode, era, c, official)])])
                             if name != official else None)
            wall_base = (med([w / b for w, b in zip(walls, rps[(mode, era, c, bases[0])])])
                         if bases and name != bases[0] and name in minis else None)
            log(f"| {mode} | {era} | {c} | {name} | {med(vals):.0f} | {'' if own is None else f'{own:.0f}'} | "
                f"{'' if vs_official is None else f'{vs_official:.2f}x'} | {'' if vs_base is None else f'{vs_base:.2f}'} | "
                f"{med(walls):.0f} | {'' if wall_official is None else f'{wall_official:.2f}x'} | "
                f"{'' if wall_base is None else f'{wall_base:.2f}x'} | {med(p99[(mode, era, c, name)]):.1f} |")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()

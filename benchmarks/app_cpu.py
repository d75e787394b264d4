#!/usr/bin/env python3
"""minimcp's own CPU per call, measured inside the app on each server.

    python benchmarks/app_cpu.py [--servers httpd,granian,gunicorn,waitress] [-n 6000] [-c 8] [--repeats 3]
                                 [--era 2026-07-28|2025-11-25]

``cpu.py``'s "own" column is minimcp's echo minus the protocol-free app on the same server, in
process CPU. That difference also holds the server's reaction to a costlier app: a server whose
threads spin or batch spends less beside it (granian), one whose Python shares the caches with the
app spends more (gunicorn gthread, waitress). Here each app runs inside ``metered.py``, which adds up
the CPU time of the app's own thread per call; minimcp's benchmark app minus the protocol-free app
is then minimcp's own work on that server, with the server's left out. Echo calls only; medians of
``--repeats`` runs, the two apps interleaved.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from pathlib import Path

from run import HERE, MODERN, PY, Loader, Server, log, med
from serving import SERVERS

APPS = {"minimcp": "bench_server:app", "null": "null_wsgi:app"}


def metered(server: Server) -> tuple[int, float]:
    """The calls and CPU seconds the app's meter has added up so far."""
    with urllib.request.urlopen(server.url.replace("/mcp", "/__metered"), timeout=10) as answer:
        totals = json.load(answer)
    return totals["calls"], totals["seconds"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--servers", type=lambda text: text.split(","), default=["httpd", "granian", "gunicorn", "waitress"],
                    help=f"comma-separated, of {', '.join(SERVERS)}")
    ap.add_argument("-n", type=int, default=6000, help="echo calls per measured run")
    ap.add_argument("-c", type=int, default=8, help="concurrent callers")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--era", default=MODERN)
    args = ap.parse_args()
    loader = Loader(1)
    servers = {(server, kind): Server(f"{kind}/{server}", [PY, str(HERE / "metered.py"), "{PORT}", "--server", server],
                                      env={"METERED_APP": app})
               for server in args.servers for kind, app in APPS.items()}
    us: dict[tuple[str, str], list[float]] = {}
    try:
        for s in servers.values():
            s.start()
        for s in servers.values():
            s.wait_ready()
            loader.run(s.url, args.era, "echo", 300, args.c)  # warm-up: imports, pools, caches
        for rep in range(args.repeats):
            for key, s in servers.items():
                calls, seconds = metered(s)
                r = loader.run(s.url, args.era, "echo", args.n, args.c, warmup=0)
                if r["errors"]:
                    log(f"  {s.name}: {r['errors']} errors {r.get('first_error')}")
                calls_after, seconds_after = metered(s)
                us.setdefault(key, []).append((seconds_after - seconds) / max(calls_after - calls, 1) * 1e6)
                log(f"  repeat {rep + 1} {s.name:18} {us[key][-1]:6.1f} us of the app's thread per call")
    finally:
        for s in servers.values():
            s.stop()
    log(f"\n### the app's own thread CPU per call, {args.era} echo, c={args.c}, medians of {args.repeats}\n")
    log("| server | minimcp's app µs | protocol-free app µs | minimcp's own µs |")
    log("|---|---|---|---|")
    for server in args.servers:
        mini, null = us[(server, "minimcp")], us[(server, "null")]
        own = med([m - z for m, z in zip(mini, null)])
        log(f"| {server} | {med(mini):.1f} | {med(null):.1f} | {own:.1f} |")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()

#!/usr/bin/env python3
"""minimcp's benchmark suite (issue 7): minimcp vs the official SDK vs a protocol-free WSGI app.

    pip install -e '.[bench]'
    python benchmarks/run.py [--rounds 3] [--duration 3] [--quick] [--only echo|elicit|auth|footprint]

Every server runs as a subprocess on a free loopback port, all at once, and ``load.py`` (the
project's load generator, ``--json`` output) drives one at a time; the rounds are interleaved (each
round runs every configuration once, servers in a rotating order), and the table shows medians over
rounds. Ratios are computed per round (same-run), then their median is shown.

Servers:
    minimcp/httpd      benchmarks/bench_server.py PORT                    (minimcp's keep-alive HTTP server,
                       what mcp.run uses)
    minimcp/gunicorn   benchmarks/bench_server.py PORT --server gunicorn  (gthread, 32 threads, 1 worker)
    official/fast      benchmarks/official_server.py PORT --profile fast       (2026-07-28 rows; stateless
                       JSON; uvicorn with httptools and uvloop, as uvicorn[standard] installs it)
    official/stateful  benchmarks/official_server.py PORT --profile stateful   (2025-11-25 rows; sessions + SSE)
    null/httpd, null/gunicorn   benchmarks/null_wsgi.py: the WSGI ceiling under the same servers
    minimcp/httpd+jwt  benchmarks/bench_server.py PORT --auth            (RS256 JWTs, JWTVerifier)
    official/fast+jwt  benchmarks/official_auth_server.py PORT           (RS256 JWTs, PyJWT verifier)
    (with --null-asgi also benchmarks/null_asgi.py: the ceiling of uvicorn with httptools and uvloop)
    minimcp/httpd@base, null/httpd@base   with --baseline REV: the same two servers from git revision
                       REV (``git archive`` into a temporary folder), to measure a change of the server

Measured:
    echo        rps, p50, p99 at c=1, 8, 32, both eras
    elicit      elicitation round trips/s (p50, p99) at c=8, both eras
    auth        2026-07-28 echo at c=8 with a bearer JWT on every call (benchmarks/authed_load.py),
                both servers checking the same RS256 token (jwt_keys.py); needs the auth extra
    footprint   server RSS after warm-up and peak (VmRSS / VmHWM of the server's process tree);
                RSS with 1,000 legacy elicitations outstanding at once (fresh minimcp/httpd server
                with MCPServer(max_workers=1100)); threads of the server process before and after
                many 2026-07-28 input_required rounds; ``import minimcp`` vs ``import mcp.server``
                wall time (median of 5); installed size of the runtime dependency closures.

Everything it runs is in this folder: a fresh clone with ``pip install -e '.[bench]'`` has it all.
"""

from __future__ import annotations

import argparse
import configparser
import contextlib
import http.client
import importlib.util
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ERA_LABEL = {MODERN: "2026-07-28", LEGACY: "2025-11-25 (legacy)"}
ECHO_CONCURRENCY = (1, 8, 32)
ELICIT_CONCURRENCY = 8
TS_LEGACY_ECHO_C8 = 2339.0  # TypeScript SDK 1.32.2, legacy stateless JSON echo at c=8 (README of the bench)
PY = sys.executable


def loadavg() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def log(*args: object) -> None:
    print(*args, flush=True)


# --- processes -----------------------------------------------------------------------------------
#: Ports already handed out: the servers start together, after every port is picked, and the kernel
#: may give a port closed by one pick to the next one.
_taken: set[int] = set()


def free_port() -> int:
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _taken:
            _taken.add(port)
            return port


def _status(pid: int) -> dict[str, str]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                out[k] = v.strip()
    except OSError:
        pass
    return out


def _kib(value: str | None) -> int:
    return int(value.split()[0]) if value else 0


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return kids


def process_tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += _children(p)
    return out


class Server:
    def __init__(self, name: str, argv: list[str], path: str = "/mcp", env: dict[str, str] | None = None,
                 root: Path = REPO):
        self.name = name
        self.port = free_port()
        self.argv = [a.replace("{PORT}", str(self.port)) for a in argv]
        self.url = f"http://127.0.0.1:{self.port}{path}"
        self.env = {**os.environ, **(env or {})}
        self.env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)
        self.root = root
        self.proc: subprocess.Popen | None = None
        self.logfile = tempfile.NamedTemporaryFile("w+", prefix=f"bench-{name.replace('/', '-')}-", suffix=".log",
                                                   delete=False)

    def start(self) -> "Server":
        self.proc = subprocess.Popen(self.argv, stdout=self.logfile, stderr=subprocess.STDOUT, env=self.env,
                                     cwd=str(self.root))
        return self

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.proc and self.proc.poll() is not None:
                raise SystemExit(f"{self.name} exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", self.url.split(str(self.port), 1)[1], headers={"Accept": "text/event-stream"})
                resp = conn.getresponse()
                resp.read() if resp.status != 200 else None
                conn.close()
                if "gunicorn" in self.name and not self.workers():
                    raise OSError("no worker yet")
                return
            except (OSError, http.client.HTTPException) as e:
                last = e
                time.sleep(0.1)
        raise SystemExit(f"{self.name} not ready after {timeout}s ({last!r}):\n{self.log_tail()}")

    def log_tail(self, n: int = 20) -> str:
        self.logfile.flush()
        with open(self.logfile.name) as f:
            return "".join(f.readlines()[-n:])

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def workers(self) -> list[int]:
        """The processes that serve requests: gunicorn's worker(s), else the process itself."""
        kids = _children(self.pid)
        return kids if kids else [self.pid]

    def rss_kib(self) -> tuple[int, int]:
        """(VmRSS, VmHWM) summed over the process tree, KiB."""
        rss = hwm = 0
        for p in process_tree(self.pid):
            st = _status(p)
            rss += _kib(st.get("VmRSS"))
            hwm += _kib(st.get("VmHWM"))
        return rss, hwm

    def threads(self) -> int:
        return sum(int(_status(p).get("Threads", "0")) for p in self.workers())

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            for p in reversed(process_tree(self.pid)):
                with contextlib.suppress(OSError):
                    os.kill(p, 9)
            self.proc.wait(5)
        self.logfile.close()
        if not os.environ.get("BENCH_KEEP_LOGS"):
            with contextlib.suppress(OSError):
                os.unlink(self.logfile.name)


def checkout(rev: str) -> Path:
    """The tree of git revision ``rev`` of this repository, extracted into a fresh temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="minimcp-baseline-"))
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def git_describe(rev: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%h %s", rev], capture_output=True,
                          text=True).stdout.strip()[:80]


# --- load.py -------------------------------------------------------------------------------------
class Loader:
    def __init__(self, procs: int):
        self.script = str(HERE / "load.py")
        self.procs = procs
        self.bearer: str | None = None  # the token the "auth" rows send (set when they run)

    def run(self, url: str, era: str, mode: str, n: int, c: int, warmup: int = 5) -> dict:
        """One load.py run; mode "auth" is echo with ``Authorization: Bearer`` on every request."""
        options = [url, "--era", era, "--mode", "echo" if mode == "auth" else mode, "-n", str(n), "-c", str(c),
                   "--json", "--warmup", str(warmup), "--procs", str(self.procs)]
        env = None
        if mode == "auth":
            argv = [PY, str(HERE / "authed_load.py"), self.script, *options]
            env = {**os.environ, "BENCH_BEARER": self.bearer or ""}
        else:
            argv = [PY, self.script, *options]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        if not lines:
            raise RuntimeError(f"load.py failed ({p.returncode}): {p.stderr[-500:]}")
        return json.loads(lines[-1])


# --- throughput rounds ---------------------------------------------------------------------------
def rotate(items: list, k: int) -> list:
    k %= len(items)
    return items[k:] + items[:k]


def throughput(args, servers: dict[str, Server], loader: Loader, modes: list[str]) -> dict:
    """results[(mode, era, c, server)] = list of per-round result dicts."""
    configs: list[tuple[str, str, int, list[str]]] = []
    if "echo" in modes:
        for era in (MODERN, LEGACY):
            official = "official/fast" if era == MODERN else "official/stateful"
            names = ["minimcp/httpd", "minimcp/gunicorn", official, "null/httpd", "null/gunicorn"]
            if args.baseline:
                names += ["minimcp/httpd@base", "null/httpd@base"]
            if era == LEGACY and args.official_fast_legacy:
                names.append("official/fast")
            if args.null_asgi:
                names.append("null/uvicorn")
            for c in args.concurrency:
                configs.append(("echo", era, c, names))
    if "elicit" in modes:
        for era in (MODERN, LEGACY):
            official = "official/fast" if era == MODERN else "official/stateful"
            names = ["minimcp/httpd", "minimcp/gunicorn", official] + (["minimcp/httpd@base"] if args.baseline else [])
            configs.append(("elicit", era, ELICIT_CONCURRENCY, names))
    if "auth" in modes:
        configs.append(("auth", MODERN, 8, ["minimcp/httpd+jwt", "official/fast+jwt"]))
    results: dict[tuple, list[dict]] = {}
    est: dict[tuple, float] = {}
    for rnd in range(args.rounds):
        log(f"\n== round {rnd + 1}/{args.rounds} == (load average {loadavg()})")
        for mode, era, c, names in configs:
            for name in rotate(names, rnd):
                key = (mode, era, c, name)
                url = servers[name].url
                if key not in est:  # calibrate -n so one run lasts about --duration seconds
                    probe = loader.run(url, era, mode, max(100, 25 * c), c)
                    est[key] = probe["rps"] or 100.0
                n = int(min(max(est[key] * args.duration, 8 * c, 100), 60000))
                r = loader.run(url, era, mode, n, c)
                if r["ok"]:
                    est[key] = r["rps"]
                results.setdefault(key, []).append(r)
                flag = f"  ERRORS={r['errors']} {r.get('first_error') or r.get('setup_errors')}" if r["errors"] else ""
                log(f"  {mode:6} {era} c={c:<2} {name:18} n={n:<6} {r['rps']:8.1f}/s  p50={r['p50_ms']:7.2f}ms "
                    f"p99={r['p99_ms']:7.2f}ms  wall={r['wall_s']:.2f}s{flag}")
    return results


def med(values: list[float]) -> float:
    values = [v for v in values if v == v]
    return statistics.median(values) if values else float("nan")


def med_field(results: dict, key: tuple, field: str) -> float:
    return med([r[field] for r in results.get(key, [])])


def med_ratio(results: dict, a: tuple, b: tuple, field: str = "rps") -> float:
    """Median over rounds of the same-round ratio a/b."""
    ra, rb = results.get(a, []), results.get(b, [])
    return med([x[field] / y[field] for x, y in zip(ra, rb) if y[field]])


# --- footprint -----------------------------------------------------------------------------------
def import_times(n: int = 5) -> dict[str, float]:
    # Byte-code is cached (as after any pip install), but outside the work tree; PYTHONDONTWRITEBYTECODE
    # would make every run recompile minimcp (a checkout has no .pyc) and not mcp (pip wrote its .pyc).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "minimcp-bench-pycache")
    out = {}
    for label, code in (("pass", "pass"), ("import minimcp", "import minimcp"),
                        ("import minimcp.server", "import minimcp.server"), ("import mcp.server", "import mcp.server")):
        subprocess.run([PY, "-c", code], env=env, check=True, cwd=tempfile.gettempdir())  # compile .pyc once
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            subprocess.run([PY, "-c", code], env=env, check=True, cwd=tempfile.gettempdir())
            times.append((time.perf_counter() - t0) * 1000)
        out[label] = statistics.median(times)
        log(f"  {label:24} median {out[label]:7.1f} ms   ({', '.join(f'{t:.0f}' for t in times)})")
    return out


def _requirement_parser():
    try:
        from packaging.requirements import Requirement
    except ImportError:  # pragma: no cover
        from pip._vendor.packaging.requirements import Requirement  # type: ignore[no-redef]
    return Requirement


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def dependency_closure(roots: list[str]) -> dict[str, int]:
    """{distribution: installed bytes (its RECORD)} for ``roots`` and everything they require,
    following the extras a requirement names (``pyjwt[crypto]``) and the markers of this platform."""
    from importlib import metadata

    Requirement = _requirement_parser()
    seen: dict[str, int] = {}
    done: set[tuple[str, str]] = set()
    todo: list[tuple[str, str]] = []
    for r in roots:
        req = Requirement(r)
        todo += [(_norm(req.name), e) for e in ("", *req.extras)]
    while todo:
        name, extra = todo.pop()
        if (name, extra) in done:
            continue
        done.add((name, extra))
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            seen[name] = -1
            continue
        if name not in seen:
            size = 0
            for f in dist.files or []:
                with contextlib.suppress(OSError):
                    size += os.path.getsize(dist.locate_file(f))
            seen[name] = size
        for spec in dist.requires or []:
            req = Requirement(spec)
            if req.marker is not None and not req.marker.evaluate({"extra": extra}):
                continue
            if req.marker is None and extra:
                continue  # already followed for extra ""
            todo += [(_norm(req.name), e) for e in ("", *req.extras)]
    return seen


def install_requires() -> list[str]:
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    return [ln.strip() for ln in cfg.get("options", "install_requires").splitlines() if ln.strip()]


def deps_sizes() -> dict:
    mini = dependency_closure(install_requires())
    mcp = dependency_closure(["mcp"])
    own = sum(p.stat().st_size for p in (REPO / "minimcp").rglob("*.py"))
    mib = 1024 * 1024
    log(f"  minimcp runtime deps: {sum(mini.values()) / mib:6.1f} MiB in {len(mini)} distributions: "
        + ", ".join(f"{k} {v / mib:.1f}" for k, v in sorted(mini.items(), key=lambda kv: -kv[1])))
    log(f"  minimcp itself (source): {own / 1024:.0f} KiB")
    log(f"  mcp closure:          {sum(mcp.values()) / mib:6.1f} MiB in {len(mcp)} distributions: "
        + ", ".join(f"{k} {v / mib:.1f}" for k, v in sorted(mcp.items(), key=lambda kv: -kv[1])))
    missing = [k for k, v in {**mini, **mcp}.items() if v < 0]
    if missing:
        log(f"  (not installed: {missing})")
    return {"minimcp_deps": sum(v for v in mini.values() if v > 0), "minimcp_own": own,
            "mcp": sum(v for v in mcp.values() if v > 0), "n_mini": len(mini), "n_mcp": len(mcp)}


def outstanding_legacy(load, n: int, sessions: int, max_workers: int) -> dict:
    """Hold ``n`` legacy elicitations open at once on a fresh minimcp/httpd server."""
    srv = Server("minimcp/httpd-outstanding",
                 [PY, str(HERE / "bench_server.py"), "{PORT}", "--max-workers", str(max_workers)]).start()
    out: dict = {"n": n, "max_workers": max_workers}
    try:
        srv.wait_ready()
        # warm-up: a few echo calls and full legacy round trips
        load.run(srv.url, LEGACY, "elicit", 200, 8)
        load.run(srv.url, LEGACY, "echo", 500, 8)
        time.sleep(0.3)
        out["rss_warm"], _ = srv.rss_kib()
        out["threads_warm"] = srv.threads()
        sids = []
        for s in range(sessions):
            w = load.Worker(srv.url, LEGACY, 30.0, 900000 + s)
            w.handshake()
            sids.append(w.session_id)
            w.conn.close()
        arrived: list[tuple[str, int]] = []
        lock = threading.Lock()
        all_in = threading.Event()
        gate = threading.BoundedSemaphore(64)  # stay inside the server's listen backlog while connecting
        results: list[str | None] = [None] * n

        def call(i: int) -> None:
            released = False
            gate.acquire()
            try:
                w = load.Worker(srv.url, LEGACY, 300.0, i)
                w.session_id = sids[i % sessions]
                w.next_id = 1_000_000 + i * 10  # unique within the session

                def on_request(m: dict) -> None:
                    nonlocal released
                    if m["method"] != "elicitation/create":
                        raise load.ProtocolError(m["method"])
                    with lock:
                        arrived.append((w.session_id, m["id"]))
                        if len(arrived) == n:
                            all_in.set()
                    if not released:
                        released = True
                        gate.release()

                r = w.rpc("tools/call", {"name": "confirm", "arguments": {"n": i}}, name="confirm",
                          on_request=on_request)
                res = r.get("result") or {}
                results[i] = res.get("content", [{}])[0].get("text")
                w.conn.close()
            except Exception as e:  # noqa: BLE001
                results[i] = f"error: {e!r}"
            finally:
                if not released:
                    gate.release()

        t0 = time.monotonic()
        threads = [threading.Thread(target=call, args=(i,), daemon=True) for i in range(n)]
        for t in threads:
            t.start()
        ok_all = all_in.wait(180)
        out["open_s"] = time.monotonic() - t0
        out["arrived"] = len(arrived)
        time.sleep(0.5)
        out["rss_outstanding"], _ = srv.rss_kib()
        out["threads_outstanding"] = srv.threads()
        log(f"  {len(arrived)}/{n} questions outstanding after {out['open_s']:.1f}s: RSS "
            f"{out['rss_outstanding'] / 1024:.1f} MiB (warm {out['rss_warm'] / 1024:.1f} MiB), "
            f"threads {out['threads_outstanding']} (warm {out['threads_warm']})")
        if not ok_all:
            errors = [r for r in results if r and r.startswith("error")]
            log(f"  not all questions arrived; first errors: {errors[:3]}")

        # answer them all over a few keep-alive connections
        def answer(part: list[tuple[str, int]]) -> None:
            conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
            for sid, eid in part:
                body = json.dumps({"jsonrpc": "2.0", "id": eid,
                                   "result": {"action": "accept", "content": {"confirm": True}}}).encode()
                conn.request("POST", "/mcp", body=body, headers={
                    "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                    "Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY})
                conn.getresponse().read()
            conn.close()

        parts = [arrived[k::8] for k in range(8)]
        answerers = [threading.Thread(target=answer, args=(p,)) for p in parts]
        for t in answerers:
            t.start()
        for t in answerers:
            t.join()
        for t in threads:
            t.join(120)
        out["ok"] = sum(1 for i, r in enumerate(results) if r == f"confirmed {i}")
        out["errors"] = [r for i, r in enumerate(results) if r != f"confirmed {i}"][:3]
        out["rss_after"], out["hwm"] = srv.rss_kib()
        log(f"  answered: {out['ok']}/{n} final results correct; RSS after {out['rss_after'] / 1024:.1f} MiB, "
            f"peak {out['hwm'] / 1024:.1f} MiB" + (f"; errors {out['errors']}" if out["errors"] else ""))
    finally:
        srv.stop()
    return out


def threads_between_rounds(load, server_argv: list[str], name: str, k: int, loader: Loader) -> dict:
    """Thread count of a fresh server before/after ``k`` unanswered 2026-07-28 input_required rounds."""
    srv = Server(name, server_argv).start()
    out: dict = {"server": name, "k": k}
    try:
        srv.wait_ready()
        loader.run(srv.url, MODERN, "elicit", 400, 8)  # warm the pools at the concurrency used below
        pending: list[tuple[int, dict, dict]] = []
        lock = threading.Lock()

        def first_rounds(part: list[int]) -> None:
            w = load.Worker(srv.url, MODERN, 30.0, part[0])
            for i in part:
                params = {"name": "confirm", "arguments": {"n": i}}
                r = w.rpc("tools/call", params, name="confirm")
                with lock:
                    pending.append((i, params, r.get("result") or {}))
            w.conn.close()

        def second_rounds(part: list[tuple[int, dict, dict]]) -> int:
            w = load.Worker(srv.url, MODERN, 30.0, 0)
            ok = 0
            for i, params, res in part:
                retry = dict(params)
                retry["inputResponses"] = {key: {"action": "accept", "content": {"confirm": True}}
                                           for key in (res.get("inputRequests") or {})}
                if "requestState" in res:
                    retry["requestState"] = res["requestState"]
                r = w.rpc("tools/call", retry, name="confirm")
                if ((r.get("result") or {}).get("content") or [{}])[0].get("text") == f"confirmed {i}":
                    ok += 1
            w.conn.close()
            return ok

        counts = [0] * 8

        def run_part(j: int) -> None:
            counts[j] = second_rounds(pending[j::8])

        def batch(first: range, phase: str) -> None:
            ts = [threading.Thread(target=first_rounds, args=(list(first[j::8]),)) for j in range(8)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            if phase:
                time.sleep(0.5)
                out["input_required"] = sum(1 for _, _, res in pending if res.get("resultType") == "input_required")
                out["between"] = srv.threads()
            ts = [threading.Thread(target=run_part, args=(j,)) for j in range(8)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()

        batch(range(-200, 0), "")  # warm-up with this very driver (the pool grows to its working size)
        pending.clear()
        time.sleep(0.5)
        out["before"] = srv.threads()
        batch(range(k), "measure")
        out["completed"] = sum(counts)
        time.sleep(0.5)
        out["after"] = srv.threads()
        log(f"  {name}: threads {out['before']} before, {out['between']} with {out['input_required']}/{k} "
            f"input_required rounds unanswered, {out['after']} after {out['completed']}/{k} retries completed")
    finally:
        srv.stop()
    return out


# --- report --------------------------------------------------------------------------------------
def fmt(v: float, spec: str = ".0f") -> str:
    return "—" if v != v else format(v, spec)


def report(args, results: dict, rss: dict, foot: dict) -> None:
    log("\n" + "=" * 100)
    log(f"RESULTS (load average at the end {loadavg()}): medians of {args.rounds} interleaved round(s), ~{args.duration:g}s per run, "
        f"load.py --procs {args.procs}, {os.cpu_count()} CPUs shared by server and load generator")
    if any(k[0] == "echo" for k in results):
        for era in (MODERN, LEGACY):
            names = sorted({k[3] for k in results if k[0] == "echo" and k[1] == era},
                           key=lambda s: ("minimcp" not in s, "official" not in s, s))
            log(f"\n### echo, {ERA_LABEL[era]}\n")
            head = "| server | " + " | ".join(f"c={c} rps | c={c} p50 ms | c={c} p99 ms" for c in args.concurrency) + " |"
            log(head)
            log("|" + "---|" * (1 + 3 * len(args.concurrency)))
            for name in names:
                cells = []
                for c in args.concurrency:
                    key = ("echo", era, c, name)
                    cells += [fmt(med_field(results, key, "rps")), fmt(med_field(results, key, "p50_ms"), ".2f"),
                              fmt(med_field(results, key, "p99_ms"), ".2f")]
                log(f"| {name} | " + " | ".join(cells) + " |")
            official = "official/fast" if era == MODERN else "official/stateful"
            log(f"\nsame-run ratios (rps), {ERA_LABEL[era]}:\n")
            log("| ratio | " + " | ".join(f"c={c}" for c in args.concurrency) + " |")
            log("|" + "---|" * (1 + len(args.concurrency)))
            pairs = []
            for mini in ("minimcp/httpd", "minimcp/gunicorn"):
                peers = [official, "null/" + mini.split("/")[1]]
                if era == LEGACY and args.official_fast_legacy:
                    peers.insert(1, "official/fast")
                pairs += [(mini, peer) for peer in peers]
            if args.baseline:
                pairs += [("minimcp/httpd", "minimcp/httpd@base"), ("null/httpd", "null/httpd@base")]
            for mini, peer in pairs:
                cells = [fmt(med_ratio(results, ("echo", era, c, mini), ("echo", era, c, peer)), ".2f")
                         for c in args.concurrency]
                log(f"| {mini} / {peer} | " + " | ".join(cells) + " |")
    if any(k[0] == "elicit" for k in results):
        log(f"\n### elicitation round trips, c={ELICIT_CONCURRENCY}\n")
        log("| server | era | round trips/s | p50 ms | p99 ms | rps / official | p99 / official |")
        log("|---|---|---|---|---|---|---|")
        for era in (MODERN, LEGACY):
            official = "official/fast" if era == MODERN else "official/stateful"
            for name in ("minimcp/httpd", "minimcp/gunicorn", official) + (("minimcp/httpd@base",) if args.baseline else ()):
                key = ("elicit", era, ELICIT_CONCURRENCY, name)
                ref = ("elicit", era, ELICIT_CONCURRENCY, official)
                ratio = "" if name == official else fmt(med_ratio(results, key, ref), ".2f")
                p99r = "" if name == official else fmt(med_ratio(results, key, ref, "p99_ms"), ".2f")
                log(f"| {name} | {ERA_LABEL[era]} | {fmt(med_field(results, key, 'rps'))} | "
                    f"{fmt(med_field(results, key, 'p50_ms'), '.2f')} | {fmt(med_field(results, key, 'p99_ms'), '.2f')} | "
                    f"{ratio} | {p99r} |")
    if any(k[0] == "auth" for k in results):
        log("\n### 2026-07-28 echo, c=8, every call carrying an RS256 JWT\n")
        log("| server | rps | p50 ms | p99 ms |")
        log("|---|---|---|---|")
        for name in ("minimcp/httpd+jwt", "official/fast+jwt"):
            key = ("auth", MODERN, 8, name)
            log(f"| {name} | {fmt(med_field(results, key, 'rps'))} | {fmt(med_field(results, key, 'p50_ms'), '.2f')} | "
                f"{fmt(med_field(results, key, 'p99_ms'), '.2f')} |")
    if rss:
        log("\n### server memory (process tree: gunicorn = master + worker)\n")
        log("| server | RSS after warm-up MiB | peak RSS (VmHWM) MiB |")
        log("|---|---|---|")
        for name, (warm, peak) in rss.items():
            log(f"| {name} | {warm / 1024:.1f} | {peak / 1024:.1f} |")
    if foot:
        log("\n### footprint\n")
        o = foot.get("outstanding")
        if o:
            log(f"- {o['n']:,} legacy elicitations outstanding (minimcp/httpd, MCPServer(max_workers={o['max_workers']})): "
                f"RSS {o['rss_outstanding'] / 1024:.1f} MiB with {o['arrived']} open (warm {o['rss_warm'] / 1024:.1f} MiB, "
                f"{o['threads_outstanding']} threads), {o['ok']}/{o['n']} results correct after answering")
        for t in foot.get("threads", []):
            log(f"- threads held between 2026-07-28 rounds, {t['server']}: {t['between'] - t['before']:+d} "
                f"({t['before']} before, {t['between']} with {t['input_required']} rounds unanswered, {t['after']} after "
                f"{t['completed']} retries)")
        it = foot.get("imports")
        if it:
            log(f"- import wall time (median of 5): python -c pass {it['pass']:.0f} ms; import minimcp "
                f"{it['import minimcp']:.0f} ms; import minimcp.server {it['import minimcp.server']:.0f} ms; "
                f"import mcp.server {it['import mcp.server']:.0f} ms")
        d = foot.get("deps")
        if d:
            log(f"- installed runtime deps: minimcp {d['minimcp_deps'] / 2**20:.1f} MiB in {d['n_mini']} dists "
                f"(+{d['minimcp_own'] / 1024:.0f} KiB own source) vs mcp {d['mcp'] / 2**20:.1f} MiB in {d['n_mcp']} dists")
    targets(args, results, foot)


def targets(args, results: dict, foot: dict) -> None:
    log("\n### issue 7 targets\n")
    rows = []

    def row(name: str, met: bool | None, detail: str) -> None:
        rows.append((name, "n/a" if met is None else ("MET" if met else "NOT MET"), detail))

    if any(k[0] == "echo" for k in results) and 8 in args.concurrency:
        for mini in ("minimcp/httpd", "minimcp/gunicorn"):
            r = med_ratio(results, ("echo", MODERN, 8, mini), ("echo", MODERN, 8, "official/fast"))
            rps = med_field(results, ("echo", MODERN, 8, mini), "rps")
            row(f"2026 echo c=8 >= 1.5x official fast ({mini})", r >= 1.5, f"{r:.2f}x (need 1.5x)")
            row(f"2026 echo c=8 > TS legacy echo 2339 rps ({mini})", rps > TS_LEGACY_ECHO_C8,
                f"{rps:.0f} rps = {rps / TS_LEGACY_ECHO_C8:.2f}x of 2339")
        for mini in ("minimcp/httpd", "minimcp/gunicorn"):
            null = "null/" + mini.split("/")[1]
            for era in (MODERN, LEGACY):
                rs = [med_ratio(results, ("echo", era, c, mini), ("echo", era, c, null)) for c in args.concurrency]
                row(f"echo >= 60% of {null}, {era} ({mini})", min(rs) >= 0.6,
                    ", ".join(f"c={c} {x:.0%}" for c, x in zip(args.concurrency, rs)))
    if any(k[0] == "auth" for k in results):
        r = med_ratio(results, ("auth", MODERN, 8, "minimcp/httpd+jwt"), ("auth", MODERN, 8, "official/fast+jwt"))
        row("2026 echo c=8 with RS256 JWT >= 1.5x official with auth (issue 15)", r >= 1.5, f"{r:.2f}x (need 1.5x)")
    if any(k[0] == "elicit" for k in results):
        for era in (MODERN, LEGACY):
            official = "official/fast" if era == MODERN else "official/stateful"
            for mini in ("minimcp/httpd", "minimcp/gunicorn"):
                key = ("elicit", era, ELICIT_CONCURRENCY, mini)
                ref = ("elicit", era, ELICIT_CONCURRENCY, official)
                r = med_ratio(results, key, ref)
                p = med_ratio(results, key, ref, "p99_ms")
                row(f"elicit c=8 >= 1.5x official, p99 no worse, {era} ({mini})", r >= 1.5 and p <= 1.0,
                    f"{r:.2f}x rps, p99 {p:.2f}x of official")
    o = foot.get("outstanding")
    if o:
        mib = o["rss_outstanding"] / 1024
        row(f"{o['n']:,} outstanding legacy elicitations <= 150 MB RSS",
            o["arrived"] == o["n"] and o["ok"] == o["n"] and mib * 1.048576 <= 150,
            f"{mib:.1f} MiB = {mib * 1.048576:.1f} MB, {o['arrived']} open, {o['ok']} completed")
    for t in foot.get("threads", []):
        # A round that held a thread would add one per open round; the server's own pools (gunicorn's
        # lazily grown executor) may still start a thread or two while the rounds run.
        held = t["between"] - t["before"]
        row(f"0 threads held between 2026 rounds ({t['server']})", held * 100 < t["k"] and t["completed"] == t["k"],
            f"{held:+d} threads with {t['input_required']} rounds open ({held / t['k']:.3f} per round)")
    it = foot.get("imports")
    if it:
        r = it["import minimcp"] / it["import mcp.server"]
        row("import minimcp <= 1/4 of import mcp.server", r <= 0.25,
            f"{it['import minimcp']:.0f} / {it['import mcp.server']:.0f} ms = {r:.2f} "
            f"(import minimcp.server: {it['import minimcp.server'] / it['import mcp.server']:.2f})")
    d = foot.get("deps")
    if d:
        r = d["minimcp_deps"] / d["mcp"]
        row("runtime deps <= 1/3 of mcp's", r <= 1 / 3,
            f"{d['minimcp_deps'] / 2**20:.1f} / {d['mcp'] / 2**20:.1f} MiB = {r:.2f}")
    log("| target | status | measured |")
    log("|---|---|---|")
    for name, status, detail in rows:
        log(f"| {name} | {status} | {detail} |")


# --- main ----------------------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=3.0, help="target seconds per measured run")
    ap.add_argument("--quick", action="store_true", help="1 round, ~1.5 s runs, smaller footprint tests")
    ap.add_argument("--only", choices=["echo", "elicit", "auth", "footprint"])
    ap.add_argument("--concurrency", type=lambda s: [int(x) for x in s.split(",")], default=list(ECHO_CONCURRENCY))
    ap.add_argument("--procs", type=int, default=1, help="load.py --procs")
    ap.add_argument("--outstanding", type=int, default=1000, help="legacy elicitations held open at once")
    ap.add_argument("--official-fast-legacy", action="store_true",
                    help="also run legacy echo against official/fast (stateless JSON)")
    ap.add_argument("--null-asgi", action="store_true", help="also run the uvicorn null app (null_asgi.py)")
    ap.add_argument("--json-out", help="write raw results here")
    ap.add_argument("--baseline", metavar="REV",
                    help="also serve minimcp/httpd and null/httpd from git revision REV (rows ending @base)")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.duration = 1, 1.5
    missing = [name for name in ("mcp", "uvicorn", "gunicorn", "httptools", "uvloop") if importlib.util.find_spec(name) is None]
    if missing:
        sys.exit(f"benchmarks/run.py needs {', '.join(missing)}: run  pip install -e '.[bench]'  first")
    import load  # benchmarks/load.py: this folder is the script's

    loader = Loader(args.procs)
    modes = [args.only] if args.only else ["echo", "elicit", "auth", "footprint"]
    if "auth" in modes and importlib.util.find_spec("jwt") is None:
        sys.exit("benchmarks/run.py needs PyJWT for the auth rows: run  pip install -e '.[bench]'  first")
    log(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {loadavg()}")
    with contextlib.suppress(Exception):
        from importlib import metadata

        log("versions: " + ", ".join(f"{d} {metadata.version(d)}" for d in
                                     ("mcp", "uvicorn", "gunicorn", "werkzeug", "pydantic")))
        for extra in ("uvloop", "httptools"):
            with contextlib.suppress(metadata.PackageNotFoundError):
                log(f"{extra} {metadata.version(extra)}: the official peer runs on it")

    results: dict = {}
    rss: dict = {}
    foot: dict = {}
    if "echo" in modes or "elicit" in modes or "auth" in modes:
        bench = str(HERE / "bench_server.py")
        null = str(HERE / "null_wsgi.py")
        specs: dict[str, list[str]] = {}
        env: dict[str, dict[str, str]] = {}
        if "echo" in modes or "elicit" in modes:
            specs.update({
                "minimcp/httpd": [PY, bench, "{PORT}"],
                "minimcp/gunicorn": [PY, bench, "{PORT}", "--server", "gunicorn"],
                "official/fast": [PY, str(HERE / "official_server.py"), "{PORT}", "--profile", "fast"],
                "official/stateful": [PY, str(HERE / "official_server.py"), "{PORT}", "--profile", "stateful"],
            })
        if "auth" in modes:
            sys.path.insert(0, str(HERE))
            from jwt_keys import make_keys

            jwks_file, loader.bearer = make_keys(Path(tempfile.mkdtemp(prefix="minimcp-bench-keys-")))
            specs["minimcp/httpd+jwt"] = [PY, bench, "{PORT}", "--auth"]
            specs["official/fast+jwt"] = [PY, str(HERE / "official_auth_server.py"), "{PORT}"]
            env = {name: {"BENCH_JWKS_FILE": str(jwks_file)} for name in ("minimcp/httpd+jwt", "official/fast+jwt")}
        if "echo" in modes:
            specs["null/httpd"] = [PY, null, "{PORT}"]
            specs["null/gunicorn"] = [PY, null, "{PORT}", "--server", "gunicorn"]
            if args.null_asgi:
                specs["null/uvicorn"] = [PY, str(HERE / "null_asgi.py"), "{PORT}"]
        roots: dict[str, Path] = {}
        if args.baseline:
            base = checkout(args.baseline)
            log(f"baseline: {args.baseline} ({git_describe(args.baseline)}) in {base}")
            specs["minimcp/httpd@base"] = [PY, str(base / "benchmarks" / "bench_server.py"), "{PORT}"]
            specs["null/httpd@base"] = [PY, str(base / "benchmarks" / "null_wsgi.py"), "{PORT}"]
            roots = {"minimcp/httpd@base": base, "null/httpd@base": base}
        servers = {name: Server(name, argv, env=env.get(name), root=roots.get(name, REPO))
                   for name, argv in specs.items()}
        try:
            for s in servers.values():
                s.start()
            for s in servers.values():
                s.wait_ready()
                log(f"started {s.name:18} pid {s.pid:<7} {s.url}")
            log("\nwarm-up (echo both eras, elicit where served) ...")
            for name, s in servers.items():
                if name.endswith("+jwt"):
                    loader.run(s.url, MODERN, "auth", 300, 8)
                    continue
                loader.run(s.url, MODERN, "echo", 300, 8)
                loader.run(s.url, LEGACY, "echo", 300, 8)
                if not name.startswith("null"):
                    era = MODERN if name == "official/fast" else LEGACY if name == "official/stateful" else None
                    for e in ([era] if era else [MODERN, LEGACY]):
                        loader.run(s.url, e, "elicit", 100, 8)
            time.sleep(0.3)
            warm = {name: s.rss_kib()[0] for name, s in servers.items()}
            log("RSS after warm-up: " + ", ".join(f"{n} {v / 1024:.1f} MiB" for n, v in warm.items()))
            results = throughput(args, servers, loader, [m for m in modes if m != "footprint"])
            rss = {name: (warm[name], s.rss_kib()[1]) for name, s in servers.items()}
        finally:
            for s in servers.values():
                s.stop()
    if "footprint" in modes:
        log("\n== footprint ==")
        log("import wall time:")
        foot["imports"] = import_times(5)
        log("installed size of runtime dependency closures:")
        foot["deps"] = deps_sizes()
        log("threads held between 2026-07-28 rounds:")
        k = 200 if args.quick else 1000
        foot["threads"] = [
            threads_between_rounds(load, [PY, str(HERE / "bench_server.py"), "{PORT}"], "minimcp/httpd", k, loader),
            threads_between_rounds(load, [PY, str(HERE / "bench_server.py"), "{PORT}", "--server", "gunicorn"],
                                   "minimcp/gunicorn", k, loader),
        ]
        n = min(args.outstanding, 200) if args.quick else args.outstanding
        log(f"{n} legacy elicitations outstanding at once:")
        foot["outstanding"] = outstanding_legacy(load, n, sessions=10, max_workers=n + 100)
    report(args, results, rss, foot)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"results": {"|".join(map(str, k)): v for k, v in results.items()}, "rss": rss,
                       "footprint": foot}, f, indent=1, default=str)


if __name__ == "__main__":
    main()

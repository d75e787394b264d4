"""Soak test: mixed traffic for a long time against minimcp's httpd and gunicorn, watching RSS and threads.

    python benchmarks/soak.py [--duration 600] [--sample 30] [--clients 6] [--servers httpd,gunicorn]

Both servers run ``benchmarks/soak_server.py`` (``echo``, ``confirm``) in their own process and
are driven at the same time, each by ``--clients`` threads doing a weighted mix of: 2026-07-28
echo and elicitation round trips (``input_required`` -> retry); legacy echo; legacy elicitation
answered accept or decline, never answered (the server times out after 3 s) or abandoned by an
abrupt disconnect; and session churn (initialize, DELETE). Every answer is checked: an echo must
return its own unique text and an elicitation the action and item it was given, so a lost or
misrouted answer is counted, as is every 5xx. Every ``--sample`` seconds the server process's RSS
and thread count are read from ``/proc``. Targets: RSS flat over the second half of the run (its
end at most 5 % above the first half's peak: allocator arenas and pools fill during the first
half, a leak keeps growing through the second), thread count flat, 0 lost or misrouted answers, 0 5xx.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

import requests
from serving import HERE, REPO, gunicorn_command  # this folder is on sys.path

#: What the benchmark server's ``confirm(n)`` answers for each action, followed by ``n``.
OUTCOME = {"accept": "confirmed", "decline": "declined"}
MODERN, LEGACY = "2026-07-28", "2025-11-25"
BASE = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
TIMEOUT = 30


class Failure(Exception):
    """A checked answer that was wrong; ``kind`` is 5xx, lost, misrouted or unexpected."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


# --- one server process --------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Served:
    name: str
    proc: subprocess.Popen[bytes]
    url: str
    samples: list[tuple[float, int, int]] = field(default_factory=list)  # (t, rss KiB, threads)

    def pid(self) -> int:
        """The process serving requests: gunicorn's single worker, else the server itself."""
        if self.name != "gunicorn":
            return self.proc.pid
        try:
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                children = f.read().split()
            return int(children[0]) if children else self.proc.pid
        except OSError:
            return self.proc.pid

    def sample(self, started: float) -> None:
        status = dict(line.split(":", 1) for line in open(f"/proc/{self.pid()}/status") if ":" in line)
        self.samples.append((time.monotonic() - started, int(status["VmRSS"].split()[0]),
                             int(status["Threads"].strip())))


def start(name: str) -> Served:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p)}
    if name == "gunicorn":
        cmd = gunicorn_command("soak_server:app", "127.0.0.1", port, 64, "--timeout", "120")
    else:
        cmd = [sys.executable, os.path.join(HERE, "soak_server.py"), str(port)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    served = Served(name, proc, f"http://127.0.0.1:{port}/mcp")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            requests.get(served.url, timeout=1)
            return served
        except requests.ConnectionError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"{name} did not start")


# --- the client side -----------------------------------------------------------------------------
_ids = itertools.count(1)


def body(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params}


def status_ok(response: requests.Response, expected: tuple[int, ...] = (200,)) -> None:
    if response.status_code >= 500:
        raise Failure("5xx", f"{response.status_code} {response.text[:200]}")
    if response.status_code not in expected:
        raise Failure("unexpected", f"{response.status_code} {response.text[:200]}")


def messages_of(response: requests.Response) -> list[dict[str, Any]]:
    if response.headers.get("Content-Type", "").startswith("text/event-stream"):
        return [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:") and line[5:].strip()]
    return [response.json()] if response.content else []


def final(response: requests.Response, request_id: int) -> dict[str, Any]:
    found = [m for m in messages_of(response) if m.get("id") == request_id and ("result" in m or "error" in m)]
    if len(found) != 1:
        raise Failure("lost", f"no answer for id {request_id}: {response.text[:200]}")
    return found[0]


def text_of(answer: dict[str, Any]) -> str:
    try:
        return answer["result"]["content"][0]["text"]
    except (KeyError, IndexError, TypeError):
        raise Failure("unexpected", json.dumps(answer)[:200]) from None


class Client:
    """One simulated client: a legacy session it reuses, and a weighted choice of operations."""

    def __init__(self, url: str, rng: random.Random) -> None:
        self.url = url
        self.rng = rng
        self.session: str | None = None

    # --- modern ----------------------------------------------------------------------------------
    def modern(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        message = body(method, {**params, "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                                    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}})
        headers = {**BASE, "MCP-Protocol-Version": MODERN, "Mcp-Method": method, "Mcp-Name": params["name"]}
        response = requests.post(self.url, data=json.dumps(message), headers=headers, timeout=TIMEOUT)
        status_ok(response)
        return final(response, message["id"])

    def modern_echo(self) -> None:
        token = uuid.uuid4().hex
        if text_of(self.modern("tools/call", {"name": "echo", "arguments": {"text": token}})) != token:
            raise Failure("misrouted", "modern echo")

    def modern_elicit(self) -> None:
        n = self.rng.randrange(10**6)
        call = {"name": "confirm", "arguments": {"n": n}}
        first = self.modern("tools/call", call)["result"]
        if first.get("resultType") != "input_required":
            raise Failure("unexpected", json.dumps(first)[:200])
        (key,) = first["inputRequests"]
        action = self.rng.choice(["accept", "decline"])
        answer = {"action": action, "content": {"confirm": True}} if action == "accept" else {"action": action}
        done = self.modern("tools/call", {**call, "inputResponses": {key: answer},
                                          "requestState": first["requestState"]})
        if text_of(done) != f"{OUTCOME[action]} {n}":
            raise Failure("misrouted", f"modern elicitation {action} {n}: {text_of(done)}")

    # --- legacy ----------------------------------------------------------------------------------
    def headers(self) -> dict[str, str]:
        return {**BASE, "Mcp-Session-Id": self.session or "", "MCP-Protocol-Version": LEGACY}

    def handshake(self) -> None:
        message = body("initialize", {"protocolVersion": LEGACY, "capabilities": {"elicitation": {}},
                                      "clientInfo": {"name": "soak", "version": "1"}})
        response = requests.post(self.url, data=json.dumps(message), headers=BASE, timeout=TIMEOUT)
        status_ok(response)
        final(response, message["id"])
        self.session = response.headers["Mcp-Session-Id"]
        ack = requests.post(self.url, data=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                            headers=self.headers(), timeout=TIMEOUT)
        status_ok(ack, (202,))

    def legacy_echo(self) -> None:
        if self.session is None:
            self.handshake()
        token = uuid.uuid4().hex
        message = body("tools/call", {"name": "echo", "arguments": {"text": token}})
        response = requests.post(self.url, data=json.dumps(message), headers=self.headers(), timeout=TIMEOUT)
        status_ok(response)
        if text_of(final(response, message["id"])) != token:
            raise Failure("misrouted", "legacy echo")

    def legacy_elicit(self, how: str) -> None:
        """``how``: accept, decline, never (hold the stream until the server gives up), drop (disconnect)."""
        if self.session is None:
            self.handshake()
        n = self.rng.randrange(10**6)
        message = body("tools/call", {"name": "confirm", "arguments": {"n": n}})
        response = requests.post(self.url, data=json.dumps(message), headers=self.headers(), timeout=TIMEOUT,
                                 stream=True)
        status_ok(response)
        lines = response.iter_lines()
        question = None
        for line in lines:
            if line.startswith(b"data:") and line[5:].strip():
                event = json.loads(line[5:])
                if event.get("method") == "elicitation/create":
                    question = event
                    break
        if question is None:
            raise Failure("lost", "no elicitation/create on the stream")
        if how == "drop":
            response.close()
            return
        if how in ("accept", "decline"):
            result = {"action": how, "content": {"confirm": True}} if how == "accept" else {"action": how}
            answer = requests.post(self.url, data=json.dumps({"jsonrpc": "2.0", "id": question["id"], "result": result}),
                                   headers=self.headers(), timeout=TIMEOUT)
            status_ok(answer, (202,))
        rest = [json.loads(line[5:]) for line in lines if line.startswith(b"data:") and line[5:].strip()]
        ends = [m for m in rest if m.get("id") == message["id"]]
        if len(ends) != 1:
            raise Failure("lost", f"legacy elicitation {how}: {rest}")
        if how == "never":
            if ends[0].get("error", {}).get("code") != -32001:
                raise Failure("unexpected", json.dumps(ends[0])[:200])
        elif text_of(ends[0]) != f"{OUTCOME[how]} {n}":
            raise Failure("misrouted", f"legacy elicitation {how} {n}: {text_of(ends[0])}")

    def churn(self) -> None:
        if self.session is not None:
            response = requests.delete(self.url, headers=self.headers(), timeout=TIMEOUT)
            status_ok(response, (200, 404))
        self.session = None
        self.handshake()

    def operations(self) -> list[tuple[int, str, Callable[[], None]]]:
        return [(30, "modern_echo", self.modern_echo), (10, "modern_elicit", self.modern_elicit),
                (30, "legacy_echo", self.legacy_echo),
                (10, "legacy_accept", lambda: self.legacy_elicit("accept")),
                (10, "legacy_decline", lambda: self.legacy_elicit("decline")),
                (2, "legacy_never", lambda: self.legacy_elicit("never")),
                (5, "legacy_drop", lambda: self.legacy_elicit("drop")), (3, "churn", self.churn)]


@dataclass
class Tally:
    # _lock guards ops and failures: every client thread of one server adds to them.
    _lock: threading.Lock = field(default_factory=threading.Lock)
    ops: collections.Counter[str] = field(default_factory=collections.Counter)
    failures: collections.Counter[str] = field(default_factory=collections.Counter)
    examples: list[str] = field(default_factory=list)

    def add(self, op: str, failure: Failure | None) -> None:
        with self._lock:
            self.ops[op] += 1
            if failure is not None:
                self.failures[failure.kind] += 1
                if len(self.examples) < 10:
                    self.examples.append(f"{op}: {failure}")


def drive(url: str, seed: int, until: float, tally: Tally) -> None:
    client = Client(url, random.Random(seed))
    ops = client.operations()
    weights = [w for w, _, _ in ops]
    while time.monotonic() < until:
        _, name, op = client.rng.choices(ops, weights)[0]
        try:
            op()
            tally.add(name, None)
        except Failure as failure:
            tally.add(name, failure)
        except requests.RequestException as exc:
            tally.add(name, Failure("lost", repr(exc)[:200]))
            client.session = None


def report(served: Served, tally: Tally) -> bool:
    print(f"\n=== {served.name} ===")
    print("   t(s)   RSS(MiB)  threads")
    for t, rss, threads in served.samples:
        print(f"  {t:6.0f}  {rss / 1024:8.1f}  {threads:7d}")
    rss = [s[1] for s in served.samples]
    threads = [s[2] for s in served.samples]
    warm = served.samples[1][1] if len(served.samples) > 1 else rss[0]
    growth = (rss[-1] - warm) / warm * 100
    print(f"  RSS MiB start/end/max: {rss[0] / 1024:.1f} / {rss[-1] / 1024:.1f} / {max(rss) / 1024:.1f}; "
          f"growth after warm-up {growth:+.1f} %")
    print(f"  threads start/end/max: {threads[0]} / {threads[-1]} / {max(threads)}")
    print(f"  operations: {sum(tally.ops.values())} {dict(sorted(tally.ops.items()))}")
    print(f"  failures: {dict(tally.failures) or 'none'}")
    for example in tally.examples:
        print(f"    {example}")
    # Pools create threads lazily up to their size, so "flat" means: the end is no higher than the
    # first half of the run already reached (plus a little slack for calls in flight).
    first_half = max(threads[: max(2, len(threads) // 2)])
    peak_early = max(rss[: max(2, len(rss) // 2)])
    late_growth = (rss[-1] - peak_early) / peak_early * 100
    print(f"  RSS growth over the second half: {late_growth:+.1f} % (end vs the first half's peak)")
    return late_growth <= 5 and threads[-1] <= first_half + 4


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=600.0)
    ap.add_argument("--sample", type=float, default=30.0)
    ap.add_argument("--clients", type=int, default=6, help="client threads per server")
    ap.add_argument("--servers", default="httpd,gunicorn")
    args = ap.parse_args()
    servers = [start(name) for name in args.servers.split(",")]
    tallies = [Tally() for _ in servers]
    started = time.monotonic()
    until = started + args.duration
    threads = [threading.Thread(target=drive, args=(s.url, i * 1000 + c, until, tally), daemon=True)
               for i, (s, tally) in enumerate(zip(servers, tallies)) for c in range(args.clients)]
    for s in servers:
        s.sample(started)
    for t in threads:
        t.start()
    try:
        next_sample = started + args.sample
        while time.monotonic() < until:
            time.sleep(max(0.0, min(next_sample, until) - time.monotonic()))
            if time.monotonic() >= next_sample:
                for s in servers:
                    s.sample(started)
                next_sample += args.sample
        for t in threads:
            t.join(TIMEOUT + 10)
        time.sleep(5)  # let abandoned calls time out and their threads end before the last sample
        for s in servers:
            s.sample(started)
        healthy = [report(s, tally) for s, tally in zip(servers, tallies)]
    finally:
        for s in servers:
            s.proc.terminate()
            try:
                s.proc.wait(10)
            except subprocess.TimeoutExpired:
                s.proc.kill()
    failures = sum(sum(t.failures.values()) for t in tallies)
    print(f"\nverdict: {'PASS' if all(healthy) and not failures else 'FAIL'}")
    sys.exit(0 if all(healthy) and not failures else 1)


if __name__ == "__main__":
    main()

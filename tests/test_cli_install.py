"""``minimcp install`` run several times at once into one host file, as a setup script that installs
its servers in parallel does: every entry is kept, and the file keeps what install promises of it
(replaced in one step, a symlink replaced rather than written through, private when it holds secrets)."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

from test_cli import MINIMCP, home_env

SERVERS = 8


def install_at_once(home: Path, count: int) -> list[subprocess.CompletedProcess[str]]:
    """``count`` installs of a remote server each (its own name and token), all started before any ends."""
    started = [subprocess.Popen([MINIMCP, "install", "cursor", f"https://s{i}.example.com/mcp", "--name", f"s{i}",
                                 "--token", f"secret-{i}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=home_env(home), start_new_session=True) for i in range(count)]
    done = []
    for process in started:
        out, err = process.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return done


def test_installs_run_at_once_into_one_file_keep_every_entry(tmp_path: Path) -> None:
    config = tmp_path / ".cursor" / "mcp.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"theme": "dark", "mcpServers": {"kept": {"url": "https://kept.example.com/mcp"}}}))
    config.chmod(0o600)

    for done in install_at_once(tmp_path, SERVERS):
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("added s")
    written = json.loads(config.read_text())
    assert written["theme"] == "dark"
    assert written["mcpServers"] == {"kept": {"url": "https://kept.example.com/mcp"}, **{
        f"s{i}": {"url": f"https://s{i}.example.com/mcp", "headers": {"Authorization": f"Bearer secret-{i}"}}
        for i in range(SERVERS)}}
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert sorted(path.name for path in config.parent.iterdir()) == [".mcp.json.lock", "mcp.json"]  # no scratch left


def test_a_new_file_holding_tokens_is_private_to_its_owner(tmp_path: Path) -> None:
    for done in install_at_once(tmp_path, 2):
        assert done.returncode == 0, done.stderr
    config = tmp_path / ".cursor" / "mcp.json"
    assert set(json.loads(config.read_text())["mcpServers"]) == {"s0", "s1"}
    assert stat.S_IMODE(config.stat().st_mode) == 0o600


def test_a_symlinked_file_is_replaced_not_written_through(tmp_path: Path) -> None:
    shared = tmp_path / "dotfiles" / "mcp.json"
    shared.parent.mkdir()
    shared.write_text('{"mcpServers": {}}\n')
    (tmp_path / ".cursor").mkdir()
    link = tmp_path / ".cursor" / "mcp.json"
    link.symlink_to(shared)

    for done in install_at_once(tmp_path, 2):
        assert done.returncode == 0, done.stderr
    assert not link.is_symlink()
    assert set(json.loads(link.read_text())["mcpServers"]) == {"s0", "s1"}
    assert shared.read_text() == '{"mcpServers": {}}\n'

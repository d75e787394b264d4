"""``minimcp install``: a server entry in a host application's own MCP configuration file.

Each host keeps its servers in a JSON file of its own, at a path that depends on the OS, under a
key of its own (``mcpServers``, or ``servers`` for VS Code), with its own spelling of a remote
server. The entry is merged into what is there (other servers and settings stay as they were, and
environment variables already set on the entry are kept unless given again), and the file is
rewritten only when the entry changed, so installing twice changes nothing the second time.

One install's read, merge and write happen under a lock on a file beside the configuration, so
installs run at once into one file (a setup script's, in parallel) each keep the others' entries;
the file itself is still replaced in one step, never written in place.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from minimcp.cli.errors import CLIError, json_object
from minimcp.cli.target import Target


#: How long an install waits for another one to finish with the same file, in seconds.
LOCK_WAIT = 30.0
#: How often it looks again whether the other one has finished, in seconds.
LOCK_POLL = 0.02


def _user_config() -> Path:
    """Where desktop applications keep their settings on this OS (Claude Desktop and VS Code use it)."""
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming")
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")


def _typed_remote(url: str, headers: dict[str, str]) -> dict[str, Any]:
    return {"type": "http", "url": url, **({"headers": headers} if headers else {})}


@dataclass(frozen=True)
class Host:
    title: str
    path: Callable[[], Path]
    key: str = "mcpServers"
    #: Whether a local entry says ``"type": "stdio"`` (hosts that also take remote entries by type).
    typed: bool = False
    #: The entry for a URL, or ``None`` when the host's file takes no remote servers.
    remote: Callable[[str, dict[str, str]], dict[str, Any]] | None = None
    #: What to do instead when ``remote`` is ``None``.
    remote_hint: str = ""


HOSTS: dict[str, Host] = {
    "claude-desktop": Host(
        "Claude Desktop", lambda: _user_config() / "Claude" / "claude_desktop_config.json",
        remote_hint="Claude Desktop's file holds local commands only: add a remote server in Claude Desktop "
                    "under Settings > Connectors instead"),
    "claude-code": Host("Claude Code", lambda: Path.home() / ".claude.json", typed=True, remote=_typed_remote),
    "cursor": Host("Cursor", lambda: Path.home() / ".cursor" / "mcp.json",
                   remote=lambda url, headers: {"url": url, **({"headers": headers} if headers else {})}),
    "vscode": Host("VS Code", lambda: _user_config() / "Code" / "User" / "mcp.json", key="servers", typed=True,
                   remote=_typed_remote),
    "gemini": Host("Gemini CLI", lambda: Path.home() / ".gemini" / "settings.json",
                   remote=lambda url, headers: {"httpUrl": url, **({"headers": headers} if headers else {})}),
}


def parse_env(pairs: list[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise CLIError(f"--env {pair!r}: write it as NAME=VALUE, e.g. --env API_KEY=s3cret")
        env[key.strip()] = value
    return env


def entry_for(host: Host, target: Target, env: dict[str, str], headers: dict[str, str]) -> dict[str, Any]:
    """The host's entry that starts (or reaches) the target."""
    if target.url is not None:
        if host.remote is None:
            raise CLIError(host.remote_hint)
        if env:
            raise CLIError("--env sets the environment of a server the host starts; a URL is a server already "
                           "running: give it --header or --token instead")
        return host.remote(target.url, headers)
    if headers:
        raise CLIError("--header and --token are for a URL; a server the host starts takes --env NAME=VALUE")
    if target.command:
        command, args = shutil.which(target.command[0]) or target.command[0], list(target.command[1:])
    else:
        command, args = sys.executable, ["-m", "minimcp", "run", target.spec]  # this Python, where minimcp is
    entry: dict[str, Any] = {"type": "stdio"} if host.typed else {}
    entry.update(command=command, args=args)
    if env:
        entry["env"] = env
    return entry


def install(host_name: str, name: str, entry: dict[str, Any], printing: bool, out: IO[str]) -> int:
    host = HOSTS[host_name]
    if printing:
        out.write(json.dumps({host.key: {name: entry}}, indent=2) + "\n")
        return 0
    path = host.path()
    with _locked(path):
        config = _read(path)
        servers = config.setdefault(host.key, {})
        if not isinstance(servers, dict):
            raise CLIError(f"{path}: {host.key!r} is not a JSON object; fix the file, nothing was written")
        before = servers.get(name)
        if isinstance(before, dict) and isinstance(before.get("env"), dict) and "env" in entry:
            entry = {**entry, "env": {**before["env"], **entry["env"]}}
        elif isinstance(before, dict) and isinstance(before.get("env"), dict) and "command" in entry:
            entry = {**entry, "env": before["env"]}  # variables set earlier are kept, as the official install does
        if before == entry:
            out.write(f"{name} is already in {host.title}'s {path}; nothing changed\n")
            return 0
        servers[name] = entry
        _write(path, config)
    verb = "updated" if before is not None else "added"
    out.write(f"{verb} {name} in {host.title}'s {path}:\n{json.dumps({name: entry}, indent=2)}\n"
              f"restart {host.title} to load it\n")
    return 0


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold the lock of ``path`` (``.NAME.lock`` beside it) for one read-modify-write, waiting at most
    ``LOCK_WAIT`` for another install. The lock is a file of its own that stays: the configuration
    is replaced on each write, and a lock held on a file that was replaced guards nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.parent / f".{path.name}.lock"
    handle = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        deadline = time.monotonic() + LOCK_WAIT
        while not _try_lock(handle):
            if time.monotonic() > deadline:
                raise CLIError(f"another program has held {lock} for {LOCK_WAIT:g} s; nothing was written: "
                               "try again once it is done")
            time.sleep(LOCK_POLL)
        yield
    finally:
        os.close(handle)  # closing the descriptor releases its lock


def _try_lock(handle: int) -> bool:
    """Take the exclusive lock on the open file ``handle`` if it is free; ``False`` when another holds it."""
    if sys.platform == "win32":
        import msvcrt

        try:
            msvcrt.locking(handle, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    if not text.strip():
        return {}
    return json_object(text, str(path), "fix it (comments are not kept) or add the entry by hand with --print; "
                       "nothing was written")


def _write(path: Path, config: dict[str, Any]) -> None:
    """Replace the file in one step, so a host reading it never sees half of it."""
    handle, scratch = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(json.dumps(config, indent=2) + "\n")
        if path.exists():
            os.chmod(scratch, path.stat().st_mode & 0o777)
        os.replace(scratch, path)
    except BaseException:
        Path(scratch).unlink(missing_ok=True)
        raise

"""A program on a real terminal: a fresh pty as its stdin, stdout, stderr and controlling terminal,
driven the way a user drives it (wait for a prompt, type the keys)."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class Terminal:
    """``command`` running on a pty of its own; ``env`` is added to this process's environment."""

    def __init__(self, command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
        import fcntl
        import termios

        self.master, slave = pty.openpty()
        environment = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", **(env or {}))
        self.proc = subprocess.Popen(
            command, stdin=slave, stdout=slave, stderr=slave, env=environment, cwd=cwd,
            start_new_session=True, preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0), close_fds=True)
        os.close(slave)
        self.screen = ""
        self._seen = 0

    def expect(self, text: str, timeout: float = 20.0) -> None:
        """Read until ``text`` appears after the previous match; bounded by ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while text not in self.screen[self._seen:]:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{text!r} never appeared; screen so far:\n{self.screen}")
            ready, _, _ = select.select([self.master], [], [], remaining)
            if ready:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:  # EIO: the child closed the terminal
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"terminal closed before {text!r}; screen:\n{self.screen}")
                self.screen += chunk.decode(errors="replace")
        self._seen = self.screen.index(text, self._seen) + len(text)

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        os.close(self.master)

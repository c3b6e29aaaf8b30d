"""Key presses from a terminal: a small raw-mode (cbreak) stdin reader, restored on exit."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Callable
from typing import Any, Protocol

KeyHandler = Callable[[str], object]


class KeyInput(Protocol):
    """Delivers single key presses to a handler while started."""

    def start(self, loop: asyncio.AbstractEventLoop, on_key: KeyHandler) -> bool:
        """Begin delivering keys; False if keys are unavailable (no terminal)."""
        ...

    def stop(self) -> None:
        """Stop and restore the terminal (idempotent)."""
        ...


class NoKeys:
    """No key input (stdin is not a terminal, or keys are off)."""

    def start(self, loop: asyncio.AbstractEventLoop, on_key: KeyHandler) -> bool:
        """Never starts."""
        return False

    def stop(self) -> None:
        """Nothing to restore."""


class TerminalKeys:
    """Reads a TTY in cbreak mode (no echo, no line buffering; Ctrl-C still interrupts).

    The terminal's settings are saved on `start` and restored on `stop`; when the file
    descriptor is not a TTY, `start` returns False and nothing is changed.
    """

    def __init__(self, fd: int | None = None) -> None:
        self.fd = sys.stdin.fileno() if fd is None else fd
        self._saved: list[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_key: KeyHandler | None = None

    def start(self, loop: asyncio.AbstractEventLoop, on_key: KeyHandler) -> bool:
        """Switch the terminal to cbreak mode and watch it from the event loop."""
        import termios
        import tty

        if self._saved is not None:
            return True
        if not os.isatty(self.fd):
            return False
        self._saved = termios.tcgetattr(self.fd)
        tty.setcbreak(self.fd, termios.TCSANOW)
        self._loop, self._on_key = loop, on_key
        loop.add_reader(self.fd, self._readable)
        return True

    def _readable(self) -> None:
        try:
            data = os.read(self.fd, 64)
        except OSError:
            data = b""
        if not data:
            self.stop()
            return
        handler = self._on_key
        if handler is None:
            return
        for char in data.decode("utf-8", "replace"):
            handler(char)

    def stop(self) -> None:
        """Stop watching and restore the saved terminal settings."""
        import termios

        if self._loop is not None:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self.fd)
            self._loop = None
        if self._saved is not None:
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
            self._saved = None

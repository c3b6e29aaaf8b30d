"""What every run command shares: logging, stop signals, and errors classified, not guessed.

- `-v` shows the SDK's INFO logs (and the CLI's protocol lines) on stderr, plus tracebacks;
  `-q` shows only errors. Lines are plain `LEVEL name: message`, on a terminal or not.
- SIGTERM and SIGHUP stop a run the way Ctrl-C does (the bundle is finished), with status
  `terminated` / `hangup` and exit 143 / 129. A second signal while the run finishes waits
  for the bundle (it says so); a third exits at once, naming what is left incomplete.
- Usage errors are their own types (exit 2); anything else is a bug or an environment
  failure: one line, "run with -v for the traceback", exit 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import signal
import sys
import traceback
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

import typer
from rich.console import Console
from rich.text import Text

from duplex_client.bundle.layout import RESULT_FILE
from duplex_client.eval.runner import EvalProgress
from duplex_client.media.devices.lookup import DeviceError
from duplex_client.media.errors import MediaError
from duplex_client.protocol.errors import DuplexClientError
from duplex_client.run.options import UsageError
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE

#: Exceptions that mean "bad options or input": one line, exit 2, nothing sent.
USAGE_ERRORS: tuple[type[BaseException], ...] = (
    UsageError,
    MediaError,
    DeviceError,
    DuplexClientError,
)
#: Signals that finish the bundle and exit 128 + signal number, with the run's stop reason.
STOP_SIGNALS: dict[signal.Signals, str] = {
    signal.SIGINT: "interrupted",
    signal.SIGTERM: "terminated",
    signal.SIGHUP: "hangup",
}
#: The signal that gives up waiting for the bundle: the third one.
FORCE_AFTER = 3
#: Python keyword → CLI flag, where the flag is not `--` + the keyword with dashes.
FLAG_NAMES: dict[str, str] = {
    "realtime": "--realtime/--burst",
    "reconnect": "--reconnect/--no-reconnect",
    "thumbnails": "--no-thumbnails",
    "start_muted": "--muted",
    "actions": "--at",
    "window_knobs": "--basic-window-*/--context-*",
    "no_playback": "--no-playback",
    "playback": "--playback/--no-playback",
    "tool_results": "--tool-result",
    "plan_cache": "--plan-cache/--no-plan-cache",
}
LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"

log = logging.getLogger("duplex_cli")

T = TypeVar("T")


def stderr_console() -> Console:
    """The console for one-line notes and errors (stderr, no highlighting, no wrapping)."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


def setup_logging(*, verbose: bool, quiet: bool) -> None:
    """Plain log lines on stderr: INFO with `-v`, errors only with `-q`, warnings otherwise."""
    level = logging.INFO if verbose else (logging.ERROR if quiet else logging.WARNING)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    for name in ("duplex_client", "duplex_cli"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(level)
        logger.propagate = False


def flag_for(param: str) -> str:
    """The CLI flag of an SDK keyword argument (`chunk_ms` → `--chunk-ms`)."""
    return FLAG_NAMES.get(param, "--" + param.replace("_", "-"))


def usage_message(exc: BaseException) -> str:
    """A usage error's message naming CLI flags instead of the SDK's keyword arguments."""
    render = getattr(exc, "render", None)
    if callable(render):  # the SDK's UsageError knows which keywords its message names
        return str(render(flag_for))
    message = str(exc)
    param = getattr(exc, "param", None)
    if not isinstance(param, str) or not param:
        return message
    flag = flag_for(param)
    if flag in message:
        return message
    named, count = re.subn(rf"(?<![\w/.-]){re.escape(param)}(?![\w/-])", flag, message, count=1)
    return named if count else f"{flag}: {message}"


class Stopped(Exception):
    """The run was stopped by SIGINT, SIGTERM or SIGHUP (the bundle is finished)."""

    def __init__(self, signum: int, reason: str) -> None:
        super().__init__(reason)
        self.signum, self.reason = signum, reason

    @property
    def exit_code(self) -> int:
        """128 + the signal number (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP)."""
        return 128 + self.signum


class StopSignals:
    """Inside a running loop: SIGINT/SIGTERM/SIGHUP note the reason and cancel the current task.

    The reason goes to `progress.stop_reason`, so the SDK records the run's status as
    `interrupted` / `terminated` / `hangup`. The task is cancelled once: a second signal
    (Ctrl-C twice, INT then TERM) lets the bundle finish and says so; a third exits at once
    (`os._exit`), saying what is left incomplete.
    """

    def __init__(self, progress: RunProgress | EvalProgress, *, sigint: bool = True) -> None:
        self.progress = progress
        self.received: Stopped | None = None
        self.count = 0
        self._task = asyncio.current_task()
        self._installed: list[signal.Signals] = []
        #: Without SIGINT, the caller keeps its own Ctrl-C (`live`: the first one quits).
        self._signals = {s: r for s, r in STOP_SIGNALS.items() if sigint or s != signal.SIGINT}

    def __enter__(self) -> StopSignals:
        loop = asyncio.get_running_loop()
        for sig, reason in self._signals.items():
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, self._stop, sig, reason)
                self._installed.append(sig)
        return self

    def __exit__(self, *exc_info: object) -> None:
        loop = asyncio.get_running_loop()
        for sig in self._installed:
            loop.remove_signal_handler(sig)

    def _stop(self, sig: signal.Signals, reason: str) -> None:
        log.info("%s received: stopping the run", sig.name)
        self.count += 1
        if self.received is None:
            self.received = Stopped(sig.value, reason)
            self.progress.stop_reason = reason
            if self._task is not None:
                self._task.cancel()
        elif self.count < FORCE_AFTER:
            _say(
                f"{sig.name}: still finishing the bundle, please wait (once more exits at "
                "once and leaves it incomplete)"
            )
        else:
            force_exit(sig, self.progress, self.received.exit_code)


def force_exit(sig: signal.Signals, progress: RunProgress | EvalProgress, code: int) -> None:
    """Exit at once (no more waiting for the bundle), saying what is left incomplete."""
    _say(f"{sig.name}: forced exit: {incomplete(progress)}")
    os._exit(code)


def _say(line: str) -> None:
    """One line on stderr, flushed (inside a signal callback, before a forced exit)."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def incomplete(progress: RunProgress | EvalProgress) -> str:
    """What a forced exit leaves unfinished: the bundle's missing files, or the eval's items."""
    from duplex_client.bundle.layout import BundleLayout

    if isinstance(progress, EvalProgress):
        return (
            f"{progress.running} running item(s) left unfinished and the eval summary not "
            "updated (run the same command again to resume)"
        )
    if progress.bundle_dir is None:
        return "no bundle was written yet"
    layout = BundleLayout(progress.bundle_dir)
    missing = [p.name for p in (layout.timeline, layout.output, layout.result) if not p.exists()]
    if not missing:
        return f"{progress.bundle_dir} has its result.json, but files may be partly written"
    return f"{progress.bundle_dir} is incomplete (not written: {', '.join(missing)})"


async def until_stopped(
    progress: RunProgress | EvalProgress, work: Awaitable[T], *, sigint: bool = True
) -> T:
    """`work` under `StopSignals`: a signal that cancelled it is raised as `Stopped`."""
    with StopSignals(progress, sigint=sigint) as stops:
        try:
            return await work
        except asyncio.CancelledError:
            if stops.received is not None:
                raise stops.received from None
            raise


def print_json(doc: object) -> None:
    """A result document as indented JSON on stdout (non-ASCII kept as is)."""
    sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


def note(err: Console, label: str, style: str, message: str) -> None:
    """One `label: message` line on stderr; the message is never read as markup."""
    err.print(Text.assemble((label, style), f": {message}"))


def fail(
    exc: BaseException,
    *,
    verbose: bool,
    err: Console,
    bundle: Path | None = None,
    json_output: bool = False,
) -> typer.Exit:
    """Report an exception that escaped a command: classified, one line, the exit code.

    A stopped run names its `bundle`, and with `json_output` prints the `result.json` it
    finished, as a run that ended by itself does.
    """
    if isinstance(exc, KeyboardInterrupt | Stopped):
        reason = exc.reason if isinstance(exc, Stopped) else "interrupted"
        kept = "the bundle keeps everything received so far"
        note(err, reason, "yellow", kept if bundle is None else f"{kept} ({bundle})")
        if json_output and bundle is not None:
            with contextlib.suppress(OSError, ValueError):
                print_json(json.loads((bundle / RESULT_FILE).read_text(encoding="utf-8")))
        return typer.Exit(exc.exit_code if isinstance(exc, Stopped) else EXIT_INTERRUPTED)
    if isinstance(exc, USAGE_ERRORS):
        note(err, "error", "red", usage_message(exc))
        return typer.Exit(EXIT_USAGE)
    if verbose:
        sys.stderr.write("".join(traceback.format_exception(exc)))
    hint = "" if verbose else " (run with -v for the traceback)"
    note(err, "error", "red", f"{type(exc).__name__}: {exc}{hint}")
    return typer.Exit(EXIT_FAILED)

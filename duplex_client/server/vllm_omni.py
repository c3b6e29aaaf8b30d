"""Launch the real MiniCPM-o deployment: `vllm serve MODEL --omni` with its duplex deploy config."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final
from urllib.parse import quote

DEFAULT_MODEL: Final = "openbmb/MiniCPM-o-4_5"
#: vLLM-Omni's single-GPU MiniCPM-o 4.5 deploy config (declares `session_mode: duplex`).
DEFAULT_DEPLOY_CONFIG: Final = "vllm_omni/deploy/minicpmo_4_5.yaml"
_STOP_GRACE_S: Final = 15.0


class VllmNotFoundError(RuntimeError):
    """No `vllm` executable on PATH."""


class VllmExitedError(RuntimeError):
    """vLLM exited before (or while) serving."""

    def __init__(self, returncode: int) -> None:
        super().__init__(f"vllm exited with code {returncode} before it became healthy")
        self.returncode = returncode


@dataclass(frozen=True, slots=True)
class VllmOmniLaunch:
    """What to launch and where it will listen."""

    model: str = DEFAULT_MODEL
    deploy_config: str = DEFAULT_DEPLOY_CONFIG
    host: str = "127.0.0.1"
    port: int = 8099
    executable: str = "vllm"
    api_key: str | None = None
    extra_args: tuple[str, ...] = ()

    def command(self) -> list[str]:
        """The argv: `vllm serve MODEL --omni --trust-remote-code --deploy-config C --port P`."""
        argv = [self.executable, "serve", self.model, "--omni", "--trust-remote-code"]
        argv += [
            "--deploy-config",
            self.deploy_config,
            "--host",
            self.host,
            "--port",
            str(self.port),
        ]
        if self.api_key:
            argv += ["--api-key", self.api_key]
        return argv + list(self.extra_args)

    def display_command(self) -> str:
        """The command as a shell line, with the API key masked."""
        argv = self.command()
        if self.api_key:
            argv[argv.index("--api-key") + 1] = "***"
        return shlex.join(argv)

    @property
    def client_host(self) -> str:
        """The host a local client dials (loopback when vLLM binds every interface)."""
        return "127.0.0.1" if self.host in ("0.0.0.0", "", "::") else self.host

    @property
    def duplex_url(self) -> str:
        """Where clients connect (`duplex=1`, the model name)."""
        return f"ws://{self.client_host}:{self.port}/v1/realtime?duplex=1&model={quote(self.model)}"

    @property
    def health_url(self) -> str:
        """vLLM's health endpoint."""
        return f"http://{self.client_host}:{self.port}/health"


def find_vllm(executable: str = "vllm") -> str:
    """The absolute path of `vllm`, or `VllmNotFoundError` with an install hint."""
    found = shutil.which(executable)
    if found is None:
        raise VllmNotFoundError(
            f"`{executable}` was not found on PATH. On a GPU host, install vLLM-Omni "
            "(see docs/vllm_omni.md), activate its environment, and run this command again. "
            "Without a GPU, use the reference server: `duplex-cli serve`."
        )
    return found


def resolve_deploy_config(path: str, executable: str, timeout_s: float = 20.0) -> str:
    """An existing path as is; a `vllm_omni/...` path resolved inside vLLM-Omni's install.

    The recipes give deploy configs relative to the vLLM-Omni repository; with a pip install
    the file lives in the package, which only the interpreter next to `vllm` can locate.
    """
    if Path(path).exists():
        return str(Path(path).resolve())
    python = Path(executable).resolve().parent / "python"
    if not path.startswith("vllm_omni/") or not python.exists():
        return path
    code = "import importlib.util as u; s = u.find_spec('vllm_omni'); print(s.origin if s else '')"
    try:
        out = subprocess.run(
            [str(python), "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return path
    if out:
        candidate = Path(out).parent.parent / path
        if candidate.exists():
            return str(candidate)
    return path


async def _healthy(host: str, port: int) -> bool:
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError:
        return False
    try:
        writer.write(f"GET /health HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), 5)
        return line.split(b" ")[1:2] == [b"200"]
    except (OSError, TimeoutError, IndexError):
        return False
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def wait_healthy(
    launch: VllmOmniLaunch, proc: asyncio.subprocess.Process, timeout_s: float, poll_s: float = 1.0
) -> None:
    """Poll `GET /health` until 200; raises `VllmExitedError` or `TimeoutError`."""
    async with asyncio.timeout(timeout_s):
        while not await _healthy(launch.client_host, launch.port):
            if proc.returncode is not None:
                raise VllmExitedError(proc.returncode)
            await asyncio.sleep(poll_s)


async def run_vllm_omni(
    launch: VllmOmniLaunch,
    *,
    on_log: Callable[[str], None],
    on_ready: Callable[[str], None],
    health_timeout_s: float = 1800.0,
    poll_s: float = 1.0,
) -> int:
    """Run vLLM-Omni, stream its log, report the duplex URL once healthy; returns its exit code.

    Cancelling the call (Ctrl-C) terminates vLLM and its children.
    """
    executable = find_vllm(launch.executable)
    launch = replace(
        launch,
        executable=executable,
        deploy_config=resolve_deploy_config(launch.deploy_config, executable),
    )
    proc = await asyncio.create_subprocess_exec(
        *launch.command(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    pump = asyncio.create_task(_pump_log(proc, on_log))
    try:
        await wait_healthy(launch, proc, health_timeout_s, poll_s)
        on_ready(launch.duplex_url)
        return await proc.wait()
    finally:
        await _terminate(proc)
        await pump


async def _pump_log(proc: asyncio.subprocess.Process, on_log: Callable[[str], None]) -> None:
    assert proc.stdout is not None
    while line := await proc.stdout.readline():
        on_log(line.decode("utf-8", "replace").rstrip())


async def _terminate(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), _STOP_GRACE_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()

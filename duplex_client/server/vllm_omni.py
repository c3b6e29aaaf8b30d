"""Launch the real MiniCPM-o deployment: `vllm serve MODEL --omni` with its duplex deploy config.

The API key reaches vLLM through its environment (`VLLM_API_KEY`), never the command line,
where `ps` would show it. Readiness is polled with httpx (`GET /health`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final
from urllib.parse import quote

from duplex_client import families

#: The default family's model (MiniCPM-o 4.5); the deploy config below is that model's.
DEFAULT_MODEL: Final = families.DEFAULT_MODEL
#: vLLM-Omni's single-GPU MiniCPM-o 4.5 deploy config (declares `session_mode: duplex`).
DEFAULT_DEPLOY_CONFIG: Final = "vllm_omni/deploy/minicpmo_4_5.yaml"
_STOP_GRACE_S: Final = 15.0
#: The environment variable vLLM reads its API key from (instead of `--api-key`).
API_KEY_ENV: Final = "VLLM_API_KEY"
_HEALTH_REQUEST_S: Final = 5.0


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
        """The argv: `vllm serve MODEL --omni --trust-remote-code --deploy-config C --port P`.

        It never holds the API key: see `environment()`.
        """
        argv = [self.executable, "serve", self.model, "--omni", "--trust-remote-code"]
        argv += [
            "--deploy-config",
            self.deploy_config,
            "--host",
            self.host,
            "--port",
            str(self.port),
        ]
        return argv + list(self.extra_args)

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """vLLM's environment: `base` (default `os.environ`) plus `VLLM_API_KEY` when keyed."""
        env = dict(os.environ if base is None else base)
        if self.api_key:
            env[API_KEY_ENV] = self.api_key
        return env

    def display_command(self) -> str:
        """The command as a shell line (the API key travels in the environment, not here)."""
        return shlex.join(self.command())

    @property
    def client_host(self) -> str:
        """The host a local client dials (loopback when vLLM binds every interface)."""
        return "127.0.0.1" if self.host in ("0.0.0.0", "", "::") else self.host

    @property
    def _netloc(self) -> str:
        host = self.client_host
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"

    @property
    def duplex_url(self) -> str:
        """Where clients connect (`duplex=1`, the model name)."""
        return f"ws://{self._netloc}/v1/realtime?duplex=1&model={quote(self.model)}"

    @property
    def health_url(self) -> str:
        """vLLM's health endpoint."""
        return f"http://{self._netloc}/health"


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


async def wait_healthy(
    launch: VllmOmniLaunch, proc: asyncio.subprocess.Process, timeout_s: float, poll_s: float = 1.0
) -> None:
    """Poll `GET /health` (httpx) until 2xx; raises `VllmExitedError` or `TimeoutError`."""
    import httpx

    from duplex_client.client.http import probe_health

    headers = {"Authorization": f"Bearer {launch.api_key}"} if launch.api_key else None
    request_s = min(_HEALTH_REQUEST_S, timeout_s)
    async with (
        httpx.AsyncClient(headers=headers, trust_env=False, timeout=request_s) as client,
        asyncio.timeout(timeout_s),
    ):
        while not await probe_health(client, launch.health_url, timeout_s=request_s):
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
        env=launch.environment(),
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

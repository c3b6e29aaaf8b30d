"""The vLLM-Omni launcher without vLLM: argv, environment, URLs and the httpx health poll."""

from __future__ import annotations

import asyncio
from typing import cast

import httpx
import pytest
import respx

from duplex_client.server.vllm_omni import (
    API_KEY_ENV,
    VllmExitedError,
    VllmOmniLaunch,
    wait_healthy,
)


class _Proc:
    """Stands in for `asyncio.subprocess.Process` (only `returncode` is read)."""

    def __init__(self, returncode: int | None = None) -> None:
        self.returncode = returncode


def _proc(returncode: int | None = None) -> asyncio.subprocess.Process:
    return cast(asyncio.subprocess.Process, _Proc(returncode))


def test_the_api_key_goes_to_the_environment_not_the_command_line() -> None:
    launch = VllmOmniLaunch(api_key="sekrit-key", port=9001)
    argv = launch.command()
    assert "--api-key" not in argv and not any("sekrit" in a for a in argv)
    assert "sekrit" not in launch.display_command()
    env = launch.environment({"PATH": "/bin"})
    assert env == {"PATH": "/bin", API_KEY_ENV: "sekrit-key"}
    assert API_KEY_ENV == "VLLM_API_KEY"


def test_without_a_key_the_environment_is_passed_through(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SOME_VAR", "1")
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    env = VllmOmniLaunch().environment()
    assert env["SOME_VAR"] == "1" and API_KEY_ENV not in env


@pytest.mark.parametrize(
    ("host", "netloc"),
    [
        ("127.0.0.1", "127.0.0.1:8099"),
        ("0.0.0.0", "127.0.0.1:8099"),
        ("::", "127.0.0.1:8099"),
        ("::1", "[::1]:8099"),
        ("gpu.local", "gpu.local:8099"),
    ],
)
def test_urls_bracket_ipv6_hosts(host: str, netloc: str) -> None:
    launch = VllmOmniLaunch(host=host)
    assert launch.health_url == f"http://{netloc}/health"
    assert launch.duplex_url.startswith(f"ws://{netloc}/v1/realtime?duplex=1&model=")


@respx.mock
async def test_wait_healthy_polls_through_failures_until_200() -> None:
    route = respx.get("http://[::1]:8099/health").mock(
        side_effect=[
            httpx.ConnectError("[Errno 111] Connection refused"),
            httpx.ReadTimeout("slow"),
            httpx.Response(503, text="loading"),
            httpx.Response(200),
        ]
    )
    await wait_healthy(VllmOmniLaunch(host="::1", api_key="k"), _proc(), 5.0, poll_s=0.01)
    assert route.call_count == 4
    assert route.calls.last.request.headers["Authorization"] == "Bearer k"
    assert route.calls.last.request.headers["Host"] == "[::1]:8099"


@respx.mock
async def test_wait_healthy_reports_an_exited_process() -> None:
    respx.get("http://127.0.0.1:8099/health").mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(VllmExitedError, match="vllm exited with code 3"):
        await wait_healthy(VllmOmniLaunch(), _proc(3), 5.0, poll_s=0.01)


@respx.mock
async def test_wait_healthy_times_out() -> None:
    respx.get("http://127.0.0.1:8099/health").mock(return_value=httpx.Response(500))
    with pytest.raises(TimeoutError):
        await wait_healthy(VllmOmniLaunch(), _proc(), 0.2, poll_s=0.01)

"""`duplex-cli check` against a real loopback reference server (and respx for several models)."""

from __future__ import annotations

import asyncio
import socket
import sys
from typing import Any

import httpx
import orjson
import pytest
import respx
import typer
from duplex_cli.check import check_command, run_check
from typer.testing import CliRunner

from duplex_client.client.http import DEFAULT_MODEL
from duplex_client.server import ReferenceServer

TIMEOUT = 60.0
# `check` in a throwaway typer app (app.py registers it as `duplex-cli check`).
APP = (
    "import typer; from duplex_cli.check import check_command; "
    "app = typer.Typer(); app.command()(check_command); app()"
)


async def _check(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        APP,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def _env(**extra: str) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if k != "DUPLEX_API_KEY"}
    return {**env, "COLUMNS": "120", **extra}


async def test_check_prints_a_table_and_exits_0() -> None:
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        code, out, err = await _check(server.url, env=_env())
    assert code == 0, err
    assert err == ""
    for needle in (
        "/health",
        "HTTP 200 ok",
        "/v1/models",
        "not served",
        f"{DEFAULT_MODEL} (default)",
        "handshake",
        "round trip",
        "median of 3",
        "ga (conversation.item.added)",
        "capabilities",
        "chunk_period_ms",
        "session defaults",
        "audio.input.sample_rate_hz",
    ):
        assert needle in out, (needle, out)


async def test_check_json_reports_every_step() -> None:
    async with ReferenceServer(profile="minicpmo", engine="scripted", event_names="beta") as server:
        code, out, err = await _check(server.http_url, "--json", env=_env())
        session_ids = server.session_ids()
    assert code == 0, err
    report = orjson.loads(out)
    assert report["ok"] is True and report["error"] is None
    assert report["health"]["ok"] and report["health"]["status"] == 200
    assert report["models"] == {
        "ok": True,
        "listed": None,
        "detail": "not served (HTTP 404 or 405)",
    }
    assert report["model"] == {"name": DEFAULT_MODEL, "source": "default", "note": None}
    assert report["handshake"]["ok"] and report["handshake"]["session_id"].startswith("duplex-")
    assert report["capabilities"]["implementation_level"] == "model_native_duplex"
    assert report["session"]["model"] == DEFAULT_MODEL and "capabilities" not in report["session"]
    assert report["round_trip"]["ok"] and len(report["round_trip"]["samples_ms"]) == 3
    assert report["event_names"]["generation"] == "beta"
    assert report["event_names"]["evidence"] == "conversation.item.created"
    assert session_ids == []  # the session was closed


async def test_check_sends_the_api_key_from_the_environment() -> None:
    async with ReferenceServer(profile="minicpmo", engine="scripted", api_key="k3y") as server:
        ok = await _check(server.url, "--json", env=_env(DUPLEX_API_KEY="k3y"))
        refused = await _check(server.url, env=_env())
    assert ok[0] == 0, ok[2]
    code, _, err = refused
    assert code == 1
    assert err.count("\n") == 1 and err.startswith("error: handshake failed: ")
    assert "HTTP 401" in err


async def test_an_unreachable_server_is_one_line_and_exit_1() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, out, err = await _check(f"ws://127.0.0.1:{port}", "--json", env=_env())
    assert code == 1
    assert err.count("\n") == 1 and err.startswith(f"error: http://127.0.0.1:{port} is unreachable")
    assert "connection refused" in err
    report = orjson.loads(out)
    assert report["ok"] is False and report["handshake"] == {}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ftp://127.0.0.1:8099"], "unsupported URL scheme"),
        (["not a url"], "not a URL"),
        (["http://127.0.0.1:99999"], "port out of range"),
        (["ws://127.0.0.1:8099", "--timeout-s", "nan"], "--timeout-s"),
        (["ws://127.0.0.1:8099", "--timeout-s", "-1"], "--timeout-s"),
        (["ws://127.0.0.1:8099", "--ref-audio", "/nonexistent.wav"], "--ref-audio"),
    ],
)
async def test_bad_input_is_exit_2(args: list[str], message: str) -> None:
    code, out, err = await _check(*args, env=_env())
    assert code == 2 and out == ""
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


async def test_run_check_uses_the_only_listed_model() -> None:
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        with respx.mock(assert_all_called=False) as router:
            router.get(f"{server.http_url}/v1/models").mock(
                return_value=httpx.Response(200, json={"data": [{"id": "org/only"}]})
            )
            router.route().pass_through()
            report = await run_check(server.url, timeout_s=10)
    assert report.ok, report.error
    assert report.model["name"] == "org/only" and report.model["source"] == "listed"
    assert report.session["model"] == "org/only"


def _cli(*args: str) -> Any:
    app = typer.Typer()
    app.command()(check_command)
    return CliRunner().invoke(app, list(args))


def test_several_listed_models_without_model_is_exit_2() -> None:
    base = "http://gpu.example:8099"
    with respx.mock:
        respx.get(f"{base}/health").mock(return_value=httpx.Response(200, text="ok"))
        respx.get(f"{base}/v1/models").mock(
            return_value=httpx.Response(200, json={"data": [{"id": "a"}, {"id": "b"}]})
        )
        result = _cli(base, "--json")
    assert result.exit_code == 2
    report = orjson.loads(result.stdout)
    assert report["models"]["listed"] == ["a", "b"]
    assert report["error"] == f"{base}/v1/models lists 2 models (a, b): pass --model to choose one"


def test_an_unhealthy_server_is_exit_1() -> None:
    base = "http://gpu.example:8099"
    with respx.mock:
        respx.get(f"{base}/health").mock(return_value=httpx.Response(503, text="loading"))
        respx.get(f"{base}/v1/models").mock(side_effect=httpx.ReadTimeout("slow"))
        with pytest.MonkeyPatch.context() as mp:
            # no WebSocket server there: the handshake fails too, but the first failure is named
            mp.setattr("duplex_cli.check._check_session", _no_session)
            result = _cli(base, "--json", "--timeout-s", "1")
    assert result.exit_code == 1
    report = orjson.loads(result.stdout)
    assert report["error"] == f"{base}/health answered HTTP 503"
    assert report["models"]["ok"] is False and "no answer within 1 s" in report["models"]["error"]


async def _no_session(*_: object) -> None:
    return None

"""The launcher against a fake `vllm`: the API key reaches it in `VLLM_API_KEY`, never argv."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest

from duplex_client.server.vllm_omni import VllmOmniLaunch, run_vllm_omni

CLI = str(Path(sys.executable).parent / "duplex-cli")
TIMEOUT = 30.0
KEY = "sekrit-key-4711"

# Records what `ps` would show (argv) and its environment's key, then serves /health,
# answering 200 only with the right bearer key, as vLLM does for its API routes.
FAKE_VLLM = """\
#!{python}
import http.server, json, os, signal, sys, threading
args = sys.argv[1:]
with open(os.environ["FAKE_VLLM_RECORD"], "w") as f:
    json.dump({{"argv": sys.argv, "key": os.environ.get("VLLM_API_KEY")}}, f)
port = int(args[args.index("--port") + 1])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = self.headers.get("Authorization") == "Bearer " + os.environ.get("VLLM_API_KEY", "")
        self.send_response(200 if self.path == "/health" and ok else 401)
        self.end_headers()
    def log_message(self, *a):
        pass
server = http.server.HTTPServer(("127.0.0.1", port), H)
signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
print("INFO Application startup complete.", flush=True)
server.serve_forever()
"""


@pytest.fixture
def fake_vllm(tmp_path: Path) -> Path:
    exe = tmp_path / "bin" / "vllm"
    exe.parent.mkdir()
    exe.write_text(textwrap.dedent(FAKE_VLLM).format(python=sys.executable))
    exe.chmod(0o755)
    return exe


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_run_vllm_omni_passes_the_key_in_the_environment(
    fake_vllm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "record.json"
    monkeypatch.setenv("FAKE_VLLM_RECORD", str(record))
    launch = VllmOmniLaunch(executable=str(fake_vllm), port=_free_port(), api_key=KEY)
    logs: list[str] = []
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(
        run_vllm_omni(launch, on_log=logs.append, on_ready=ready.set_result, poll_s=0.05)
    )
    try:
        url = await asyncio.wait_for(ready, TIMEOUT)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    seen = orjson.loads(record.read_bytes())
    assert seen["key"] == KEY
    assert not any(KEY in arg for arg in seen["argv"]) and "--api-key" not in seen["argv"]
    assert KEY not in url and not any(KEY in line for line in logs)


def test_serve_vllm_keeps_the_key_off_the_command_line_and_output(
    fake_vllm: Path, tmp_path: Path
) -> None:
    record = tmp_path / "record.json"
    env = {
        **os.environ,
        "PATH": f"{fake_vllm.parent}{os.pathsep}{os.environ['PATH']}",
        "FAKE_VLLM_RECORD": str(record),
    }
    env.pop("VLLM_API_KEY", None)
    port = str(_free_port())
    proc = subprocess.Popen(
        [CLI, "serve", "--backend", "vllm-omni", "--port", port, "--api-key", KEY],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + TIMEOUT
        seen_out = ""
        while time.monotonic() < deadline and "serving the duplex API" not in seen_out:
            line = proc.stdout.readline()
            if not line:
                break
            seen_out += line
        assert "serving the duplex API" in seen_out, seen_out
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=TIMEOUT)
    recorded = orjson.loads(record.read_bytes())
    assert recorded["key"] == KEY
    assert not any(KEY in arg for arg in recorded["argv"])
    assert KEY not in seen_out + out + err


def test_dry_run_with_a_key_prints_no_key() -> None:
    result = subprocess.run(
        [CLI, "serve", "--backend", "vllm-omni", "--dry-run", "--api-key", KEY],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0, result.stderr
    assert KEY not in result.stdout + result.stderr and "--api-key" not in result.stdout

"""`duplex-cli serve` end to end: the reference server and the vLLM-Omni launcher (fake `vllm`)."""

from __future__ import annotations

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
from websockets.sync.client import connect

CLI = str(Path(sys.executable).parent / "duplex-cli")
TIMEOUT = 30.0


def _start(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [CLI, "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _read_until(proc: subprocess.Popen[str], needle: str) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + TIMEOUT
    seen = ""
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen += line
        if needle in line:
            return line
    raise AssertionError(f"{needle!r} not printed; stdout so far: {seen!r}")


def _stop(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=TIMEOUT)
    return proc.returncode, out, err


def test_serve_reference_prints_url_logs_and_stops_cleanly() -> None:
    proc = _start("--port", "0", "--api-key", "sekrit-key")
    try:
        line = _read_until(proc, "ws://")
        url = line.split()[line.split().index("on") + 1]
        with connect(
            url + "?autostart=0",
            additional_headers={"Authorization": "Bearer sekrit-key"},
            proxy=None,
        ) as ws:
            ws.send(
                orjson.dumps(
                    {
                        "type": "session.update",
                        "session": {"model": "m", "ref_audio": "data:audio/wav;base64,UklGRg=="},
                    }
                ).decode()
            )
            created = orjson.loads(ws.recv(timeout=TIMEOUT))
            assert created["type"] == "session.created"
            ws.send('{"type": "session.close"}')
            while orjson.loads(ws.recv(timeout=TIMEOUT))["type"] != "session.closed":
                pass
    finally:
        code, out, err = _stop(proc)
    assert code == 0 and "stopped" in out
    assert created["session"]["id"] in err  # one line per session event
    for secret in ("sekrit-key", created["resume_token"], "UklGRg"):
        assert secret not in out + err


def test_serve_rejects_bad_options() -> None:
    for args in (
        ["--profile", "nope"],
        ["--event-names", "alpha"],
        ["--faults", "x=1"],
        ["--engine", "magic"],
    ):
        result = subprocess.run(
            [CLI, "serve", *args], capture_output=True, text=True, timeout=TIMEOUT
        )
        assert result.returncode == 2, result
        assert "error:" in result.stderr or "Invalid value for '--" in result.stderr  # choices


def test_vllm_dry_run_prints_the_command() -> None:
    result = subprocess.run(
        [CLI, "serve", "--backend", "vllm-omni", "--dry-run", "--port", "9001", "--api-key", "k3y"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0
    line = result.stdout.strip()
    assert line.startswith("vllm serve openbmb/MiniCPM-o-4_5 --omni --trust-remote-code ")
    assert "--deploy-config vllm_omni/deploy/minicpmo_4_5.yaml" in line and "--port 9001" in line
    assert "k3y" not in line


def test_vllm_missing_is_a_clear_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [CLI, "serve", "--backend", "vllm-omni"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, "PATH": str(tmp_path)},
    )
    assert result.returncode == 1
    assert "`vllm` was not found on PATH" in result.stderr


FAKE_VLLM = """\
#!{python}
import http.server, json, os, signal, sys, threading, time
args = sys.argv[1:]
with open(os.environ["FAKE_VLLM_ARGS"], "w") as f:
    json.dump(args, f)
if os.environ.get("FAKE_VLLM_EXIT"):
    print("fake vllm: failing on purpose", flush=True)
    sys.exit(int(os.environ["FAKE_VLLM_EXIT"]))
port = int(args[args.index("--port") + 1])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
    def log_message(self, *a):
        pass
print("INFO fake vllm loading weights", flush=True)
time.sleep(0.3)
server = http.server.HTTPServer(("127.0.0.1", port), H)
def stop(*_):
    print("INFO fake vllm shutting down", flush=True)
    threading.Thread(target=server.shutdown).start()
signal.signal(signal.SIGTERM, stop)
print("INFO Application startup complete.", flush=True)
server.serve_forever()
"""


@pytest.fixture
def fake_vllm(tmp_path: Path) -> dict[str, str]:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "vllm"
    exe.write_text(textwrap.dedent(FAKE_VLLM).format(python=sys.executable))
    exe.chmod(0o755)
    return {
        "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
        "FAKE_VLLM_ARGS": str(tmp_path / "args.json"),
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_vllm_backend_launches_waits_for_health_and_stops(fake_vllm: dict[str, str]) -> None:
    port = _free_port()
    proc = _start("--backend", "vllm-omni", "--port", str(port), env=fake_vllm)
    try:
        ready = _read_until(proc, "serving the duplex API")
    finally:
        code, out, _ = _stop(proc)
    assert f"ws://127.0.0.1:{port}/v1/realtime?duplex=1&model=openbmb/MiniCPM-o-4_5" in ready
    assert code == 0 and "stopped" in out
    assert "[vllm] INFO fake vllm shutting down" in out or "[vllm] INFO Application startup" in out
    args = orjson.loads(Path(fake_vllm["FAKE_VLLM_ARGS"]).read_bytes())
    assert args[:4] == ["serve", "openbmb/MiniCPM-o-4_5", "--omni", "--trust-remote-code"]
    assert args[args.index("--deploy-config") + 1] == "vllm_omni/deploy/minicpmo_4_5.yaml"
    assert args[args.index("--port") + 1] == str(port)


def test_vllm_backend_reports_an_early_exit(fake_vllm: dict[str, str]) -> None:
    result = subprocess.run(
        [CLI, "serve", "--backend", "vllm-omni", "--port", str(_free_port())],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, **fake_vllm, "FAKE_VLLM_EXIT": "3"},
    )
    assert result.returncode == 3
    assert "vllm exited with code 3" in result.stderr
    assert "[vllm] fake vllm: failing on purpose" in result.stdout


def test_asr_inline_turns_the_recognition_worker_off() -> None:
    from duplex_cli.serve import _reference_config

    opts = {
        "host": "127.0.0.1",
        "port": 0,
        "profile": "minicpmo",
        "engine": "scripted",
        "script": None,
        "api_key": None,
        "event_names": "ga",
        "require_audio": False,
        "faults": None,
        "max_sessions": 1,
        "first_unit_ms": None,
        "illegal_unit_code": None,
        "require_ref_audio": False,
    }
    assert _reference_config(**opts, asr_inline=False).asr_worker is True  # the default
    assert _reference_config(**opts, asr_inline=True).asr_worker is False


def test_ctrl_c_after_a_speech_session_prints_no_traceback() -> None:
    """Ctrl-C signals the whole foreground group; the recognition worker must stay quiet."""
    from tests.integration.server.speech import CHUNK, needs_speech, spoken
    from tests.integration.server.wire import append

    if needs_speech.args[0]:
        pytest.skip("needs the server extra")
    proc = subprocess.Popen(
        [CLI, "serve", "--port", "0", "--engine", "speech"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, as a terminal's foreground job
    )
    try:
        line = _read_until(proc, "ws://")
        url = line.split()[line.split().index("on") + 1]
        pcm = spoken("what color do you see")
        with connect(url + "?autostart=0", proxy=None) as ws:
            update = {"model": "m", "ref_audio": "data:audio/wav;base64,UklGRg=="}
            ws.send(orjson.dumps({"type": "session.update", "session": update}).decode())
            assert orjson.loads(ws.recv(timeout=TIMEOUT))["type"] == "session.created"
            for i in range(0, len(pcm), CHUNK):
                ws.send(orjson.dumps(append(pcm[i : i + CHUNK], event_id=f"a{i}")).decode())
            ws.send('{"type": "input_audio_buffer.commit", "event_id": "c1"}')
            transcript = ""
            while not transcript:
                event = orjson.loads(ws.recv(timeout=TIMEOUT))
                if event["type"] == "response.output_audio_transcript.done":
                    transcript = event["transcript"]
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C at a terminal does
        out, err = proc.communicate(timeout=TIMEOUT)
    assert "You said" in transcript
    assert proc.returncode == 0 and "stopped" in out
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err

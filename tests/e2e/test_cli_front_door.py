"""The front door's figures and messages, as a user meets them: `duplex-cli` as a subprocess."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from duplex_client.server import ReferenceServer, Script
from duplex_client.server.config import speech_available
from tests.e2e.eval_support import eval_cli, rows, servers, write_script
from tests.e2e.helpers import CLI, ENV, load, run_cli
from tests.integration.live.helpers import write_wav

#: One question (0–500 ms, annotated) answered twice: at unit 1's close, and again, queued,
#: at unit 3's close: the second answer is a follow-up, not the turn's latency.
TWICE = {
    "rules": [
        {"on": "unit", "index": 1, "do": "speak", "text": "first", "audio_ms": 300},
        {"on": "unit", "index": 3, "do": "speak", "text": "again", "audio_ms": 300},
    ],
    "defaults": {"unit": {"do": "listen"}, "commit": {"do": "listen"}},
}


def _tone(ms: int, rate: int = 16000) -> bytes:
    t = np.arange(ms * rate // 1000) / rate
    return (0.3 * 32767 * np.sin(2 * np.pi * 440 * t)).astype("<i2").tobytes()


async def test_the_headline_is_the_first_answer_per_user_turn(tmp_path: Path) -> None:
    wav = write_wav(tmp_path / "q.wav", _tone(500) + bytes(2 * 16 * 4500))
    notes = tmp_path / "speech.json"
    notes.write_text(json.dumps([{"start_ms": 0, "end_ms": 500}]))
    run = tmp_path / "run"
    script = Script.from_dict(TWICE)
    async with ReferenceServer(profile="minicpmo", engine="scripted", script=script) as server:
        done = await run_cli(
            "--url", server.url, "--input-audio", str(wav), "--annotations", str(notes),
            "--output-dir", str(run),
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    metrics = load(run, "result.json")["metrics"]
    first, later = metrics["first_answer_latency_ms"], metrics["follow_up_latency_ms"]
    assert first["count"] == 1 and later["count"] == 1
    assert 1000 < first["p50"] < 2000 < 3000 < later["p50"] < 4000
    assert metrics["latency_ms"]["count"] == 2  # pooled, not the headline
    summary = " ".join(done.stderr.split())
    assert f"heard latency first answer p50 {first['p50']:.1f} ms" in summary
    assert f"1 follow-up answer(s) p50 {later['p50']:.1f} ms" in summary
    page = subprocess.run(
        [CLI, "report", str(run)], capture_output=True, text=True, env=ENV, timeout=120
    )
    assert page.returncode == 0, page.stderr
    html = (run / "report.html").read_text()
    assert f"first-answer latency p50 {first['p50']:.1f} ms" in html
    assert f"follow-up answers: 1, p50 {later['p50']:.1f} ms" in html


#: Speech ends near 1.9 s; unit 2 (2–3 s) closes after it and is answered.
ANSWER_UNIT_2 = {
    "rules": [{"on": "unit", "index": 2, "do": "speak", "text": "blue", "audio_ms": 400}],
    "defaults": {"unit": {"do": "listen"}, "commit": {"do": "listen"}},
}


def cli(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    """`duplex-cli ARGS` (no stdin) as a subprocess."""
    return subprocess.run(
        [CLI, *args], capture_output=True, text=True, env=ENV, timeout=timeout,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.mark.skipif(not speech_available(), reason="needs eSpeak NG and onnxruntime")
async def test_live_without_a_speaker_measures_latency_to_the_first_audio(tmp_path: Path) -> None:
    """One definition per figure: turns count to the first audio received (nothing played);
    the panel's response latency is `latencies_ms`, shown under the same name in the summary."""
    from duplex_client.server.engine.tts import speech_pcm16

    speech = speech_pcm16("what colour do you see", 16000, lead_ms=400, tail_ms=0)
    wav = write_wav(tmp_path / "q.wav", speech + bytes(2 * 16 * 2000))
    run = tmp_path / "run"
    script = Script.from_dict(ANSWER_UNIT_2)
    async with ReferenceServer(profile="minicpmo", engine="scripted", script=script) as server:
        done = await asyncio.to_thread(
            cli, "live", "--url", server.url, "--mic-file", str(wav), "--no-camera",
            "--no-playback", "--duration-s", "4", "--output-dir", str(run),
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = load(run, "result.json")
    assert result["counts"]["played_ms"] == 0
    (turn,) = result["turns"]
    assert turn["heard_start_ms"] is None and turn["user_end_source"] == "vad"
    to_first_audio = turn["first_audio_ms"] - turn["user_end_ms"]
    assert turn["latency_ms"] == pytest.approx(to_first_audio, abs=0.01)
    metrics = result["metrics"]
    assert metrics["latency_to"] == "first_audio"
    assert metrics["first_answer_latency_ms"]["p50"] == turn["latency_ms"]
    panel = result["latencies_ms"]["last_response_heard"]
    assert panel is not None and 0 < panel < turn["latency_ms"]  # from the unit's send, later
    summary = " ".join(done.stderr.split())
    first = metrics["first_answer_latency_ms"]["p50"]
    assert f"first answer p50 {first:.1f} ms" in summary and "to first audio received" in summary
    assert f"response latency last {panel:.0f} ms" in summary


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small run bundle (embedded server, no pacing) for the `report` cases."""
    root = tmp_path_factory.mktemp("bundle")
    wav = write_wav(root / "q.wav", _tone(1000))
    run = root / "run"
    done = cli("stream", "--input-audio", str(wav), "--burst", "-q", "--output-dir", str(run))
    assert done.returncode == 0, done.stderr
    return run


def _one_line(done: subprocess.CompletedProcess[str], code: int, text: str) -> None:
    assert done.returncode == code, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and text in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_report_to_an_unwritable_path_is_one_usage_line(bundle: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    target = blocker / "page.html"
    _one_line(
        cli("report", str(bundle), "-o", str(target)),
        2,
        f"-o {target}: cannot write there ({blocker} is not a directory)",
    )
    _one_line(cli("report", str(bundle), "-o", str(tmp_path)), 2, "is a directory")
    _one_line(cli("report", str(bundle), "--png", str(target)), 2, f"--png {target}: cannot")
    if Path("/proc/self").is_dir():  # refused by the kernel even to root: the write fails
        _one_line(cli("report", str(bundle), "-o", "/proc/page.html"), 2, "-o /proc/page.html")
    assert not (bundle / "report.html").exists()


def test_live_with_a_missing_mic_file_exits_2_without_a_bundle(tmp_path: Path) -> None:
    run = tmp_path / "run"
    missing = tmp_path / "missing.wav"
    _one_line(
        cli("live", "--mic-file", str(missing), "--no-playback", "--output-dir", str(run)),
        2,
        f"{missing}: no such file",
    )
    args = ["--no-mic", "--camera-file", str(missing), "--no-playback", "--output-dir", str(run)]
    _one_line(cli("live", *args), 2, f"{missing}: no such file")
    wav = write_wav(tmp_path / "q.wav", _tone(500))
    aura = ["--preset", "aura", "--mic-file", str(wav), "--no-camera", "--no-playback"]
    _one_line(
        cli("live", *aura, "--output-dir", str(run)),
        2,
        "--preset aura (AURA-style) requires video on every unit: --no-camera would send nothing",
    )
    assert not run.exists()


async def test_a_server_requiring_video_refuses_audio_only_input_as_usage(tmp_path: Path) -> None:
    """`--preset none` names no family: the opened session's capabilities say video is
    required; nothing is sent, exit 2, and the bundle's result.json says why."""
    wav = write_wav(tmp_path / "q.wav", _tone(1000))
    run = tmp_path / "run"
    async with ReferenceServer(profile="aura", engine="scripted") as server:
        done = await run_cli(
            "--url", server.url, "--preset", "none", "--input-audio", str(wav), "-q",
            "--output-dir", str(run),
        )  # fmt: skip
    _one_line(done, 2, "the session requires video but the stream has no frames")
    assert "--input-image" in done.stderr
    result = load(run, "result.json")
    assert result["exit_code"] == 2 and "requires video" in result["error"]
    assert load(run, "input_timeline.json")["appends"] == []


async def test_interrupted_json_prints_the_result_and_the_line_names_the_bundle(
    tmp_path: Path,
) -> None:
    wav = write_wav(tmp_path / "long.wav", b"\x10\x00" * 16000 * 30)
    run = tmp_path / "run"
    proc = await asyncio.create_subprocess_exec(
        CLI, "stream", "--input-audio", str(wav), "--json", "--output-dir", str(run),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=ENV,
    )  # fmt: skip
    try:
        for _ in range(300):  # until the session streams
            if (run / "events.jsonl").exists() and (run / "events.jsonl").stat().st_size:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 130, err.decode()
    printed = json.loads(out)
    assert printed == load(run, "result.json") and printed["status"] == "interrupted"
    line = err.decode().strip().splitlines()[-1]
    assert line == f"interrupted: the bundle keeps everything received so far ({run})"


def test_messages_match_the_readme_table(bundle: Path, tmp_path: Path) -> None:
    wav = tmp_path / "q.wav"
    write_wav(wav, _tone(1000))
    bogus = cli("stream", "--input-audio", str(wav), "--preset", "bogus")
    _one_line(bogus, 2, "error: Invalid value for '--preset': 'bogus' is not one of 'minicpmo'")
    assert "Value error" not in bogus.stderr
    late = tmp_path / "late.json"
    late.write_text('[{"start_ms": 5000, "end_ms": 6000}]')
    _one_line(
        cli("stream", "--input-audio", str(wav), "--annotations", str(late), "-q"),
        2,
        f"--annotations: {late}: segment 0 starts at 5000 ms, after the media ends (1000 ms)",
    )
    notes = tmp_path / "notes.txt"
    notes.write_text("not a picture")
    image = ["stream", "--input-image", str(notes), "-q"]
    _one_line(cli(*image), 2, "an image alone has no length: add --input-audio or --tail-sil")
    _one_line(cli(*image, "--tail-silence-s", "1"), 2, f"{notes}: not an image OpenCV can read")
    _one_line(cli("report", str(wav)), 2, f"{wav}: a file, not a run bundle")
    turn_based = "--turn model: the joyai preset's model (JoyAI-style) takes turns"
    _one_line(cli("live", "--preset", "joyai", "--no-camera"), 2, turn_based)
    for command in ("", "stream", "eval", "report", "devices", "check"):
        shown = cli(*command.split(), "--help").stdout
        assert not re.search(r"<(bool|int|str|path|list\[Path\])>", shown), (command, shown)


async def test_a_plain_http_server_and_tls_to_it_say_what_they_are(tmp_path: Path) -> None:
    """An HTTP/1.0 server (`python -m http.server`) answering 404, and https:// to it."""
    server = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, cwd=tmp_path,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        first = (await asyncio.wait_for(server.stdout.readline(), 20)).decode()
        port = re.search(r"port (\d+)", first).group(1)  # type: ignore[union-attr]
        wav = write_wav(tmp_path / "q.wav", _tone(500))
        run = tmp_path / "run"
        plain = await run_cli(
            "--url", f"http://127.0.0.1:{port}/nothing", "--input-audio", str(wav), "-q",
            "--output-dir", str(run),
        )  # fmt: skip
        _one_line(plain, 1, "server rejected the WebSocket upgrade with HTTP 404 (no WebSocket")
        check = await asyncio.to_thread(cli, "check", f"https://127.0.0.1:{port}", "--json")
        assert check.returncode == 1
        assert "TLS handshake failed" in check.stderr + check.stdout
        assert "(is it a plain http:// server?)" in check.stderr + check.stdout
    finally:
        server.terminate()
        await server.wait()


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three 1 s WAVs: a three-item eval."""
    root = tmp_path_factory.mktemp("clips")
    for name in ("a", "b", "c"):
        write_wav(root / f"{name}.wav", _tone(1000))
    return root


def test_eval_on_a_one_session_server_holds_items_back_instead_of_failing(
    clips: Path, tmp_path: Path
) -> None:
    """`--concurrency 2` against a server that holds one session: asked first, run one by
    one; nothing refused, no endpoint fault, and the count is the eval's."""
    script = write_script(tmp_path / "script.json")
    out = tmp_path / "eval"
    with servers(script, max_sessions=1) as (server,):
        done = eval_cli(str(clips), "--output-dir", str(out), "--url", server.url,
                        "--concurrency", "2")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [r["ok"] for r in rows(out)] == [True, True, True]
    assert "holds 1 session at a time (supports_multi_session: false)" in done.stderr
    assert "eval 3 item(s): 3 ok, 0 failed" in done.stdout + done.stderr
    assert "down" not in done.stderr and "failed (" not in done.stderr


def test_items_failed_by_a_dead_endpoint_run_again_on_resume(clips: Path, tmp_path: Path) -> None:
    """Without `--rerun-failed`: the item that failed because nothing answered runs again."""
    out = tmp_path / "eval"
    args = [str(clips), "--output-dir", str(out), "--retries", "0"]
    down = eval_cli(*args, "--url", "ws://127.0.0.1:9")
    assert down.returncode == 1, down.stderr
    assert "eval 3 item(s): 0 ok, 1 failed" in down.stdout + down.stderr
    assert "2 not run" in down.stdout + down.stderr
    assert "1 item(s) failed for their endpoint's reasons" in down.stderr
    script = write_script(tmp_path / "script.json")
    with servers(script) as (server,):
        again = eval_cli(*args, "--url", server.url)
    assert again.returncode == 0, again.stderr
    assert [r["ok"] for r in rows(out)] == [True, True, True]

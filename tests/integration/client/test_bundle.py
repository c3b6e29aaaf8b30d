"""The run bundle records events, audio and transcripts as they arrive, without secrets."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np

from duplex_client import DuplexClient
from duplex_client.bundle.wavfile import read_wav_pcm16
from duplex_client.bundle.writer import RunBundle
from duplex_client.presets import minicpmo_4_5
from duplex_client.protocol import b64encode
from tests.support.scripted_server import Peer, ScriptedServer


async def speak(peer: Peer, rid: str, values: list[int], words: list[str]) -> None:
    await peer.send({"type": "response.created", "response": {"id": rid}})
    for v, w in zip(values, words, strict=True):
        pcm = np.full(2400, v, dtype=np.int16).tobytes()
        await peer.send(
            {
                "type": "response.output_audio.delta",
                "response_id": rid,
                "delta": b64encode(pcm),
                "sample_rate_hz": 24000,
            }
        )
        await peer.send(
            {"type": "response.output_audio_transcript.delta", "response_id": rid, "delta": w}
        )


async def test_bundle_writes_audio_events_transcript_and_session(tmp_path: Path) -> None:
    ref = "data:audio/wav;base64," + "UklGR" + "A" * 200
    async with ScriptedServer() as server:
        client = DuplexClient(
            server.url, model="m", api_key="sk-secret-key", config=minicpmo_4_5(ref_audio=ref)
        )
        bundle = RunBundle(tmp_path / "run")
        bundle.attach(client)
        await client.connect()
        bundle.write_session(client, url=client.url)
        peer = server.peer
        await speak(peer, "resp_1", [1, 2], ["hello ", "there"])
        # events of response 1 are written before it is done: an interrupted run keeps them
        await asyncio.sleep(0.2)
        partial, rate = read_wav_pcm16(tmp_path / "run" / "output.wav")
        assert rate == 24000 and len(partial) == 2 * 4800
        await peer.send(
            {"type": "response.done", "response": {"id": "resp_1", "status": "completed"}}
        )
        await peer.send({"type": "response.created", "response": {"id": "resp_2"}})
        await peer.send(
            {
                "type": "response.output_audio.delta",
                "response_id": "resp_2",
                "delta": b64encode(np.full(2400, 3, dtype=np.int16).tobytes()),
            }
        )
        await peer.send({"type": "output_audio_buffer.cleared", "response_id": "resp_2"})
        await peer.send(
            {
                "type": "response.output_audio.delta",
                "response_id": "resp_2",
                "delta": b64encode(np.full(2400, 9, dtype=np.int16).tobytes()),
            }
        )
        await peer.send(
            {"type": "response.done", "response": {"id": "resp_2", "status": "cancelled"}}
        )
        await asyncio.sleep(0.2)
        await client.close()
        bundle.finish({"ok": True})

    run = tmp_path / "run"
    out, _ = read_wav_pcm16(run / "output.wav")
    samples = np.frombuffer(out, dtype=np.int16)
    # fenced audio (value 9) is not kept; everything else once, in order
    assert samples.tolist() == [1] * 2400 + [2] * 2400 + [3] * 2400
    r1, _ = read_wav_pcm16(run / "response_001_resp_1.wav")
    r2, _ = read_wav_pcm16(run / "response_002_resp_2.wav")
    assert len(r1) == 2 * 4800 and len(r2) == 2 * 2400
    lines = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    types = [x["type"] for x in lines]
    assert types[0] == "session.created" and types[-1] == "session.closed"
    assert types.count("response.output_audio.delta") == 4
    assert all(x["t_ms"] >= 0 for x in lines)
    delta = next(x for x in lines if x["type"] == "response.output_audio.delta")
    assert delta["event"]["delta"].startswith("<base64: ")
    transcript = (run / "transcript.txt").read_text()
    # no unit index in this scripted response, and no listener attached: both unknown
    assert "resp_1 speak (completed) unit_index=- heard_start_ms=-: hello there" in transcript
    assert "resp_2 speak (cancelled)" in transcript
    session = json.loads((run / "session.json").read_text())
    assert session["capabilities"]["first_unit_ms"] == 1000
    assert session["config_sent"]["ref_audio"] == "<redacted>"
    assert json.loads((run / "result.json").read_text()) == {"ok": True}
    everything = "".join(p.read_text(errors="ignore") for p in run.iterdir() if p.suffix != ".wav")
    for secret in ("UklGR", "sk-secret-key", "rt_secret"):
        assert secret not in everything


def test_bundle_fails_early_on_unwritable_directory(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    try:
        RunBundle(blocker / "run")
    except OSError as exc:
        assert "file" in str(exc)
    else:
        raise AssertionError("expected OSError")


def test_a_reused_directory_loses_the_earlier_bundle_and_nothing_else(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    stale = ["transcript.txt", "result.json", "output.wav", "response_009_resp_old.wav"]
    for name in stale:
        (run / name).write_text("from an earlier run")
    (run / "notes.md").write_text("mine")
    bundle = RunBundle(run)
    assert not any((run / name).exists() for name in stale)
    assert (run / "notes.md").read_text() == "mine"
    bundle.finish({"ok": True})
    assert (run / "transcript.txt").read_text() == ""  # not the earlier run's lines


def _unused(*_: Any) -> None: ...

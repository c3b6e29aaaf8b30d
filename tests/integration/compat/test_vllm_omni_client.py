"""vLLM-Omni's own Python client (the `vllm-omni` 0.30.0 wheel) against our reference server.

The client module (`vllm_omni/clients/duplex.py` and its presets) imports no GPU stack,
but the package's `__init__` does (torch, through `vllm_omni.patch`). So the module is loaded
from an unzipped wheel with a bare parent package in its place, never running that
`__init__`. `make install` unzips the wheel into `.venv/upstream/vllm-omni`; `VLLM_OMNI_SRC`
may point at another unzipped copy (the folder holding `vllm_omni/`). Without either, these
tests are skipped. The scenarios are those the client's own docstring and
presets describe: a MiniCPM-o turn (stream, commit, one spoken response, playback acks), a
Nemotron VoiceChat stream (80 ms float frames, trailing silence, the drain at close), a
transparent resume after a dropped socket, and a refused handshake.
"""

from __future__ import annotations

import asyncio
import base64
import importlib
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from duplex_client.server import ReferenceServer, Script
from tests.integration.resilience.proxy import FaultyProxy
from tests.support.upstream_wheel import MISSING, vllm_omni_src

SRC = vllm_omni_src()
pytestmark = pytest.mark.skipif(
    SRC is None or not (SRC / "vllm_omni" / "clients" / "duplex.py").is_file(),
    reason=MISSING,
)
SPEAK = Script.from_dict(
    {"defaults": {"commit": {"do": "speak", "text": "hello from the reference server"}}}
)


def upstream(module: str) -> Any:
    """`vllm_omni.<module>` from the unzipped wheel, without the package's own `__init__`."""
    if "vllm_omni" not in sys.modules:
        package = types.ModuleType("vllm_omni")
        package.__path__ = [str(Path(str(SRC)) / "vllm_omni")]
        sys.modules["vllm_omni"] = package
    return importlib.import_module(f"vllm_omni.{module}")


def tone(seconds: float, rate: int = 16000, *, f32: bool = False) -> bytes:
    t = np.arange(int(rate * seconds)) / rate
    x = np.sin(2 * np.pi * 300 * t) * 0.3
    return x.astype("<f4").tobytes() if f32 else (x * 32767).astype("<i2").tobytes()


async def test_a_minicpmo_turn_with_its_preset() -> None:
    duplex = upstream("clients.duplex")
    minicpmo = upstream("clients.minicpmo_4_5")
    voice = duplex.audio_data_url(_wav(tone(0.5)))
    config = minicpmo.create_duplex_session_config(ref_audio=voice)
    async with ReferenceServer(profile="minicpmo", engine="scripted", script=SPEAK) as server:
        client = duplex.DuplexClient(server.url, model="openbmb/MiniCPM-o-4_5", config=config)
        async with client as c:
            assert c.session_id is not None and c.session_id.startswith("duplex-")
            caps = c.session_info["capabilities"]
            assert caps["implementation_level"] == "model_native_duplex"
            await c.stream_pcm(tone(1.5), realtime=False)
            await c.commit()
            async for response in c.responses():
                if response.decision == "listen":
                    continue
                chunks = [chunk async for chunk in response.audio()]
                await c.ack_playback(response.played_ms, response_id=response.response_id)
                break
        history = server.history()
    assert response.decision == "speak" and b"".join(chunks)
    assert any(item.get("role") == "assistant" for item in history)


async def test_a_nemotron_stream_drains_at_close() -> None:
    """Its Nemotron preset: 16 kHz float in 80 ms frames, 22.05 kHz out; trailing silence,
    `session.close`, one response `stream_drained` with every frame counted."""
    duplex = upstream("clients.duplex")
    nemotron = upstream("clients.nemotron_voicechat")
    config = nemotron.create_duplex_session_config()
    script = Script.from_dict({"rules": [{"on": "unit", "index": 3, "do": "speak", "text": "hi"}]})
    async with ReferenceServer(profile="nemotron", engine="scripted", script=script) as server:
        client = duplex.DuplexClient(server.url, model="nemotron", config=config)
        collector = duplex.EventCollector()
        async with client as c:
            consume = asyncio.ensure_future(collector.consume(c))
            pcm = tone(0.8, f32=True) + bytes(4 * 1280 * 5)  # 10 frames, then 5 of silence
            await c.stream_pcm(pcm, chunk_ms=80, realtime=False)
            await c.close()
            await asyncio.wait_for(consume, 10)
    done = [e for e in collector.events if e.get("type") == "response.done"]
    assert len(done) == 1
    response = done[0]["response"]
    assert response["status"] == "completed"
    assert response["status_details"]["reason"] == "stream_drained"
    assert response["metadata"]["drain"]["accepted_frames"] == 15
    # our nemotron profile sends beta names (issue #29's report of Nemotron); this client's
    # own typed events know only the GA `response.output_audio.delta`, so its collector is
    # read raw here (protocol.md §A.7)
    deltas = [e for e in collector.events if e.get("type") == "response.audio.delta"]
    assert len(deltas) == 15 and {e["sample_rate_hz"] for e in deltas} == {22050}
    assert {len(base64.b64decode(e["delta"])) for e in deltas} == {3528}
    assert collector.events[-1]["type"] == "session.closed"


async def test_a_dropped_socket_is_resumed_transparently() -> None:
    duplex = upstream("clients.duplex")
    server = ReferenceServer(profile="minicpmo", engine="scripted", script=SPEAK)
    async with server, FaultyProxy(server.port) as proxy:
        config = duplex.SessionConfig(extra_body={"force_listen_count": 0})
        async with duplex.DuplexClient(proxy.url, model="m", config=config) as c:
            seen: list[str] = []

            async def watch() -> None:
                async for event in c.events():
                    seen.append(event.type)

            watcher = asyncio.ensure_future(watch())
            await c.stream_pcm(tone(1.0), realtime=False)
            proxy.cut()
            await asyncio.sleep(0.6)
            await c.stream_pcm(tone(0.6), realtime=False)
            await c.commit()
            await c.wait_for("response.done", timeout_s=10)
            await c.close()
            await asyncio.wait_for(watcher, 10)
    assert "connection.resumed" in seen and "session.resumed" in seen
    assert proxy.connections == 2


async def test_a_refused_handshake_raises_with_its_code() -> None:
    """Our nested handshake error, read by its client."""
    duplex = upstream("clients.duplex")
    config = duplex.SessionConfig(input_audio=duplex.AudioFormat("mp3", 16000))
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        with pytest.raises(duplex.DuplexProtocolError) as info:
            async with duplex.DuplexClient(server.url, model="m", config=config):
                pass
    assert info.value.code == "invalid_session_config"
    assert str(info.value).startswith("unsupported_audio_format")


def _wav(pcm: bytes, rate: int = 16000) -> bytes:
    import io
    import wave

    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)
    return out.getvalue()

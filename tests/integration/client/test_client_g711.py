"""The SDK sends G.711: PCM16 in, µ-law / A-law on the wire (PyAV), PCM16 again in the server."""

from __future__ import annotations

import numpy as np
import pytest

from duplex_client import DuplexClient, SessionConfig
from duplex_client.server import ReferenceServer
from tests.integration.server.wire import tone


def _snr_db(ref: bytes, got: bytes) -> float:
    a = np.frombuffer(ref, "<i2").astype(np.float64)
    b = np.frombuffer(got, "<i2").astype(np.float64)
    return float(10 * np.log10(np.sum(a * a) / np.sum((a - b) ** 2)))


@pytest.mark.parametrize("encoding", ["g711_ulaw", "g711_alaw"])
async def test_append_input_encodes_and_the_server_decodes(encoding: str) -> None:
    config = SessionConfig(input_audio_format=encoding, input_sample_rate_hz=8000)
    pcm = tone(1000, rate=8000)
    async with (
        ReferenceServer(engine="scripted") as server,
        DuplexClient(server.url, model="m", config=config) as client,
    ):
        assert client.session["input_audio_format"] == encoding
        assert client.session["sample_rate_hz"] == 8000
        for i in range(5):  # 200 ms of PCM16 each: 1600 G.711 bytes on the wire
            await client.append_input(pcm[i * 3200 : (i + 1) * 3200])
        sub = client.events()
        await client.send_raw({"type": "session.heartbeat"})
        while (await sub.get()).type != "session.heartbeat_ack":
            pass
        assert client.audio_end_ms == 1000
        rows = server.appends()
        assert [r["duration_ms"] for r in rows] == [200] * 5
        (unit,) = server.session().inputs.open_units
        assert len(unit.pcm) == len(pcm)
        assert _snr_db(pcm, unit.pcm) > 30  # companded once, decoded once (about 39 dB)


async def test_odd_pcm_is_refused_before_sending() -> None:
    config = SessionConfig(input_audio_format="g711_ulaw", input_sample_rate_hz=8000)
    async with (
        ReferenceServer(engine="scripted") as server,
        DuplexClient(server.url, model="m", config=config) as client,
    ):
        with pytest.raises(ValueError, match="multiple of the sample width 2"):
            await client.append_input(b"\x00\x01\x02")
        assert server.appends() == []

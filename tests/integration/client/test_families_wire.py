"""Each family's preset against its reference-server profile: the session a client opens.

The grid, input format, output rate and commit rule the client sees after the handshake are
the family's table entry (`duplex_client.families`).
"""

from __future__ import annotations

import pytest

from duplex_client import DuplexClient
from duplex_client.families import FAMILIES, ModelFamily
from duplex_client.presets import preset_config
from duplex_client.server import ReferenceServer


@pytest.mark.parametrize("f", [f for f in FAMILIES if f.reference_profile], ids=lambda f: f.name)
async def test_a_familys_preset_opens_the_session_its_entry_describes(f: ModelFamily) -> None:
    turn = "model" if f.model_owned_turns else "ptt"  # the scripted engine has no VAD
    config = preset_config(f.name, turn=turn)
    async with (
        ReferenceServer(profile=f.name, engine="scripted") as server,
        DuplexClient(server.url, model=f.default_model, config=config) as client,
    ):
        caps = client.capabilities
        assert (caps.first_unit_ms, caps.chunk_period_ms) == (f.first_unit_ms, f.chunk_period_ms)
        assert client.takes_commits == f.client_commits
        assert client.continuous_stream == (f.lifecycle == "continuous_stream")
        session = client.session
        assert session["input_audio_format"] == f.input_format
        assert session["audio"]["input"]["sample_rate_hz"] == f.input_rate_hz
        assert session["audio"]["output"]["sample_rate_hz"] == f.output_rate_hz
        assert (client.input_pcm_format.encoding, client.input_pcm_format.sample_rate_hz) == (
            f.input_format,
            f.input_rate_hz,
        )

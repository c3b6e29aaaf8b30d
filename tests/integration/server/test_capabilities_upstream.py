"""Capabilities as vLLM-Omni 0.30.0 renders them (issue #29, point 11): raw JSON per profile.

`engine/duplex/config.py` `DuplexCapabilities.as_dict`: `implementation_level` is
`model_native_duplex` or `turn_based_duplex`, `input_modes` is `["append_audio_chunk"]`,
and `supports_image_input`, `supports_text_only_turn`, `supports_turn_commit_only`,
`supports_concurrent_turn_requests`, `supports_chat_completions` are stated; PersonaPlex's
`signal_sources` are `["model_native", "client_event"]` (`personaplex/duplex/serving_adapter.py`).
"""

from __future__ import annotations

import pytest

from tests.integration.server.conftest import MakeServer
from tests.integration.server.wire import Wire

LEVELS = {
    "minicpmo": "model_native_duplex",
    "joyai": "turn_based_duplex",
    "aura": "model_native_duplex",
    "personaplex": "model_native_duplex",
    "nemotron": "model_native_duplex",
}


@pytest.mark.parametrize("profile", list(LEVELS))
async def test_the_levels_modes_and_flags(make_server: MakeServer, profile: str) -> None:
    server = await make_server(profile=profile)
    wire = await Wire.connect(server.url)
    await wire.send({"type": "session.update", "session": {}})
    created = await wire.recv()
    caps = created["session"]["capabilities"]
    assert caps["implementation_level"] == LEVELS[profile]
    assert caps["input_modes"] == ["append_audio_chunk"]
    turn_based = LEVELS[profile] == "turn_based_duplex"
    assert caps["supports_turn_commit_only"] is turn_based
    for flag in ("supports_image_input", "supports_text_only_turn", "supports_chat_completions"):
        assert caps[flag] is False, flag
    assert caps["supports_concurrent_turn_requests"] is False
    if profile in ("personaplex", "nemotron"):
        assert caps["signal_sources"] == ["model_native", "client_event"]
    await wire.close()

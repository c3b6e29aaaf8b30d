"""Qwen3-Omni turn-based: commit + `response.create` turns, camera frames as `input_image` items.

vLLM-Omni 0.30.0 `model_executor/models/qwen3_omni/duplex/plugin.py`: `turn_based_duplex`,
images as items (`supports_image_input`), `signal_sources: ["client_event", "server_policy"]`;
it refuses `extra_body.auto_response` and `ref_audio`. Appends are normalised to 16 kHz float
before its buffer (`protocol/realtime/audio.py` resamples PCM16 at any rate), and the buffer
refuses float input at another rate (`qwen3_omni/duplex/input.py`).
"""

from __future__ import annotations

from dataclasses import replace

from duplex_client.server.profiles.base import family_profile

QWEN3_TURN = replace(
    family_profile("qwen3-turn"),
    signal_sources=("client_event", "server_policy"),
    auto_response_allowed=False,
    ref_audio_allowed=False,
    float_input_rate_hz=16000,
)

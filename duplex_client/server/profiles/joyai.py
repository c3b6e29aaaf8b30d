"""JoyAI-style: speech turns (server VAD or push-to-talk) with camera observations, chat lane."""

from __future__ import annotations

from duplex_client.server.profiles.base import Profile

JOYAI = Profile(
    name="joyai",
    implementation_level="chat_fallback",
    required_modalities=(),
    optional_modalities=("audio", "video"),
    has_server_vad=True,
)

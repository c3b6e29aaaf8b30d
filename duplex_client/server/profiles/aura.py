"""AURA-style: video required, audio optional; frame-only units open turns."""

from __future__ import annotations

from duplex_client.server.profiles.base import Profile

AURA = Profile(
    name="aura",
    implementation_level="model_native_duplex",
    required_modalities=("video",),
    optional_modalities=("audio",),
)

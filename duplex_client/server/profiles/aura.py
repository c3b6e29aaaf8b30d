"""AURA-style: video required, audio optional; frame-only units open turns.

vLLM-Omni checks the required modality on every append, not per unit: an AURA append with
audio and no `video_frames` is refused with `invalid_input_modality` (as ours is).
"""

from __future__ import annotations

from dataclasses import replace

from duplex_client.protocol.errors import ErrorCode
from duplex_client.server.profiles.base import family_profile

AURA = replace(family_profile("aura"), illegal_unit_code=ErrorCode.INVALID_INPUT_MODALITY)

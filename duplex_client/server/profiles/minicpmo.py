"""MiniCPM-o 4.5: the model owns listen/speak per unit; AUDIO, VISION and OMNI units."""

from __future__ import annotations

from dataclasses import replace

from duplex_client.server.profiles.base import Profile, family_profile

MINICPMO = replace(
    family_profile("minicpmo"),
    # vLLM-Omni 0.30.0 `minicpmo_4_5/duplex/plugin.py` `PRIVATE_RUNTIME_CONFIG_KEYS`
    private_runtime_keys=frozenset(
        {
            "duplex_stage_sampling_params",
            "duplex_stage_max_tokens",
            "duplex_stage0_max_tokens",
            "duplex_scheduler_token_id",
            "duplex_vision_tile_pixels",
            "duplex_first_append_context_tokens",
            "ref_audio_data",
            "ref_audio_format",
            "ref_audio_sample_rate_hz",
            "initial_user_text",
            "duplex_window_config",
            "duplex_window_prefix_tokens",
            "duplex_window_suffix_token_ids",
            "duplex_window_previous_marker_token_ids",
            "duplex_window_special_token_ids",
        }
    ),
)


def minicpmo_profile(
    *,
    require_audio: bool = False,
    illegal_unit_code: str | None = None,
    first_unit_ms: int | None = None,
    ref_audio_required: bool = False,
) -> Profile:
    """The MiniCPM-o profile; `require_audio` emulates a server rejecting frame-only appends."""
    profile = MINICPMO
    if require_audio:
        profile = replace(profile, required_modalities=("audio",), optional_modalities=("video",))
    if illegal_unit_code is not None:
        profile = replace(profile, illegal_unit_code=illegal_unit_code)
    if first_unit_ms is not None:
        profile = replace(profile, first_unit_ms=first_unit_ms)
    return replace(profile, ref_audio_required=ref_audio_required)

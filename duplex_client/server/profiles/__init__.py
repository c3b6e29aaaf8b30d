"""Server profiles by name: `minicpmo` (default), `aura`, `joyai`, `personaplex`, `nemotron`."""

from __future__ import annotations

from dataclasses import replace

from duplex_client.server.profiles.aura import AURA
from duplex_client.server.profiles.base import Profile
from duplex_client.server.profiles.joyai import JOYAI
from duplex_client.server.profiles.minicpmo import MINICPMO, minicpmo_profile
from duplex_client.server.profiles.nemotron import NEMOTRON
from duplex_client.server.profiles.personaplex import PERSONAPLEX

#: Profile names the CLI offers.
PROFILE_NAMES = ("minicpmo", "aura", "joyai", "personaplex", "nemotron")
#: Profiles whose options are only the shared ones (unit code, first unit, reference voice).
_PLAIN = {"personaplex": PERSONAPLEX, "nemotron": NEMOTRON}


class ProfileUnavailableError(ValueError):
    """The named profile does not exist or is not implemented yet."""


def get_profile(
    name: str,
    *,
    require_audio: bool = False,
    illegal_unit_code: str | None = None,
    first_unit_ms: int | None = None,
    ref_audio_required: bool = False,
    server_vad: bool = True,
) -> Profile:
    """The profile called `name`, with the emulation options applied.

    `server_vad=False` (an engine without a VAD) makes joyai and minicpmo answer `server_vad`
    sessions with `server_vad_unavailable`; push-to-talk still works.
    """
    if name == "minicpmo":
        profile = minicpmo_profile(
            require_audio=require_audio,
            illegal_unit_code=illegal_unit_code,
            first_unit_ms=first_unit_ms,
            ref_audio_required=ref_audio_required,
        )
        # vLLM-Omni serves `server_vad` where barge-in is supported: it hears the user
        # (speech_started / speech_stopped) and barges in; the model still owns the turns.
        return replace(profile, has_server_vad=server_vad)
    if name in _PLAIN or name == "aura":
        profile = _PLAIN.get(name, AURA)
        if illegal_unit_code is not None:
            profile = replace(profile, illegal_unit_code=illegal_unit_code)
        if first_unit_ms is not None:
            profile = replace(profile, first_unit_ms=first_unit_ms)
        return replace(profile, ref_audio_required=ref_audio_required)
    if name == "joyai":
        profile = replace(JOYAI, has_server_vad=server_vad, ref_audio_required=ref_audio_required)
        if illegal_unit_code is not None:
            profile = replace(profile, illegal_unit_code=illegal_unit_code)
        if first_unit_ms is not None:
            profile = replace(profile, first_unit_ms=first_unit_ms)
        return profile
    raise ProfileUnavailableError(f"unknown profile {name!r}; choose from {PROFILE_NAMES}")


__all__ = [
    "AURA",
    "JOYAI",
    "MINICPMO",
    "NEMOTRON",
    "PERSONAPLEX",
    "PROFILE_NAMES",
    "Profile",
    "ProfileUnavailableError",
    "get_profile",
]

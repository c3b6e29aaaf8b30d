"""Every reference-server profile advertises what its family's table entry says.

Compared as a client reads it: the capabilities sent on the wire, parsed back, and the session
defaults a handshake gets (`duplex_client.families` is the one source of these values).
"""

from __future__ import annotations

import pytest

from duplex_client.families import DEFAULT_FAMILY, FAMILIES, PROFILE_FAMILIES, ModelFamily
from duplex_client.protocol.capabilities import Capabilities
from duplex_client.server.__main__ import _parser
from duplex_client.server.config import ServerConfig
from duplex_client.server.limits import Limits
from duplex_client.server.profiles import _PROFILES, PROFILE_NAMES, get_profile

SERVED = [f for f in FAMILIES if f.reference_profile]


def wire_capabilities(name: str, **options: bool) -> Capabilities:
    """The capabilities of profile `name` as a client parses them from `session.created`."""
    advertised = get_profile(name, **options).capabilities(Limits())
    return Capabilities.from_dict(advertised.to_dict())


def test_the_profiles_are_the_families_with_a_reference_profile() -> None:
    assert PROFILE_NAMES == PROFILE_FAMILIES == tuple(f.name for f in SERVED)
    assert set(_PROFILES) == set(PROFILE_NAMES)
    assert all(profile.name == name for name, profile in _PROFILES.items())
    assert ServerConfig().profile == DEFAULT_FAMILY == PROFILE_NAMES[0]
    assert _parser().parse_args([]).profile == DEFAULT_FAMILY


@pytest.mark.parametrize("f", SERVED, ids=lambda f: f.name)
def test_a_profile_advertises_its_familys_grid_lane_and_rules(f: ModelFamily) -> None:
    caps = wire_capabilities(f.name)
    assert (caps.first_unit_ms, caps.chunk_period_ms) == (f.first_unit_ms, f.chunk_period_ms)
    assert caps.implementation_level == (
        "model_native_duplex" if f.model_owned_turns else "turn_based_duplex"
    )
    assert caps.required_input_modalities == f.required_modalities
    assert caps.optional_input_modalities == f.optional_modalities
    assert (caps.response_lifecycle or "model_turn") == f.lifecycle
    # The client's own rule (`DuplexClientBase.takes_commits`) on what was advertised.
    takes_commits = caps.supports_client_commit and caps.response_lifecycle != "continuous_stream"
    assert takes_commits == f.client_commits
    assert not f.push_to_talk or takes_commits  # a push-to-talk turn ends with a commit
    assert caps.supports_barge_in == f.barge_in
    assert caps.supports_session_resume == f.session_resume
    assert caps.supports_audio_truncate == f.audio_truncate
    assert caps.supports_tools == f.tools


@pytest.mark.parametrize("f", SERVED, ids=lambda f: f.name)
def test_a_profile_takes_its_familys_input_and_server_vad(f: ModelFamily) -> None:
    profile = get_profile(f.name)
    assert (profile.default_input_format, profile.default_input_rate) == (
        f.input_format,
        f.input_rate_hz,
    )
    raw = wire_capabilities(f.name).raw  # stated where it is not the protocol's default
    stated = (raw.get("input_audio_format", "pcm16"), raw.get("input_sample_rate_hz", 16000))
    assert stated == (f.input_format, f.input_rate_hz)
    assert profile.has_server_vad == f.server_vad
    assert not get_profile(f.name, server_vad=False).has_server_vad  # no VAD engine, no VAD

"""Which engine a server runs, and what each profile gets from it."""

from __future__ import annotations

import pytest

from duplex_client.server.config import ServerConfig, default_engine, speech_available
from duplex_client.server.engine.script import Script, ScriptedEngine
from duplex_client.server.engine.speech import SpeechEngine


def test_the_speech_engine_is_the_default_when_the_extra_is_installed() -> None:
    assert speech_available()
    assert default_engine() == "speech"
    assert ServerConfig().engine == "speech"
    assert ServerConfig(script=Script()).engine == "scripted"
    with pytest.raises(ValueError, match="script"):
        ServerConfig(engine="speech", script=Script())
    with pytest.raises(ValueError, match="engine"):
        ServerConfig(engine="magic")  # type: ignore[arg-type]


def test_each_profile_gets_its_lane() -> None:
    duplex = ServerConfig(profile="minicpmo").make_engine()
    turns = ServerConfig(profile="joyai").make_engine()
    assert isinstance(duplex, SpeechEngine) and duplex.lane == "duplex"
    assert duplex.unit_listen_events
    assert isinstance(turns, SpeechEngine) and turns.lane == "turns"
    assert not turns.unit_listen_events
    assert isinstance(ServerConfig(engine="scripted").make_engine(), ScriptedEngine)


def test_joyai_has_a_server_vad_only_with_the_speech_engine() -> None:
    assert ServerConfig(profile="joyai").resolve_profile().has_server_vad
    assert not ServerConfig(profile="joyai", engine="scripted").resolve_profile().has_server_vad

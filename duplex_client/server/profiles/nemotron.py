"""Nemotron VoiceChat-style: 80 ms units in one continuous stream, ended by `session.end`."""

from __future__ import annotations

from dataclasses import replace

from duplex_client.server.profiles.base import family_profile

NEMOTRON = replace(family_profile("nemotron"), signal_sources=("model_native", "client_event"))

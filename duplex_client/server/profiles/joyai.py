"""JoyAI-style: speech turns (server VAD or push-to-talk) with camera observations, chat lane."""

from __future__ import annotations

from duplex_client.server.profiles.base import family_profile

JOYAI = family_profile("joyai")

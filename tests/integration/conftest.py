"""Fixtures shared by the integration tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from duplex_client.server.assembler import UnitAssembler


@pytest.fixture
def received(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every PCM payload the reference server's unit assembler accepts, in arrival order."""
    seen: list[bytes] = []
    original: Callable[..., Any] = UnitAssembler.add_audio

    def capture(self: UnitAssembler, pcm: bytes, *args: Any, **kwargs: Any) -> Any:
        seen.append(bytes(pcm))
        return original(self, pcm, *args, **kwargs)

    monkeypatch.setattr(UnitAssembler, "add_audio", capture)
    return seen

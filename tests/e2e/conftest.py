"""Fixtures shared by the CLI end-to-end tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.media_files import write_clip


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 s of video at 10 fps with a 3.5 s soundtrack (trimmed to 3 s: 15 appends + tail)."""
    return write_clip(
        tmp_path_factory.mktemp("media") / "clip.mp4", video_seconds=3.0, audio_seconds=3.5, fps=10
    )

"""Media fixtures shared by the media tests (the generators live in tests/support/media_files)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.media_files import PORTRAIT_MATRIX, write_clip


@pytest.fixture(scope="session")
def media_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder for fixtures shared by the whole session."""
    return tmp_path_factory.mktemp("media")


@pytest.fixture(scope="session")
def av_clip(media_dir: Path) -> Path:
    """3 s, 10 fps, 64x48 H.264 with a 2.5 s 48 kHz stereo AAC soundtrack (1 kHz / 2 kHz)."""
    return write_clip(media_dir / "av.mp4", audio_seconds=2.5)


@pytest.fixture(scope="session")
def silent_clip(media_dir: Path) -> Path:
    """3 s, 10 fps video without an audio track."""
    return write_clip(media_dir / "silent.mp4")


@pytest.fixture(scope="session")
def portrait_clip(media_dir: Path) -> Path:
    """A landscape-stored clip with a -90° display matrix and a red top-left marker."""
    return write_clip(media_dir / "portrait.mp4", matrix=PORTRAIT_MATRIX, marker=True)


@pytest.fixture()
def make_clip(tmp_path: Path) -> Callable[..., Path]:
    """`make_clip(name, **write_clip options)` → path of a fresh clip in tmp_path."""

    def make(name: str, **kwargs: Any) -> Path:
        return write_clip(tmp_path / name, **kwargs)

    return make

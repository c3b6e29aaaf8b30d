"""The plan cache on disk: a hit serves the same bytes without decoding; any change misses."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from duplex_client.framing.pcm_format import PcmFormat
from duplex_client.media import open_clip
from duplex_client.media.errors import MediaWarning, collect_media_warnings
from duplex_client.media.plan_cache import CachedFrames, CachedPcm, PlanCache, cached_clip
from tests.support.media_files import write_clip

WINDOWS = [(0, 1000), (1000, 2000), (2000, 3000), (3000, 4000)]


def _plan(path: Path, cache: PlanCache, **options: Any) -> tuple[bytes, list[Any]]:
    """The PCM and the frame groups a clip gives through `cache` (sources closed after)."""
    clip = cached_clip(open_clip(path, **options), cache)
    try:
        assert isinstance(clip.audio, CachedPcm) and isinstance(clip.frames, CachedFrames)
        pcm = b"".join(clip.audio.chunks())
        groups = [clip.frames.group_for_unit(s, e) for s, e in WINDOWS]
    finally:
        clip.close()
    return pcm, groups


@pytest.fixture()
def no_decoding(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Call it to make any decoding of audio or video fail the test."""

    def arm() -> None:
        def refuse(*_a: Any, **_k: Any) -> Iterator[bytes]:
            raise AssertionError("decoded although the plan cache holds it")

        monkeypatch.setattr("duplex_client.media.frames.VideoCursor", refuse)
        monkeypatch.setattr("duplex_client.media.audio.AvAudio.chunks", refuse)

    return arm


def test_a_hit_gives_the_same_bytes_without_decoding(
    tmp_path: Path, no_decoding: Callable[[], None]
) -> None:
    clip = write_clip(tmp_path / "c.mp4", video_seconds=3.0, audio_seconds=3.0, keyint=7)
    cache = PlanCache(tmp_path / "cache")
    cold = _plan(clip, cache, stack_frames=2)
    assert cache.info().entries == 2 and not list((tmp_path / "cache").glob("*.tmp"))
    no_decoding()
    assert _plan(clip, cache, stack_frames=2) == cold


def test_a_changed_byte_or_parameter_never_hits(tmp_path: Path) -> None:
    clip = write_clip(tmp_path / "c.mp4", video_seconds=2.0, audio_seconds=2.0)
    cache = PlanCache(tmp_path / "cache")
    _plan(clip, cache)
    keys = {p.name for p in (tmp_path / "cache").iterdir()}
    for options in ({"fps": 2.0}, {"frame_max_side": 32}, {"jpeg_quality": 80}):
        _plan(clip, cache, **options)
        new = {p.name for p in (tmp_path / "cache").iterdir()} - keys
        assert len(new) == 1, options  # a frames entry of its own; the PCM is the same
        keys |= new
    data = bytearray(clip.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit of the media data: other content, still decodable
    clip.write_bytes(bytes(data))
    _plan(clip, cache)
    assert len({p.name for p in (tmp_path / "cache").iterdir()} - keys) == 2
    # the session's format shapes the PCM: another format is another entry
    other = cached_clip(open_clip(clip), cache)
    assert isinstance(other.audio, CachedPcm)
    first = other.audio.key()
    other.audio.set_output(PcmFormat(encoding="pcm_f32le", sample_rate_hz=24000))
    assert other.audio.key() != first


def test_a_corrupt_entry_warns_once_is_deleted_and_planned_again(tmp_path: Path) -> None:
    clip = write_clip(tmp_path / "c.mp4", video_seconds=2.0, audio_seconds=2.0)
    cache = PlanCache(tmp_path / "cache")
    cold = _plan(clip, cache)
    for entry in (tmp_path / "cache").iterdir():
        entry.write_bytes(entry.read_bytes()[:-10])  # truncated
    seen: list[MediaWarning] = []
    with collect_media_warnings(seen.append):
        again = _plan(clip, cache)
    assert again == cold
    assert len(seen) == 2  # one line per entry (the PCM's and the frames')
    assert all(str(w).startswith("plan cache: ") and "planning again" in str(w) for w in seen)
    with collect_media_warnings(seen.append):
        assert _plan(clip, cache) == cold  # the entries were written again, whole
    assert len(seen) == 2


def test_a_decode_warning_is_said_again_on_a_hit(tmp_path: Path) -> None:
    clip = write_clip(tmp_path / "t.mp4", video_seconds=3.0, audio_seconds=3.0, faststart=True)
    data = clip.read_bytes()
    clip.write_bytes(data[: len(data) * 2 // 3])  # index at the front: the rest is readable
    cache = PlanCache(tmp_path / "cache")
    cold: list[MediaWarning] = []
    with collect_media_warnings(cold.append):
        first = _plan(clip, cache)
    warm: list[MediaWarning] = []
    with collect_media_warnings(warm.append):
        assert _plan(clip, cache) == first
    assert cold and sorted(map(str, warm)) == sorted(map(str, cold))


def test_the_size_bound_evicts_the_least_recently_used(tmp_path: Path) -> None:
    cache = PlanCache(tmp_path / "cache", max_bytes=13_000)  # three entries of ~4.2 kB
    for i, name in enumerate("abc"):
        cache.store("pcm", name * 64, {}, bytes(4000))
        os.utime(cache.path(name * 64), (1000 + i, 1000 + i))
    assert cache.load("pcm", "a" * 64) is not None  # a use: now the most recent
    cache.store("pcm", "d" * 64, {}, bytes(4000))
    left = sorted(p.name[0] for p in (tmp_path / "cache").glob("*.plan"))
    assert left == ["a", "c", "d"] and cache.info().bytes <= 13_000
    assert cache.clear().entries == 3 and cache.info().entries == 0


def test_an_unwritable_directory_says_so_once_and_plans_anyway(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    cache = PlanCache(tmp_path / "file" / "cache")
    clip = write_clip(tmp_path / "c.mp4", video_seconds=1.0, audio_seconds=1.0)
    seen: list[MediaWarning] = []
    with collect_media_warnings(seen.append):
        pcm, groups = _plan(clip, cache)
    assert pcm and groups[0] is not None
    assert [str(w).split(": cannot write")[0] for w in seen] == [f"plan cache: {cache.directory}"]


def test_user_speech_of_the_same_input_is_read_back_not_scored_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("onnxruntime")
    import numpy as np

    from duplex_client.media.plan_cache import cached_speech
    from tests.support.media_files import two_tone_mono

    pcm = np.concatenate([np.zeros(8000, np.int16), two_tone_mono(16000), np.zeros(8000, np.int16)])
    cache = PlanCache(tmp_path / "cache")
    first = cached_speech(cache, pcm)

    def refuse(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("scored again although the plan cache holds it")

    monkeypatch.setattr("duplex_client.media.speech.detect_speech", refuse)
    assert cached_speech(cache, pcm) == first
    with pytest.raises(AssertionError, match="scored again"):  # another input is scored
        cached_speech(cache, pcm[:-160])

"""Re-deriving a recording's payloads from its source files, and cutting it on another grid."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from duplex_client.bundle.payloads import KeptPayloads
from duplex_client.framing.framer import Framer
from duplex_client.framing.plan import FramerConfig
from duplex_client.framing.recorded import RecordedInput, RecordedInputError
from duplex_client.protocol.capabilities import Capabilities
from duplex_client.replay.rederive import recorded_source, recut_input, rederive
from duplex_client.run.stream import stream_clip_blocking
from duplex_client.usage import UsageError
from tests.e2e.eval_support import servers, write_script
from tests.support.media_files import write_audio_file, write_clip


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One reference server (scripted engine) for the module's recordings."""
    script = write_script(tmp_path_factory.mktemp("server") / "script.json")
    with servers(script) as (server,):
        yield server.url


def _record(root: Path, name: str, url: str, **options: Any) -> dict[str, Any]:
    """A real run (a reference server, real time unless told) kept with its payloads."""
    result = stream_clip_blocking(
        url, output_dir=root / name, preset="none", keep_payloads=True, **options
    )
    assert result.ok, result.error
    doc: dict[str, Any] = json.loads((root / name / "input_timeline.json").read_text())
    return doc


@pytest.fixture(scope="module")
def clip_run(tmp_path_factory: pytest.TempPathFactory, url: str) -> tuple[Path, dict[str, Any]]:
    """A 2.2 s clip with a soundtrack, 2 frames a second, then 0.3 s of tail: (root, doc)."""
    root = tmp_path_factory.mktemp("rederive")
    clip = write_clip(root / "clip.mp4", video_seconds=2.2, audio_seconds=2.2, fps=5)
    doc = _record(
        root, "clip", url, input_video=str(clip), tail_silence_s=0.3, video_fps=2.0, chunk_ms=300
    )
    return root, doc


def test_a_clip_rederives_to_the_bytes_that_were_sent(
    clip_run: tuple[Path, dict[str, Any]],
) -> None:
    root, doc = clip_run
    pcm, image = rederive(doc)
    kept = KeptPayloads(root / "clip", doc["appends"])
    rows = doc["appends"]
    assert [r["segment"] for r in rows].count("tail") >= 1
    assert sum(len(r["frames"]) for r in rows) >= 2
    for row in rows:
        assert pcm(row) == kept.pcm(row)
        for frame in row["frames"]:
            assert image(row, frame) == kept.image(row, frame) != b""
    recorded = RecordedInput.from_timeline(doc, pcm, image)
    assert recorded.sent_sha256 == doc["totals"]["sent_sha256"]


def test_the_recorded_settings_are_the_ones_used(clip_run: tuple[Path, dict[str, Any]]) -> None:
    _, doc = clip_run
    source = recorded_source(doc)
    assert source.options.video_fps == 2.0 and source.options.input_audio is None
    assert source.chunk_ms == 300 and source.tail_silence_ms == 300
    assert source.soundtrack_policy == "trim"
    assert source.hashes == ((doc["audio_source"]["path"], doc["audio_source"]["sha256"]),)


def test_a_changed_source_names_the_first_append_that_differs(
    clip_run: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    root, doc = clip_run
    # A copy, not the same clip encoded again: encoding it again in a busy test process once
    # gave other bytes with the same decoded content (a fresh-clone run, 2026-12-02).
    clip = tmp_path / "clip.mp4"
    shutil.copyfile(root / "clip.mp4", clip)
    moved = _with_paths(doc, str(clip))
    assert rederive(moved)  # the same content at another place re-derives
    write_clip(clip, video_seconds=2.2, audio_seconds=2.2, fps=5, tone_hz=440.0)
    with pytest.raises(RecordedInputError) as err:
        rederive(moved)
    message = str(err.value)
    assert "\n" not in message and f"{clip} changed since the recording" in message
    assert message.endswith("append 0 (media 0-300 ms): its audio differs from the recorded bytes")


def test_a_changed_file_refuses_even_when_its_appends_come_out_the_same(
    clip_run: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    _, doc = clip_run
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(Path(doc["audio_source"]["path"]).read_bytes() + b"\0" * 64)
    with pytest.raises(RecordedInputError, match="though every append it gives is the recorded"):
        rederive(_with_paths(doc, str(clip)))


def test_a_source_that_is_gone_is_named(
    clip_run: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    _, doc = clip_run
    gone = str(tmp_path / "nowhere.mp4")
    with pytest.raises(UsageError, match=f"its source {gone} is gone.*--keep-payloads"):
        rederive(_with_paths(doc, gone))


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda d: d["appends"][0].update(segment="live"), "recorded live"),
        (lambda d: d["video"].update(kind="image"), "its frames came from an image"),
        (lambda d: d["audio_source"].update(kind="microphone"), "from 'microphone'"),
        (lambda d: d.update(server_commits=[{"audio_end_ms": 500}]), "server commits moved"),
        (lambda d: d["appends"].append(dict(d["appends"][0])), "more than one stream"),
        (lambda d: d.update(audio_source={"kind": "none"}, video=None), "names no source file"),
    ],
)
def test_what_cannot_be_rederived_says_why_in_one_line(
    clip_run: tuple[Path, dict[str, Any]], change: Any, why: str
) -> None:
    doc = copy.deepcopy(clip_run[1])
    change(doc)
    with pytest.raises(UsageError) as err:
        rederive(doc)
    assert why in str(err.value) and "\n" not in str(err.value)


def test_an_audio_file_rederives(tmp_path: Path, url: str) -> None:
    wav = write_audio_file(tmp_path / "a.wav", 0.6, 22050, 300.0)
    doc = _record(tmp_path, "wav", url, input_audio=str(wav))
    assert doc["audio_source"]["kind"] == "wav" and doc["video"] is None
    pcm, image = rederive(doc)
    assert (
        RecordedInput.from_timeline(doc, pcm, image).sent_sha256 == (doc["totals"]["sent_sha256"])
    )


def test_a_recut_on_another_grid_keeps_the_clip_audio_and_the_frames_by_unit(
    clip_run: tuple[Path, dict[str, Any]],
) -> None:
    root, doc = clip_run
    kept = KeptPayloads(root / "clip", doc["appends"])
    recorded = RecordedInput.from_timeline(doc, kept.pcm, kept.image)
    source = recut_input(doc, recorded)
    caps = Capabilities(first_unit_ms=530, chunk_period_ms=400)
    framer = Framer(FramerConfig.from_capabilities(caps, chunk_ms=300))
    appends = list(framer.plan(source.audio, source.frames, tail_silence_ms=300))
    clip_pcm = b"".join(a.pcm for a in recorded.appends if a.segment == "clip")
    sent = b"".join(a.pcm for a in appends if a.segment == "clip")
    # `trim` on the new grid drops the last part unit (the recorded one was whole).
    assert sent == clip_pcm[: len(sent)] and len(clip_pcm) - len(sent) < 400 * 32
    assert {a.media_end_ms for a in appends if a.unit_index is not None} >= {530, 930}
    recorded_frames = [a.frames.base.data for a in recorded.appends if a.frames is not None]
    new_frames = [a.frames for a in appends if a.frames is not None]
    for k, group in enumerate(new_frames):
        assert group.base.data == recorded_frames[min(k, len(recorded_frames) - 1)]
    assert new_frames[-1].held and len(new_frames) > len(recorded_frames)


def _with_paths(doc: dict[str, Any], path: str) -> dict[str, Any]:
    moved = copy.deepcopy(doc)
    moved["audio_source"]["path"] = moved["video"]["path"] = path
    return moved


def test_a_wav_padded_to_its_video_rederives_to_the_bytes_sent(tmp_path: Path, url: str) -> None:
    """A WAV shorter than its video was padded to it (issue 32): replay re-derives the same."""
    clip = write_clip(tmp_path / "clip.mp4", video_seconds=1.2, fps=5)
    wav = write_audio_file(tmp_path / "q.wav", 0.5, 16000, 440.0)
    doc = _record(tmp_path, "run", url, input_video=str(clip), input_audio=str(wav), realtime=False)
    assert doc["audio_source"]["fitted_to_video"]["policy"] == "trim"
    assert doc["appends"][-1]["media_end_ms"] == 2000  # 1.2 s of video, padded to the unit
    pcm, image = rederive(doc)
    kept = KeptPayloads(tmp_path / "run", doc["appends"])
    for row in doc["appends"]:
        assert pcm(row) == kept.pcm(row)
        for frame in row["frames"]:
            assert image(row, frame) == kept.image(row, frame) != b""

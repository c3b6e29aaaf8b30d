"""`BundleLayout`: every file of a run bundle named once, as the on-disk contract spells it."""

from __future__ import annotations

from pathlib import Path

import pytest

from duplex_client.bundle import layout as bl
from duplex_client.bundle.layout import BUNDLE_FILES, SCHEMA_VERSION, BundleLayout, entry_of
from duplex_client.framing.timeline import SCHEMA_VERSION as TIMELINE_SCHEMA_VERSION
from duplex_client.framing.timeline import InputTimeline


def test_the_layout_spells_the_on_disk_contract() -> None:
    run = BundleLayout(Path("run"))
    paths = {
        "timeline": "input_timeline.json", "events": "events.jsonl", "output": "output.wav",
        "transcript": "transcript.txt", "session": "session.json", "result": "result.json",
        "heard": "heard.wav", "conversation": "conversation.wav", "sent_input": ".sent_input.pcm",
        "thumbnails": "frames", "input_pcm": "input.pcm", "sent_frames": "sent_frames",
        "condition": "condition.json", "eval_item": "eval_item.json", "report": "report.html",
    }  # fmt: skip
    assert {attr: getattr(run, attr) for attr in paths} == {
        attr: Path("run", name) for attr, name in paths.items()
    }
    assert run.response_wav(2, "resp_ab") == Path("run/response_002_resp_ab.wav")
    assert run.thumbnail(12, 1) == Path("run/frames/12_1.jpg")
    assert run.sent_frame(7, "composite") == Path("run/sent_frames/000007_composite.jpg")
    assert {e.name for e in bl.ENTRIES} >= {*paths.values(), "response_*.wav"}


def test_bundle_files_are_the_single_files_a_run_writes_itself() -> None:
    assert set(BUNDLE_FILES) == {
        "events.jsonl", "output.wav", "transcript.txt", "session.json", "result.json",
        "input_timeline.json", "heard.wav", "conversation.wav", ".sent_input.pcm",
    }  # fmt: skip
    assert len(BUNDLE_FILES) == len(set(BUNDLE_FILES))


def test_the_schema_version_is_the_one_the_timeline_stamps() -> None:
    assert SCHEMA_VERSION == TIMELINE_SCHEMA_VERSION == 1
    assert InputTimeline().to_dict()["schema_version"] == SCHEMA_VERSION


@pytest.mark.parametrize(
    ("relative", "when"),
    [
        ("result.json", "always"),
        ("heard.wav", "realtime"),
        ("response_001_resp_9f.wav", "audio"),
        ("frames/3_0.jpg", "thumbnails"),
        ("frames/000003_base.jpg", "thumbnails"),  # a bundle from before thumbnails
        ("sent_frames/000003_composite.jpg", "payloads"),
        ("input.pcm", "payloads"),
        ("condition.json", "sweep"),
        ("eval_item.json", "eval"),
        ("report.html", "report"),
        ("notes.txt", None),
        ("frames", None),  # a folder entry names no file of that name
        ("frames/3_0.png", None),
        ("sent_frames/3_0.jpg", None),
        ("frames/sub/3_0.jpg", None),
    ],
)
def test_entry_of_names_each_file_by_its_entry(relative: str, when: str | None) -> None:
    entry = entry_of(relative)
    assert (entry.when if entry is not None else None) == when


def test_unnamed_and_missing_compare_a_directory_with_the_layout(tmp_path: Path) -> None:
    run = BundleLayout(tmp_path)
    for path in (run.timeline, run.result, run.thumbnail(0, 0), tmp_path / "stray.txt"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    assert run.unnamed() == ["stray.txt"]
    assert run.missing("always") == [
        "events.jsonl", "output.wav", "transcript.txt", "session.json",
    ]  # fmt: skip
    assert run.is_bundle() and not BundleLayout(tmp_path / "frames").is_bundle()

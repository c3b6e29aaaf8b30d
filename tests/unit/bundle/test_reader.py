"""The one bundle reader: one error type, one line per problem, the schema checked."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from duplex_client.bundle.layout import BundleLayout
from duplex_client.bundle.reader import (
    BundleError,
    read_document,
    read_optional,
    read_timeline,
    read_waveforms,
)
from duplex_client.bundle.wavfile import write_wav
from duplex_client.eval.summary import ItemRecord
from duplex_client.report.bundle_reader import ReportInputError
from duplex_client.usage import UsageError


def bundle(tmp_path: Path, timeline: object = None) -> BundleLayout:
    """A bundle folder holding an input timeline (schema 1 unless given)."""
    layout = BundleLayout(tmp_path / "run")
    layout.dir.mkdir()
    doc = {"schema_version": 1, "appends": []} if timeline is None else timeline
    layout.timeline.write_text(json.dumps(doc), encoding="utf-8")
    return layout


def test_the_one_error_is_the_report_s_and_a_usage_error() -> None:
    assert ReportInputError is BundleError
    assert issubclass(BundleError, UsageError) and issubclass(BundleError, ValueError)
    error = BundleError("runs/chunk_ms: no such directory")
    assert error.keywords == () and error.render() == "runs/chunk_ms: no such directory"


@pytest.mark.parametrize(
    ("timeline", "message"),
    [
        ({"schema_version": 0}, r"bundle schema 0 is older than this duplex-client reads \(1\)"),
        ({"schema_version": 2}, r"bundle schema 2 is newer .* upgrade duplex-client"),
        ({}, r"bundle schema None is older"),
        ([1], r"input_timeline\.json: expected a JSON object"),
    ],
)
def test_read_timeline_checks_the_schema(tmp_path: Path, timeline: object, message: str) -> None:
    layout = bundle(tmp_path, timeline)
    with pytest.raises(BundleError, match=message):
        read_timeline(layout.dir)


def test_read_timeline_names_what_is_not_a_bundle(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="no such directory"):
        read_timeline(tmp_path / "absent")
    with pytest.raises(BundleError, match=r"is not a run bundle \(no input_timeline\.json\)"):
        read_timeline(tmp_path)
    assert read_timeline(bundle(tmp_path).dir)["schema_version"] == 1


def test_documents_missing_torn_or_not_objects(tmp_path: Path) -> None:
    layout = bundle(tmp_path)
    with pytest.raises(BundleError, match=r"run is not a run bundle \(no session\.json\)"):
        read_document(layout.session)
    layout.result.write_text("{torn", encoding="utf-8")
    with pytest.raises(BundleError, match=r"result\.json: not readable JSON"):
        read_document(layout.result)
    assert read_optional(layout.result) is None and read_optional(layout.session) is None
    layout.result.write_text('{"ok": true}', encoding="utf-8")
    assert read_optional(layout.result) == {"ok": True}


def test_eval_reads_through_the_same_reader(tmp_path: Path) -> None:
    layout = bundle(tmp_path)
    layout.result.write_text("{torn", encoding="utf-8")
    with pytest.raises(BundleError, match=r"result\.json: not readable JSON"):
        ItemRecord.from_bundle(
            layout.dir, id="a", repeat=None, endpoint=None, attempts=1, expected=None,
            extra={}, bundle="items/a",
        )  # fmt: skip


def test_waveforms_come_from_the_mix_else_the_heard_track(tmp_path: Path) -> None:
    layout = bundle(tmp_path)
    assert read_waveforms(layout) is None
    write_wav(layout.heard, np.arange(10, dtype=np.int16), 24000)
    heard = read_waveforms(layout)
    assert heard is not None and heard.input is None and heard.conversation is None
    assert heard.rate_hz == 24000 and heard.heard.tolist() == list(range(10))
    stereo = np.stack([np.full(4, 1), np.full(4, 2)], axis=1).astype(np.int16)
    write_wav(layout.conversation, stereo, 16000)
    mix = read_waveforms(layout)
    assert mix is not None and mix.conversation == layout.conversation and mix.rate_hz == 16000
    assert mix.input is not None and mix.input.tolist() == [1] * 4
    assert mix.heard.tolist() == [2] * 4
    layout.conversation.write_bytes(b"RIFF")
    with pytest.raises(BundleError, match=r"conversation\.wav: not a readable PCM16 WAV"):
        read_waveforms(layout)

"""Full-Duplex-Bench trees: detection, items, and the aligned `output.wav` export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import soundfile as sf

from duplex_client.analysis.annotations import load_annotations
from duplex_client.bundle import layout
from duplex_client.bundle.layout import HEARD_FILE
from duplex_client.bundle.wavfile import read_wav_int16, write_wav
from duplex_client.eval.fdb import (
    ANNOTATION_FILES,
    OUTPUT_RATE_HZ,
    ExportOutcome,
    export_item,
    is_fdb_tree,
    read_fdb_items,
)
from duplex_client.eval.items import EvalItem, ItemSetError

PAUSE = [{"text": "[PAUSE]", "timestamp": [3.32, 4.0]}]
TURN = [{"text": "[TURN-TAKING]", "timestamp": [2.01, 2.4]}]
INTERRUPT = [{"context": "Books?", "interrupt": "Fiction?", "timestamp": [1.5, 2.5]}]
METADATA = {"context_text": "a", "current_turn_text": "b", "timestamps": [1.2, 2.6]}
TRANSCRIPTION = [
    {"speaker": 0, "item": [{"text": "I", "timestamp": [2.01, 2.42]}]},
    {"speaker": 1, "item": [{"text": "yes", "timestamp": [2.5, 2.9]}]},
]


def _json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=4), encoding="utf-8")


def _speech(rate: int, seconds: float, channels: int = 1) -> npt.NDArray[np.int16]:
    n = round(rate * seconds)
    mono = (3000 * np.sin(2 * np.pi * 220 * np.arange(n) / rate)).astype(np.int16)
    return mono if channels == 1 else np.repeat(mono[:, None], channels, axis=1)


def _input(folder: Path, rate: int = 16000, seconds: float = 3.0, channels: int = 1) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "input.wav"
    write_wav(path, _speech(rate, seconds, channels), rate)
    return path


def _tree(root: Path) -> Path:
    """A v1 + v1.5 shaped tree: pause_handling (IDs 1, 2, 10), turn taking, interruption,
    backchannel (transcription only), a 44.1 kHz stereo v1.5 item and one broken sample."""
    for sample in ("1", "2", "10"):
        _input(root / "pause_handling" / sample)
        _json(root / "pause_handling" / sample / "pause.json", PAUSE)
        _json(root / "pause_handling" / sample / "transcription.json", TRANSCRIPTION)
    _input(root / "smooth_turn_taking" / "1")
    _json(root / "smooth_turn_taking" / "1" / "turn_taking.json", TURN)
    _json(root / "smooth_turn_taking" / "1" / "transcription.json", TRANSCRIPTION)
    _input(root / "user_interruption" / "1")
    _json(root / "user_interruption" / "1" / "interrupt.json", INTERRUPT)
    _input(root / "icc_backchannel" / "3")
    _json(root / "icc_backchannel" / "3" / "transcription.json", TRANSCRIPTION)
    v15 = root / "background_speech" / "7"
    _input(v15, rate=44100, seconds=2.5, channels=2)
    write_wav(v15 / "clean_input.wav", _speech(44100, 2.5, 2), 44100)
    _json(v15 / "metadata.json", METADATA)
    _json(root / "pause_handling" / "4" / "pause.json", PAUSE)  # no input.wav
    return root


# --- detection ------------------------------------------------------------------------------


def test_detects_task_tree_task_folder_and_dataset_root(tmp_path: Path) -> None:
    root = _tree(tmp_path / "v1_0")
    assert is_fdb_tree(root)
    assert is_fdb_tree(root / "pause_handling")  # a task folder: FDB's --root_dir
    assert is_fdb_tree(tmp_path)  # {version}/{task}/{ID}


def test_plain_media_dirs_are_not_fdb(tmp_path: Path) -> None:
    media = tmp_path / "media"
    media.mkdir()
    write_wav(media / "a.wav", _speech(16000, 0.1), 16000)
    _input(media / "clips" / "x")  # an input.wav with nothing beside it
    _json(media / "clips" / "x" / "notes.json", {"a": 1})
    assert not is_fdb_tree(media)
    assert not is_fdb_tree(tmp_path / "missing")
    # an item folder itself (input.wav at the root) is not a tree of items
    assert not is_fdb_tree(_tree(tmp_path / "t") / "pause_handling" / "1")


def test_items_deeper_than_three_levels_are_not_seen(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c" / "d"
    _input(deep)
    _json(deep / "pause.json", PAUSE)
    assert not is_fdb_tree(tmp_path)
    assert is_fdb_tree(tmp_path / "a")


# --- items ----------------------------------------------------------------------------------


def test_items_ids_sort_tasks_and_annotations(tmp_path: Path) -> None:
    root = _tree(tmp_path / "v1_0")
    items = read_fdb_items(root)
    assert [i.id for i in items] == [
        "background_speech/7",
        "icc_backchannel/3",
        "pause_handling/1",
        "pause_handling/2",
        "pause_handling/4",
        "pause_handling/10",
        "smooth_turn_taking/1",
        "user_interruption/1",
    ]
    by_id = {i.id: i for i in items}
    p2 = by_id["pause_handling/2"]
    assert p2.fdb_task == "pause_handling" and p2.fdb_dir == "pause_handling/2"
    assert p2.input_audio == str((root / "pause_handling/2/input.wav").resolve())
    assert Path(p2.input_audio).is_absolute() and p2.error is None
    # a pause marks a pause, not the turn's end: the item's user speech comes from VAD
    assert p2.annotations is None
    assert p2.extra == {
        "fdb_task": "pause_handling",
        "fdb_annotation": "pause.json",
        "fdb_pause": True,
        "fdb_input_ms": 3000.0,
    }
    # the other event files, never transcription.json, and they parse as FDB's shape
    assert by_id["smooth_turn_taking/1"].annotations is not None
    assert str(by_id["smooth_turn_taking/1"].annotations).endswith("turn_taking.json")
    assert str(by_id["user_interruption/1"].annotations).endswith("interrupt.json")
    meta = by_id["background_speech/7"].annotations
    assert isinstance(meta, str) and meta.endswith("metadata.json")
    assert [(s.start_ms, s.end_ms) for s in load_annotations(meta)] == [(1200.0, 2600.0)]
    assert by_id["icc_backchannel/3"].annotations is None  # falls back to VAD
    assert by_id["icc_backchannel/3"].extra["fdb_annotation"] is None
    assert by_id["background_speech/7"].extra["fdb_input_ms"] == 2500.0
    assert by_id["smooth_turn_taking/1"].extra["fdb_pause"] is False
    broken = by_id["pause_handling/4"]
    assert broken.input_audio is None and broken.fdb_dir == "pause_handling/4"
    assert broken.error is not None
    assert "pause.json" in broken.error and "input.wav" in broken.error


def test_annotation_priority_follows_the_declared_order(tmp_path: Path) -> None:
    folder = tmp_path / "odd" / "1"
    _input(folder)
    for name in reversed(ANNOTATION_FILES):
        _json(folder / name, PAUSE)
    (item,) = read_fdb_items(tmp_path)
    assert item.extra["fdb_annotation"] == ANNOTATION_FILES[0]  # pause.json: read by VAD
    (folder / ANNOTATION_FILES[0]).unlink()
    (item,) = read_fdb_items(tmp_path)
    assert Path(str(item.annotations)).name == ANNOTATION_FILES[1]


def test_task_folder_as_root(tmp_path: Path) -> None:
    root = _tree(tmp_path / "v1_0") / "pause_handling"
    items = read_fdb_items(root)
    assert [i.id for i in items] == ["1", "2", "4", "10"]
    assert {i.fdb_task for i in items} == {"pause_handling"}
    assert items[0].fdb_dir == "1"


def test_not_a_directory_is_an_item_set_error(tmp_path: Path) -> None:
    with pytest.raises(ItemSetError, match="not a directory"):
        read_fdb_items(tmp_path / "nope")


# --- export ---------------------------------------------------------------------------------

TONE_AT_S = 1.5


def _bundle(tmp_path: Path, seconds: float, rate: int = 24000, name: str = "bundle") -> Path:
    """A run bundle whose heard.wav is silence, then a 1 kHz tone from exactly 1500 ms."""
    bundle = tmp_path / name
    bundle.mkdir()
    n = round(rate * seconds)
    t = np.arange(n) / rate
    tone = np.where(t >= TONE_AT_S, 8000 * np.sin(2 * np.pi * 1000 * (t - TONE_AT_S)), 0.0)
    write_wav(bundle / "heard.wav", tone.astype(np.int16), rate)
    return bundle


def _onset_ms(samples: npt.NDArray[np.int16], rate: int) -> float:
    loud = np.flatnonzero(np.abs(samples.astype(np.int32)) > 1000)
    assert len(loud), "no tone in output.wav"
    return float(loud[0]) * 1000.0 / rate


def _item(root: Path, item_id: str) -> EvalItem:
    return next(i for i in read_fdb_items(root) if i.id == item_id)


@pytest.mark.parametrize("item_id", ["pause_handling/2", "background_speech/7", "wide/48k"])
def test_export_is_aligned_16k_mono_and_as_long_as_the_input(tmp_path: Path, item_id: str) -> None:
    """FDB's backchannel scorer runs Silero VAD on output.wav as 16 kHz: a 48 kHz or 44.1 kHz
    stereo input still gets a 16 kHz mono answer, as long as the input in time."""
    root = _tree(tmp_path / "v1_0")
    _input(root / "wide" / "48k", rate=48000, seconds=2.5)
    _json(root / "wide" / "48k" / "transcription.json", TRANSCRIPTION)
    item = _item(root, item_id)
    out = tmp_path / "fdb"
    outcome = export_item(item, _bundle(tmp_path, seconds=4.0), out)
    assert outcome == ExportOutcome(out / item_id / "output.wav", None)
    info, source = sf.info(str(outcome.path)), sf.info(str(item.input_audio))
    assert (info.samplerate, info.channels) == (OUTPUT_RATE_HZ, 1) == (16000, 1)
    assert info.frames == round(source.frames * 16000 / source.samplerate)
    samples = read_wav_int16(out / item_id / "output.wav")
    assert abs(_onset_ms(samples, 16000) - TONE_AT_S * 1000) <= 5.0


def test_export_pads_a_short_heard_track_with_zeros(tmp_path: Path) -> None:
    root = _tree(tmp_path / "v1_0")
    item = _item(root, "pause_handling/1")  # 3.0 s input
    outcome = export_item(item, _bundle(tmp_path, seconds=2.0), tmp_path / "fdb")
    assert outcome.path is not None
    samples = read_wav_int16(outcome.path)
    assert len(samples) == 48000
    assert not samples[:23900].any()
    assert np.abs(samples[24100:31900]).max() > 1000  # the tone, up to heard.wav's end
    assert not samples[32100:].any()  # then zeros
    assert outcome.note is not None and "shorter" in outcome.note


def test_export_copies_annotations_and_inputs_but_not_old_answers(tmp_path: Path) -> None:
    root = _tree(tmp_path / "v1_0")
    src = root / "smooth_turn_taking" / "1"
    _json(src / "output.json", {"text": "another model", "chunks": []})
    write_wav(src / "output.wav", _speech(16000, 3.0), 16000)
    (src / "context.wav").write_bytes(b"not needed")
    out = tmp_path / "fdb"
    export_item(_item(root, "smooth_turn_taking/1"), _bundle(tmp_path, 3.5), out)
    dst = out / "smooth_turn_taking" / "1"
    assert sorted(p.name for p in dst.iterdir()) == [
        "input.wav",
        "output.wav",
        "transcription.json",
        "turn_taking.json",
    ]
    assert (dst / "turn_taking.json").read_bytes() == (src / "turn_taking.json").read_bytes()
    assert (dst / "input.wav").read_bytes() == (src / "input.wav").read_bytes()
    v15 = out / "background_speech" / "7"
    export_item(_item(root, "background_speech/7"), _bundle(tmp_path, 3.0, name="b2"), out)
    assert sorted(p.name for p in v15.iterdir()) == [
        "clean_input.wav",
        "input.wav",
        "metadata.json",
        "output.wav",
    ]


def test_no_heard_wav_writes_nothing_and_says_why(tmp_path: Path) -> None:
    assert HEARD_FILE == layout.HEARD_FILE
    root = _tree(tmp_path / "v1_0")
    bundle = tmp_path / "failed"
    bundle.mkdir()
    outcome = export_item(_item(root, "pause_handling/1"), bundle, tmp_path / "fdb")
    assert outcome.path is None
    assert outcome.note is not None and "heard.wav" in outcome.note
    assert not (tmp_path / "fdb" / "pause_handling" / "1").exists()


def test_a_failed_rerun_removes_the_earlier_answer(tmp_path: Path) -> None:
    root = _tree(tmp_path / "v1_0")
    item = _item(root, "pause_handling/1")
    out = tmp_path / "fdb"
    first = export_item(item, _bundle(tmp_path, 3.0), out)
    assert first.path is not None and first.path.is_file()
    _json(first.path.with_name("output.json"), {"text": "asr of the first", "chunks": []})
    empty = tmp_path / "empty"
    empty.mkdir()
    again = export_item(item, empty, out)
    assert again.path is None and again.note is not None
    assert "output.wav" in again.note and "output.json" in again.note
    assert not first.path.exists() and not first.path.with_name("output.json").exists()
    assert (out / "pause_handling" / "1" / "pause.json").is_file()


def test_re_export_keeps_derived_files_only_when_the_answer_is_unchanged(tmp_path: Path) -> None:
    root = _tree(tmp_path / "v1_0")
    item = _item(root, "pause_handling/1")
    out = tmp_path / "fdb"
    bundle = _bundle(tmp_path, 3.0)
    path = export_item(item, bundle, out).path
    assert path is not None
    asr = path.with_name("output.json")
    _json(asr, {"text": "", "chunks": []})
    assert export_item(item, bundle, out) == ExportOutcome(path, None)
    assert asr.is_file()  # same answer: its transcript still holds
    changed = export_item(item, _bundle(tmp_path, 3.0, rate=16000, name="b2"), out)
    assert changed.path == path
    assert changed.note is not None and "output.json" in changed.note


def test_error_items_and_non_fdb_items(tmp_path: Path) -> None:
    root = _tree(tmp_path / "v1_0")
    broken = _item(root, "pause_handling/4")
    outcome = export_item(broken, _bundle(tmp_path, 3.0), tmp_path / "fdb")
    assert outcome.path is None and outcome.note is not None and "input.wav" in outcome.note
    with pytest.raises(ValueError, match="fdb_dir"):
        export_item(EvalItem(id="a.wav", input_audio="/x/a.wav"), tmp_path, tmp_path / "fdb")
    with pytest.raises(ValueError, match="input tree"):
        export_item(_item(root, "pause_handling/1"), _bundle(tmp_path, 3.0, name="b3"), root)


def test_unreadable_heard_wav_is_a_note(tmp_path: Path) -> None:
    root = _tree(tmp_path / "v1_0")
    bundle = tmp_path / "bad"
    bundle.mkdir()
    (bundle / "heard.wav").write_bytes(b"RIFF junk")
    outcome = export_item(_item(root, "pause_handling/1"), bundle, tmp_path / "fdb")
    assert outcome.path is None and outcome.note is not None and "cannot read" in outcome.note

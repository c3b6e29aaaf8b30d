"""Full-Duplex-Bench (FDB) trees: read `{task}/{ID}/input.wav` items, export `output.wav`.

FDB's inference clients write the model's answer as `output.wav` beside each `input.wav`,
covering the same span of time (sample 0 = the first input sample); its scorers then take a
task folder as `--root_dir` and read `{ID}/output.wav`, the annotation JSON and, for the
timing script, `{ID}/input.wav`. `export_item` writes that shape from a run bundle's
`heard.wav`. docs/eval.md ("Full-Duplex-Bench") has the references into FDB's repository.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from duplex_client.bundle.layout import HEARD_FILE, BundleLayout
from duplex_client.eval.item import EvalItem, ItemSetError

__all__ = [
    "ANNOTATION_FILES",
    "COMPANION_INPUTS",
    "HEARD_FILE",
    "INPUT_FILE",
    "MAX_DEPTH",
    "OUTPUT_DERIVED_FILES",
    "OUTPUT_FILE",
    "TRANSCRIPTION_FILE",
    "ExportOutcome",
    "export_item",
    "is_fdb_tree",
    "read_fdb_items",
]

INPUT_FILE: Final = "input.wav"
#: FDB's answer file in its tree (not the run bundle's `output.wav`, which this never reads).
OUTPUT_FILE: Final = "output.wav"
#: The event annotations, in the order one is chosen as an item's `annotations` (a sample
#: folder holds one of them: v1 pause / turn-taking / interruption, v1.5 overlap metadata).
ANNOTATION_FILES: Final = ("pause.json", "turn_taking.json", "interrupt.json", "metadata.json")
#: Word-level transcript of the input. It marks an FDB folder (v1 `icc_backchannel` has no
#: other JSON) but is never chosen as `annotations`: it names no user speaker, and most
#: hold two (`load_annotations` would refuse it without `speaker=`); VAD is used instead.
TRANSCRIPTION_FILE: Final = "transcription.json"
#: Input audio FDB's scorers read beside `output.wav` (`get_timing.py` runs VAD on
#: `input.wav`; v1.5's `clean_input.wav` is the overlap-free reference), copied by the export.
COMPANION_INPUTS: Final = (INPUT_FILE, "clean_input.wav")
#: Files FDB's pipeline derives from a model's answer (ASR transcript, GPT rating, behaviour
#: tags, latency intervals, the feature cache `general_split.json`, the clean-input answer).
#: They describe some earlier answer, so the export never copies them and deletes them when
#: it writes a different `output.wav`.
OUTPUT_DERIVED_FILES: Final = (
    "output.json",
    "rating.json",
    "content_tag.json",
    "latency_intervals.json",
    "general_split.json",
    "clean_output.wav",
    "clean_output.json",
)
#: Deepest item folder below the root: `{ID}` (a task folder), `{task}/{ID}` (a version
#: folder such as `v1_0/`), or `{version}/{task}/{ID}` (the dataset's top folder).
MAX_DEPTH: Final = 3

_MARKERS: Final = (*ANNOTATION_FILES, TRANSCRIPTION_FILE)
#: Shortfall of heard.wav worth a note: one 20 ms frame at the input's rate.
_FRAME_S: Final = 0.020


@dataclass(frozen=True, slots=True)
class _Folder:
    path: Path
    rel: str
    files: frozenset[str]
    has_subdirs: bool


def _folders(root: Path) -> Iterator[_Folder]:
    """Folders 1..MAX_DEPTH below `root`, breadth first; item folders are not descended."""
    level = [(root, "")]
    for _ in range(MAX_DEPTH):
        below: list[tuple[Path, str]] = []
        for parent, prefix in level:
            try:
                entries = sorted(os.scandir(parent), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith(".") or not entry.is_dir():
                    continue
                path = Path(entry.path)
                rel = f"{prefix}{entry.name}"
                try:
                    inner = list(os.scandir(path))
                except OSError:
                    continue
                files = frozenset(e.name for e in inner if e.is_file())
                subdirs = any(e.is_dir() and not e.name.startswith(".") for e in inner)
                yield _Folder(path, rel, files, subdirs)
                if INPUT_FILE not in files:
                    below.append((path, f"{rel}/"))
        level = below


def _is_item(folder: _Folder) -> bool:
    return INPUT_FILE in folder.files


def _is_orphan(folder: _Folder) -> bool:
    """A leaf folder with FDB annotations but no input.wav (a broken sample)."""
    return (
        not _is_item(folder)
        and not folder.has_subdirs
        and any(name in folder.files for name in _MARKERS)
    )


def is_fdb_tree(root: Path) -> bool:
    """Whether `root` holds FDB samples: some `input.wav` with an FDB annotation beside it.

    The item folders may be `root/{ID}` (root is a task folder, what FDB's scorers take as
    `--root_dir`), `root/{task}/{ID}` or `root/{version}/{task}/{ID}`. Stops at the first hit.
    """
    if not root.is_dir():
        return False
    return any(
        _is_item(folder) and any(name in folder.files for name in _MARKERS)
        for folder in _folders(root)
    )


def _natural_key(rel: str) -> tuple[tuple[tuple[int | str, ...], ...], str]:
    """Sort key: digit runs compare as numbers (`2` before `10`), then the raw path."""
    parts = tuple(
        tuple(int(tok) if i % 2 else tok.casefold() for i, tok in enumerate(re.split(r"(\d+)", p)))
        for p in rel.split("/")
    )
    return parts, rel


def _task_of(rel: str, root: Path) -> str:
    parts = rel.split("/")
    return parts[-2] if len(parts) > 1 else root.name


def read_fdb_items(root: Path) -> list[EvalItem]:
    """One `EvalItem` per FDB sample folder under `root`, naturally sorted by folder path.

    A leaf folder with an annotation but no `input.wav` gives an item with `error` set.
    Annotation files are only located here; the run parses them (`load_annotations`).
    """
    if not root.is_dir():
        raise ItemSetError(f"{root}: not a directory")
    base = root.resolve()
    items: list[EvalItem] = []
    for folder in _folders(base):
        if _is_item(folder):
            chosen = next((n for n in ANNOTATION_FILES if n in folder.files), None)
            items.append(
                EvalItem(
                    id=folder.rel,
                    input_audio=str(folder.path / INPUT_FILE),
                    annotations=None if chosen is None else str(folder.path / chosen),
                    fdb_task=_task_of(folder.rel, base),
                    fdb_dir=folder.rel,
                )
            )
        elif _is_orphan(folder):
            found = next(n for n in _MARKERS if n in folder.files)
            items.append(
                EvalItem(
                    id=folder.rel,
                    fdb_task=_task_of(folder.rel, base),
                    fdb_dir=folder.rel,
                    error=f"{folder.path}: {found} without {INPUT_FILE}",
                )
            )
    items.sort(key=lambda item: _natural_key(item.id))
    return items


@dataclass(frozen=True, slots=True)
class ExportOutcome:
    """What `export_item` did: the `output.wav` written (None: none) and a one-line note."""

    path: Path | None
    #: Why nothing was written, or what was odd (heard.wav short, stale files removed).
    note: str | None = None


def _remove(folder: Path, names: tuple[str, ...]) -> list[str]:
    removed = []
    for name in names:
        target = folder / name
        if target.is_file():
            target.unlink()
            removed.append(name)
    return removed


def _copy(src: Path, dst: Path) -> None:
    """Copy `src` to `dst` atomically, skipping a copy an earlier export already made."""
    if dst.is_file():
        a, b = src.stat(), dst.stat()
        if a.st_size == b.st_size and a.st_mtime_ns == b.st_mtime_ns:
            return
    tmp = dst.with_name(dst.name + ".tmp")
    shutil.copy2(src, tmp)
    os.replace(tmp, dst)


def _copy_companions(src_dir: Path, dst_dir: Path) -> None:
    derived = set(OUTPUT_DERIVED_FILES)
    for src in sorted(src_dir.iterdir()):
        if not src.is_file() or src.name in derived:
            continue
        if src.suffix.lower() == ".json" or src.name in COMPANION_INPUTS:
            _copy(src, dst_dir / src.name)


def _same_wav(path: Path, samples: object, rate_hz: int) -> bool:
    """Whether `path` already holds exactly these mono PCM16 samples at this rate."""
    import wave

    import numpy as np

    if not path.is_file():
        return False
    try:
        with wave.open(str(path), "rb") as w:
            if (w.getnchannels(), w.getsampwidth(), w.getframerate()) != (1, 2, rate_hz):
                return False
            data = w.readframes(w.getnframes())
    except (wave.Error, EOFError, OSError):
        return False
    return data == np.ascontiguousarray(samples, dtype="<i2").tobytes()


def export_item(item: EvalItem, bundle_dir: Path, export_root: Path) -> ExportOutcome:
    """Write `export_root/<fdb_dir>/output.wav` from the bundle's `heard.wav`, FDB-aligned.

    The answer is resampled to `input.wav`'s rate, mono, exactly `input.wav`'s length in
    samples (cut or zero-padded at the end), sample 0 = the first input sample. The item's
    JSON files (but those FDB derives from an answer) and `input.wav` / `clean_input.wav`
    are copied beside it first. Without a usable `heard.wav` nothing is written (an
    `output.wav` from an earlier export is deleted) and `note` says why.
    """
    import wave

    import numpy as np
    import soundfile as sf

    from duplex_client.bundle.wavfile import read_wav_pcm16, write_wav
    from duplex_client.media.resample import resample

    if item.fdb_dir is None:
        raise ValueError(f"item {item.id!r} is not from a Full-Duplex-Bench tree (no fdb_dir)")
    out_dir = export_root / item.fdb_dir
    out_path = out_dir / OUTPUT_FILE

    def nothing(why: str) -> ExportOutcome:
        removed = _remove(out_dir, (OUTPUT_FILE, *OUTPUT_DERIVED_FILES))
        if removed:
            why += f"; removed {', '.join(removed)} of an earlier export"
        return ExportOutcome(None, why)

    if item.error is not None or item.input_audio is None:
        return nothing(f"no output.wav: the item cannot run ({item.error or 'no input.wav'})")
    input_path = Path(item.input_audio)
    if out_dir.resolve() == input_path.parent.resolve():
        raise ValueError(f"{export_root}: the export must not be the input tree itself")
    heard_path = BundleLayout(bundle_dir).heard
    if not heard_path.is_file():
        return nothing(
            f"no output.wav: {heard_path} is missing (the item failed, or ran with --burst)"
        )
    try:
        info = sf.info(str(input_path))
    except (RuntimeError, OSError) as exc:
        return nothing(f"no output.wav: cannot read {input_path} ({exc})")
    rate, length = int(info.samplerate), int(info.frames)
    try:
        pcm_bytes, heard_rate = read_wav_pcm16(heard_path)
    except (wave.Error, ValueError, EOFError, OSError) as exc:
        return nothing(f"no output.wav: cannot read {heard_path} ({exc})")

    heard = resample(np.frombuffer(pcm_bytes, dtype="<i2"), heard_rate, rate)
    note = None
    if len(heard) < length:
        short_ms = (length - len(heard)) * 1000.0 / rate
        if short_ms > _FRAME_S * 1000.0:
            note = f"heard.wav is {short_ms:.0f} ms shorter than input.wav: zero-padded"
        heard = np.concatenate([heard, np.zeros(length - len(heard), dtype=np.int16)])
    heard = heard[:length]

    out_dir.mkdir(parents=True, exist_ok=True)
    _copy_companions(input_path.parent, out_dir)
    if not _same_wav(out_path, heard, rate):
        removed = _remove(out_dir, OUTPUT_DERIVED_FILES)
        if removed:
            stale = f"removed stale {', '.join(removed)}"
            note = stale if note is None else f"{note}; {stale}"
        write_wav(out_path, heard, rate)
    return ExportOutcome(out_path, note)

"""Full-Duplex-Bench (FDB) trees: find the `{task}/{ID}/input.wav` samples and read them as items.

docs/eval.md ("Full-Duplex-Bench") has the references into FDB's repository.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from duplex_client.eval.item import EvalItem, ItemSetError

__all__ = [
    "ANNOTATION_FILES",
    "COMPANION_INPUTS",
    "INPUT_FILE",
    "MAX_DEPTH",
    "OUTPUT_DERIVED_FILES",
    "OUTPUT_FILE",
    "PAUSE_FILE",
    "TRANSCRIPTION_FILE",
    "is_fdb_tree",
    "read_fdb_items",
]

INPUT_FILE: Final = "input.wav"
#: FDB's answer file in its tree (not the run bundle's `output.wav`, which this never reads).
OUTPUT_FILE: Final = "output.wav"
#: The event annotations, in the order one is chosen as an item's `annotations` (a sample
#: folder holds one of them: v1 pause / turn-taking / interruption, v1.5 overlap metadata).
ANNOTATION_FILES: Final = ("pause.json", "turn_taking.json", "interrupt.json", "metadata.json")
#: v1 pause handling: it marks a pause inside the user's turn, not the turn's end, so a pause
#: item runs without annotations (its user speech, and so its turn end, come from VAD).
PAUSE_FILE: Final = ANNOTATION_FILES[0]
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


def _input_ms(path: Path) -> float | None:
    """`input.wav`'s duration in ms from its header (None: unreadable; the run will say why)."""
    import soundfile as sf

    try:
        info = sf.info(str(path))
    except (RuntimeError, OSError):
        return None
    return round(info.frames * 1000.0 / info.samplerate, 3) if info.samplerate else None


def _columns(task: str, chosen: str | None, input_ms: float | None) -> dict[str, object]:
    """The summary columns an FDB item carries (`fdb_input_ms`: where the export cuts)."""
    return {
        "fdb_task": task,
        "fdb_annotation": chosen,
        "fdb_pause": chosen == PAUSE_FILE,
        "fdb_input_ms": input_ms,
    }


def read_fdb_items(root: Path) -> list[EvalItem]:
    """One `EvalItem` per FDB sample folder under `root`, naturally sorted by folder path.

    A leaf folder with an annotation but no `input.wav` gives an item with `error` set.
    Annotation files are only located here; the run parses them (`load_annotations`). A
    pause item (`pause.json`) gets no annotations: its user speech comes from VAD, so its
    turn ends where the speech after the pause ends. Every item carries the summary columns
    `fdb_task`, `fdb_annotation`, `fdb_pause` and `fdb_input_ms`.
    """
    if not root.is_dir():
        raise ItemSetError(f"{root}: not a directory")
    base = root.resolve()
    items: list[EvalItem] = []
    for folder in _folders(base):
        task = _task_of(folder.rel, base)
        if _is_item(folder):
            chosen = next((n for n in ANNOTATION_FILES if n in folder.files), None)
            used = None if chosen in (None, PAUSE_FILE) else folder.path / str(chosen)
            items.append(
                EvalItem(
                    id=folder.rel,
                    input_audio=str(folder.path / INPUT_FILE),
                    annotations=None if used is None else str(used),
                    fdb_task=task,
                    fdb_dir=folder.rel,
                    extra=_columns(task, chosen, _input_ms(folder.path / INPUT_FILE)),
                )
            )
        elif _is_orphan(folder):
            found = next(n for n in _MARKERS if n in folder.files)
            items.append(
                EvalItem(
                    id=folder.rel,
                    fdb_task=task,
                    fdb_dir=folder.rel,
                    error=f"{folder.path}: {found} without {INPUT_FILE}",
                    extra=_columns(task, found if found in ANNOTATION_FILES else None, None),
                )
            )
    items.sort(key=lambda item: _natural_key(item.id))
    return items

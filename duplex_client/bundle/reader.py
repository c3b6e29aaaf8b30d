"""The one reader of run bundles: their documents, events, thumbnails and waveforms.

Report, eval and replay read bundles through here. A path that is not a bundle, a document
that is not readable JSON, a bundle of another schema or a WAV that does not read raises
`BundleError`: one line naming the path and why. An `events.jsonl` cut short by a killed run
is read up to its last complete line, with a warning.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duplex_client.bundle.eval_layout import SUMMARY_JSONL
from duplex_client.bundle.layout import SCHEMA_VERSION, TIMELINE_FILE, BundleLayout
from duplex_client.usage import UsageError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class BundleError(UsageError):
    """A run bundle (or an eval directory of them) that cannot be read: one line, path and why.

    A `UsageError` (so a `ValueError`, exit code 2): the input is at fault, nothing was done.
    """

    def __init__(self, message: str) -> None:
        # The message holds user paths: no word of it is ever rewritten into a CLI flag.
        super().__init__(message, keywords=())


def check_bundle(path: Path) -> BundleLayout:
    """The layout of the bundle at `path`; `BundleError` unless it is a folder with a timeline."""
    if path.exists() and not path.is_dir():
        raise BundleError(f"{path}: a file, not a run bundle (give the run's folder)")
    if not path.is_dir():
        raise BundleError(f"{path}: no such directory")
    layout = BundleLayout(path)
    if not layout.timeline.exists():
        raise BundleError(f"{path} is not a run bundle (no {TIMELINE_FILE})")
    return layout


def read_json(path: Path) -> Any:
    """The JSON value of one bundle file; `BundleError` when it is missing or not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BundleError(f"{path.parent} is not a run bundle (no {path.name})") from None
    except (OSError, ValueError) as exc:  # a decoding error is a ValueError too
        raise BundleError(f"{path}: not readable JSON ({exc})") from None


def read_document(path: Path) -> dict[str, Any]:
    """A bundle file holding one JSON object; `BundleError` when it is missing or not one."""
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise BundleError(f"{path}: expected a JSON object")
    return doc


def read_optional(path: Path) -> dict[str, Any] | None:
    """A bundle document, or None when it is missing, unreadable or not a JSON object."""
    try:
        return read_document(path)
    except BundleError:
        return None


def check_schema(timeline: Mapping[str, Any], bundle: Path) -> None:
    """`BundleError` unless a timeline document is of the bundle schema this version reads."""
    version = timeline.get("schema_version")
    if not isinstance(version, int) or version < SCHEMA_VERSION:
        raise BundleError(
            f"{bundle}: bundle schema {version} is older than this duplex-client reads "
            f"({SCHEMA_VERSION}); re-run it with this version"
        )
    if version > SCHEMA_VERSION:
        raise BundleError(
            f"{bundle}: bundle schema {version} is newer than this duplex-client reads "
            f"({SCHEMA_VERSION}); upgrade duplex-client"
        )


def read_timeline(path: Path) -> dict[str, Any]:
    """The input timeline of the bundle at `path`, checked to be of the schema this reads."""
    layout = check_bundle(path)
    timeline = read_document(layout.timeline)
    check_schema(timeline, path)
    return timeline


def read_result(path: Path) -> dict[str, Any]:
    """The `result.json` of the run bundle at `path` (a bundle of the schema this reads)."""
    read_timeline(path)
    return read_document(BundleLayout(path).result)


def check_eval_dir(path: Path) -> None:
    """`BundleError` (one line) unless `path` is a directory with `summary.jsonl`."""
    if not path.is_dir():
        raise BundleError(f"{path}: no such directory")
    if not (path / SUMMARY_JSONL).is_file():
        raise BundleError(
            f"{path}: no {SUMMARY_JSONL} (not an eval output, or the eval has not finished "
            "a summary)"
        )


def read_summary_rows(eval_dir: Path) -> list[dict[str, Any]]:
    """The rows of an eval directory's `summary.jsonl`, in file order (blank lines skipped)."""
    check_eval_dir(eval_dir)
    path = eval_dir / SUMMARY_JSONL
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise BundleError(f"{path}: not readable ({exc})") from None
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if not isinstance(row, dict):
            raise BundleError(f"{path} line {number}: not a summary row (a JSON object)")
        rows.append(row)
    return rows


def read_events(path: Path) -> tuple[list[dict[str, Any]], str | None]:
    """The lines of `events.jsonl` up to the first incomplete one, and a warning if it stopped."""
    events: list[dict[str, Any]] = []
    if not path.exists():
        return events, f"{path.name} is missing: server events are not drawn"
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                line = json.loads(raw)
            except ValueError:
                return events, (
                    f"{path.name} ends in an incomplete line ({number}; the run was killed?): "
                    f"drawn up to line {number - 1}"
                )
            if isinstance(line, dict):
                events.append(line)
    return events, None


def read_thumbnails(layout: BundleLayout) -> dict[str, Path]:
    """The bundle's thumbnails by file name (empty: it has none)."""
    if not layout.thumbnails.is_dir():
        return {}
    return {p.name: p for p in sorted(layout.thumbnails.glob("*_*.jpg"))}


@dataclass(frozen=True, slots=True)
class Waveforms:
    """A bundle's listening audio as int16 samples at one rate: what went in, what was heard."""

    rate_hz: int
    #: The input as sent, on the media clock (None: only `heard.wav` was there).
    input: npt.NDArray[np.int16] | None
    heard: npt.NDArray[np.int16]
    #: The stereo mix both came from (None: read from `heard.wav`).
    conversation: Path | None
    #: What is wrong with the file read (cut short, no samples): the report shows these.
    notes: tuple[str, ...] = ()


def read_waveforms(layout: BundleLayout) -> Waveforms | None:
    """The input and heard tracks from `conversation.wav` (stereo), else the heard track from
    `heard.wav`; None when neither is there, `BundleError` when the WAV does not read.

    A WAV cut short (a killed run, a copy that stopped) gives what it holds, with a note
    saying how much of what its header declares is missing.
    """
    import wave

    from duplex_client.bundle.wavfile import read_wav_held

    path = layout.conversation
    try:
        if path.exists():
            stereo, rate, declared = read_wav_held(path)
            if stereo.ndim == 2 and stereo.shape[1] == 2:
                notes = _shortfall(path, len(stereo), declared, rate)
                return Waveforms(rate, stereo[:, 0], stereo[:, 1], path, notes)
        path = layout.heard
        if path.exists():
            mono, rate, declared = read_wav_held(path)
            notes = _shortfall(path, len(mono), declared, rate)
            return Waveforms(rate, None, mono if mono.ndim == 1 else mono[:, 0], None, notes)
    except (OSError, ValueError, EOFError, wave.Error) as exc:
        reason = str(exc) or _why_unreadable(path, exc)
        raise BundleError(f"{path}: not a readable PCM16 WAV ({reason})") from None
    return None


def _shortfall(path: Path, held: int, declared: int, rate: int) -> tuple[str, ...]:
    """A note when the WAV holds fewer frames than its header declares (none: it is whole)."""
    if held >= declared:
        return ()
    if held == 0:
        return (f"{path.name} holds no audio (its header declares {declared / rate:.2f} s)",)
    return (
        f"{path.name} is cut short: it holds {held / rate:.2f} s of the {declared / rate:.2f} s "
        "its header declares (drawn as far as it goes)",
    )


def _why_unreadable(path: Path, exc: BaseException) -> str:
    """A reason for an exception without a message (an empty file gives a bare EOFError)."""
    try:
        if path.stat().st_size == 0:
            return "empty file"
    except OSError:
        pass
    return type(exc).__name__

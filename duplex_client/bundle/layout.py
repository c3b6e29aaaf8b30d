"""Every file and folder of a run bundle, named once, and the bundle's schema version.

The module constants are the names (for messages, lists and code that holds only a name);
`BundleLayout(dir)` gives each one's path in one bundle; `ENTRIES` says when each is there,
so the writer's output can be checked against the layout and a directory used again loses
exactly an earlier run's files (`BUNDLE_FILES`).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final, Literal

from duplex_client.framing.timeline import SCHEMA_VERSION as TIMELINE_SCHEMA_VERSION
from duplex_client.framing.timeline import TIMELINE_FILENAME

#: The version of a bundle's files, stamped as `schema_version` in its `input_timeline.json`.
#: The stamp's writer and its replay reader are in the pure core (which imports nothing of
#: the bundle), so the number is kept beside them; every bundle reader checks against this.
SCHEMA_VERSION: Final = TIMELINE_SCHEMA_VERSION

#: Every append and commit sent, with the stream's facts (`InputTimeline`).
TIMELINE_FILE: Final = TIMELINE_FILENAME
#: Every server event as received, one JSON line each, payloads elided.
EVENTS_FILE: Final = "events.jsonl"
#: All kept answer audio, in order.
OUTPUT_FILE: Final = "output.wav"
#: The answer audio of one response each (`response_wav_name`).
RESPONSE_WAV_GLOB: Final = "response_*.wav"
#: One line per response: its decision, state, place and text.
TRANSCRIPT_FILE: Final = "transcript.txt"
#: The config sent (secrets removed) and the capabilities received.
SESSION_FILE: Final = "session.json"
#: The `RunResult` document.
RESULT_FILE: Final = "result.json"
#: What a listener heard, on the media clock (real-time runs).
HEARD_FILE: Final = "heard.wav"
#: Stereo: the input left, what was heard right (real-time runs).
CONVERSATION_FILE: Final = "conversation.wav"
#: The input as sent, on the media clock (removed once the conversation mix is written).
SENT_FILE: Final = ".sent_input.pcm"
#: Small JPEG thumbnails of the images sent (`thumbnail_name`).
THUMBNAILS_DIR: Final = "frames"
#: Every append's PCM16 bytes back to back, in the order sent (`--keep-payloads`).
INPUT_PCM_FILE: Final = "input.pcm"
#: Every image sent, at full size (`sent_frame_name`; `--keep-payloads`).
SENT_FRAMES_DIR: Final = "sent_frames"
#: The condition a sweep's replay ran under.
CONDITION_FILE: Final = "condition.json"
#: The eval's record of an item run: endpoint, attempts, earlier errors.
EVAL_ITEM_FILE: Final = "eval_item.json"
#: The run's HTML page, written by `duplex-cli report`.
REPORT_FILE: Final = "report.html"

_THUMBNAIL = re.compile(r"(\d+)_(\d+)\.jpg")
_SENT_FRAME = re.compile(r"\d{6,}_[a-z]+\.jpg")

When = Literal[
    "always", "realtime", "audio", "transient", "thumbnails", "payloads", "sweep", "eval", "report"
]


def response_wav_name(number: int, response_id: str) -> str:
    """The WAV of the `number`-th response (from 1) that sent audio."""
    return f"response_{number:03d}_{response_id}.wav"


def thumbnail_name(unit_index: int, position: int) -> str:
    """The file (under `frames/`) of image `position` of the append closing `unit_index`."""
    return f"{unit_index}_{position}.jpg"


def is_thumbnail_name(name: str) -> bool:
    """Whether a file name is a thumbnail's (`<unit>_<k>.jpg`)."""
    return _THUMBNAIL.fullmatch(name) is not None


def sent_frame_name(append_index: int, role: str) -> str:
    """The file (under `sent_frames/`) of one image an append sent at full size."""
    return f"{append_index:06d}_{role}.jpg"


def is_sent_frame_name(name: str) -> bool:
    """Whether a file name is a kept image's (`<append>_<role>.jpg`)."""
    return _SENT_FRAME.fullmatch(name) is not None


@dataclass(frozen=True, slots=True)
class Entry:
    """One file or folder of a bundle: its name (a glob for a family) and when it is there.

    `when`: `always` (every run that reached a server), `realtime` (paced in real time, so
    there was a listener), `audio` (a response sent audio), `transient` (only while a run
    goes), `thumbnails` (images sent), `payloads` (`--keep-payloads`), `sweep`, `eval` or
    `report` (written by that command into the bundle).
    """

    name: str
    when: When
    folder: bool = False

    def names(self, name: str) -> bool:
        """Whether this entry names a file or folder at the top of the bundle."""
        return fnmatch.fnmatchcase(name, self.name)

    def holds(self, name: str) -> bool:
        """Whether a file name belongs inside this folder entry."""
        if self.name == THUMBNAILS_DIR:
            return is_thumbnail_name(name) or is_sent_frame_name(name)  # older bundles' frames
        return self.name == SENT_FRAMES_DIR and is_sent_frame_name(name)


#: Every file and folder of a run bundle.
ENTRIES: Final = (
    Entry(TIMELINE_FILE, "always"),
    Entry(EVENTS_FILE, "always"),
    Entry(OUTPUT_FILE, "always"),
    Entry(TRANSCRIPT_FILE, "always"),
    Entry(SESSION_FILE, "always"),
    Entry(RESULT_FILE, "always"),
    Entry(HEARD_FILE, "realtime"),
    Entry(CONVERSATION_FILE, "realtime"),
    Entry(RESPONSE_WAV_GLOB, "audio"),
    Entry(SENT_FILE, "transient"),
    Entry(THUMBNAILS_DIR, "thumbnails", folder=True),
    Entry(INPUT_PCM_FILE, "payloads"),
    Entry(SENT_FRAMES_DIR, "payloads", folder=True),
    Entry(CONDITION_FILE, "sweep"),
    Entry(EVAL_ITEM_FILE, "eval"),
    Entry(REPORT_FILE, "report"),
)

#: The single files a run writes itself: a directory used again loses an earlier run's
#: (with its response WAVs, thumbnails and kept payloads), and nothing else.
BUNDLE_FILES: Final = tuple(
    e.name
    for e in ENTRIES
    if e.when in ("always", "realtime", "transient") and not e.folder and "*" not in e.name
)


def entry_of(relative: str) -> Entry | None:
    """The entry naming a bundle-relative POSIX path (a file inside a folder entry too)."""
    parts = PurePosixPath(relative).parts
    for entry in ENTRIES:
        if len(parts) == 1 and entry.names(parts[0]) and not entry.folder:
            return entry
        if len(parts) == 2 and entry.folder and entry.names(parts[0]) and entry.holds(parts[1]):
            return entry
    return None


@dataclass(frozen=True, slots=True)
class BundleLayout:
    """The paths of one run bundle's files, from its directory."""

    dir: Path

    @property
    def timeline(self) -> Path:
        """`input_timeline.json`."""
        return self.dir / TIMELINE_FILE

    @property
    def events(self) -> Path:
        """`events.jsonl`."""
        return self.dir / EVENTS_FILE

    @property
    def output(self) -> Path:
        """`output.wav`."""
        return self.dir / OUTPUT_FILE

    @property
    def transcript(self) -> Path:
        """`transcript.txt`."""
        return self.dir / TRANSCRIPT_FILE

    @property
    def session(self) -> Path:
        """`session.json`."""
        return self.dir / SESSION_FILE

    @property
    def result(self) -> Path:
        """`result.json`."""
        return self.dir / RESULT_FILE

    @property
    def heard(self) -> Path:
        """`heard.wav`."""
        return self.dir / HEARD_FILE

    @property
    def conversation(self) -> Path:
        """`conversation.wav`."""
        return self.dir / CONVERSATION_FILE

    @property
    def sent_input(self) -> Path:
        """`.sent_input.pcm`."""
        return self.dir / SENT_FILE

    @property
    def thumbnails(self) -> Path:
        """The `frames/` folder."""
        return self.dir / THUMBNAILS_DIR

    @property
    def input_pcm(self) -> Path:
        """`input.pcm`."""
        return self.dir / INPUT_PCM_FILE

    @property
    def sent_frames(self) -> Path:
        """The `sent_frames/` folder."""
        return self.dir / SENT_FRAMES_DIR

    @property
    def condition(self) -> Path:
        """`condition.json`."""
        return self.dir / CONDITION_FILE

    @property
    def eval_item(self) -> Path:
        """`eval_item.json`."""
        return self.dir / EVAL_ITEM_FILE

    @property
    def report(self) -> Path:
        """`report.html`."""
        return self.dir / REPORT_FILE

    def response_wav(self, number: int, response_id: str) -> Path:
        """The WAV of the `number`-th response (from 1) that sent audio."""
        return self.dir / response_wav_name(number, response_id)

    def response_wavs(self) -> list[Path]:
        """Every response's WAV in the bundle, in response order."""
        return sorted(self.dir.glob(RESPONSE_WAV_GLOB))

    def thumbnail(self, unit_index: int, position: int) -> Path:
        """The thumbnail of image `position` of the append closing `unit_index`."""
        return self.thumbnails / thumbnail_name(unit_index, position)

    def sent_frame(self, append_index: int, role: str) -> Path:
        """The full-size image an append sent (`--keep-payloads`)."""
        return self.sent_frames / sent_frame_name(append_index, role)

    def is_bundle(self) -> bool:
        """Whether the directory holds a run bundle (its input timeline)."""
        return self.timeline.is_file()

    def unnamed(self) -> list[str]:
        """The bundle-relative paths of files here that no entry names (sorted)."""
        found = (p.relative_to(self.dir).as_posix() for p in self.dir.rglob("*") if p.is_file())
        return sorted(rel for rel in found if entry_of(rel) is None)

    def missing(self, *when: When) -> list[str]:
        """The single-file entries of the given kinds that are not here."""
        named = [e.name for e in ENTRIES if e.when in when and not e.folder and "*" not in e.name]
        return [name for name in named if not (self.dir / name).is_file()]

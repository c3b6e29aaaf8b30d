"""Omni-DuplexEval datasets: the published splits' cases, read as eval items.

The published dataset (Hugging Face `Hothan/Omni-DuplexEval`) is one parquet file per split,
`[data/]<SPLIT>-00000-of-00001.parquet`, as vLLM-Omni 0.30.0's loader expects a local mirror
(`benchmarks/duplex/omni_duplex_eval_dataset.py`). Rows carry OpenBMB/Omni-DuplexEval's
fields (README "Dataset"): `id`, `question_text`, `answer1`, `answer2`, `reminder1`,
`reminder2`, `video_type`, `video_duration`, `video` and `question_audio` (Hugging Face media:
`{bytes, path}`, or a path). A case streams its video's frames with the question audio as its
soundtrack (vLLM-Omni's `mix=question`), padded with silence to the video's length.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Final

from duplex_client.eval.item import EvalItem, ItemSetError

__all__ = [
    "PR_SPLITS",
    "RTD_SPLITS",
    "family_of",
    "is_omni_duplexeval_dataset",
    "media_cache_dir",
    "read_omni_duplexeval_items",
]

#: The published splits: real-time description and proactive reminder (vLLM-Omni's lists).
RTD_SPLITS: Final = (
    "RTD_world_knowledge", "RTD_counting", "RTD_fine_grained_movement",
    "RTD_interaction_relation", "RTD_OCR", "RTD_Omni",
)  # fmt: skip
PR_SPLITS: Final = ("PR_correction", "PR_event_reminder", "PR_post_event_reminder")
#: `<SPLIT>-00000-of-00001.parquet`: the split is the name before the shard numbers.
_SHARD = re.compile(r"^(?P<split>.+?)-\d{5}-of-\d{5}\.parquet$")
_QUESTION_RATE: Final = 16000


def family_of(split: str) -> str:
    """`rtd` or `pr` (vLLM-Omni's `family_for_split`: by the split's prefix)."""
    return "rtd" if split.upper().startswith("RTD") else "pr"


def task_type_of(split: str) -> str | None:
    """A PR split's task (vLLM-Omni's `task_type_for_split`); None for RTD."""
    key = split.lower()
    if not key.startswith("pr"):
        return None
    if "correction" in key:
        return "correction"
    return "post_event_reminder" if "post_event" in key else "proactive_reminder"


def _shards(root: Path) -> list[tuple[str, Path]]:
    """`(split, parquet file)` of `root` or `root/data`, whose split is an RTD_/PR_ name."""
    out = []
    for folder in (root, root / "data"):
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.parquet")):
            match = _SHARD.match(path.name)
            split = match["split"] if match else path.stem
            if split.upper().startswith(("RTD", "PR")):
                out.append((split, path))
    return out


def is_omni_duplexeval_dataset(root: Path) -> bool:
    """Whether `root` (or `root/data`) holds RTD_*/PR_* parquet split files."""
    return root.is_dir() and bool(_shards(root))


def media_cache_dir() -> Path:
    """Where a case's inline video and question audio are written to be streamed
    (`$DUPLEX_CACHE_DIR`, else `$XDG_CACHE_HOME/duplex-client`, else `~/.cache/duplex-client`)."""
    base = os.environ.get("DUPLEX_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "duplex-client"
    )
    return Path(base) / "omni-duplexeval"


def _write_if_changed(path: Path, data: bytes) -> Path:
    from duplex_client.files import atomic_file

    if path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path, "wb") as fh:
        fh.write(data)
    return path


def _media(value: Any, root: Path, target: Path) -> Path:
    """A row's media as a file: inline bytes written to `target` (its suffix kept from the
    value's `path`), or the path it names (relative: to the dataset folder)."""
    if isinstance(value, str) and value:
        path = Path(value).expanduser()
        return path if path.is_absolute() else root / path
    if isinstance(value, dict):
        payload, name = value.get("bytes"), value.get("path")
        suffix = Path(str(name)).suffix.lower() if name else ""
        if isinstance(payload, bytes | bytearray) and payload:
            fixed = target.with_suffix(
                suffix if re.fullmatch(r"\.[a-z0-9]{1,7}", suffix) else target.suffix
            )
            return _write_if_changed(fixed, bytes(payload))
        if isinstance(name, str) and name:
            return _media(name, root, target)
    raise ValueError("no media (neither bytes nor a path)")


def _question_track(audio: Path, video_ms: float | None, target: Path) -> Path:
    """The question audio as 16 kHz mono WAV, padded with silence to the video's length."""
    import numpy as np

    from duplex_client.bundle.wavfile import write_wav
    from duplex_client.media.audio import open_audio

    source = open_audio(audio)  # 16 kHz mono PCM16 chunks (`DEFAULT_PCM`)
    samples = np.frombuffer(b"".join(source.chunks()), dtype="<i2")
    want = round((video_ms or 0.0) * _QUESTION_RATE / 1000)
    if len(samples) < want:
        samples = np.concatenate([samples, np.zeros(want - len(samples), dtype=np.int16)])
    target.parent.mkdir(parents=True, exist_ok=True)
    write_wav(target, samples, _QUESTION_RATE)
    return target


def _row_item(row: dict[str, Any], split: str, root: Path, cache: Path) -> EvalItem:
    from duplex_client.eval.heard import media_duration_ms
    from duplex_client.media.errors import MediaError

    split = str(row.get("split") or row.get("subset") or row.get("config") or split)
    case = str(row.get("id") if row.get("id") is not None else "")
    extra: dict[str, Any] = {
        "omni_duplexeval_split": split,
        "omni_duplexeval_id": case,
        "omni_duplexeval_family": family_of(split),
        "omni_duplexeval_task_type": task_type_of(split),
        "omni_duplexeval_video_duration": row.get("video_duration"),
    }
    name = f"{split}/{case}"
    if not case or "/" in case:
        return EvalItem(id=name or split, error=f"{split}: a row with id {case!r}", extra=extra)
    try:
        video = _media(row.get("video"), root, cache / split / f"{case}.mp4")
        audio = _media(row.get("question_audio"), root, cache / split / f"{case}_question.wav")
        if not video.is_file() or not audio.is_file():
            raise ValueError(f"{video if not video.is_file() else audio}: no such file")
        duration = row.get("video_duration")
        video_ms = float(duration) * 1000 if isinstance(duration, int | float) else None
        video_ms = video_ms or media_duration_ms(video)
        track = _question_track(audio, video_ms, cache / split / f"{case}_question_16k.wav")
    except (ValueError, OSError, RuntimeError, MediaError) as exc:
        return EvalItem(id=name, error=f"{split} {case}: {exc}", extra=extra)
    extra["omni_duplexeval_video"] = str(video)
    return EvalItem(id=name, input_video=str(video), input_audio=str(track), extra=extra)


def read_omni_duplexeval_items(root: Path, *, cache: Path | None = None) -> list[EvalItem]:
    """One item per row of every split file, splits sorted by name, rows in file order.

    Inline media is written under `cache` (default `media_cache_dir()`). A row whose media
    cannot be had becomes an item with `error` set. Needs pyarrow (the `benchmarks` extra).
    """
    shards = _shards(root) if root.is_dir() else []
    if not shards:
        raise ItemSetError(
            f"{root}: not an Omni-DuplexEval dataset (no [data/]<RTD_*|PR_*>-*.parquet files)",
            keywords=(),
        )
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ItemSetError(
            "reading Omni-DuplexEval's parquet files needs pyarrow: "
            "pip install 'duplex-client[benchmarks]'",
            keywords=(),
        ) from None
    cache = cache or media_cache_dir()
    items: list[EvalItem] = []
    for split, path in shards:
        try:
            rows = pq.read_table(path).to_pylist()
        except (OSError, ValueError) as exc:
            raise ItemSetError(
                f"{path}: not a readable parquet file ({exc})", keywords=()
            ) from None
        items += [_row_item(row, split, root, cache) for row in rows]
    return items

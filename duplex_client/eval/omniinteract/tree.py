"""OmniInteract dataset trees: find its videos and their annotations, and read them as items.

The layout is the one vLLM-Omni 0.30.0 discovers (`benchmarks/data_modules/
omniinteract_dataset.py`: `_data_dir`, `_mapping_cases`, `_one_to_many_cases`) and the
official runner walks (Lucky-Lance/OmniInteract `batch_inference_minicpmo.py`
`collect_all_videos`): `[data/]{1q1a,1q1a_math}/video_json_map.json` lists `entries` of
`{video, annotation, scene_type}` relative to the subset folder, and
`[data/]1qna/videos_bench/**.mp4` each have `1qna/annotations/<same path>.json`. The spoken
questions are in each video's own audio track, so a video is one item streamed as it is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Final

from duplex_client.eval.item import EvalItem, ItemSetError

__all__ = [
    "MAPPING_FILE",
    "SUBSETS",
    "OmniInteractCase",
    "is_omniinteract_tree",
    "output_name",
    "read_omniinteract_items",
]

#: The subsets, in the order upstream lists them (`OMNIINTERACT_SUBSETS`).
SUBSETS: Final = ("1q1a", "1q1a_math", "1qna")
MAPPING_FILE: Final = "video_json_map.json"
_BENCH: Final = "videos_bench"
_ANNOTATIONS: Final = "annotations"
#: An entry without `scene_type` is a multi-turn one (upstream's default).
_DEFAULT_SCENE: Final = "multi_turn"


@dataclass(frozen=True, slots=True)
class OmniInteractCase:
    """One video of the benchmark: its subset, path relative to the subset, annotation, scene."""

    subset: str
    video_rel: str
    video: Path
    annotation: Path
    scene_type: str


def data_dir(root: Path) -> Path | None:
    """The folder holding the subset folders: `root` or `root/data` (None: neither)."""
    for candidate in (root, root / "data"):
        if any(_is_subset(candidate / subset, subset) for subset in SUBSETS):
            return candidate
    return None


def _is_subset(folder: Path, subset: str) -> bool:
    if subset == "1qna":
        return (folder / _BENCH).is_dir() and (folder / _ANNOTATIONS).is_dir()
    return (folder / MAPPING_FILE).is_file()


def is_omniinteract_tree(root: Path) -> bool:
    """Whether `root` (or `root/data`) holds an OmniInteract subset folder."""
    return root.is_dir() and data_dir(root) is not None


def output_name(subset: str, video_rel: str) -> str:
    """`<subset>/<stem>`: the case's name in the official runner's outputs (and our item id).

    The video path relative to the subset, `videos_bench/` dropped for 1qna, without its
    suffix, `/` → `__` (`official_output_name` upstream).
    """
    rel = video_rel.replace("\\", "/")
    if subset == "1qna" and rel.startswith(f"{_BENCH}/"):
        rel = rel[len(_BENCH) + 1 :]
    return f"{subset}/{PurePosixPath(rel).with_suffix('').as_posix().replace('/', '__')}"


def _inside(root: Path, rel: str) -> Path | None:
    """`root/rel` if `rel` is a relative path that stays inside `root`, else None."""
    path = PurePosixPath(rel)
    if not rel or path.is_absolute() or ".." in path.parts:
        return None
    return root / path


def _mapping_cases(folder: Path, subset: str) -> list[OmniInteractCase | EvalItem]:
    where = folder / MAPPING_FILE
    try:
        doc = json.loads(where.read_text(encoding="utf-8"))
    except (OSError, UnicodeError, ValueError) as exc:
        raise ItemSetError(f"{where}: not readable JSON ({exc})", keywords=()) from None
    entries = doc.get("entries") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise ItemSetError(f"{where}: no `entries` list", keywords=())
    out: list[OmniInteractCase | EvalItem] = []
    for n, entry in enumerate(entries):
        row: dict[str, Any] = entry if isinstance(entry, dict) else {}
        video_rel, ann_rel = str(row.get("video") or ""), str(row.get("annotation") or "")
        name = output_name(subset, video_rel) if video_rel else f"{subset}/entries[{n}]"
        video, annotation = _inside(folder, video_rel), _inside(folder, ann_rel)
        problem = None
        if video is None or annotation is None:
            problem = f"entries[{n}]: video and annotation must be relative paths inside {folder}"
        elif not video.is_file() or not annotation.is_file():
            missing = video if not video.is_file() else annotation
            problem = f"entries[{n}]: {missing}: no such file"
        if problem is not None or video is None or annotation is None:
            out.append(_failed(name, subset, video_rel, f"{where}: {problem}"))
            continue
        scene = str(row.get("scene_type") or _DEFAULT_SCENE).lower()
        out.append(OmniInteractCase(subset, video_rel, video, annotation, scene))
    return out


def _one_to_many_cases(folder: Path) -> list[OmniInteractCase | EvalItem]:
    bench, annotations = folder / _BENCH, folder / _ANNOTATIONS
    out: list[OmniInteractCase | EvalItem] = []
    for video in sorted(bench.rglob("*.mp4")):
        rel = video.relative_to(bench).as_posix()
        annotation = annotations / PurePosixPath(rel).with_suffix(".json")
        video_rel = f"{_BENCH}/{rel}"
        if not annotation.is_file():
            name = output_name("1qna", video_rel)
            out.append(_failed(name, "1qna", video_rel, f"{annotation}: no such file"))
            continue
        out.append(OmniInteractCase("1qna", video_rel, video, annotation, "1qna"))
    return out


def _failed(name: str, subset: str, video_rel: str, error: str) -> EvalItem:
    return EvalItem(
        id=name,
        error=error,
        extra={"omniinteract_subset": subset, "omniinteract_video": video_rel},
    )


def case_item(case: OmniInteractCase) -> EvalItem:
    """The eval item of a case: its video, with the case carried in summary columns."""
    return EvalItem(
        id=output_name(case.subset, case.video_rel),
        input_video=str(case.video),
        extra={
            "omniinteract_subset": case.subset,
            "omniinteract_video": case.video_rel,
            "omniinteract_annotation": str(case.annotation),
            "omniinteract_scene_type": case.scene_type,
        },
    )


def read_omniinteract_items(root: Path) -> list[EvalItem]:
    """One item per video of every subset present, subsets in `SUBSETS` order, then as listed
    (1q1a, 1q1a_math: the mapping's order; 1qna: sorted by path).

    A mapping entry or video whose files are missing (or whose paths leave the subset
    folder) becomes an item with `error` set; an unreadable mapping stops the set.
    """
    base = data_dir(root.resolve()) if root.is_dir() else None
    if base is None:
        raise ItemSetError(
            f"{root}: not an OmniInteract tree (no [data/]{{1q1a,1q1a_math}}/{MAPPING_FILE} "
            f"or [data/]1qna/{_BENCH})",
            keywords=(),
        )
    items: list[EvalItem] = []
    for subset in SUBSETS:
        folder = base / subset
        if not _is_subset(folder, subset):
            continue
        found = _one_to_many_cases(folder) if subset == "1qna" else _mapping_cases(folder, subset)
        items += [c if isinstance(c, EvalItem) else case_item(c) for c in found]
    return items

"""OmniInteract trees: detection, the official case names, and entries that cannot run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from duplex_client.eval.items import ItemSetError, load_items
from duplex_client.eval.omniinteract import (
    is_omniinteract_tree,
    output_name,
    read_omniinteract_items,
)


def _touch(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _map(folder: Path, entries: list[dict[str, Any]]) -> None:
    _touch(folder / "video_json_map.json", json.dumps({"entries": entries}))


def _tree(root: Path) -> Path:
    data = root / "data"
    for name in ("0002", "0001"):
        _touch(data / "1q1a" / "videos" / f"{name}.mp4")
        _touch(data / "1q1a" / "annotations" / f"{name}.json", "{}")
    _map(
        data / "1q1a",
        [
            {
                "video": "videos/0002.mp4",
                "annotation": "annotations/0002.json",
                "scene_type": "Nested",
            },
            {"video": "videos/0001.mp4", "annotation": "annotations/0001.json"},
            {"video": "videos/0003.mp4", "annotation": "annotations/0001.json"},
            {"video": "../outside.mp4", "annotation": "annotations/0001.json"},
        ],
    )
    _touch(data / "1qna" / "videos_bench" / "cook" / "a.mp4")
    _touch(data / "1qna" / "annotations" / "cook" / "a.json", "{}")
    _touch(data / "1qna" / "videos_bench" / "cook" / "b.mp4")  # no annotation
    return root


def test_detected_at_the_root_or_its_data_folder_and_forced_by_layout(tmp_path: Path) -> None:
    root = _tree(tmp_path / "OmniInteract")
    assert is_omniinteract_tree(root) and is_omniinteract_tree(root / "data")
    assert not is_omniinteract_tree(root / "data" / "1q1a")
    assert load_items(root) == load_items(root, layout="omniinteract")
    with pytest.raises(ItemSetError, match="not an OmniInteract tree"):
        load_items(root / "data" / "1q1a", layout="omniinteract")


def test_items_follow_the_mapping_then_1qna_sorted_with_official_names(tmp_path: Path) -> None:
    root = _tree(tmp_path / "OmniInteract")
    items = read_omniinteract_items(root)
    assert [i.id for i in items] == [
        "1q1a/videos__0002",
        "1q1a/videos__0001",
        "1q1a/videos__0003",
        "1q1a/..__outside",
        "1qna/cook__a",
        "1qna/cook__b",
    ]
    first, second, missing, outside, qna, unannotated = items
    assert first.input_video == str((root / "data/1q1a/videos/0002.mp4").resolve())
    assert first.extra["omniinteract_scene_type"] == "nested"
    assert second.extra["omniinteract_scene_type"] == "multi_turn"  # upstream's default
    assert missing.error is not None and "0003.mp4: no such file" in missing.error
    assert outside.error is not None and "relative paths inside" in outside.error
    assert qna.extra == {
        "omniinteract_subset": "1qna",
        "omniinteract_video": "videos_bench/cook/a.mp4",
        "omniinteract_annotation": str((root / "data/1qna/annotations/cook/a.json").resolve()),
        "omniinteract_scene_type": "1qna",
    }
    assert unannotated.error is not None and "b.json: no such file" in unannotated.error


def test_output_names_match_the_official_runner() -> None:
    assert output_name("1q1a_math", "videos/sub/0001.mp4") == "1q1a_math/videos__sub__0001"
    assert output_name("1qna", "videos_bench/ds/x.mp4") == "1qna/ds__x"


def test_an_unreadable_mapping_stops_the_set(tmp_path: Path) -> None:
    _touch(tmp_path / "1q1a" / "video_json_map.json", "{not json")
    with pytest.raises(ItemSetError, match=r"video_json_map\.json: not readable JSON"):
        read_omniinteract_items(tmp_path)

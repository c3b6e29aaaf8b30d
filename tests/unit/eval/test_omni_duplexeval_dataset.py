"""Omni-DuplexEval datasets: detection by split file names, rows as items, rows that cannot run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from duplex_client.eval.items import ItemSetError, load_items
from duplex_client.eval.omni_duplexeval import (
    is_omni_duplexeval_dataset,
    read_omni_duplexeval_items,
)

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _split(folder: Path, name: str, rows: list[dict[str, object]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / f"{name}-00000-of-00001.parquet")


def test_detected_by_rtd_and_pr_split_files_at_the_root_or_in_data(tmp_path: Path) -> None:
    _split(tmp_path / "ds" / "data", "RTD_counting", [{"id": "a"}])
    assert is_omni_duplexeval_dataset(tmp_path / "ds")
    assert is_omni_duplexeval_dataset(tmp_path / "ds" / "data")
    _split(tmp_path / "other", "train", [{"id": "a"}])
    assert not is_omni_duplexeval_dataset(tmp_path / "other")
    with pytest.raises(ItemSetError, match="not an Omni-DuplexEval dataset"):
        load_items(tmp_path / "other", layout="omni-duplexeval")


def test_rows_without_media_fail_alone_with_the_split_and_id(tmp_path: Path) -> None:
    _split(tmp_path / "ds", "PR_correction", [
        {"id": "c1", "video": "missing.mp4", "question_audio": "missing.wav"},
        {"id": None, "video": "x.mp4", "question_audio": "y.wav"},
    ])  # fmt: skip
    _split(tmp_path / "ds", "PR_event_reminder", [
        {"id": "c2", "video": {"bytes": None, "path": None}, "question_audio": None},
    ])  # fmt: skip
    c1, no_id, c2 = read_omni_duplexeval_items(tmp_path / "ds", cache=tmp_path / "cache")
    assert c1.id == "PR_correction/c1" and c1.error is not None and "no such file" in c1.error
    assert c1.extra["omni_duplexeval_task_type"] == "correction"
    assert c1.extra["omni_duplexeval_family"] == "pr"
    assert c2.error is not None and "no media" in c2.error
    assert no_id.error is not None and "a row with id" in no_id.error
    assert json.dumps(c1.extra)  # summary columns stay JSON

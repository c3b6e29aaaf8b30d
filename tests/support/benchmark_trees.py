"""Small benchmark trees for the eval tests: OmniInteract and Omni-DuplexEval layouts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.media_files import write_clip

#: Every generated video's length (s).
VIDEO_S = 3.0


def _json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj), encoding="utf-8")


def omniinteract_tree(root: Path) -> Path:
    """A 1q1a case and a 1qna case under `root/data`, 3 s clips with a tone."""
    data = root / "data"
    for video in (
        data / "1q1a" / "videos" / "0001.mp4",
        data / "1qna" / "videos_bench" / "ego" / "0002.mp4",
    ):
        video.parent.mkdir(parents=True)
        write_clip(video, video_seconds=VIDEO_S, fps=5, audio_seconds=VIDEO_S, tone_hz=440.0)
    qa = {"items": [{"question_time": 0.5, "answer_time": 1.5, "question_text": "colour?",
                     "answer_text": "red", "question_type": "realtime"}]}  # fmt: skip
    _json(data / "1q1a" / "annotations" / "0001.json", qa)
    _json(
        data / "1q1a" / "video_json_map.json",
        {"entries": [{"video": "videos/0001.mp4", "annotation": "annotations/0001.json",
                      "scene_type": "multi_turn"}]},
    )  # fmt: skip
    answers = [{"answer_time": 2.0, "answer_text": "red"}]
    steps = {"question_time": 0.5, "question_text": "tell me", "answers": answers}
    _json(data / "1qna" / "annotations" / "ego" / "0002.json", steps)
    return root


def omni_duplexeval_dataset(root: Path) -> Path:
    """`root/data/RTD_OCR-…parquet` (a case with inline video and question audio) and
    `root/data/PR_event_reminder-…parquet` (a case naming its files by relative path)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.support.media_files import write_audio_file

    media = root / "media"
    media.mkdir(parents=True)
    video = write_clip(media / "v.mp4", video_seconds=VIDEO_S, fps=5, audio_seconds=VIDEO_S)
    question = write_audio_file(media / "q.wav", 0.8, 16000, 300.0)
    common = {"question_text": "Describe it.", "answer1": "red", "answer2": "a red card",
              "reminder1": None, "reminder2": None, "video_type": "synthetic",
              "video_duration": VIDEO_S}  # fmt: skip
    inline = {
        **common,
        "id": "ocr_1",
        "video": {"bytes": video.read_bytes(), "path": "ocr_1.mp4"},
        "question_audio": {"bytes": question.read_bytes(), "path": "ocr_1.wav"},
    }
    named = {**common, "id": "pr_1", "reminder1": 2.0, "video": "media/v.mp4",
             "question_audio": "media/q.wav"}  # fmt: skip
    data = root / "data"
    data.mkdir()
    pq.write_table(pa.Table.from_pylist([inline]), data / "RTD_OCR-00000-of-00001.parquet")
    pq.write_table(pa.Table.from_pylist([named]), data / "PR_event_reminder-00000-of-00001.parquet")
    return root

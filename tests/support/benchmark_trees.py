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

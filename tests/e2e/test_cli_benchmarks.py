"""`duplex-cli eval` on the omni benchmarks' layouts: one CLI run per layout, in and out."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.eval_support import eval_cli, rows, servers, write_script
from tests.e2e.helpers import CLI, ENV
from tests.support.benchmark_trees import omni_duplexeval_dataset, omniinteract_tree


def test_an_omniinteract_tree_runs_and_exports_the_runner_contract(tmp_path: Path) -> None:
    tree = omniinteract_tree(tmp_path / "OmniInteract")
    out = tmp_path / "eval"
    with servers(write_script(tmp_path / "script.json")) as (server,):
        done = eval_cli(
            str(tree / "data"), "--output-dir", str(out), "--url", server.url,
            "--layout", "omniinteract", "--export", "omniinteract",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [r["id"] for r in rows(out)] == ["1q1a/videos__0001", "1qna/ego__0002"]
    (model_dir,) = (out / "omniinteract").iterdir()  # outputs/<model>/
    assert model_dir.name == "MiniCPM-o-4_5"
    summary = json.loads((model_dir / "batch_summary.json").read_text(encoding="utf-8"))
    assert summary["success"] == 2
    case = model_dir / "1qna" / "ego__0002"
    transcript = json.loads((case / "wav_transcript.json").read_text(encoding="utf-8"))
    assert transcript["text"] == "an answer" and (case / ".done").is_file()


def test_an_omni_duplexeval_dataset_runs_and_exports_timed_sentences(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    dataset = omni_duplexeval_dataset(tmp_path / "Omni-DuplexEval")
    out = tmp_path / "eval"
    env = {**ENV, "DUPLEX_CACHE_DIR": str(tmp_path / "cache")}
    with servers(write_script(tmp_path / "script.json")) as (server,):
        done = subprocess.run(
            [CLI, "eval", str(dataset), "--output-dir", str(out), "--url", server.url,
             "--layout", "omni-duplexeval", "--export", "omni-duplexeval"],
            capture_output=True, text=True, env=env, timeout=240,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [r["id"] for r in rows(out)] == ["PR_event_reminder/pr_1", "RTD_OCR/ocr_1"]
    sentences = json.loads((out / "omni-duplexeval" / "RTD_OCR" / "ocr_1.json").read_text())
    assert [s["sentence"] for s in sentences] == ["an answer"]
    assert (tmp_path / "cache" / "omni-duplexeval" / "RTD_OCR" / "ocr_1.mp4").is_file()

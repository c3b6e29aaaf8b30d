"""`duplex-cli eval` on the omni benchmarks' layouts: one CLI run per layout, in and out."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.eval_support import eval_cli, rows, servers, write_script
from tests.support.benchmark_trees import omniinteract_tree


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

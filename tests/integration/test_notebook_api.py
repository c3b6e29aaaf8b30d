"""The notebook API as a notebook uses it: blocking forms inside a running event loop (a
Jupyter cell), the blocking client shaped like the async one, and bundles reopened."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from duplex_client.bundle.reader import BundleError
from duplex_client.eval.api import EvalResult, run_eval
from duplex_client.replay.bundle_replay import replay_bundle_blocking
from duplex_client.run.result import RunResult
from duplex_client.run.stream import stream_clip_blocking
from tests.integration.live.helpers import tone_pcm, write_wav


@pytest.fixture(scope="module")
def wav(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_wav(tmp_path_factory.mktemp("media") / "q.wav", tone_pcm(1500))


async def test_the_blocking_forms_run_inside_a_running_event_loop(
    wav: Path, tmp_path: Path
) -> None:
    """As in a Jupyter cell: `asyncio.run()` cannot be called here, the blocking forms can."""
    asyncio.get_running_loop()  # the cell's loop
    result = stream_clip_blocking(
        None, input_audio=str(wav), keep_payloads=True, output_dir=tmp_path / "a"
    )
    assert result.ok, result.error
    replayed = replay_bundle_blocking(tmp_path / "a", None, output_dir=tmp_path / "b")
    assert replayed.ok, replayed.error
    clips = tmp_path / "clips"
    clips.mkdir()
    (clips / "one.wav").write_bytes(wav.read_bytes())
    evaluated = run_eval(clips, output_dir=tmp_path / "eval", realtime=False)
    assert evaluated.exit_code == 0 and [r.id for r in evaluated.items] == ["one.wav"]
    reopen_the_bundle_and_the_eval(result, tmp_path / "a", evaluated, tmp_path / "eval")


def reopen_the_bundle_and_the_eval(
    result: RunResult, bundle: Path, evaluated: EvalResult, eval_dir: Path
) -> None:
    """`RunResult.load` / `EvalResult.load` give back what the run and the eval returned."""
    moved = bundle.with_name("moved")
    shutil.copytree(bundle, moved)  # a bundle reopened where it is now
    loaded = RunResult.load(moved)
    assert loaded.bundle_dir == moved and loaded.timeline == result.timeline
    expected = json.loads(json.dumps(result.to_dict()))
    assert loaded.to_dict() == {**expected, "bundle_dir": str(moved)}
    assert loaded.turns == result.turns and loaded.transcript == result.transcript
    assert (loaded.heard == result.heard).all() and len(loaded.audio) == len(result.audio)
    again = EvalResult.load(eval_dir)
    assert again.summary == evaluated.summary and again.exit_code == evaluated.exit_code
    assert again.rows == json.loads(json.dumps(evaluated.rows))
    assert [r.result for r in again.items] == [r.result for r in evaluated.items]
    assert list(again.frame()["id"]) == ["one.wav"]
    with pytest.raises(BundleError, match="not a run bundle"):
        RunResult.load(eval_dir)
    with pytest.raises(BundleError, match=r"no summary\.jsonl"):
        EvalResult.load(bundle)


def test_a_bad_option_still_raises_from_the_worker_thread(wav: Path, tmp_path: Path) -> None:
    async def cell() -> None:
        from duplex_client.usage import UsageError

        with pytest.raises(UsageError, match="chunk_ms must be positive"):
            stream_clip_blocking(None, input_audio=str(wav), chunk_ms=0)

    asyncio.run(cell())

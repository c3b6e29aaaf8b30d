"""The run layer's move changed no record: stream, replay and live bundles against golden ones.

The golden digests (`tests/data/golden/`) were recorded by the code before the move (c1c145a)
with `python -m tests.support.golden`; the same scenarios run now must give the same files
with the same deterministic content (times and ids aside: `tests.support.golden`). Changes
since, on purpose, all from issue #29 (vLLM-Omni 0.30.0's shapes): the MiniCPM-o preset's
`extra_body` lost `native_duplex` (PR #7413); the session's capabilities state
`supports_image_input`, `supports_text_only_turn`, `supports_turn_commit_only`,
`supports_concurrent_turn_requests` and `supports_chat_completions` (point 11); a finished
spoken response ends with `status_details {type: completed, reason: stop}` (so its decision
row's `reason` is `stop`), its item's `output_audio` part carries `audio_duration_ms` and
`audio_text_marks`, and its audio deltas a `vllm_omni` record (point 10). Nothing else.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import CLI, ENV
from tests.support.golden import SCENARIOS, run_scenarios

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"
#: What the one run layer adds on purpose, by scenario: a live run now writes the thumbnails
#: of the frames it sent, as every run does (`thumbnails=True`).
ADDED = {"live": ("frames/",)}
#: Fields added on purpose since, by file: (container path, keys). Issue 32: what became of
#: each input (written to a socket, confirmed by the server) and failed reconnects apart.
ADDED_FIELDS: dict[str, list[tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "input_timeline.json": [
        (("totals",), ("written", "written_audio_ms", "acknowledged")),
        (("appends", "*"), ("written",)),
        (("commits", "*"), ("written",)),
    ],
    "result.json": [
        (("counts",), ("appends_written", "audio_ms_written", "appends_acknowledged")),
        (("counts",), ("reconnects_failed",)),
        ((), ("dialect",)),  # issue 33: the wire the endpoint spoke
        ((), ("timing_valid", "timing_reason")),  # issue 31: whether timing was kept, why not
    ],
    "session.json": [((), ("dialect",))],
}


def _without_added(name: str, doc: Any) -> Any:
    """`doc` without the fields added on purpose (each must be there: nothing hides)."""
    for path, keys in ADDED_FIELDS.get(name, []):
        containers: list[Any] = [doc]
        for step in path:
            containers = [
                item
                for c in containers
                for item in (c if step == "*" else [c.get(step)])
                if isinstance(item, dict | list)
            ]
        assert containers or "*" in path, f"{name}: {path} is missing"
        for container in containers:
            for key in keys:
                assert key in container, f"{name}: the added {key!r} is missing"
                del container[key]
    return doc


@pytest.fixture(scope="module")
def digests(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_scenarios(tmp_path_factory.mktemp("golden"), CLI, ENV)


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_bundle_matches_the_golden_one_file_by_file(digests: dict[str, Any], scenario: str) -> None:
    golden = json.loads((GOLDEN / f"{scenario}.json").read_text())
    added = ADDED.get(scenario)
    now = {k: v for k, v in digests[scenario].items() if not (added and k.startswith(added))}
    assert not added or len(now) < len(digests[scenario]), "the intended addition is missing"
    assert sorted(now) == sorted(golden), "the bundle's files differ"
    for name in golden:
        assert _without_added(name, now[name]) == golden[name], f"{scenario}: {name} differs"

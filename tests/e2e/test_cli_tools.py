"""`duplex-cli stream --tools ... --tool-result ...`: a function call round trip, and bad input."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from duplex_client.server import ReferenceServer
from duplex_client.server.engine.script import Script
from tests.e2e.eval_support import eval_cli
from tests.e2e.helpers import events, load, run_cli
from tests.support.media_files import write_audio_file

TOOLS = [
    {"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {}}},
    {"type": "function", "name": "get_weather"},
]
CALL = Script.from_dict(
    {
        "rules": [
            {"on": "commit", "index": 0, "do": "call", "name": "get_time", "call_id": "call_t"},
        ]
    }
)


@pytest.fixture
def tools_json(tmp_path: Path) -> Path:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(TOOLS))
    return path


@pytest.fixture
def wav(tmp_path: Path) -> Path:
    return write_audio_file(tmp_path / "in.wav", seconds=1.0, rate=16000, hz=440.0)


async def test_stream_tool_round_trip_lands_in_the_bundle(
    tools_json: Path, wav: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    async with ReferenceServer(engine="scripted", tools=True, script=CALL) as server:
        done = await run_cli(
            "--url", server.url, "--input-audio", str(wav), "--output-dir", str(run), "--json",
            "--preset", "none",  # the minicpmo preset's model calls no functions (issue 32)
            "--tools", str(tools_json), "--tool-result", 'get_time={"time": "12:00"}',
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = load(run, "result.json")
    assert load(run, "session.json")["config_sent"]["tools"] == TOOLS
    (call,) = result["function_calls"]
    assert call["name"] == "get_time" and call["call_id"] == "call_t"
    assert call["answered_by"] == "handler" and call["output"] == '{"time": "12:00"}'
    kinds = [t["kind"] for t in result["turns"]]
    assert kinds == ["function_call", "response"], result["turns"]
    row, answer = result["turns"]
    assert row["function_call"]["call_id"] == "call_t" and row["heard_ms"] == 0.0
    assert row["transcript"] == 'get_time({}) -> {"time": "12:00"}'
    assert row["decided_ms"] is not None and row["decided_ms"] <= answer["decided_ms"]
    assert answer["transcript"] == 'The get_time function returned {"time": "12:00"}.'
    assert answer["heard_ms"] > 0
    types = [e["type"] for e in events(run)]
    assert "response.function_call_arguments.done" in types
    outputs = [
        e["event"]["item"]
        for e in events(run)
        if e["type"] == "conversation.item.added"
        and e["event"]["item"].get("type") == "function_call_output"
    ]
    assert outputs and outputs[0]["output"] == '{"time": "12:00"}'
    transcript = (run / "transcript.txt").read_text().splitlines()
    assert any("function_call (completed)" in line and '-> {"time"' in line for line in transcript)
    assert any(line.endswith('returned {"time": "12:00"}.') for line in transcript)


@pytest.mark.parametrize(
    ("content", "extra", "says"),
    [
        (None, [], "cannot read"),
        ("{not json", [], "is not JSON"),
        (json.dumps([TOOLS[0], TOOLS[0]]), [], "'get_time' is declared twice"),
        (json.dumps([]), [], "non-empty JSON list"),
        (json.dumps(TOOLS), ["--tool-result", "get_time"], "is not NAME=JSON"),
        (json.dumps(TOOLS), ["--tool-result", "get_time={bad"], "is not JSON"),
        (json.dumps(TOOLS), ["--tool-result", "launch=1"], "'launch' is not a declared tool"),
    ],
)
async def test_bad_tools_input_is_one_line_exit_2(
    tmp_path: Path, wav: Path, content: str | None, extra: list[str], says: str
) -> None:
    path = tmp_path / "tools.json"
    if content is not None:
        path.write_text(content)
    done = await run_cli(
        "--input-audio", str(wav), "--output-dir", str(tmp_path / "run"), "--preset", "none",
        "--tools", str(path), *extra,
    )  # fmt: skip
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and says in lines[0], done.stderr
    flag = "--tool-result" if extra else "--tools"
    assert flag in lines[0]


async def test_eval_declares_the_tools_for_every_item_and_answers_their_calls(
    tools_json: Path, tmp_path: Path
) -> None:
    clips = tmp_path / "clips"
    clips.mkdir()
    for name in ("a.wav", "b.wav"):
        write_audio_file(clips / name, seconds=1.0, rate=16000, hz=440.0)
    out = tmp_path / "eval"
    async with ReferenceServer(engine="scripted", tools=True, script=CALL) as server:
        done = await asyncio.to_thread(
            eval_cli,
            str(clips), "--url", server.url, "--output-dir", str(out), "-q", "--preset", "none",
            "--tools", str(tools_json), "--tool-result", 'get_time={"time": "12:00"}',
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (out / "summary.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == ["a.wav", "b.wav"] and all(r["ok"] for r in rows)
    for row in rows:
        result = load(out / row["bundle"], "result.json")
        (call,) = result["function_calls"]
        assert call["name"] == "get_time" and call["output"] == '{"time": "12:00"}'
        assert [t["kind"] for t in result["turns"]] == ["function_call", "response"]
        assert row["transcript"] == 'The get_time function returned {"time": "12:00"}.'

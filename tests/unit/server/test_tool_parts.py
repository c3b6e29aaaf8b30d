"""Sans-I/O parts of function calling: the get_time intent, scripted calls, the ledger."""

from __future__ import annotations

import pytest

from duplex_client.server.engine.base import CallTool, Listen, Speak, ToolCallView
from duplex_client.server.engine.script import Script, ScriptedEngine, ScriptError
from duplex_client.server.engine.tool_intents import (
    asks_time,
    follow_up,
    spoken_output,
    with_tool_call,
)
from duplex_client.server.errors import Reject
from duplex_client.server.tool_ledger import CallRecord, ToolLedger


@pytest.mark.parametrize(
    ("words", "asks"),
    [
        ("what time is it", True),
        ("what is the time", True),
        ("tell me the time", True),
        ("What TIME is it please", True),
        ("time", False),
        ("tell me what color you see", False),
        ("is it red or green", False),
        ("", False),
    ],
)
def test_the_time_intent_on_transcribed_words(words: str, asks: bool) -> None:
    assert asks_time(words) is asks
    answer = Speak(text="You said: x.")
    decision = with_tool_call([words], answer)
    if asks:
        assert decision == CallTool(name="get_time", arguments="{}", fallback=answer)
    else:
        assert decision is answer


def test_a_failure_is_never_turned_into_a_call() -> None:
    from duplex_client.server.engine.base import Fail

    fail = Fail(code="engine_error")
    assert with_tool_call(["what time is it"], fail) is fail


def test_follow_up_speaks_the_output() -> None:
    def view(name: str, output: str) -> ToolCallView:
        return ToolCallView(name=name, call_id="c", arguments="{}", output=output, index=0)

    assert follow_up(view("get_time", '{"time": "noon"}')) == Speak(text="It is noon.")
    assert follow_up(view("get_time", '"12:00"')) == Speak(text="It is 12:00.")
    assert follow_up(view("get_time", "ten to two")) == Speak(text="It is ten to two.")
    assert follow_up(view("add", "[1, 2]")) == Speak(text="The add function returned 1, 2.")
    assert spoken_output("  plain ") == "plain"


def test_script_call_actions() -> None:
    script = Script.from_dict(
        {
            "rules": [
                {"on": "commit", "index": 0, "do": "call", "name": "f", "arguments": {"a": 1}},
                {"on": "unit", "index": 2, "do": "call", "name": "g", "arguments": "{}"},
                {"on": "function_call_output", "index": 1, "do": "listen"},
                {"on": "function_call_output", "do": "speak", "text": "done"},
            ]
        }
    )
    engine = ScriptedEngine(script)
    (commit, unit) = (script.rules[0].action, script.rules[1].action)
    assert commit == CallTool(name="f", arguments='{"a":1}')
    assert unit == CallTool(name="g", arguments="{}")
    first = ToolCallView(name="f", call_id="c", arguments="{}", output="x", index=0)
    second = ToolCallView(name="f", call_id="d", arguments="{}", output="x", index=1)
    assert engine.answer_function_output(first) == Speak(text="done")
    assert engine.answer_function_output(second) == Listen()
    auto = ScriptedEngine(Script()).answer_function_output(first)
    assert auto == Speak(text="The f function returned x.")


@pytest.mark.parametrize(
    ("rule", "says"),
    [
        ({"on": "commit", "do": "call"}, "name must be the function's name"),
        ({"on": "commit", "do": "call", "name": "f", "call_id": 3}, "call_id must be a string"),
        ({"on": "commit", "do": "call", "name": "f", "malformed": "yes"}, "malformed"),
        ({"on": "function_call_output", "do": "call", "name": "f"}, "speaks, listens"),
        ({"on": "commit", "do": "dance"}, "speak, listen, fail, call or auto"),
    ],
)
def test_bad_script_calls(rule: dict[str, object], says: str) -> None:
    with pytest.raises(ScriptError, match=says):
        Script.from_dict({"rules": [rule]})


def test_ledger_accepts_each_output_once() -> None:
    ledger = ToolLedger()
    ledger.open(CallRecord(call_id="c1", name="f", arguments="{}", response_id="r"))
    with pytest.raises(Reject) as unknown:
        ledger.accept("c2")
    assert unknown.value.code == "unknown_function_call"
    assert ledger.accept("c1").name == "f"
    with pytest.raises(Reject) as again:
        ledger.accept("c1")
    assert again.value.code == "duplicate_function_output"


def test_a_profile_advertises_the_tools_it_calls() -> None:
    from dataclasses import replace

    from duplex_client.server.limits import Limits
    from duplex_client.server.profiles import get_profile

    plain = get_profile("minicpmo")
    assert not plain.supports_tools
    assert plain.capabilities(Limits()).raw["supports_tools"] is False
    assert get_profile("nemotron").capabilities(Limits()).raw["supports_tools"] is True
    assert replace(plain, supports_tools=True).capabilities(Limits()).raw["supports_tools"] is True

"""Turn modes from the page: the buttons follow the preset's family, push-to-talk and server
VAD against the joyai profile with the speech engine (it hears the page's fake microphone)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from duplex_client.run.options import RunOptions
from duplex_client.server.config import speech_available
from tests.integration.web.conftest import reference
from tests.support.web import LoopThread, chromium_with, fake_device_args, open_web, serving

needs_speech = pytest.mark.skipif(not speech_available(), reason="needs the server extra")
PLAYED = "() => Object.values(window.duplexPage.stats.played).some(n => n >= 4800)"


@pytest.fixture(scope="module")
def browser(fake_files: tuple[Path, Any, Path]) -> Iterator[Any]:
    wav, _, y4m = fake_files
    with chromium_with(fake_device_args(wav, y4m)) as b:
        yield b


def shown_modes(page: Any, *, ready: bool = True) -> list[str]:
    if ready:
        page.wait_for_selector("#start:not([disabled])")
    found: list[str] = page.eval_on_selector_all(
        "input[name=mode]", "els => els.filter(e => !e.closest('label').hidden).map(e => e.value)"
    )
    return found


@pytest.mark.parametrize(
    ("preset", "modes"),
    [("minicpmo", ["model", "vad", "ptt"]), ("joyai", ["vad", "ptt"]), ("nemotron", ["model"])],
)
def test_the_mode_buttons_follow_the_family(
    browser: Any, loop: LoopThread, preset: str, modes: list[str]
) -> None:
    with (
        serving(loop, "ws://127.0.0.1:9", options=RunOptions(preset=preset)) as web,
        open_web(browser, web.url) as page,
    ):
        assert shown_modes(page.page) == modes


@needs_speech
def test_push_to_talk_commits_the_hold_and_the_answer_plays(
    browser: Any, loop: LoopThread, tmp_path: Path
) -> None:
    options = RunOptions(preset="joyai")
    with (
        reference(loop, profile="joyai", engine="speech") as server,
        serving(loop, server.url, options=options, output_dir=tmp_path) as web,
        open_web(browser, web.url) as page,
    ):
        page.start(mode="ptt")
        page.page.hover("#ptt")
        page.page.mouse.down()
        page.page.wait_for_timeout(3000)
        page.page.mouse.up()
        page.wait(PLAYED, timeout_s=45)
        assert page.stop() == "stopped"
        bundle = web.app.bundles[1]
    timeline = json.loads((bundle / "input_timeline.json").read_text())
    assert len(timeline["commits"]) == 1
    result = json.loads((bundle / "result.json").read_text())
    assert result["ok"], result["error"]
    assert any(t["heard_ms"] > 0 for t in result["turns"])
    assert json.loads((bundle / "session.json").read_text())["input"]["mode"] == "ptt"


@needs_speech
def test_server_vad_commits_at_the_end_of_speech_and_the_answer_plays(
    browser: Any, loop: LoopThread, tmp_path: Path
) -> None:
    options = RunOptions(preset="joyai")
    with (
        reference(loop, profile="joyai", engine="speech") as server,
        serving(loop, server.url, options=options, output_dir=tmp_path) as web,
        open_web(browser, web.url) as page,
    ):
        page.start(mode="vad")
        page.wait(PLAYED, timeout_s=45)
        assert page.stop() == "stopped"
        bundle = web.app.bundles[1]
    timeline = json.loads((bundle / "input_timeline.json").read_text())
    assert timeline.get("server_commits") and not timeline["commits"]
    result = json.loads((bundle / "result.json").read_text())
    assert result["ok"], result["error"]
    heard = [t for t in result["turns"] if t["heard_ms"] > 0]
    assert heard and heard[0]["transcript"]


def test_a_session_that_takes_no_commits_leaves_only_model_turns(
    browser: Any, loop: LoopThread, tmp_path: Path
) -> None:
    # `auto` offers every mode; a Nemotron-style server (a continuous stream) takes no commits
    with (
        reference(loop, profile="nemotron", engine="scripted") as server,
        serving(loop, server.url, output_dir=tmp_path) as web,
        open_web(browser, web.url) as page,
    ):
        assert shown_modes(page.page) == ["model", "vad", "ptt"]
        page.page.select_option("#camera-select", "none")
        page.start(mode="model")
        page.wait("() => document.querySelector('#mode-ptt').closest('label').hidden")
        assert shown_modes(page.page, ready=False) == ["model"]
        assert page.stop() == "stopped"
        bundle = web.app.bundles[1]
    assert json.loads((bundle / "result.json").read_text())["ok"]

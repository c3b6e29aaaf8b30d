"""The page in a real headless Chromium with fake devices, against the reference server.

Chromium's fake microphone plays a spoken question (looped) and its fake camera coloured
frames; the page captures them, the process frames and sends them through the live loop,
and answers from the scripted engine play on the page's AudioWorklet player. What the
server received, what the bundle recorded and what the page showed are compared.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from duplex_client.bundle.layout import BundleLayout
from duplex_client.server import Script
from duplex_client.server.config import speech_available
from tests.e2e.helpers import CLI, ENV
from tests.integration.web.conftest import reference
from tests.support.media_files import best_correlation
from tests.support.web import (
    LoopThread,
    blockwise_correlation,
    chromium_with,
    fake_device_args,
    open_web,
    serving,
    wait_until,
)

RATE_IN, RATE_OUT, UNIT_MS = 16000, 24000, 1000


@pytest.fixture(scope="module")
def browser(fake_files: tuple[Path, Any, Path]) -> Iterator[Any]:
    wav, _, y4m = fake_files
    with chromium_with(fake_device_args(wav, y4m)) as b:
        yield b


def speak_at(unit: int, audio_ms: int, **extra: Any) -> Script:
    return Script.from_dict(
        {"rules": [{"on": "unit", "index": unit, "do": "speak", "audio_ms": audio_ms}], **extra}
    )


def timeline(bundle: Path) -> dict[str, Any]:
    return json.loads((bundle / "input_timeline.json").read_text())


def test_the_server_gets_the_microphone_faithfully_and_frames_on_the_unit_grid(
    browser: Any,
    loop: LoopThread,
    fake_files: tuple[Path, Any, Path],
    received: list[bytes],
    tmp_path: Path,
) -> None:
    _, question, _ = fake_files
    with (
        reference(loop, profile="minicpmo", engine="scripted") as server,
        serving(loop, server.url, output_dir=tmp_path) as web,
        open_web(browser, web.url) as page,
    ):
        page.start(mode="model", echo=False)

        def units(kind: str) -> int:
            return sum(1 for r in list(server.appends()) if r["unit_kind"] == kind)

        wait_until(lambda: units("OMNI") >= 3, what="three units of speech and frames")
        page.page.click("#mute")
        wait_until(lambda: units("VISION") >= 2, what="two frame-only units")
        assert page.stop() == "stopped"
        stats = page.stats()
        rows = server.appends()
        bundle = web.app.bundles[1]
    sent = timeline(bundle)["appends"]
    audio_rows = [r for r in sent if r["audio_bytes"]]
    assert len(audio_rows) == len(received)
    captured = b"".join(p for p, r in zip(received, audio_rows, strict=True) if not r["fallback"])
    got = np.frombuffer(captured, "<i2").astype(np.float64) / 32768
    assert len(got) >= 2 * RATE_IN  # about three seconds before mute
    # each half second is the file's audio: Chromium's fake microphone can skip ahead when the
    # machine is loaded (one CI run's whole-capture correlation fell to 0.67), which costs the
    # piece it falls in; a wrong rate, byte order or mix would spoil every piece
    pieces = blockwise_correlation(got, question, RATE_IN // 2)
    assert len(pieces) >= 4 and sum(c >= 0.9 for c in pieces) >= 0.75 * len(pieces), pieces
    # nothing lost or added: the server's media time is what the page captured, within a unit
    assert stats["captureRate"] == RATE_IN  # the browser resamples: nothing here does
    page_ms = stats["samplesSent"] * 1000 / RATE_IN
    assert abs(sent[-1]["media_end_ms"] - page_ms) <= UNIT_MS, (sent[-1]["media_end_ms"], page_ms)
    # one frame on every unit-closing append, one unit per chunk period; muted: VISION units
    closing = [r for r in rows if r["unit_kind"] is not None]
    # the camera's first frame can come after the first unit closed (a loaded machine): those
    # units are AUDIO, with no frame, and say so; from the first frame on, one on every unit
    lead = next(i for i, r in enumerate(closing) if r["unit_kind"] != "AUDIO")
    assert lead <= 2 and not any(r["frames"] for r in closing[:lead]), closing[: lead + 1]
    assert all(len(r["frames"]) == 1 for r in closing[lead:])
    kinds = [r["unit_kind"] for r in closing[lead:]]
    assert kinds[0] == "OMNI" and kinds.count("VISION") >= 2, kinds
    assert (
        kinds.index("VISION") > kinds.index("OMNI") and "OMNI" not in kinds[kinds.index("VISION") :]
    )
    ends = [r["media_end_ms"] for r in sent if r["unit_kind"] is not None]
    assert all(b - a == UNIT_MS for a, b in itertools.pairwise(ends)), ends
    assert [r["unit_index"] for r in closing] == list(range(len(closing)))
    muted = [r for r in sent if r["media_start_ms"] >= ends[lead + kinds.index("VISION") - 1]]
    assert muted and all(r["fallback"] or not r["audio_bytes"] for r in muted)
    assert abs(stats["framesSent"] - page_ms / UNIT_MS) <= 2  # the page's cadence: one a unit


def test_an_answer_plays_and_the_bundle_holds_what_the_page_played(
    browser: Any, loop: LoopThread, tmp_path: Path
) -> None:
    with (
        reference(loop, profile="minicpmo", engine="scripted", script=speak_at(2, 1500)) as server,
        serving(loop, server.url, output_dir=tmp_path) as web,
        open_web(browser, web.url) as page,
    ):
        page.start(mode="model")
        page.wait("() => Object.values(window.duplexPage.stats.played).some(n => n >= 36000)")
        page.page.wait_for_timeout(300)
        # what the page shows while live: level, transcript, lateness, the event log
        # Chromium's fake microphone beeps with gaps between: the meter shows a beep within a
        # few seconds, not at any one instant (a single read saw -96 dB once on a loaded CI)
        page.wait("() => Number(document.getElementById('level').value) > -60", timeout_s=5)
        assert "unit 2" in page.page.text_content("#transcript")
        assert page.page.text_content("#lateness").startswith("p50 ")
        assert "ms (live estimate)" in page.page.text_content("#latency")
        logged = page.page.eval_on_selector_all("#events li", "els => els.map(e => e.dataset.type)")
        assert "response.created" in logged and "response.done" in logged
        assert page.stop() == "stopped"
        stats = page.stats()
        shown = page.page.eval_on_selector_all(
            "#latency li", "els => els.map(e => [e.dataset.response, Number(e.dataset.latencyMs)])"
        )
        report = page.page.get_attribute("#report", "href")
        bundle = web.app.bundles[1]
        done = subprocess.run(
            [CLI, "report", str(bundle)], capture_output=True, text=True, env=ENV, timeout=120
        )
        assert done.returncode == 0, done.stderr
        # the page's link serves that page (`duplex-cli report`'s), from the same process
        html = page.page.request.get(web.app.origin + report)
        assert html.ok and html.body() == (bundle / "report.html").read_bytes()
    result = json.loads((bundle / "result.json").read_text())
    assert result["ok"], result["error"]
    [turn] = [t for t in result["turns"] if t["kind"] == "response"]
    rid = turn["response_id"]
    assert rid in stats["ids"].values()
    assert turn["heard_ms"] == 1500 and turn["cut"] is None
    assert result["counts"]["played_ms"] == 1500 and result["counts"]["page_underruns"] == 0
    # heard.wav: the answer as received, starting where the page played its first sample
    with wave.open(str(bundle / "heard.wav")) as w:
        heard = np.frombuffer(w.readframes(w.getnframes()), "<i2")
    with wave.open(str(next(bundle.glob("response_*.wav")))) as w:
        answer = np.frombuffer(w.readframes(w.getnframes()), "<i2")
    first = int(np.flatnonzero(heard)[0])
    start = round(turn["heard_start_ms"] * RATE_OUT / 1000)
    assert abs(first - start) <= RATE_OUT // 50  # within one 20 ms frame
    # each played block is placed at the time the page reported for it: the answer's audio,
    # in place, up to a sample of rounding at block seams
    corr, lag = best_correlation(heard[start : start + len(answer)], answer, RATE_OUT // 200)
    assert corr > 0.99 and abs(lag) <= 2, (corr, lag)
    assert abs(len(np.flatnonzero(heard)) - np.count_nonzero(answer)) <= RATE_OUT // 50
    # the latency on the page is result.json's (the fake microphone speaks: VAD finds its end)
    assert turn["latency_ms"] is not None or not speech_available()
    assert shown == ([[rid, turn["latency_ms"]]] if turn["latency_ms"] is not None else [])
    session = json.loads((bundle / "session.json").read_text())
    facts = session["input"]
    assert facts["source"] == "browser" and "HeadlessChrome" in facts["user_agent"]
    assert facts["echo"] == dict.fromkeys(
        ("echoCancellation", "noiseSuppression", "autoGainControl"), True
    )
    assert facts["devices"]["microphone"] and facts["devices"]["camera"]
    # the bundle is whole: every file a real-time run with audio, frames and payloads has
    layout = BundleLayout(bundle)
    for path in (
        layout.timeline, layout.events, layout.output, layout.transcript, layout.session,
        layout.result, layout.heard, layout.conversation, layout.input_pcm,
    ):  # fmt: skip
        assert path.exists() and path.stat().st_size > 0, path
    assert any(layout.thumbnails.glob("*.jpg")) and any(layout.sent_frames.glob("*.jpg"))
    assert (bundle / "report.html").stat().st_size > 10_000


def test_a_barge_in_clears_playback_at_once_and_acks_what_was_played(
    browser: Any, loop: LoopThread, tmp_path: Path
) -> None:
    script = speak_at(1, 6000, chunk_ms=500, chunk_interval_ms=100)
    with (
        reference(loop, profile="minicpmo", engine="scripted", script=script) as server,
        serving(loop, server.url, output_dir=tmp_path) as web,
        open_web(browser, web.url) as page,
    ):
        page.start(mode="model")
        page.wait("() => Object.values(window.duplexPage.stats.played).some(n => n >= 24000)")
        page.page.click("#interrupt")
        page.wait("() => Object.keys(window.duplexPage.stats.cleared).length > 0")
        page.page.wait_for_timeout(600)
        assert page.stop() == "stopped"
        stats = page.stats()
        bundle = web.app.bundles[1]
    [(n, cleared_at)] = stats["cleared"].items()
    # the click to the player's silence: 11-20 ms measured; 200 leaves room for a busy machine
    assert cleared_at - stats["interruptAt"] < 200, stats
    played_ms = stats["played"][n] * 1000 // RATE_OUT
    assert 1000 <= played_ms < 6000
    lines = [json.loads(x) for x in (bundle / "events.jsonl").read_text().splitlines()]
    acks = [x["event"] for x in lines if x["type"] == "playback.acknowledged"]
    rid = stats["ids"][n]
    final = [a for a in acks if a["response_id"] == rid][-1]
    assert final["truncate"] is True
    assert abs(final["played_ms"] - played_ms) <= 20  # the page's played position
    result = json.loads((bundle / "result.json").read_text())
    [turn] = [t for t in result["turns"] if t["response_id"] == rid]
    assert turn["cut"] is not None and abs(turn["heard_ms"] - played_ms) <= 20


def test_a_camera_only_session_sends_frame_only_units(
    browser: Any, loop: LoopThread, tmp_path: Path
) -> None:
    with (
        reference(loop, profile="minicpmo", engine="scripted") as server,
        serving(loop, server.url, output_dir=tmp_path) as web,
        open_web(browser, web.url) as page,
    ):
        page.page.wait_for_selector("#start:not([disabled])")
        page.page.select_option("#mic-select", "none")
        page.start(mode="model")
        wait_until(lambda: sum(1 for r in list(server.appends()) if r["unit_kind"]) >= 2)
        assert page.page.is_disabled("#mute")
        assert page.stop() == "stopped"
        rows = server.appends()
        bundle = web.app.bundles[1]
    closing = [r for r in rows if r["unit_kind"] is not None]
    assert {r["unit_kind"] for r in closing} == {"VISION"}
    assert all(len(r["frames"]) == 1 for r in closing)
    assert (
        json.loads((bundle / "session.json").read_text())["input"]["devices"]["microphone"] is None
    )

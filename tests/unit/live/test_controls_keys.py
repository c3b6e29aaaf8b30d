"""Switches, push-to-talk timing, scripted actions, the raw-mode key reader and the panel."""

from __future__ import annotations

import asyncio
import io
import os
import termios

import pytest
from duplex_cli.live_display import render_live
from rich.console import Console

from duplex_client.media.devices.keys import NoKeys, TerminalKeys
from duplex_client.run.controls import LiveControls, PushToTalk, parse_schedule
from duplex_client.run.progress import RunProgress
from tests.unit.framing.fakes import FakeClock


def test_toggle_push_to_talk() -> None:
    ptt = PushToTalk("toggle")
    ptt.press(0.0)
    assert ptt.poll(100.0)
    ptt.press(101.0)
    assert not ptt.poll(101.0)


def test_hold_push_to_talk_lives_on_auto_repeat() -> None:
    ptt = PushToTalk("hold", release_after_s=0.6)
    ptt.press(0.0)
    assert ptt.poll(0.5)
    ptt.press(0.55)  # auto-repeat
    assert ptt.poll(1.1)
    assert not ptt.poll(1.2)  # no repeat for 0.65 s: released
    with pytest.raises(ValueError):
        PushToTalk("sticky")  # type: ignore[arg-type]


def test_controls_apply_actions_and_keys() -> None:
    clock = FakeClock()
    c = LiveControls(clock=clock.now)
    assert (c.muted, c.camera_on) == (False, True)
    assert c.key("m") == "toggle_mute" and c.muted
    assert c.key("C") == "toggle_camera" and not c.camera_on
    c.apply("camera_on")
    c.apply("unmute")
    assert (c.muted, c.camera_on) == (False, True)
    assert c.key(" ") == "talk" and c.talking()
    c.apply("talk_up")
    assert not c.talking()
    assert c.key("x") == "interrupt" and c.take_interrupt() and not c.take_interrupt()
    assert c.key("z") is None
    c.key("q")
    assert c.quit_requested
    with pytest.raises(ValueError, match="unknown action"):
        c.apply("dance")


def test_parse_schedule() -> None:
    assert parse_schedule(["5000:unmute", "2000:mute"]) == [(2000, "mute"), (5000, "unmute")]
    for bad in ("mute", "x:mute", "100:dance"):
        with pytest.raises(ValueError, match="MS:ACTION"):
            parse_schedule([bad])


async def test_terminal_keys_use_cbreak_and_restore_the_terminal() -> None:
    master, slave = os.openpty()
    try:
        before = termios.tcgetattr(slave)
        keys = TerminalKeys(fd=slave)
        got: list[str] = []
        assert keys.start(asyncio.get_running_loop(), got.append)
        lflag = termios.tcgetattr(slave)[3]
        assert not lflag & termios.ICANON and not lflag & termios.ECHO
        assert lflag & termios.ISIG  # Ctrl-C still interrupts
        os.write(master, b"m q")
        for _ in range(200):
            if len(got) == 3:
                break
            await asyncio.sleep(0.005)
        assert got == ["m", " ", "q"]
        keys.stop()
        keys.stop()
        assert termios.tcgetattr(slave) == before
    finally:
        os.close(master)
        os.close(slave)


async def test_keys_are_off_without_a_terminal() -> None:
    r, w = os.pipe()
    try:
        assert TerminalKeys(fd=r).start(asyncio.get_running_loop(), print) is False
        assert NoKeys().start(asyncio.get_running_loop(), print) is False
    finally:
        os.close(r)
        os.close(w)


def test_panel_shows_switches_decision_latency_and_keys() -> None:
    p = RunProgress(turn="ptt", talking=True, muted=True, camera="camera 0", camera_on=True)
    p.frames_sent, p.decision, p.last_latency_ms = 12, "speaking", 412.0
    p.transcript_lines = ["You said: hello."]
    p.warn("use headphones")
    console = Console(file=io.StringIO(), width=110, color_system=None)
    console.print(render_live(p))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    for part in ("TALKING", "MUTED", "frames sent 12", "speaking", "412 ms", "You said: hello.",
                 "use headphones", "[space] talk", "[m] mute", "[q] quit"):  # fmt: skip
        assert part in text, part

"""What the user asks for while live: mute, camera, push-to-talk, interrupt, quit."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Literal, get_args

Action = Literal[
    "mute",
    "unmute",
    "toggle_mute",
    "camera_on",
    "camera_off",
    "toggle_camera",
    "talk",
    "talk_down",
    "talk_up",
    "interrupt",
    "quit",
]
ACTIONS: tuple[Action, ...] = get_args(Action)
PttMode = Literal["toggle", "hold"]
PTT_MODES: tuple[PttMode, ...] = get_args(PttMode)
#: Terminal keys and what they do (space talks only in push-to-talk mode).
KEY_BINDINGS: dict[str, Action] = {
    " ": "talk",
    "m": "toggle_mute",
    "c": "toggle_camera",
    "x": "interrupt",
    "q": "quit",
}
#: Without auto-repeat for this long, a held key counts as released (`hold` mode).
DEFAULT_RELEASE_AFTER_S = 0.6


class PushToTalk:
    """The talk key: `toggle` (press to start, press again to stop) or `hold`.

    Terminals report presses, never releases: in `hold` mode the key's auto-repeat keeps
    the hold alive and a silence of `release_after_s` ends it (so the first repeat delay
    of the keyboard must be shorter than that).
    """

    def __init__(
        self, mode: PttMode = "toggle", *, release_after_s: float = DEFAULT_RELEASE_AFTER_S
    ) -> None:
        if mode not in ("toggle", "hold"):
            raise ValueError("push-to-talk mode must be 'toggle' or 'hold'")
        self.mode: PttMode = mode
        self.release_after_s = release_after_s
        self.held = False
        self._last = 0.0

    def press(self, now: float) -> None:
        """The talk key was pressed (or auto-repeated)."""
        if self.mode == "toggle":
            self.held = not self.held
        else:
            self.held = True
        self._last = now

    def down(self, now: float) -> None:
        """Start talking (explicit, e.g. a scripted action)."""
        self.held, self._last = True, now

    def up(self) -> None:
        """Stop talking."""
        self.held = False

    def poll(self, now: float) -> bool:
        """Whether the key counts as held at `now`."""
        if self.mode == "hold" and self.held and now - self._last > self.release_after_s:
            self.held = False
        return self.held


class LiveControls:
    """The switches the live loop reads at every captured block."""

    def __init__(
        self,
        *,
        muted: bool = False,
        camera_on: bool = True,
        ptt: PushToTalk | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.muted = muted
        self.camera_on = camera_on
        self.ptt = ptt or PushToTalk()
        self.clock = clock
        self.quit_requested = False
        self.last_action: Action | None = None
        self._interrupt = False

    def apply(self, action: str) -> None:
        """Carry out one action (`ACTIONS`); unknown names raise `ValueError`."""
        if action not in ACTIONS:
            raise ValueError(f"unknown action {action!r}: one of {', '.join(ACTIONS)}")
        now = self.clock()
        if action in ("mute", "unmute", "toggle_mute"):
            self.muted = not self.muted if action == "toggle_mute" else action == "mute"
        elif action in ("camera_on", "camera_off", "toggle_camera"):
            on = action == "camera_on"
            self.camera_on = not self.camera_on if action == "toggle_camera" else on
        elif action == "talk":
            self.ptt.press(now)
        elif action == "talk_down":
            self.ptt.down(now)
        elif action == "talk_up":
            self.ptt.up()
        elif action == "interrupt":
            self._interrupt = True
        elif action == "quit":
            self.quit_requested = True
        self.last_action = action

    def key(self, char: str) -> Action | None:
        """Apply the action bound to a terminal key; returns it (None: unbound)."""
        action = KEY_BINDINGS.get(char.lower() if char != " " else char)
        if action is not None:
            self.apply(action)
        return action

    def talking(self) -> bool:
        """Whether push-to-talk is held now."""
        return self.ptt.poll(self.clock())

    def take_interrupt(self) -> bool:
        """Whether an interrupt was asked for since the last call."""
        asked, self._interrupt = self._interrupt, False
        return asked


def parse_schedule(specs: Iterable[str]) -> list[tuple[int, Action]]:
    """`["2000:mute", "5000:unmute"]` → [(2000, "mute"), ...] sorted by media time (ms)."""
    out: list[tuple[int, Action]] = []
    for spec in specs:
        at, sep, action = spec.partition(":")
        if not sep or not at.strip().isdigit() or action.strip() not in ACTIONS:
            raise ValueError(
                f"bad action {spec!r}: use MS:ACTION with ACTION one of {', '.join(ACTIONS)}"
            )
        out.append((int(at), action.strip()))  # type: ignore[arg-type]
    return sorted(out, key=lambda item: item[0])

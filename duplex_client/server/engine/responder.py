"""The speech engine's answers: deterministic rules over what was heard and seen.

Rules, in order (its job is to exercise the protocol with real audio, not to be smart):

1. The user spoke: "You said: <words>." (or "I heard you, but I did not catch the words." when
   nothing was recognised), followed by "I see <colour>." when the latest frame has a named
   colour. The words become the standing instruction.
2. Camera only, and the latest frame's colour differs from the last colour answered:
   "I see <colour>.", followed by "You asked: <instruction>." when an instruction stands.
3. Otherwise (silence, no frame, unnamed or unchanged colour): no answer; the model listens.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Observation:
    """One decision point: `transcript` None means the user did not speak."""

    transcript: str | None
    color: str | None


class Responder:
    """Applies the rules; remembers the last colour answered and the standing instruction."""

    def __init__(self) -> None:
        self.last_color: str | None = None
        self.instruction: str | None = None

    def answer(self, observation: Observation) -> str | None:
        """The answer text, or None to listen."""
        color = observation.color
        if observation.transcript is not None:
            words = observation.transcript.strip()
            if words:
                self.instruction = words
                parts = [f"You said: {words}."]
            else:
                parts = ["I heard you, but I did not catch the words."]
            if color is not None:
                parts.append(f"I see {color}.")
                self.last_color = color
            return " ".join(parts)
        if color is None or color == self.last_color:
            return None
        self.last_color = color
        if self.instruction:
            return f"I see {color}. You asked: {self.instruction}."
        return f"I see {color}."

    def forget(self) -> None:
        """Drop the remembered colour and instruction (a new conversation)."""
        self.last_color = None
        self.instruction = None

"""What differs between two runs of the same input: decisions, latencies, answers.

Pure code over two `RunView`s. Answers are paired by the unit whose speak decision started
them (answers without a unit pair in order); a latency counts as moved when it changed by
more than the threshold (100 ms unless told).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from duplex_client.report.run_view import RunView, TurnSpan

LATENCY_THRESHOLD_MS = 100.0


@dataclass(frozen=True)
class Difference:
    """One difference: what kind, where on the media clock, and each run's side of it."""

    kind: str  # "decision", "latency", "only_in_a" or "only_in_b"
    at_ms: float
    unit_index: int | None
    a: str
    b: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON row."""
        return asdict(self)


@dataclass
class RunDiff:
    """The differences between run A and run B, and what each run's tracks should mark."""

    differences: list[Difference] = field(default_factory=list)
    differing_units: set[int] = field(default_factory=set)
    #: Turn numbers (per run) whose latency moved; response ids present in one run only.
    moved_a: set[int] = field(default_factory=set)
    moved_b: set[int] = field(default_factory=set)
    only_a: set[str] = field(default_factory=set)
    only_b: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, a: RunView, b: RunView, *, threshold_ms: float = LATENCY_THRESHOLD_MS) -> RunDiff:
        """Compare two runs."""
        diff = cls()
        diff._decisions(a, b)
        pairs, lone_a, lone_b = _pair_turns(a.turns, b.turns)
        for ta, tb in pairs:
            if ta.latency_ms is None or tb.latency_ms is None:
                continue
            moved = tb.latency_ms - ta.latency_ms
            if abs(moved) > threshold_ms:
                diff.moved_a.add(ta.number)
                diff.moved_b.add(tb.number)
                diff.differences.append(
                    Difference(
                        "latency",
                        _at(tb),
                        tb.unit_index,
                        f"#{ta.number}: {ta.latency_ms:.1f} ms",
                        f"#{tb.number}: {tb.latency_ms:.1f} ms ({moved:+.1f})",
                    )
                )
        for t in lone_a:
            diff.only_a.add(t.response_id)
            diff.differences.append(
                Difference("only_in_a", _at(t), t.unit_index, _answer(t), "no answer")
            )
        for t in lone_b:
            diff.only_b.add(t.response_id)
            diff.differences.append(
                Difference("only_in_b", _at(t), t.unit_index, "no answer", _answer(t))
            )
        diff.differences.sort(key=lambda d: (d.at_ms, d.kind))
        return diff

    def _decisions(self, a: RunView, b: RunView) -> None:
        def doc(view: RunView) -> dict[str, Any]:
            return {
                "decisions": [
                    {"unit_index": d.unit_index, "decision": d.decision} for d in view.decisions
                ]
            }

        for change in decision_changes(doc(a), doc(b)):
            unit = int(change["unit_index"])
            self.differing_units.add(unit)
            block = a.unit(unit) or b.unit(unit)
            at = block.start_ms if block is not None else 0.0
            self.differences.append(
                Difference(
                    "decision",
                    at,
                    unit,
                    str(change["original"] or "none"),
                    str(change["replay"] or "none"),
                )
            )

    def to_list(self) -> list[dict[str, Any]]:
        """The differences as JSON rows (what the page embeds)."""
        return [d.to_dict() for d in self.differences]


def _pair_turns(
    a: list[TurnSpan], b: list[TurnSpan]
) -> tuple[list[tuple[TurnSpan, TurnSpan]], list[TurnSpan], list[TurnSpan]]:
    by_unit_b: dict[int, TurnSpan] = {}
    for t in b:
        if t.unit_index is not None:
            by_unit_b.setdefault(t.unit_index, t)
    loose_b = [t for t in b if t.unit_index is None]
    pairs: list[tuple[TurnSpan, TurnSpan]] = []
    lone_a: list[TurnSpan] = []
    used: set[int] = set()
    for t in a:
        if t.unit_index is None:
            if loose_b:
                pairs.append((t, loose_b.pop(0)))
            else:
                lone_a.append(t)
        elif t.unit_index in by_unit_b and t.unit_index not in used:
            used.add(t.unit_index)
            pairs.append((t, by_unit_b[t.unit_index]))
        else:
            lone_a.append(t)
    paired_b = {id(tb) for _, tb in pairs}
    lone_b = [t for t in b if id(t) not in paired_b]
    return pairs, lone_a, lone_b


def _at(turn: TurnSpan) -> float:
    for value in (turn.heard_start_ms, turn.user_end_ms):
        if value is not None:
            return value
    return 0.0


def _answer(turn: TurnSpan) -> str:
    text = turn.transcript if len(turn.transcript) <= 60 else turn.transcript[:59] + "…"
    return f"#{turn.number} {text}".strip()


def decision_changes(original: dict[str, Any], replay: dict[str, Any]) -> list[dict[str, Any]]:
    """Units whose listen/speak decision differs between two `result.json` documents."""

    def by_unit(doc: dict[str, Any]) -> dict[Any, str]:
        out: dict[Any, str] = {}
        for d in doc.get("decisions") or []:
            if d.get("unit_index") is not None and d.get("decision"):
                out.setdefault(d["unit_index"], d["decision"])
        return out

    a, b = by_unit(original), by_unit(replay)
    units = sorted(set(a) | set(b), key=lambda u: (not isinstance(u, int), u))
    return [
        {"unit_index": u, "original": a.get(u), "replay": b.get(u)}
        for u in units
        if a.get(u) != b.get(u)
    ]

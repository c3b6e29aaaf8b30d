"""What the record says became of each input: written to a socket, acknowledged by the server.

A timeline row is added when an append or commit is handed to the session, which only
queues it while its socket is down. The session's ledger (`client.input_ledger`) knows which
inputs were really written and which the server confirmed; `delivered` applies it to the
rows as the timeline is rendered: a row never written has no `sent_offset_ms` and no
`lateness_ms` and says `written: false`; `acknowledged_offset_ms` is when the server
confirmed an append (null: it did not, or nothing told). Pure: the ledger is read, nothing is
sent or awaited.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Deliveries(Protocol):
    """Per input event id: whether it is tracked, when written and when confirmed."""

    def tracks(self, event_id: str) -> bool:
        """Whether the input was kept (so no write time means it never left)."""
        ...

    def written_at(self, event_id: str) -> float | None:
        """When it was first written to a socket (the client's clock), None if never."""
        ...

    def acknowledged_at(self, event_id: str) -> float | None:
        """When the server confirmed having it, None if it did not (or nothing said)."""
        ...


def delivered(
    rows: Sequence[dict[str, Any]],
    deliveries: Deliveries | None,
    offset_ms: Callable[[float], float] | None,
    *,
    appends: bool,
) -> list[dict[str, Any]]:
    """Copies of `rows` saying which were written and (appends) when each was confirmed."""
    out = []
    for source in rows:
        row = dict(source)
        event_id = str(row.get("event_id"))
        tracked = deliveries is not None and deliveries.tracks(event_id)
        written = not tracked or (deliveries is not None and deliveries.written_at(event_id))
        row["written"] = bool(written)
        if not written:
            row["sent_offset_ms"] = None
            if "lateness_ms" in row:
                row["lateness_ms"] = None
        if appends:
            acked = deliveries.acknowledged_at(event_id) if deliveries is not None else None
            when = None if acked is None or offset_ms is None else round(offset_ms(acked), 3)
            row["acknowledged_offset_ms"] = when
        out.append(row)
    return out

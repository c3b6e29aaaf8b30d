"""Stream a source to a session on the media clock: targets, sending, reconnects, the run."""

from duplex_client.client.streaming.reconnects import (
    TimelineReconnects,
    attach_timeline,
    reconnect_recorder,
)
from duplex_client.client.streaming.result import StreamResult
from duplex_client.client.streaming.run import PLAN_IN_WORKER, Source, stream
from duplex_client.client.streaming.sending import (
    _DEADLINE_SLACK_S,
    _send_planned,
    _sleep_until,
    append_planned,
    send_append,
)
from duplex_client.client.streaming.targets import (
    StreamTarget,
    _Listenable,
    _Reconnecting,
    _TakesCommits,
    _TakesImages,
    _Unlistenable,
)

__all__ = [
    "PLAN_IN_WORKER",
    "_DEADLINE_SLACK_S",
    "Source",
    "StreamResult",
    "StreamTarget",
    "TimelineReconnects",
    "_Listenable",
    "_Reconnecting",
    "_TakesCommits",
    "_TakesImages",
    "_Unlistenable",
    "_send_planned",
    "_sleep_until",
    "append_planned",
    "attach_timeline",
    "reconnect_recorder",
    "send_append",
    "stream",
]

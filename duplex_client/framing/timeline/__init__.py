"""`input_timeline.json`: the record of every append and commit sent (protocol.md §10)."""

from duplex_client.framing.timeline.document import SCHEMA_VERSION, TIMELINE_FILENAME
from duplex_client.framing.timeline.frames import frame_records
from duplex_client.framing.timeline.input_timeline import InputTimeline

__all__ = ["SCHEMA_VERSION", "TIMELINE_FILENAME", "InputTimeline", "frame_records"]

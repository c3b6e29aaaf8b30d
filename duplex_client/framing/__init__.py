"""Sans-I/O framing: unit grid, media clock, framer and input timeline."""

from duplex_client.framing.clock import PACINGS, MediaClock, Pacing, SendTiming
from duplex_client.framing.framer import Framer, FramingError
from duplex_client.framing.invariants import check_timeline
from duplex_client.framing.live import FrameFeed, LiveFramer
from duplex_client.framing.plan import (
    DEFAULT_CHUNK_MS,
    SEGMENTS,
    SOUNDTRACK_POLICIES,
    FramerConfig,
    FramingReport,
    PlannedAppend,
    Segment,
    SoundtrackPolicy,
    StreamPosition,
)
from duplex_client.framing.sources import (
    BYTES_PER_SAMPLE,
    INPUT_SAMPLE_RATE_HZ,
    AudioVisualSource,
    BytesPcmSource,
    EncodedImage,
    FrameGroup,
    FrameSampler,
    MediaInput,
    PcmSource,
)
from duplex_client.framing.timeline import SCHEMA_VERSION, TIMELINE_FILENAME, InputTimeline
from duplex_client.framing.units import UnitGrid, ms_to_samples, samples_to_ms
from duplex_client.framing.writer import UnitWriter

__all__ = [
    "BYTES_PER_SAMPLE",
    "DEFAULT_CHUNK_MS",
    "INPUT_SAMPLE_RATE_HZ",
    "PACINGS",
    "SCHEMA_VERSION",
    "SEGMENTS",
    "SOUNDTRACK_POLICIES",
    "TIMELINE_FILENAME",
    "AudioVisualSource",
    "BytesPcmSource",
    "EncodedImage",
    "FrameFeed",
    "FrameGroup",
    "FrameSampler",
    "Framer",
    "FramerConfig",
    "FramingError",
    "FramingReport",
    "InputTimeline",
    "LiveFramer",
    "MediaClock",
    "MediaInput",
    "Pacing",
    "PcmSource",
    "PlannedAppend",
    "Segment",
    "SendTiming",
    "SoundtrackPolicy",
    "StreamPosition",
    "UnitGrid",
    "UnitWriter",
    "check_timeline",
    "ms_to_samples",
    "samples_to_ms",
]

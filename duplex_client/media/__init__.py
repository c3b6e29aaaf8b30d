"""Media ingest: clips, soundtracks, audio files and still images as the framer's sources.

Importing this package is light: PyAV, OpenCV and soundfile are imported only when a file
is probed, opened or decoded.
"""

from duplex_client.media.audio import AvAudio, SoundFileAudio, file_sha256, open_audio
from duplex_client.media.clip import Clip, open_clip
from duplex_client.media.errors import MediaError, MediaWarning
from duplex_client.media.frames import ClipFrames
from duplex_client.media.image import ImageFrameSource
from duplex_client.media.probe import MediaInfo, StreamInfo, probe

__all__ = [
    "AvAudio",
    "Clip",
    "ClipFrames",
    "ImageFrameSource",
    "MediaError",
    "MediaInfo",
    "MediaWarning",
    "SoundFileAudio",
    "StreamInfo",
    "file_sha256",
    "open_audio",
    "open_clip",
    "probe",
]

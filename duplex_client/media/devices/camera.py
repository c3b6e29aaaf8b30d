"""The camera: OpenCV capture on a thread, latest frame wins; encoded only when a unit closes.

In a live session a unit's JPEG is made on a worker thread, never on the event loop's: the frame
is chosen when the unit closes (inside the framer's push), its pixels go to a worker at once,
and the session awaits the bytes just before it sends the append (`CameraFeed.encoded`).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field, replace
from typing import Any

from duplex_client.framing.plan import PlannedAppend
from duplex_client.framing.sources import EncodedImage, FrameGroup
from duplex_client.media.devices.capture import CapturedFrame, FrameCapture
from duplex_client.media.devices.lookup import DeviceError, default_video_capture

#: Consecutive failed reads after which a device counts as gone.
MAX_FAILED_READS = 50
_DEFAULT_FILE_FPS = 25.0
#: File names OpenCV opens as a one-frame "video" (a still image held for every unit).
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")
_FAILED_READ_PAUSE_S = 0.02


class Camera:
    """A camera index, a video file or an image through an OpenCV `VideoCapture`-like factory.

    Devices deliver at their own pace; files are paced at `speed` times real time by their
    frame rate, and their last frame is held once they end (an image is a one-frame file).
    The factory is injectable (`capture_factory`), e.g. a fake in tests.
    """

    def __init__(
        self,
        source: int | str = 0,
        *,
        capture_factory: Callable[[int | str], Any] | None = None,
        paced: bool | None = None,
        speed: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.source = source
        self.paced = isinstance(source, str) if paced is None else paced
        self.speed = speed
        self.clock = clock
        self.sleep = sleep
        self.error: str | None = None
        self.ended = False
        self.frames_captured = 0
        self.fps = 0.0
        self.width = 0
        self.height = 0
        self.kind = "camera" if isinstance(source, int) else "file"
        self._factory = capture_factory
        self._cap: Any = None
        self._latest: CapturedFrame | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Open the capture and start the reader thread (`DeviceError` if it does not open)."""
        factory = self._factory or default_video_capture()
        cap = factory(self.source)
        if not cap.isOpened():
            cap.release()
            what = f"camera {self.source}" if isinstance(self.source, int) else self.source
            raise DeviceError(
                f"cannot open {what}: no camera found? use --camera-file or --no-camera"
            )
        self._cap = cap
        fps = _prop(cap, 5)  # CAP_PROP_FPS
        self.fps = fps if fps > 0 else (_DEFAULT_FILE_FPS if self.paced else 0.0)
        if isinstance(self.source, str) and self.source.lower().endswith(IMAGE_SUFFIXES):
            self.kind = "image"
        self._thread = threading.Thread(target=self._run, name="duplex-camera", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        start = self.clock()
        failures = 0
        index = 0
        while not self._stop.is_set():
            ok, image = self._cap.read()
            if not ok or image is None:
                if self.paced:
                    self.ended = True  # a file is over: its last frame stays the latest
                    return
                failures += 1
                if failures >= MAX_FAILED_READS:
                    self.error = f"camera {self.source} stopped delivering frames"
                    return
                self.sleep(_FAILED_READ_PAUSE_S)
                continue
            failures = 0
            captured_at = self.clock()
            if self.paced:
                captured_at = start + index / self.fps / self.speed
                while not self._stop.is_set() and (wait := captured_at - self.clock()) > 0:
                    self.sleep(min(wait, 0.1))
            index += 1
            with self._lock:
                self.frames_captured += 1
                self.height, self.width = int(image.shape[0]), int(image.shape[1])
                self._latest = CapturedFrame(image, self.frames_captured, captured_at)

    def latest(self) -> CapturedFrame | None:
        """The most recent frame (None before the first)."""
        with self._lock:
            return self._latest

    def close(self) -> None:
        """Stop the thread and release the capture (idempotent)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        if self._cap is not None:
            self._cap.release()
            self._cap = None

    def info(self) -> dict[str, Any]:
        """Facts for the timeline's `video` object."""
        return {
            "kind": self.kind,
            "path": None if isinstance(self.source, int) else self.source,
            "avg_fps": round(self.fps, 3),
            "num_frames": self.frames_captured,
            "rotation_deg": 0,
            "width": self.width,
            "height": self.height,
        }


def _prop(cap: Any, prop: int) -> float:
    try:
        return float(cap.get(prop))
    except Exception:
        return 0.0


@dataclass(frozen=True, slots=True)
class PendingFrame(FrameGroup):
    """A frame chosen when its unit closed whose JPEG a worker thread is still encoding.

    Its `base` carries the pts but no bytes yet: `CameraFeed.resolve` gives the group to send.
    """

    job: Future[EncodedImage] | None = field(default=None, compare=False, repr=False)


def encode_frame(image: Any, pts_ms: int, quality: int, max_side: int) -> EncodedImage:
    """A captured BGR frame downscaled to `max_side` and JPEG-encoded (worker-thread work)."""
    from duplex_client.media.jpeg import encode_jpeg, resize_to_fit

    pixels = resize_to_fit(image, max_side)
    return EncodedImage(
        data=encode_jpeg(pixels, quality),
        pts_ms=pts_ms,
        width=int(pixels.shape[1]),
        height=int(pixels.shape[0]),
    )


class CameraFeed:
    """A `FrameCapture` as the live framer's `FrameFeed`: the latest frame when a unit closes.

    `latest()` chooses the frame: the capture's latest at that moment. With an `executor` (the
    live session passes the planning pool) its pixels go to a worker thread and the groups it
    returns are `PendingFrame`s until `resolve` swaps in the JPEG, once `encoded` has awaited
    it; without one `latest()` encodes inline (for callers off the event loop). A capture
    whose frames are already JPEG (`CapturedFrame.image` an `EncodedImage`: a browser page
    scales and encodes them) is sent as it came. Each captured
    frame is encoded at most once. `pts_ms` is the frame's capture time on the media clock
    (`origin()` gives t0 on the same monotonic clock). A frame sent again (the camera
    stalled) is marked `held`.
    """

    def __init__(
        self,
        capture: FrameCapture,
        origin: Callable[[], float],
        *,
        jpeg_quality: int = 80,
        frame_max_side: int = 640,
        executor: Executor | None = None,
    ) -> None:
        if not 1 <= jpeg_quality <= 100:
            raise ValueError(f"jpeg_quality must be 1..100, got {jpeg_quality}")
        self.capture = capture
        self.origin = origin
        self.jpeg_quality = jpeg_quality
        self.frame_max_side = frame_max_side
        self.frames_sent = 0
        self._executor = executor
        self._seq = -1
        self._group: FrameGroup | None = None

    def ready(self) -> bool:
        """Whether a frame has been captured."""
        return self.capture.latest() is not None

    def latest(self) -> FrameGroup | None:
        """The latest frame, chosen now; its JPEG is made on the executor's worker, if any."""
        frame = self.capture.latest()
        if frame is None:
            return None
        self.frames_sent += 1
        if frame.seq == self._seq and self._group is not None:
            return replace(self._group, held=True)
        pts = max(0, round((frame.captured_at - self.origin()) * 1000))
        args = (frame.image, pts, self.jpeg_quality, self.frame_max_side)
        if isinstance(frame.image, EncodedImage):  # encoded where it was captured (a page)
            self._group = FrameGroup(replace(frame.image, pts_ms=pts))
        elif self._executor is None:
            self._group = FrameGroup(encode_frame(*args))
        else:
            job = self._executor.submit(encode_frame, *args)
            self._group = PendingFrame(EncodedImage(b"", pts), job=job)
        self._seq = frame.seq
        return self._group

    async def encoded(self, append: PlannedAppend) -> None:
        """Wait until the JPEG of `append`'s frame is made (at most one encode's time)."""
        group = append.frames
        if isinstance(group, PendingFrame) and group.job is not None:
            # shielded: a cancelled wait must not cancel the encode held copies still share
            await asyncio.shield(asyncio.wrap_future(group.job))

    def resolve(self, append: PlannedAppend) -> PlannedAppend:
        """`append` with its frame's JPEG in place of the pending one (await `encoded` first)."""
        group = append.frames
        if not isinstance(group, PendingFrame) or group.job is None:
            return append
        return replace(append, frames=FrameGroup(group.job.result(), held=group.held))

    def info(self, unit_ms: int) -> dict[str, Any]:
        """The timeline's `video` object: capture facts plus this feed's sampling."""
        facts = self.capture.info()
        return {
            "duration_ms": None,
            **facts,
            "sampling": "latest_at_unit_close",
            "fps": round(1000 / unit_ms, 3),
            "stack_frames": 1,
            "jpeg_quality": self.jpeg_quality,
            "frame_max_side": self.frame_max_side,
        }

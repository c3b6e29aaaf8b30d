"""The run bundle on disk, written as the run goes so an interrupted run keeps what it got.

Files: `events.jsonl` (every server event with its receive time since the bundle opened,
`t_ms`, and on the media clock, `media_ms`; audio payloads elided to their size, secrets
redacted), `output.wav` (all kept answer audio in order) and one WAV per
response, `transcript.txt`, `session.json` (config sent with secrets removed, capabilities
received) and `result.json`. `input_timeline.json` is written by `InputTimeline`;
`frames/<unit>_<k>.jpg` (small JPEG thumbnails of the images sent, image `k` of the append
closing unit `<unit>`, longest side 160 px) by `ThumbnailWriter`, unless `thumbnails=False`;
`input.pcm` and `sent_frames/` (the payloads at full size) by `PayloadKeeper`, with
`keep_payloads=True`.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from duplex_client.bundle.layout import BUNDLE_FILES, RESPONSE_WAV_GLOB, BundleLayout
from duplex_client.bundle.thumbnails import remove_thumbnails
from duplex_client.bundle.wavfile import GrowingWav
from duplex_client.client.config import redact
from duplex_client.client.responses import ResponseHandle
from duplex_client.client.session import DuplexClientBase
from duplex_client.client.tools import describe
from duplex_client.client.transport import redact_url
from duplex_client.files import write_text_atomic
from duplex_client.framing.clock import MediaClock
from duplex_client.protocol import response_events as r
from duplex_client.protocol import server_events as se

#: Event fields holding base64 media; replaced by a size note in `events.jsonl`.
_PAYLOAD_FIELDS = ("delta", "audio")

__all__ = [
    "BUNDLE_FILES",
    "RunBundle",
    "elide_payloads",
    "session_document",
    "write_json_atomic",
]


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON (2-space indent, UTF-8) whole or not at all (`files.write_text_atomic`)."""
    write_text_atomic(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def elide_payloads(raw: dict[str, Any]) -> dict[str, Any]:
    """A copy of an event with base64 audio replaced by `<base64: N bytes>`, secrets redacted."""
    out = dict(raw)
    for key in _PAYLOAD_FIELDS:
        value = out.get(key)
        if isinstance(value, str) and len(value) > 64:
            size = len(value) * 3 // 4 - value[-2:].count("=")
            out[key] = f"<base64: {size} bytes>"
    redacted: dict[str, Any] = redact(out)
    return redacted


def session_document(
    client: DuplexClientBase, url: str | None, input_facts: dict[str, Any] | None
) -> dict[str, Any]:
    """The `session.json` document of `RunBundle.write_session`, as the client stands now."""
    return {
        **({"input": redact(input_facts)} if input_facts is not None else {}),
        "session_id": client.session_id,
        "model": client.model,
        "url": redact_url(url) if url else None,
        # the wire spoken (docs/dialects.md); config_sent is the duplex form mapped
        "dialect": getattr(client, "dialect", "duplex"),
        "config_sent": redact(client.config.to_session(client.model)),
        "session_effective": redact(client.session),
        "capabilities": client.capabilities.to_dict(),
        "attachment_generation": client.attachment_generation,
        # a journal gap replaced the session: every session the run used, in order
        **({"session_ids": client.session_ids} if len(client.session_ids) > 1 else {}),
    }


class RunBundle:
    """Records one client session into a run directory."""

    def __init__(self, out_dir: Path, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.dir = out_dir
        self.layout = BundleLayout(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        probe = self.dir / ".write_test"
        probe.write_bytes(b"")
        probe.unlink()
        # An earlier run's files would otherwise mix with this one's: its transcript is
        # appended to, its extra answer WAVs stay, its result stands if this run dies early.
        for name in BUNDLE_FILES:
            (self.dir / name).unlink(missing_ok=True)
        for old in self.dir.glob(RESPONSE_WAV_GLOB):
            old.unlink(missing_ok=True)
        remove_thumbnails(self.dir)
        # Payloads kept by an earlier run (`--keep-payloads`) would be taken for this run's.
        self.layout.input_pcm.unlink(missing_ok=True)
        for old in self.layout.sent_frames.glob("*.jpg"):
            old.unlink(missing_ok=True)
        self.clock = clock
        self.origin = clock()
        self.started_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self.event_count = 0
        self.output_sample_rate_hz = 24000
        self._events = self.layout.events.open("w", encoding="utf-8")
        self._output: GrowingWav | None = None
        self._per_response: dict[str, GrowingWav] = {}
        self._written: dict[str, int] = {}
        self._transcribed: set[int] = set()
        self._client: DuplexClientBase | None = None
        self._clock: MediaClock | None = None
        self._heard_start: Callable[[str], float | None] | None = None
        # Lines received before the media clock's anchor: rewritten with `media_ms` once known.
        self._unanchored: list[tuple[float, dict[str, Any]]] = []

    def offset_ms(self, t: float) -> float:
        """A monotonic time as ms since the bundle's origin (3 decimals)."""
        return round((t - self.origin) * 1000.0, 3)

    # --- wiring ---

    def attach(
        self,
        client: DuplexClientBase,
        *,
        clock: MediaClock | None = None,
        heard_start: Callable[[str], float | None] | None = None,
    ) -> None:
        """Record every event of this client from now on; `clock` gives events media time,
        `heard_start` a response's place in `heard.wav` for the transcript."""
        self._client = client
        self._clock = clock
        self._heard_start = heard_start
        self.output_sample_rate_hz = client.config.output_sample_rate_hz
        client.add_listener(self.on_event)

    def write_session(
        self,
        client: DuplexClientBase,
        *,
        url: str | None = None,
        input_facts: dict[str, Any] | None = None,
    ) -> None:
        """`session.json`: what was asked (secrets removed) and what the server granted;
        `input_facts`, where the input came from (a browser's user agent, devices, echo
        settings), as its `input` object when given."""
        write_json_atomic(self.layout.session, session_document(client, url, input_facts))

    # --- recording ---

    def on_event(self, event: se.ServerEvent, received_at: float) -> None:
        """Listener: append the event line, and any newly kept audio to the WAVs."""
        self.event_count += 1
        line = {
            "t_ms": self.offset_ms(received_at),
            "media_ms": self._media_ms(received_at),
            "type": event.type,
            "event": elide_payloads(event.raw),
        }
        if self._unanchored and self._clock is not None and self._clock.started:
            self._anchor_early_lines()
        if line["media_ms"] is None and self._clock is not None and self._clock.realtime:
            self._unanchored.append((received_at, line))
        self._events.write(json.dumps(line, ensure_ascii=False) + "\n")
        self._events.flush()
        if isinstance(event, r.ResponseAudioDelta) and event.response_id is not None:
            self._write_audio(event.response_id)
        elif isinstance(event, r.ResponseDone | r.ResponseListen):
            self._write_transcripts()

    def _media_ms(self, t: float) -> float | None:
        return None if self._clock is None else self._clock.media_ms_at(t)

    def _anchor_early_lines(self) -> None:
        """Give the lines written before the stream started their (negative) media time.

        They are all the file holds so far, so the file is written again through a rename.
        """
        early, self._unanchored = self._unanchored, []
        path = self.layout.events
        tmp = path.with_name(path.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as out:
            for received_at, line in early:
                line["media_ms"] = self._media_ms(received_at)
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
        self._events.close()
        os.replace(tmp, path)
        self._events = path.open("a", encoding="utf-8")

    def _write_audio(self, response_id: str) -> None:
        if self._client is None:
            return
        handle = self._client.tracker.handles.get(response_id)
        if handle is None:
            return
        done = self._written.get(response_id, 0)
        pcm = handle.audio_since(done)
        if not pcm:
            return
        self._written[response_id] = done + len(pcm)
        if self._output is None:
            self._output = GrowingWav(self.layout.output, handle.sample_rate_hz)
        self._output.write(pcm)
        wav = self._per_response.get(response_id)
        if wav is None:
            path = self.layout.response_wav(len(self._per_response) + 1, response_id)
            wav = self._per_response[response_id] = GrowingWav(path, handle.sample_rate_hz)
        wav.write(pcm)

    def handles(self) -> list[ResponseHandle]:
        """Every response seen so far (finished or not), in creation order."""
        if self._client is None:
            return []
        return list(self._client.tracker.handles.values())

    def _write_transcripts(self, *, final: bool = False) -> None:
        if self._client is None:
            return
        with self.layout.transcript.open("a", encoding="utf-8") as out:
            calls = {r.call.response_id: r for r in self._client.function_call_records}
            for n, handle in enumerate(self.handles(), start=1):
                if n in self._transcribed or not (handle.done or final):
                    continue
                record = calls.get(handle.response_id)
                unanswered = record is None or (record.output is None and record.error is None)
                if handle.function_calls and unanswered and not final:
                    continue  # written once its output is known
                self._transcribed.add(n)
                text = handle.transcript or handle.text
                decision: str | None = handle.decision
                if handle.function_calls:
                    decision = "function_call"
                    text = describe(record) if record is not None else str(handle.function_calls)
                state = handle.status or "incomplete"
                where = self._placement(handle)
                out.write(f"[{n}] {handle.response_id} {decision} ({state}) {where}: {text}\n")

    def _placement(self, handle: ResponseHandle) -> str:
        """`unit_index=… heard_start_ms=…` for a transcript row (`-` when unknown)."""
        unit = handle.metadata.get("unit_index")
        start = None
        if self._heard_start is not None and handle.response_id is not None:
            start = self._heard_start(handle.response_id)
        heard = "-" if start is None else str(round(start, 3))
        return f"unit_index={'-' if unit is None else unit} heard_start_ms={heard}"

    @property
    def output_ms(self) -> int:
        """Answer audio written to `output.wav`."""
        return self._output.duration_ms if self._output else 0

    def finish(self, result: dict[str, Any]) -> Path:
        """Flush transcripts, close files and write `result.json` (also after a failure)."""
        if self._unanchored and self._clock is not None and self._clock.started:
            with contextlib.suppress(OSError):
                self._anchor_early_lines()
        with contextlib.suppress(OSError):
            self._write_transcripts(final=True)
        self.layout.transcript.touch()
        if self._output is None:
            GrowingWav(self.layout.output, self.output_sample_rate_hz).close()
        for wav in (self._output, *self._per_response.values()):
            if wav is not None:
                wav.close()
        with contextlib.suppress(OSError):
            self._events.close()
        path = self.layout.result
        write_json_atomic(path, result)
        return path

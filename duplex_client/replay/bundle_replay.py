"""Replay a run bundle: its recorded input, byte for byte, to any server, as a new bundle.

`replay_bundle("runs/a", url=...)` reads the bundle's `input_timeline.json` and its kept
payloads (`stream --keep-payloads`), checks every payload against its recorded sha256, and
sends the same appends and commits on the same media clock. A server advertising another
unit grid is refused before any input is sent (re-planning would make it another input).
The new bundle's `sent_sha256` equals the original's when the input was identical.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from duplex_client.bundle.layout import BundleLayout
from duplex_client.bundle.payloads import KeptPayloads, kept_frames_dir
from duplex_client.bundle.reader import read_document, read_timeline
from duplex_client.client.config import SessionConfig
from duplex_client.client.replaying import send_recorded
from duplex_client.client.streaming import StreamResult, StreamTarget
from duplex_client.client.websocket import DuplexClient
from duplex_client.framing.clock import MediaClock
from duplex_client.framing.recorded import RecordedInput, RecordedInputError
from duplex_client.replay.rederive import rederive, replan_sender
from duplex_client.run.options import RunOptions, default_run_dir
from duplex_client.run.prepare import ref_audio_url
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import RunResult
from duplex_client.run.session_run import run_session
from duplex_client.run.sources import SourceLink
from duplex_client.run.sources.recorded import ReplaySource, Sender
from duplex_client.usage import UsageError

#: Facts of the recorded stream the new timeline repeats.
DESCRIBED = (
    "chunk_ms", "media_origin_ms", "tail_silence_ms", "audio_source", "video", "soundtrack_policy",
)  # fmt: skip


class ReplayCondition(Protocol):
    """One condition a sweep varies: it may change the input and/or wrap the transport."""

    def input(self, recorded: RecordedInput) -> RecordedInput:
        """The input to send (the recorded one, or a changed copy)."""
        ...

    def target(self, client: DuplexClient, clock: MediaClock) -> StreamTarget:
        """Where the appends go (the client, or a wrapper that delays or drops)."""
        ...


@dataclass(frozen=True, slots=True)
class RecordedRun:
    """A bundle read for replay: its input, the session it asked for, and its result."""

    path: Path
    input: RecordedInput
    timeline: dict[str, Any]
    session: dict[str, Any]
    result: dict[str, Any]

    @classmethod
    def load(cls, path: str | Path) -> RecordedRun:
        """Read and check a bundle; a `UsageError` (one line) says what is missing or differs."""
        bundle = Path(path)
        timeline = read_timeline(bundle)
        layout = BundleLayout(bundle)
        session, result = read_document(layout.session), read_document(layout.result)
        try:
            if _no_payloads_kept(bundle):  # re-derived from the source files, then checked
                pcm, image = rederive(timeline)
            else:
                kept = KeptPayloads(bundle, list(timeline.get("appends") or []))
                pcm, image = kept.pcm, kept.image
            recorded = RecordedInput.from_timeline(timeline, pcm, image)
        except (FileNotFoundError, RecordedInputError, UsageError) as exc:
            raise UsageError(f"{bundle}: {exc}", keywords=()) from None
        return cls(bundle, recorded, timeline, session, result)

    def session_config(self, ref_audio: str | None = None) -> SessionConfig:
        """The session the original asked for (a reference voice must be given again)."""
        sent = dict(self.session.get("config_sent") or {})
        audio = sent.get("audio") or {}
        config = SessionConfig(
            modalities=tuple(sent.get("modalities") or ("audio", "text")),
            input_audio_format=sent.get("input_audio_format", "pcm16"),
            output_audio_format=sent.get("output_audio_format", "pcm16"),
            input_sample_rate_hz=int(sent.get("sample_rate_hz", 16000)),
            output_sample_rate_hz=int((audio.get("output") or {}).get("sample_rate_hz", 24000)),
            turn_detection=sent.get("turn_detection"),
            extra_body=dict(sent.get("extra_body") or {}),
            **{k: sent[k] for k in _OPTIONAL if sent.get(k) is not None},
        )
        if ref_audio is not None:
            config = config.with_overrides(ref_audio=ref_audio_url(RunOptions(ref_audio=ref_audio)))
        return config

    @property
    def had_ref_audio(self) -> bool:
        """Whether the original session carried a reference voice (redacted in the bundle)."""
        return bool((self.session.get("config_sent") or {}).get("ref_audio"))


def _no_payloads_kept(bundle: Path) -> bool:
    """Neither `input.pcm` nor kept frames (`sent_frames/`, or an older bundle's `frames/`):
    recorded without --keep-payloads (one gone: damaged)."""
    return not BundleLayout(bundle).input_pcm.exists() and kept_frames_dir(bundle) is None


_OPTIONAL = (
    "overlap_policy", "playback_commit_policy", "instructions", "voice", "temperature",
    "max_response_output_tokens", "idle_timeout_s",
)  # fmt: skip


async def replay_bundle(
    path: str | Path,
    url: str | None = None,
    *,
    output_dir: str | Path | None = None,
    model: str | None = None,
    api_key: str | None = None,
    ref_audio: str | None = None,
    timeout_s: float = 30.0,
    progress: RunProgress | None = None,
    condition: ReplayCondition | None = None,
    replan: bool = False,
    thumbnails: bool = True,
) -> RunResult:
    """Send the bundle's recorded input to `url` (None: an embedded reference server).

    `condition` (a sweep's) may change the input or wrap the transport; then the input is
    on purpose not the original one. `replan=True` re-plans the recorded source on the
    server's grid when it is not the recorded one, instead of refusing (the result says so).
    `thumbnails=False` leaves the frame thumbnails (`frames/`) out of the new bundle.

    Returns the new run's `RunResult`; its bundle's `sent_sha256` equals the original's when
    the same input went out. A bad bundle or a different unit grid refuses with a
    `UsageError` (exit 2) before any input is sent.
    """
    if replan and condition is not None:
        raise UsageError("replan and a sweep condition are exclusive", keywords=("replan",))
    output_dir = Path(output_dir) if output_dir is not None else default_run_dir()
    check_outside(path, output_dir)
    # Reading (or re-deriving: decoding) the recorded input is blocking work: off the loop.
    recorded = await asyncio.to_thread(RecordedRun.load, path)
    progress = progress or RunProgress(figures=False)
    if recorded.had_ref_audio and ref_audio is None:
        progress.warn("the original session had a reference voice: pass ref_audio to send one")
    options = RunOptions(
        model=model if model is not None else recorded.session.get("model"),
        preset="none",
        config=recorded.session_config(ref_audio),
        api_key=api_key,
        timeout_s=timeout_s,
        keep_payloads=True,
        thumbnails=thumbnails,
        output_dir=output_dir,
        # the wire the recording spoke (docs/dialects.md): its session config is that one's
        dialect=str(recorded.session.get("dialect") or "duplex"),
    )
    sender = _sender(recorded, condition)
    if replan:
        sender = replan_sender(recorded.timeline, recorded.input, progress.warn, sender)
    appends = recorded.input.appends
    source = ReplaySource(sender, appends[-1].media_end_ms if appends else 0)
    return await run_session(url, options, source, progress=progress)


def check_outside(bundle: str | Path, output_dir: str | Path) -> None:
    """Refuse an output directory that is the replayed bundle or inside it: the replay would
    overwrite the recording it sends (and then compare itself with itself)."""
    source, out = Path(bundle).resolve(), Path(output_dir).resolve()
    if out == source or out.is_relative_to(source):
        where = "is the bundle being replayed" if out == source else "is inside the bundle"
        raise UsageError(
            f"output_dir {output_dir} {where} ({bundle}): the replay would overwrite the "
            "recording; choose another directory",
            param="output_dir",
        )


def _sender(recorded: RecordedRun, condition: ReplayCondition | None) -> Sender:
    facts = {k: recorded.timeline.get(k) for k in DESCRIBED}

    async def send(link: SourceLink) -> StreamResult:
        client, clock = link.client, link.clock
        mismatch = recorded.input.grid_mismatch(client.capabilities)
        if mismatch is not None:
            raise UsageError(f"{mismatch}: not replayed (nothing was sent)", keywords=())
        sent = recorded.input if condition is None else condition.input(recorded.input)
        target: StreamTarget = client if condition is None else condition.target(client, clock)
        return await send_recorded(
            target,
            sent,
            clock=clock,
            timeline=link.timeline,
            describe=facts,
            on_sent=link.on_sent,
        )

    return send


def replay_bundle_blocking(path: str | Path, url: str | None = None, **kw: Any) -> RunResult:
    """Blocking twin of `replay_bundle` for scripts and notebooks (inside a running event
    loop, a Jupyter cell, it runs on a worker thread with its own loop)."""
    from duplex_client.client.sync import run_blocking

    return run_blocking(replay_bundle(path, url, **kw))


def same_input(original: dict[str, Any], replay: dict[str, Any]) -> bool:
    """Whether two `input_timeline.json` documents record the same sent payloads."""
    a = (original.get("totals") or {}).get("sent_sha256")
    return a is not None and a == (replay.get("totals") or {}).get("sent_sha256")

"""Notebook-style walk-through: stream the sample clip and look at what came back.

Run as a script (`.venv/bin/python examples/notebook_stream.py`) or paste the cells into a
notebook. Without a URL the bundled reference server is started in-process; pass
`url="http://gpu-host:8099"` (and `ref_audio="voice.wav"`) to use a real MiniCPM-o server.
"""

# %% Stream the clip (blocking twin of `await duplex_client.run.stream_clip(...)`)
from pathlib import Path

from duplex_client.run import stream_clip_blocking

CLIP = Path(__file__).resolve().parent / "sample.mp4"
result = stream_clip_blocking(
    None,  # None: embedded reference server on a loopback port
    input_video=str(CLIP),
    tail_silence_s=1.0,  # paced on the media clock (realtime=False: as fast as possible,
    output_dir=Path("runs") / "notebook-example",  # but then nothing is heard or measured)
)

# %% Transport and lifecycle (not answer quality)
print("ok:", result.ok, "| status:", result.status, "| session:", result.session_id)
print("bundle:", result.bundle_dir)

# %% Decisions, one row per response or standalone listen
for d in result.decisions:
    print(
        f"unit {d['unit_index']!s:>4} {d['unit_kind'] or '':6} {d['decision']:6} {d['transcript']}"
    )

# %% Turns: when each answer was heard, and how long after the user stopped speaking
frame = result.turns_frame()  # a pandas DataFrame (the `notebook` extra); or result.turns
print(frame[["unit_index", "user_end_ms", "heard_start_ms", "latency_ms", "cut"]].to_string())
assert result.metrics is not None
latency = result.metrics["latency_ms"]
print(f"heard latency p50 {latency['p50']} ms, max {latency['max']} ms")
print("user speech from", result.metrics["user_end_source"], result.user_speech)

# %% What a listener heard, and the whole exchange (int16 at 24 kHz, sample 0 = media time 0)
heard, conversation = result.heard, result.conversation
print(f"heard: {len(heard) / 24000:.2f} s, conversation: {conversation.shape}")
audio = result.audio  # the answers as received, back to back (output.wav)
print(f"answer audio received: {len(audio) / 24000:.2f} s")

# %% What was sent: the input timeline
assert result.timeline is not None
totals = result.timeline["totals"]
print("appends:", totals["appends"], "| units:", totals["units"], "| audio ms:", totals["audio_ms"])
for row in result.timeline["appends"]:
    if row["frames"]:
        pts = [f["source_pts_ms"] for f in row["frames"]]
        print(
            f"  append {row['index']:>2} closes unit {row['unit_index']} ({row['unit_kind']}) "
            f"at audio {row['audio_end_ms']} ms with frame pts {pts}"
        )

"""Notebook-style walk-through: evaluate a small directory of clips and read the summary.

Run as a script (`.venv/bin/python examples/notebook_eval.py`, about 30 s) or paste the
cells into a notebook. In a notebook whose event loop is already running (Jupyter), write
`await run_eval_async(...)` where this script calls `run_eval(...)`. Without `urls` an
embedded reference server is started with as many sessions as `concurrency`; pass
`urls=["http://gpu-host:8099"]` (and `ref_audio="voice.wav"`) to use a real MiniCPM-o server.
"""

# %% A small dataset: copies of the sample clip, one of them in a subfolder
import shutil
from pathlib import Path

from duplex_client.eval import run_eval

SAMPLE = Path(__file__).resolve().parent / "sample.mp4"
ROOT = Path("runs") / "notebook-eval"
shutil.rmtree(ROOT, ignore_errors=True)  # start fresh, so the resume below shows something
CLIPS, OUT = ROOT / "clips", ROOT / "eval"
(CLIPS / "colours").mkdir(parents=True)
shutil.copy(SAMPLE, CLIPS / "first.mp4")
shutil.copy(SAMPLE, CLIPS / "colours" / "second.mp4")

# %% Run every clip: two at a time on the embedded server, 1 s of tail silence each
result = run_eval(
    CLIPS,  # a media directory; or a .jsonl/.csv manifest, or a Full-Duplex-Bench tree
    output_dir=OUT,  # one run bundle per item under OUT/items/<id>/, plus summary.*
    concurrency=2,
    tail_silence_s=1.0,  # any `stream_clip` option applies to every item
)
print("exit code:", result.exit_code, "| error:", result.error, "| unfinished:", result.unfinished)

# %% The aggregate (what summary.md shows): counts, pooled per-turn percentiles, failures
agg = result.summary
print(f"{agg['items']} items: {agg['ok']} ok, {agg['failed']} failed")
print(f"timing-valid {agg['timing_valid']}, timing-invalid {agg['timing_invalid']}")
for name in ("latency_ms", "server_ms", "overlap_ms", "gap_ms"):
    d = agg[name]
    print(f"  {name:11} turns {d['count']:2}  p50 {d['p50']}  p95 {d['p95']}  p99 {d['p99']}")
print("failures:", agg["failures"], "| endpoints:", agg["endpoints"])

# %% One row per item (summary.jsonl / summary.csv) as a pandas DataFrame (the `notebook` extra)
frame = result.frame()
print(frame[["id", "status", "timing_valid", "lateness_p99_ms", "latency_p50_ms"]].to_string())

# %% One item in detail: its result.json, with one row per spoken response in `turns`
record = result.items[0]
print("item:", record.label, "| bundle:", OUT / record.bundle, "| endpoint:", record.endpoint)
for turn in record.result["turns"]:
    print(
        f"  heard at {turn['heard_start_ms']} ms, user stopped at {turn['user_end_ms']} ms, "
        f"latency {turn['latency_ms']} ms: {turn['transcript']}"
    )

# %% Resume: the same call on the same output_dir runs only what is not finished yet
shutil.copy(SAMPLE, CLIPS / "third.mp4")  # a new item; the two finished ones are kept
first_result = OUT / "items" / "first.mp4" / "result.json"
before = first_result.stat().st_mtime_ns
again = run_eval(CLIPS, output_dir=OUT, concurrency=2, tail_silence_s=1.0)
print(f"{again.summary['items']} items in the summary, {again.summary['ok']} ok")
print("first.mp4 ran again:", first_result.stat().st_mtime_ns != before)  # False: kept as is
assert again.summary["items"] == 3 and again.exit_code == 0
assert (OUT / "summary.md").is_file()
print((OUT / "summary.md").read_text(encoding="utf-8").split("## Failures")[0])

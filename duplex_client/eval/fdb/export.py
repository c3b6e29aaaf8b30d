"""The Full-Duplex-Bench export: `output.wav` beside each sample, in the shape FDB's scorers read.

FDB's inference clients write the model's answer as `output.wav` beside each `input.wav`,
covering the same span of time (sample 0 = the first input sample); its scorers then take a
task folder as `--root_dir` and read `{ID}/output.wav`, the annotation JSON and, for the
timing script, `{ID}/input.wav`. `export_item` writes that shape from a run bundle's
`heard.wav`, at the 16 kHz mono FDB's backchannel scorer assumes (it runs Silero VAD on the
file without a rate). docs/eval.md ("Full-Duplex-Bench") has the references.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from duplex_client.bundle.layout import BundleLayout
from duplex_client.eval.fdb.tree import COMPANION_INPUTS, OUTPUT_DERIVED_FILES, OUTPUT_FILE
from duplex_client.eval.item import EvalItem

__all__ = ["OUTPUT_RATE_HZ", "ExportOutcome", "export_item"]

#: `output.wav`'s rate whatever the input's: `eval_backchannel.py` hands the file to Silero
#: VAD as 16 kHz (a 48 kHz file's segments came out 3x late), and FDB's example data pairs
#: a 48 kHz `input.wav` with a 16 kHz `output.wav`.
OUTPUT_RATE_HZ: Final = 16000
#: Shortfall of heard.wav worth a note: one 20 ms frame.
_FRAME_S: Final = 0.020


@dataclass(frozen=True, slots=True)
class ExportOutcome:
    """What `export_item` did: the `output.wav` written (None: none) and a one-line note."""

    path: Path | None
    #: Why nothing was written, or what was odd (heard.wav short, stale files removed).
    note: str | None = None


def _remove(folder: Path, names: tuple[str, ...]) -> list[str]:
    removed = []
    for name in names:
        target = folder / name
        if target.is_file():
            target.unlink()
            removed.append(name)
    return removed


def _copy(src: Path, dst: Path) -> None:
    """Copy `src` to `dst` atomically, skipping a copy an earlier export already made."""
    if dst.is_file():
        a, b = src.stat(), dst.stat()
        if a.st_size == b.st_size and a.st_mtime_ns == b.st_mtime_ns:
            return
    tmp = dst.with_name(dst.name + ".tmp")
    shutil.copy2(src, tmp)
    os.replace(tmp, dst)


def _copy_companions(src_dir: Path, dst_dir: Path) -> None:
    derived = set(OUTPUT_DERIVED_FILES)
    for src in sorted(src_dir.iterdir()):
        if not src.is_file() or src.name in derived:
            continue
        if src.suffix.lower() == ".json" or src.name in COMPANION_INPUTS:
            _copy(src, dst_dir / src.name)


def _same_wav(path: Path, samples: object, rate_hz: int) -> bool:
    """Whether `path` already holds exactly these mono PCM16 samples at this rate."""
    import wave

    import numpy as np

    if not path.is_file():
        return False
    try:
        with wave.open(str(path), "rb") as w:
            if (w.getnchannels(), w.getsampwidth(), w.getframerate()) != (1, 2, rate_hz):
                return False
            data = w.readframes(w.getnframes())
    except (wave.Error, EOFError, OSError):
        return False
    return data == np.ascontiguousarray(samples, dtype="<i2").tobytes()


def export_item(item: EvalItem, bundle_dir: Path, export_root: Path) -> ExportOutcome:
    """Write `export_root/<fdb_dir>/output.wav` from the bundle's `heard.wav`, FDB-aligned.

    The answer is resampled to 16 kHz mono (`OUTPUT_RATE_HZ`), as long as `input.wav`
    (its frames at 16 kHz, rounded; cut or zero-padded at the end), sample 0 = the first
    input sample. The item's
    JSON files (but those FDB derives from an answer) and `input.wav` / `clean_input.wav`
    are copied beside it first. Without a usable `heard.wav` nothing is written (an
    `output.wav` from an earlier export is deleted) and `note` says why.
    """
    import wave

    import numpy as np
    import soundfile as sf

    from duplex_client.bundle.wavfile import read_wav_pcm16, write_wav
    from duplex_client.media.resample import resample

    if item.fdb_dir is None:
        raise ValueError(f"item {item.id!r} is not from a Full-Duplex-Bench tree (no fdb_dir)")
    out_dir = export_root / item.fdb_dir
    out_path = out_dir / OUTPUT_FILE

    def nothing(why: str) -> ExportOutcome:
        removed = _remove(out_dir, (OUTPUT_FILE, *OUTPUT_DERIVED_FILES))
        if removed:
            why += f"; removed {', '.join(removed)} of an earlier export"
        return ExportOutcome(None, why)

    if item.error is not None or item.input_audio is None:
        return nothing(f"no output.wav: the item cannot run ({item.error or 'no input.wav'})")
    input_path = Path(item.input_audio)
    if out_dir.resolve() == input_path.parent.resolve():
        raise ValueError(f"{export_root}: the export must not be the input tree itself")
    heard_path = BundleLayout(bundle_dir).heard
    if not heard_path.is_file():
        return nothing(
            f"no output.wav: {heard_path} is missing (the item failed, or ran with --burst)"
        )
    try:
        info = sf.info(str(input_path))
    except (RuntimeError, OSError) as exc:
        return nothing(f"no output.wav: cannot read {input_path} ({exc})")
    rate = OUTPUT_RATE_HZ
    length = round(int(info.frames) * rate / int(info.samplerate))
    try:
        pcm_bytes, heard_rate = read_wav_pcm16(heard_path)
    except (wave.Error, ValueError, EOFError, OSError) as exc:
        return nothing(f"no output.wav: cannot read {heard_path} ({exc})")

    heard = resample(np.frombuffer(pcm_bytes, dtype="<i2"), heard_rate, rate)
    note = None
    if len(heard) < length:
        short_ms = (length - len(heard)) * 1000.0 / rate
        if short_ms > _FRAME_S * 1000.0:
            note = f"heard.wav is {short_ms:.0f} ms shorter than input.wav: zero-padded"
        heard = np.concatenate([heard, np.zeros(length - len(heard), dtype=np.int16)])
    heard = heard[:length]

    out_dir.mkdir(parents=True, exist_ok=True)
    _copy_companions(input_path.parent, out_dir)
    if not _same_wav(out_path, heard, rate):
        removed = _remove(out_dir, OUTPUT_DERIVED_FILES)
        if removed:
            stale = f"removed stale {', '.join(removed)}"
            note = stale if note is None else f"{note}; {stale}"
        write_wav(out_path, heard, rate)
    return ExportOutcome(out_path, note)

"""Speech recognition with pocketsphinx (BSD; its wheel ships the en-us model), closed vocabulary.

The decoder uses the bundled acoustic model with a small trigram language model and dictionary
built at load time from `lexicon.PHRASES` (pocketsphinx's own ARPA builder, written to a
temporary directory), so it can only hypothesise reviewed words; the hypothesis is filtered
against that vocabulary again as a second guard (fillers such as `<sil>` go too). Loading
takes tens of milliseconds instead of the full dictionary's seconds.
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Final

import numpy as np

from duplex_client.server.engine.lexicon import PHRASES
from duplex_client.server.engine.pcm import MODEL_RATE_HZ, Samples, to_pcm16

#: Longest audio decoded at once (older audio of a longer utterance is dropped).
MAX_UTTERANCE_S: Final = 30


class AsrUnavailableError(RuntimeError):
    """pocketsphinx or its bundled model is missing."""


def _dictionary_lines(dict_path: Path, words: frozenset[str]) -> list[str]:
    lines = []
    with open(dict_path, encoding="utf-8") as source:
        for line in source:
            head = line.split(" ", 1)[0]
            if head.split("(", 1)[0] in words:
                lines.append(line if line.endswith("\n") else line + "\n")
    return lines


class Recognizer:
    """One pocketsphinx decoder over the closed vocabulary; `transcribe` is serialised."""

    def __init__(self, phrases: tuple[str, ...] = PHRASES) -> None:
        try:
            import pocketsphinx
            from pocketsphinx.lm import ArpaBoLM
        except ImportError as exc:
            raise AsrUnavailableError(
                "the speech engine needs pocketsphinx: pip install 'duplex-client[server]'"
            ) from exc
        model_dir = Path(pocketsphinx.get_model_path()) / "en-us"
        source_dict = model_dir / "cmudict-en-us.dict"
        if not source_dict.is_file():
            raise AsrUnavailableError(f"pocketsphinx dictionary not found at {source_dict}")
        words = frozenset(w for p in phrases for w in p.split())
        lines = _dictionary_lines(source_dict, words)
        known = {line.split(" ", 1)[0].split("(", 1)[0] for line in lines}
        self.vocabulary = frozenset(known)
        self.missing = words - known
        with tempfile.TemporaryDirectory(prefix="duplex-asr-") as tmp:
            lm_path = os.path.join(tmp, "phrases.lm")
            dict_path = os.path.join(tmp, "phrases.dict")
            with open(dict_path, "w", encoding="utf-8") as out:
                out.writelines(lines)
            usable = [" ".join(w for w in p.split() if w in known) for p in phrases]
            lm = ArpaBoLM(text="\n".join(u for u in usable if u), add_start=True, case="lower")
            lm.compute()
            lm.write_file(lm_path)
            self._decoder: Any = pocketsphinx.Decoder(
                hmm=str(model_dir / "en-us"),
                lm=lm_path,
                dict=dict_path,
                samprate=MODEL_RATE_HZ,
                logfn=os.devnull,
            )
        self._lock = threading.Lock()

    def transcribe(self, samples: Samples) -> str:
        """The words heard in 16 kHz float samples (lower case, vocabulary only; may be "")."""
        keep = MAX_UTTERANCE_S * MODEL_RATE_HZ
        if len(samples) > keep:
            samples = samples[-keep:]
        if not len(samples):
            return ""
        raw = to_pcm16(np.asarray(samples, dtype=np.float32))
        with self._lock:
            self._decoder.start_utt()
            self._decoder.process_raw(raw, full_utt=True)
            self._decoder.end_utt()
            hyp = self._decoder.hyp()
        text = hyp.hypstr if hyp is not None else ""
        return " ".join(w for w in text.lower().split() if w in self.vocabulary)


_shared: Recognizer | None = None
_shared_lock = threading.Lock()


def shared_recognizer() -> Recognizer:
    """The process-wide recogniser, loaded on first use."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Recognizer()
        return _shared

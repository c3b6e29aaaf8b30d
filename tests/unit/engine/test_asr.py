"""Pocketsphinx over the closed vocabulary: key words of clear speech, nothing else, ever."""

from __future__ import annotations

import numpy as np

from duplex_client.server.engine.asr import shared_recognizer
from duplex_client.server.engine.lexicon import VOCABULARY, allowed_words
from duplex_client.server.engine.pcm import to_float
from duplex_client.server.engine.tts import speech_pcm16


def test_a_clear_sentence_yields_its_key_words() -> None:
    pcm = speech_pcm16("please tell me the color you see", 16000, lead_ms=300, tail_ms=300)
    words = shared_recognizer().transcribe(to_float(pcm)).split()
    assert {"tell", "color", "see"} <= set(words)


def test_another_sentence_yields_its_key_words() -> None:
    pcm = speech_pcm16("is it red or green", 16000, lead_ms=300, tail_ms=300)
    words = shared_recognizer().transcribe(to_float(pcm)).split()
    assert {"red", "green"} <= set(words)


def test_output_stays_inside_the_reviewed_vocabulary() -> None:
    recognizer = shared_recognizer()
    assert recognizer.vocabulary <= VOCABULARY
    assert not recognizer.missing
    rng = np.random.default_rng(3)
    noise = (rng.standard_normal(2 * 16000) * 0.2).astype(np.float32)
    babble = to_float(speech_pcm16("xylophone quantum zebra marmalade", 16000))
    for samples in (noise, babble, np.zeros(16000, np.float32), np.zeros(0, np.float32)):
        assert set(recognizer.transcribe(samples).split()) <= VOCABULARY


def test_vocabulary_is_plain_lower_case_words_and_the_filter_drops_others() -> None:
    assert all(w.isalpha() and w.islower() for w in VOCABULARY)
    assert allowed_words("Hello <sil> [NOISE] quantum RED") == "hello red"

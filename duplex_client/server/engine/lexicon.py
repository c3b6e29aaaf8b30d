"""The recogniser's closed vocabulary: the phrases its language model is built from.

Pocketsphinx's open vocabulary is poor on synthetic voices and can turn noise into unfortunate
words. Our server only ever hears (and says back) words from these phrases: a small camera
assistant's world of greetings, questions about what it sees, colours, numbers and objects.
Every word was reviewed by hand; `allowed_words` drops anything else.
"""

from __future__ import annotations

from typing import Final

PHRASES: Final = (
    # greetings and small talk
    "hello",
    "hi there",
    "hello can you hear me",
    "good morning",
    "good afternoon",
    "good evening",
    "how are you today",
    "thank you",
    "thanks a lot",
    "goodbye",
    "yes",
    "no",
    "okay",
    "please",
    "sorry",
    "stop",
    "wait",
    "try again",
    "say hello",
    "say something",
    "repeat after me",
    # what the camera shows
    "what do you see",
    "what can you see",
    "can you see me",
    "can you see my hand",
    "look at the camera",
    "look at this",
    "what is this",
    "what color is this",
    "what color do you see",
    "tell me the color",
    "tell me what color you see",
    "please tell me the color you see",
    "tell me what you see",
    "tell me the color of the ball",
    "look at the table and tell me the color",
    "describe what you see",
    "what is on the table",
    "what am i holding",
    "is it red or green",
    "is it blue",
    "which color is it",
    "show me the ball",
    "where is the cup",
    "how many fingers",
    "watch the door",
    "tell me when it changes",
    "tell me when the light turns green",
    "let me know if something changes",
    "keep watching",
    # the time (the get_time tool, protocol.md "Tools")
    "what time is it",
    "what is the time",
    "tell me the time",
    # statements about things
    "the ball is red",
    "this shirt is blue",
    "my car is white",
    "the sky is blue",
    "the grass is green",
    "the sun is yellow",
    "i like the black cat",
    "the dog is brown",
    "the apple is red",
    "the banana is yellow",
    "the book is on the table",
    "the phone is in my hand",
    "open the door",
    "close the window",
    "turn on the light",
    "turn off the light",
    # words on their own
    "one two three four five six seven eight nine ten",
    "red orange yellow green blue purple pink brown black white gray",
    "ball cup book box shirt hat hand finger face phone",
    "table chair door window light car cat dog apple banana wall floor",
)

VOCABULARY: Final = frozenset(word for phrase in PHRASES for word in phrase.split())


def allowed_words(text: str) -> str:
    """`text` lower-cased with every word outside the vocabulary removed."""
    return " ".join(w for w in text.lower().split() if w in VOCABULARY)

"""The names of a run bundle's files."""

HEARD_FILE = "heard.wav"
CONVERSATION_FILE = "conversation.wav"
#: The input as sent, on the media clock (removed once the conversation mix is written).
SENT_FILE = ".sent_input.pcm"

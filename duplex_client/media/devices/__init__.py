"""Live devices: microphone, camera, speaker and terminal keys, and their file-backed twins.

Light on import: sounddevice (PortAudio) and OpenCV load only when a device starts.
"""

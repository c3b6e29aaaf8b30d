"""Sans-I/O analysis of a run: what a listener heard, turns, latency and metrics."""

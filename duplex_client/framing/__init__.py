"""Sans-I/O framing: unit grid, media clock, framer and input timeline."""

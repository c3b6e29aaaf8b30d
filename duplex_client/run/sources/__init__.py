"""Where a run's input comes from: files, a recorded run, or live devices."""

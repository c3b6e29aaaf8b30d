"""Benchmarks: each `bench_*.py` module runs alone with `python -m benchmarks.bench_<name>`."""

"""Benchmarks (not timed tests): run with `python -m bench`; results go to bench/RESULTS.md."""

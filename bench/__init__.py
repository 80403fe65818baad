"""Benchmarks: `make bench` (or `python -m bench.<name>`); medians and same-run ratios."""

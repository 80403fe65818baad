"""The demo store: a deterministic catalog served over HTTP, with switchable misbehaviour.

Used by the demo, the tests and the benchmarks; ``python -m standins.demo_site --help``.
"""

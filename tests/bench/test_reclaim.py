"""``bench.reclaim`` at toy sizes on the session's Redis: both scripts reclaim exactly the
dead workers' leases every round (the bench raises otherwise) and the report prints."""

from __future__ import annotations

import argparse

import pytest

from bench.reclaim import Scenario, measure, report
from harness.redis_server import RedisServer


def test_reclaim_bench_runs_and_reclaims_exactly_the_dead_leases(
    redis_server: RedisServer, capsys: pytest.CaptureFixture[str]
) -> None:
    args = argparse.Namespace(rounds=2, live_workers=3, dead_workers=2, dead_leases=4)
    server = redis_server.client()
    try:
        results: dict[int, dict[str, float]] = {}
        for size in (10, 300):
            scenario = Scenario(server, size, args)
            times = measure(scenario, args.rounds)
            assert all(len(values) == args.rounds for values in times.values())
            results[size] = {name: min(values) for name, values in times.items()}
            assert scenario.frontier.leased() == size  # live workers' leases untouched
        report(results, [10, 300], args)
    finally:
        server.flushdb()
    out = capsys.readouterr().out
    assert "reclaim() old HGETALL" in out and "drain poll bounded" in out

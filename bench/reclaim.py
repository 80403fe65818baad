"""Reclaim and drain-poll cost: bounded reclaim (deadlines + lease sets) vs the old HGETALL.

    .venv/bin/python -m bench.reclaim [--rounds 15] [--sizes 100 100000]

A real Redis is started for the run. For each size N, ``--live-workers`` live workers
(heartbeat TTL of an hour) hold N leases between them, and before every timed call
``--dead-workers`` workers that never heartbeat lease ``--dead-leases`` entries each, so
every call re-queues the same dead leases. Timed, interleaved in each round:

* ``reclaim()``: one call of ``RedisFrontier.reclaim`` (what every worker heartbeat
  runs), and one call of the previous script, kept below as the baseline: HGETALL of
  the whole lease-owner hash and an EXISTS per owner.
* ``drain_state()``: one drain poll (reclaim, live workers, counters, queue sizes,
  stability probe), as is and with the old script as its reclaim step.

The report gives the median of the rounds in ms, the ratio of the cost at the largest
size to the smallest for each, and bounded/old at the largest size, all from this run.
The frontier has one partition here (one Redis): the baseline works on the same keys.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import redis

import core.frontier.drain
from bench import smoke
from core.frontier.drain import drain_state
from core.frontier.queue import START_MARKER, RedisFrontier
from core.frontier.workers import WorkerInfo, WorkerRegistry
from harness.redis_server import RedisServer

SITE = "bench"
JOB = "bench-job"

# The reclaim script before deadlines and lease sets (the baseline), on today's keys (a
# list per priority instead of one sorted set; otherwise verbatim).
# KEYS: priorities, leases, lease priorities, owners, start_list
# ARGV: heartbeat key prefix, start marker, worker to release ('' = only dead workers),
#       queue prefix
OLD_RECLAIM = """
local owners = redis.call('HGETALL', KEYS[4])
local alive = {}
local n = 0
for i = 1, #owners, 2 do
  local id, worker = owners[i], owners[i + 1]
  if alive[worker] == nil then
    alive[worker] = worker ~= ARGV[3] and redis.call('EXISTS', ARGV[1] .. worker) == 1
  end
  if not alive[worker] then
    local data = redis.call('HGET', KEYS[2], id)
    local score = redis.call('HGET', KEYS[3], id)
    if data then
      if score == ARGV[2] then
        redis.call('RPUSH', KEYS[5], data)
      else
        redis.call('LPUSH', ARGV[4] .. score, data)
        redis.call('ZADD', KEYS[1], -tonumber(score), score)
      end
    end
    redis.call('HDEL', KEYS[2], id)
    redis.call('HDEL', KEYS[3], id)
    redis.call('HDEL', KEYS[4], id)
    n = n + 1
  end
end
return n
"""


class OldReclaimFrontier(RedisFrontier):
    """The frontier with the old reclaim script (for the baseline's drain poll too)."""

    def reclaim(self, *, release_worker: str = "", **_: int) -> int:
        k = self.parts[0]
        script = self.server.register_script(OLD_RECLAIM)
        return int(
            script(
                keys=[k.priorities, k.leases, k.lease_priorities, k.lease_owners, k.start_urls],
                args=[self.keys.worker_prefix, START_MARKER, release_worker, k.queue_prefix],
            )
        )


class Scenario:
    """N leases held by live workers; dead workers' leases set up again before each call."""

    def __init__(self, server: redis.Redis, size: int, args: argparse.Namespace) -> None:
        self.server = server
        self.frontier = RedisFrontier(server, SITE, 1)
        self.dead = [f"dead-{i}" for i in range(args.dead_workers)]
        self.dead_leases = args.dead_leases
        server.flushdb()
        spare = len(self.dead) * self.dead_leases
        self._fill_queue(size + spare)
        registry = WorkerRegistry(server, SITE, ttl=3600)
        live = [f"live-{i}" for i in range(args.live_workers)]
        for worker in live:
            registry.heartbeat(WorkerInfo(worker_id=worker, site=SITE, idle=False))
        for i, worker in enumerate(live):
            share = size // len(live) + (1 if i < size % len(live) else 0)
            while share:
                share -= len(self.frontier.lease(worker, min(share, 10_000)))
        assert self.frontier.leased() == size and self.frontier.queued() == spare

    def _fill_queue(self, n: int) -> None:
        part = self.frontier.parts[0]
        for start in range(0, n, 10_000):
            chunk = range(start, min(n, start + 10_000))
            self.server.rpush(part.queue(0), *(f"request-{i}".encode() for i in chunk))
        self.server.zadd(part.priorities, {"0": 0})

    def lease_dead(self) -> None:
        for worker in self.dead:
            self.frontier.lease(worker, self.dead_leases)

    def forget_dead(self) -> None:
        """After the old script: it leaves the dead workers' lease sets and deadlines."""
        part = self.frontier.parts[0]
        self.server.delete(*(part.worker_leases(worker) for worker in self.dead))
        self.server.zrem(self.frontier.keys.worker_deadlines, *self.dead)

    @property
    def expected(self) -> int:
        return len(self.dead) * self.dead_leases


def timed(call: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    result = call()
    return (time.perf_counter() - started) * 1000, result


@contextmanager
def old_reclaim_in_drain() -> Iterator[None]:
    with mock.patch.object(core.frontier.drain, "RedisFrontier", OldReclaimFrontier):
        yield


def measure(scenario: Scenario, rounds: int) -> dict[str, list[float]]:
    server = scenario.server
    old = OldReclaimFrontier(server, SITE, 1)

    def drain_new() -> int:
        return drain_state(server, SITE, JOB).reclaimed

    def drain_old() -> int:
        with old_reclaim_in_drain():
            return drain_state(server, SITE, JOB).reclaimed

    configs: dict[str, tuple[Callable[[], object], bool]] = {
        "reclaim() bounded": (scenario.frontier.reclaim, False),
        "reclaim() old HGETALL": (old.reclaim, True),
        "drain poll bounded": (drain_new, False),
        "drain poll old HGETALL": (drain_old, True),
    }
    times: dict[str, list[float]] = {name: [] for name in configs}
    for _ in range(rounds):
        for name, (call, is_old) in configs.items():
            scenario.lease_dead()
            ms, reclaimed = timed(call)
            if reclaimed != scenario.expected:
                raise RuntimeError(f"{name} reclaimed {reclaimed}, expected {scenario.expected}")
            if is_old:
                scenario.forget_dead()
            times[name].append(ms)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 100_000])
    parser.add_argument("--live-workers", type=int, default=8)
    parser.add_argument("--dead-workers", type=int, default=3)
    parser.add_argument("--dead-leases", type=int, default=10)
    args = smoke.parse_args(parser, argv, rounds=2, sizes=[10, 300])
    sizes = sorted(args.sizes)

    results: dict[int, dict[str, float]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="bench-reclaim-") as tmp,
        RedisServer(run_dir=Path(tmp)) as redis_server,
    ):
        server = redis_server.client()
        for size in sizes:
            started = time.monotonic()
            scenario = Scenario(server, size, args)
            times = measure(scenario, args.rounds)
            results[size] = {name: statistics.median(v) for name, v in times.items()}
            print(
                f"  {size} leases: {args.rounds} rounds in {time.monotonic() - started:.1f}s",
                file=sys.stderr,
            )
    report(results, sizes, args)
    return 0


def report(
    results: dict[int, dict[str, float]],
    sizes: list[int],
    args: argparse.Namespace,
) -> None:
    small, large = sizes[0], sizes[-1]
    print(
        f"\n{args.live_workers} live workers hold N leases; {args.dead_workers} dead workers "
        f"hold {args.dead_leases} each (re-queued by every call); median of {args.rounds} "
        "rounds, ms"
    )
    header = "".join(f"{f'N={size:,}':>14}" for size in sizes)
    print(f"{'operation':<26}{header}{f'{large:,}/{small:,}':>16}")
    for name in results[small]:
        row = "".join(f"{results[size][name]:>14.3f}" for size in sizes)
        ratio = results[large][name] / results[small][name]
        print(f"{name:<26}{row}{ratio:>15.1f}x")
    for op in ("reclaim()", "drain poll"):
        bounded, old = results[large][f"{op} bounded"], results[large][f"{op} old HGETALL"]
        print(
            f"{op} bounded / old at N={large:,}: {bounded / old:.3f}x ({old / bounded:.0f}x faster)"
        )


if __name__ == "__main__":
    raise SystemExit(main())

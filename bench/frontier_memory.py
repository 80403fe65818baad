"""Redis memory per queued URL and per seen URL: the frontier's compact entries and
binary fingerprints against the previous format, and one site's partitions over a
3-master Redis Cluster.

    .venv/bin/python -m bench.frontier_memory [--urls 1000000] [--cluster-urls 300000]
                                              [--partitions 6]

Seeded realistic requests are queued through ``LeasedQueue`` into the previous format
(pickled sorted-set members, hex fingerprints) and this frontier, in two fresh Redis
servers; bytes per URL are ``used_memory`` deltas (cross-checked by ``MEMORY USAGE``);
then each cluster master's share of one partitioned site. What the formats are:
docs/frontier.md "Memory".
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import redis
from scrapy import Request, Spider
from scrapy_redis import picklecompat

from bench import smoke
from core.frontier.queue import Push, RedisFrontier
from core.redis_client import connect
from crawlers.frontier.queue import LeasedQueue
from harness.redis_server import RedisCluster, RedisServer

SITE = "hotels"
JOB = "hotels-20261207T072100Z-3f9a1c"
BATCH = 1000
GOAL_QUEUED, GOAL_SEEN, GOAL_SHARE = 200, 40, 0.10

WORDS = tuple(
    [
        "gran",
        "hotel",
        "la",
        "florida",
        "barcelona",
        "palace",
        "suites",
        "boutique",
        "plaza",
        "mar",
        "sol",
        "playa",
        "centro",
        "casa",
        "apartamentos",
        "villa",
        "resort",
        "spa",
        "royal",
        "park",
        "real",
        "jardin",
        "vista",
        "lisboa",
        "porto",
        "roma",
        "milano",
        "paris",
        "madrid",
        "sevilla",
        "valencia",
        "bilbao",
        "malaga",
        "hostal",
        "posada",
        "del",
        "de",
        "los",
        "las",
        "camera",
        "lampada",
        "divano",
        "tavolo",
        "sedia",
        "cuscino",
        "scarpe",
        "giacca",
        "borsa",
        "orologio",
    ]
)
COUNTRIES = ("es", "pt", "it", "fr", "de", "gb")


class MemorySpider(Spider):
    name = SITE

    def parse_hotel(self, response: Any) -> None: ...

    def parse_product(self, response: Any) -> None: ...

    def parse_listing(self, response: Any) -> None: ...


def slug(rng: random.Random) -> str:
    return "-".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5)))


def requests(spider: MemorySpider, n: int, seed: int = 45) -> Iterator[Request]:
    """``n`` distinct requests as a hotel site's and a shop's crawl queues them."""
    rng = random.Random(seed)
    for i in range(n):
        kind = rng.random()
        meta = {"job_id": JOB, "depth": rng.randint(1, 5)}
        if kind < 0.55:
            cc = rng.choice(COUNTRIES)
            url = f"https://www.hotels-example.com/hotel/{cc}/{slug(rng)}-{i}.{cc}.html"
            if rng.random() < 0.5:
                day = rng.randint(1, 28)
                url += f"?checkin=2026-12-{day:02d}&checkout=2026-12-{day + 1:02d}&group_adults=2"
            yield Request(url, callback=spider.parse_hotel, meta=meta, priority=1)
        elif kind < 0.85:
            url = f"https://www.shop-example.it/{rng.choice(WORDS)}/{slug(rng)}-p{100000 + i}.html"
            yield Request(url, callback=spider.parse_product, meta=meta, priority=1)
        else:
            url = f"https://www.hotels-example.com/searchresults.{rng.choice(COUNTRIES)}.html"
            url += f"?dest_id=-{rng.randint(100000, 999999)}&offset={25 * (i % 40)}&i={i}"
            yield Request(url, callback=spider.parse_listing, meta=meta)


def digest(request: Request) -> bytes:
    """A 20-byte SHA-1 digest of the request, as Scrapy's fingerprints are (theirs costs
    ~0.1 ms more per request: minutes at 1M, and the bytes stored are the same)."""
    return hashlib.sha1(f"{request.method} {request.url}".encode()).digest()


def used(server: redis.Redis) -> int:
    return int(server.info("memory")["used_memory"])


def memory_usage(server: redis.Redis, pattern: str) -> int:
    keys = list(server.scan_iter(match=pattern, count=10_000))
    total = 0
    for start in range(0, len(keys), 5000):
        with server.pipeline(transaction=False) as pipe:
            for key in keys[start : start + 5000]:
                pipe.memory_usage(key, samples=0)
            total += sum(int(n or 0) for n in pipe.execute())
    return total


class Formats:
    """The same requests queued in both formats, each in its own Redis."""

    def __init__(self, old: redis.Redis, new: redis.Redis, partitions: int = 1) -> None:
        self.spider = MemorySpider()
        self.old, self.new = old, new
        self.queue = LeasedQueue(new, self.spider, worker_id="bench", batch=1)
        self.frontier = RedisFrontier.adopt(new, SITE, partitions)
        self.seq = 0

    def fill(self, n: int, *, old: bool = True) -> None:
        fingerprint = digest
        batch: list[Request] = []
        for request in requests(self.spider, n):
            batch.append(request)
            if len(batch) == BATCH:
                self._push(batch, fingerprint, old)
                batch = []
        if batch:
            self._push(batch, fingerprint, old)

    def _push(self, batch: list[Request], fingerprint: Any, old: bool) -> None:
        digests = [fingerprint(request) for request in batch]
        entries = [
            Push(self.queue.encode(r)[0], r.priority, None, JOB, d)
            for r, d in zip(batch, digests, strict=True)
        ]
        if not all(self.frontier.push_many(entries)):
            raise RuntimeError("a distinct request was found seen: the seen-set is not exact")
        if not old:
            return
        with self.old.pipeline(transaction=False) as pipe:
            for request, digest in zip(batch, digests, strict=True):
                self.seq += 1
                data = picklecompat.dumps(self.queue.request_dict(request))
                pipe.zadd("{hotels}:requests", {data: -request.priority * 1e10 + self.seq})
                pipe.sadd(f"{{hotels}}:job:{JOB}:seen", digest.hex())
            pipe.execute()


def per_url(n: int, **deltas: int) -> dict[str, float]:
    return {name: value / n for name, value in deltas.items()}


def measure_single(n: int) -> dict[str, dict[str, float]]:
    with (
        tempfile.TemporaryDirectory(prefix="bench-frontier-memory-") as tmp,
        RedisServer(run_dir=Path(tmp)) as old_server,
        RedisServer(run_dir=Path(tmp)) as new_server,
    ):
        old, new = old_server.client(), new_server.client()
        old0, new0 = used(old), used(new)
        formats = Formats(old, new)
        started = time.monotonic()
        formats.fill(n)
        print(f"  {n:,} URLs queued twice in {time.monotonic() - started:.0f}s", file=sys.stderr)
        old1, new1 = used(old), used(new)
        usage_old_queue = int(old.memory_usage("{hotels}:requests", samples=0) or 0)
        usage_old_seen = int(old.memory_usage(f"{{hotels}}:job:{JOB}:seen", samples=0) or 0)
        usage_new_queue = memory_usage(new, "{hotels}:queue:*") + memory_usage(
            new, "{hotels}:priorities"
        )
        usage_new_seen = memory_usage(new, f"{{hotels}}:job:{JOB}:seen:*")
        if formats.frontier.queued() != n or old.zcard("{hotels}:requests") != n:
            raise RuntimeError("not every URL was queued")
        old.delete("{hotels}:requests")
        formats.frontier.clear()
        old2, new2 = used(old), used(new)
    return {
        "previous format": per_url(
            n,
            queued=old1 - old2,
            seen=old2 - old0,
            queued_usage=usage_old_queue,
            seen_usage=usage_old_seen,
        ),
        "this frontier": per_url(
            n,
            queued=new1 - new2,
            seen=new2 - new0,
            queued_usage=usage_new_queue,
            seen_usage=usage_new_seen,
        ),
    }


def measure_cluster(n: int, partitions: int) -> list[dict[str, Any]]:
    """Each master's part of one site's frontier of ``partitions`` partitions."""
    with (
        tempfile.TemporaryDirectory(prefix="bench-frontier-cluster-") as tmp,
        RedisCluster(run_dir=Path(tmp)) as cluster,
    ):
        client = connect(cluster.url, cluster=True)
        nodes = {node.port: redis.Redis(port=node.port) for node in cluster.nodes}
        before = {port: used(node) for port, node in nodes.items()}
        formats = Formats(client, client, partitions)  # type: ignore[arg-type]
        formats.fill(n, old=False)
        after = {port: used(node) for port, node in nodes.items()}
        rows: dict[int, dict[str, Any]] = {
            port: {"master": port, "partitions": 0, "urls": 0} for port in nodes
        }
        frontier = formats.frontier
        for part, queued in zip(frontier.parts, frontier.queued_by_partition(), strict=True):
            port = int(client.get_node_from_key(part.leases).port)
            rows[port]["partitions"] += 1
            rows[port]["urls"] += queued
        total = sum(after[p] - before[p] for p in nodes)
        for port, row in rows.items():
            row["bytes"] = after[port] - before[port]
            row["share"] = row["bytes"] / total
        client.close()
        for node in nodes.values():
            node.close()
    return list(rows.values())


def report(single: dict[str, dict[str, float]], rows: list[dict[str, Any]], n: int) -> bool:
    print(f"\nbytes per URL in Redis at {n:,} URLs (used_memory deltas; MEMORY USAGE sums)")
    print(f"{'format':<18}{'queued':>10}{'(usage)':>10}{'seen':>10}{'(usage)':>10}")
    for name, f in single.items():
        print(
            f"{name:<18}{f['queued']:>10.1f}{f['queued_usage']:>10.1f}"
            f"{f['seen']:>10.1f}{f['seen_usage']:>10.1f}"
        )
    old, new = single["previous format"], single["this frontier"]
    print(
        f"ratio this / previous: queued {new['queued'] / old['queued']:.3f}x, "
        f"seen {new['seen'] / old['seen']:.3f}x"
    )
    urls = sum(row["urls"] for row in rows)
    parts = sum(row["partitions"] for row in rows)
    print(f"\none site, {parts} partitions, {urls:,} URLs on a 3-master cluster")
    print(f"{'master':<10}{'partitions':>12}{'URLs':>12}{'MB':>10}{'share':>10}{'vs even':>10}")
    even = 1 / len(rows)
    worst = 0.0
    for row in sorted(rows, key=lambda r: r["master"]):
        off = row["share"] / even - 1
        worst = max(worst, abs(off))
        print(
            f"{row['master']:<10}{row['partitions']:>12}{row['urls']:>12,}"
            f"{row['bytes'] / 1e6:>10.1f}{row['share']:>10.1%}{off:>+10.1%}"
        )
    goals = {
        f"<= {GOAL_QUEUED} bytes per queued URL": new["queued"] <= GOAL_QUEUED,
        f"<= {GOAL_SEEN} bytes per seen URL": new["seen"] <= GOAL_SEEN,
        f"every master within {GOAL_SHARE:.0%} of an even share": worst <= GOAL_SHARE,
    }
    for goal, met in goals.items():
        print(f"goal: {goal}: {'met' if met else 'NOT met'}")
    return all(goals.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--urls", type=int, default=1_000_000, help="URLs on one Redis")
    parser.add_argument("--cluster-urls", type=int, default=300_000)
    parser.add_argument("--partitions", type=int, default=6, help="of the site on the cluster")
    args = smoke.parse_args(parser, argv, urls=3000, cluster_urls=3000)
    single = measure_single(args.urls)
    rows = measure_cluster(args.cluster_urls, args.partitions)
    return smoke.goals_status(args, report(single, rows, args.urls))


if __name__ == "__main__":
    raise SystemExit(main())

"""Which layout a site's frontier has in Redis: its partition count (recorded by the
producer, ``core.frontier.queue.RedisFrontier.adopt``), where a fingerprint and a lease live in
it, and the refusal of the previous format."""

from __future__ import annotations

from core.errors import OperatorError
from core.keys import SiteKeys
from core.lua import load_script
from core.redis_client import AsyncClient, Client

# A job's seen-set in a partition is one small hash per value of a fingerprint's first
# SEEN_BUCKET_BITS bits (16,384 buckets): up to ~120 fingerprints each, Redis keeps a hash
# a listpack (hash-max-listpack-entries 128), ~23 bytes per fingerprint; ~1.4M URLs per
# job and partition fit so (docs/frontier.md, "Memory").
SEEN_BUCKET_BITS = 14


def seen_bucket(fingerprint: bytes) -> tuple[str, bytes]:
    """The bucket (hex, part of the key) and the field of a fingerprint: together they
    are the whole digest, so the set is exact."""
    bucket = int.from_bytes(fingerprint[:2].ljust(2, b"\0"), "big") >> (16 - SEEN_BUCKET_BITS)
    return f"{bucket:04x}", fingerprint[SEEN_BUCKET_BITS // 8 :]


def partition_of(fingerprint: bytes, partitions: int) -> int:
    """The partition of a request fingerprint (a digest: its bytes are uniform)."""
    return int.from_bytes(fingerprint[-4:], "big") % partitions


def lease_partition(lease_id: str) -> int:
    head, _, _ = lease_id.partition(".")
    return int(head)


class FrontierLayoutError(OperatorError):
    """The site's frontier in Redis is in another layout than this process would write."""


def stored_partitions(server: Client, site: str) -> int:
    """How many partitions the site's frontier has in Redis (1 when never recorded)."""
    raw = server.get(SiteKeys(site).frontier_partitions)
    return int(raw) if raw else 1


def check_format(server: Client, site: str) -> None:
    """Refuse, in one line naming the fix, a frontier left in the previous format (one
    sorted set of pickled requests): its requests would be invisible to this one."""
    queue, leases = SiteKeys(site).previous_frontier
    with server.pipeline(transaction=False) as pipe:
        pipe.zcard(queue)
        pipe.hlen(leases)
        queued, leased = (int(n) for n in pipe.execute())
    if queued or leased:
        raise FrontierLayoutError(
            f"{site}: Redis holds {queued} queued and {leased} leased requests in the previous "
            f"frontier format ({queue}, {leases}): finish that job with the previous release, "
            f"or drop them with `redis-cli DEL {queue} {leases}` and produce the job again"
        )


async def clear_async(server: AsyncClient, site: str) -> None:
    """``RedisFrontier.clear`` on an asyncio client (a job's budget ended it)."""
    keys = SiteKeys(site)
    raw = await server.get(keys.frontier_partitions)
    n = int(raw) if raw else 1
    script = server.register_script(load_script("core.frontier", "clear"))
    for i in range(n):
        part = keys.partition(i, n)
        await script(keys=[part.priorities, part.start_urls], args=[part.queue_prefix])

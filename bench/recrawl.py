"""Re-crawl cost and change detection on the demo shop (issue 19).

    .venv/bin/python -m bench.recrawl [--products 1200] [--workers 2] [--seed 7]
        [--extra-runs N] [--run-dir DIR]

On its own demo shop, Redis, Elasticsearch node and full-path workers: a first and a
second crawl of the unchanged shop (requests and bytes; again without card skips), a
revision's listing-visible changes found and recorded, and detail-only changes found
within the profile's ``refresh_runs``. Exit status 1 when a goal is missed. Steps and
goals: docs/recrawl.md (its introduction).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch

from bench import smoke
from bench.stack import SITE, ChaosStack, WorkerPool
from bench.truth import item_key
from core.config import get_settings
from core.dedup.detector import job_changes
from core.frontier.drain import drain_state
from core.keys import REDIS_ERRORS
from core.store.spill_redis import spill_size
from crawlers.addon import drain_window
from crawlers.cli.producer import produce
from crawlers.profiles import SiteProfile
from crawlers.runtime.jobs import new_job_id
from standins.demo_site.catalog import Catalog, build_catalog

REQUESTS_GOAL = 0.30
BYTES_GOAL = 0.20
CHANGES_INDEX = f"changes-{SITE}"


@dataclass
class Run:
    """One crawl: what it cost (access log) and what it found (dedup's job figures)."""

    label: str
    job_id: str
    requests: int
    bytes: int
    not_modified: int
    product_pages: int
    seconds: float
    new: int
    changed: int
    unchanged: int
    changed_keys: frozenset[str] = field(default_factory=frozenset)

    def row(self, first: Run | None) -> str:
        share = (
            f"{self.requests / first.requests:6.1%} {self.bytes / first.bytes:6.1%}"
            if first is not None and first.requests and first.bytes
            else f"{'-':>6} {'-':>6}"
        )
        return (
            f"{self.label:<28} {self.requests:>8} {self.bytes / 1e6:>8.2f} {share} "
            f"{self.not_modified:>6} {self.product_pages:>8} {self.new:>6} {self.changed:>7} "
            f"{self.unchanged:>9} {self.seconds:>6.1f}"
        )


HEADER = (
    f"{'crawl':<28} {'requests':>8} {'MB':>8} {'req %':>6} {'byte %':>6} {'304s':>6} "
    f"{'products':>8} {'new':>6} {'changed':>7} {'unchanged':>9} {'secs':>6}"
)


class Bench:
    def __init__(self, stack: ChaosStack, workers: int, log: Any = print) -> None:
        self.stack = stack
        self.server = stack.redis_client()
        self.log = log
        self.workers = workers
        self.timeout = float(SiteProfile.load(SITE).timeouts.drain)
        self.pool = self._pool({})

    def _pool(self, extra: dict[str, str]) -> WorkerPool:
        stack = self.stack
        return WorkerPool(
            "bench-recrawl",
            run_dir=stack.run_dir,
            settings={
                "REDIS_URL": stack.redis.url,
                "ELASTICSEARCH_URL": stack.es.url,
                "DEMO_SITE_URL": stack.site.url,
                "PLATFORM_RUN_DIR": str(stack.run_dir),
                **extra,
            },
            base_url=stack.site.url,
        )

    def __enter__(self) -> Bench:
        self.pool.start(self.workers, self.server)
        return self

    def __exit__(self, *exc: object) -> None:
        self.pool.stop()

    def restart(self, extra: dict[str, str]) -> None:
        """The workers again, with ``extra`` settings (e.g. the card skip off)."""
        self.pool.stop()
        self.pool = self._pool(extra)
        self.pool.start(self.workers, self.server)

    def crawl(self, label: str) -> Run:
        since = len(self.stack.site.access_log())
        job_id = new_job_id(SITE)
        started = time.monotonic()
        produce(self.server, SITE, job_id=job_id, base_url=self.stack.site.url)
        self._wait_for_drain(job_id)
        seconds = time.monotonic() - started
        access = self.stack.site.access_log(since=since)
        changes = job_changes(self.server, SITE, job_id)
        run = Run(
            label=label,
            job_id=job_id,
            requests=len(access),
            bytes=sum(int(entry.get("bytes") or 0) for entry in access),
            not_modified=sum(1 for entry in access if entry["status"] == 304),
            product_pages=sum(
                1
                for entry in access
                if entry["path"].startswith("/product/") and entry["status"] == 200
            ),
            seconds=seconds,
            new=changes.counts["new"],
            changed=changes.counts["changed"],
            unchanged=changes.counts["unchanged"],
            changed_keys=changes.changed,
        )
        self.log(run.row(None))
        return run

    def _wait_for_drain(self, job_id: str) -> None:
        window = drain_window()
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(*REDIS_ERRORS):
                state = drain_state(self.server, SITE, job_id, stable_window=window)
                if state.drained and spill_size(self.server, SITE) == 0:
                    return
            time.sleep(0.5)
        raise RuntimeError(f"{job_id} did not drain within {self.timeout:g}s")


def listing_visible(before: Catalog, after: Catalog) -> tuple[dict[str, tuple[Any, Any]], set[str]]:
    """Products of ``after`` whose price changed (key -> (old, new)), and those changed
    only where a listing card does not show it (their description)."""
    prices: dict[str, tuple[Any, Any]] = {}
    detail_only: set[str] = set()
    for sku in after.changed_skus:
        old, new = before.by_sku[sku], after.by_sku[sku]
        if old.price != new.price:
            prices[item_key(sku)] = (old.price, new.price)
        elif old.description != new.description:
            detail_only.add(item_key(sku))
    return prices, detail_only


def price_changes(es: Elasticsearch, job_id: str) -> dict[str, tuple[Any, Any]]:
    """key -> (old, new) of the price change documents a job wrote."""
    with contextlib.suppress(Exception):
        es.indices.refresh(index=CHANGES_INDEX)
    response = es.search(
        index=CHANGES_INDEX,
        query={"bool": {"filter": [{"term": {"job_id": job_id}}, {"term": {"field": "price"}}]}},
        size=10_000,
        ignore_unavailable=True,
    )
    found: dict[str, tuple[Any, Any]] = {}
    for hit in response["hits"]["hits"]:
        source = hit["_source"]
        found[source["item_key"]] = (
            source.get("old_number", source.get("old")),
            source.get("new_number", source.get("new")),
        )
    return found


def _same(a: Any, b: Any) -> bool:
    try:
        return abs(float(a) - float(b)) < 1e-9
    except (TypeError, ValueError):
        return a == b


def run(
    products: int,
    workers: int,
    seed: int,
    extra_runs: int | None,
    run_dir: Path,
    args: argparse.Namespace | None = None,
) -> int:
    """The benchmark; its exit status (``args``: the command's, for a smoke run's)."""
    refresh_runs = SiteProfile.load(SITE).recrawl.refresh_runs
    extra = extra_runs if extra_runs is not None else refresh_runs + 1
    goals: list[tuple[str, bool]] = []
    with ChaosStack(run_dir, products=products, seed=seed, keep_data=False) as stack:
        print(f"demo shop: {products} products, {workers} always-on workers, run dir {run_dir}")
        print(HEADER)
        with Bench(stack, workers) as bench:
            first = bench.crawl("1 first crawl")
            second = bench.crawl("2 unchanged re-crawl")
            # The same re-crawl with conditional GETs only (no listing-card skip).
            bench.restart({"RECRAWL_CARD_SKIP": "false"})
            conditional = bench.crawl("2b same, conditional GETs only")
            bench.restart({})
            before = build_catalog(seed, products, 0)
            stack.site.control(revision=1)
            after = build_catalog(seed, products, 1)
            visible, detail_only = listing_visible(before, after)
            third = bench.crawl("3 after revision 1")
            runs = [first, second, conditional, third]
            found_detail = detail_only & third.changed_keys
            found_in = 1 if found_detail == detail_only else None
            for n in range(2, extra + 1):
                if found_in is not None:
                    break
                later = bench.crawl(f"{n + 2} revision 1 again")
                runs.append(later)
                found_detail |= detail_only & later.changed_keys
                if found_detail == detail_only:
                    found_in = n
            with Elasticsearch(stack.es.url, request_timeout=60) as es:
                recorded = price_changes(es, third.job_id)

    print()
    print("summary (shares of the first crawl)")
    print(HEADER)
    for entry in runs:
        print(entry.row(first))
    req_share = second.requests / first.requests
    byte_share = second.bytes / first.bytes if first.bytes else float("nan")
    detected = set(visible) & third.changed_keys
    exact = sum(
        1
        for key, (old, new) in visible.items()
        if key in recorded and _same(recorded[key][0], old) and _same(recorded[key][1], new)
    )
    print()
    print(
        f"re-crawl of the unchanged shop: {second.requests} of {first.requests} requests "
        f"({req_share:.1%}), {second.bytes / 1e6:.2f} of {first.bytes / 1e6:.2f} MB "
        f"({byte_share:.1%}); {second.not_modified} answered 304"
    )
    print(
        f"the same with conditional GETs only (RECRAWL_CARD_SKIP=false): "
        f"{conditional.requests} requests ({conditional.requests / first.requests:.1%}), "
        f"{conditional.bytes / 1e6:.2f} MB ({conditional.bytes / first.bytes:.1%}); "
        f"{conditional.not_modified} answered 304"
    )
    print(
        f"revision 1: {len(visible)} products with a new price: {len(detected)} found "
        f"changed, {exact} with the exact old and new price in {CHANGES_INDEX}"
    )
    print(
        f"revision 1: {len(detail_only)} products changed on their detail page only: "
        + (
            f"all found within {found_in} run(s) (refresh_runs N = {refresh_runs})"
            if found_in is not None
            else f"{len(found_detail)} found in {len(runs) - 3} runs (N = {refresh_runs})"
        )
    )
    goals.append((f"re-crawl requests <= {REQUESTS_GOAL:.0%}: {req_share:.1%}", req_share <= 0.30))
    goals.append((f"re-crawl bytes <= {BYTES_GOAL:.0%}: {byte_share:.1%}", byte_share <= 0.20))
    goals.append(
        (
            f"listing-visible changes detected and recorded: {exact}/{len(visible)}",
            bool(visible) and exact == len(detected) == len(visible),
        )
    )
    goals.append(
        (
            f"detail-only changes detected within N = {refresh_runs} runs: "
            + (f"{found_in}" if found_in is not None else "no"),
            found_in is not None and found_in <= refresh_runs,
        )
    )
    for text, met in goals:
        print(f"goal: {text} {'met' if met else 'MISSED'}")
    # The shares depend on the catalogue's size (its listing pages are fetched each time);
    # finding and recording the changes does not.
    shares, detection = goals[:2], goals[2:]
    if not all(met for _, met in detection):
        return 1
    return smoke.goals_status(args or argparse.Namespace(), all(met for _, met in shares))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.recrawl", description=__doc__)
    parser.add_argument("--products", type=int, default=1200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--extra-runs",
        type=int,
        default=None,
        help="crawls after the revision's first (default: refresh_runs + 1)",
    )
    parser.add_argument("--run-dir", type=Path, default=None)
    args = smoke.parse_args(parser, argv, products=48, workers=1)
    run_root = get_settings().platform_run_dir
    run_root.mkdir(parents=True, exist_ok=True)
    run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix="recrawl-", dir=run_root))
    return run(args.products, args.workers, args.seed, args.extra_runs, run_dir, args)


if __name__ == "__main__":
    sys.exit(main())

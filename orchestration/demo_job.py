"""The main job on embedded defaults, runnable on a fresh machine with no configuration.

Starts the demo shop, Redis and the Elasticsearch node through the service harness,
enqueues the job's start requests into the Redis frontier (the producer), runs
``--workers`` ``scrapy crawl demo`` worker processes on that shared frontier (Scrapy's
reactor cannot be restarted in-process), reports the frontier's drain state, indexes the
items and prints what was found and where to look.

    python -m orchestration.demo_job [--products 1200] [--workers 2] [--keep-running]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path

from elasticsearch import Elasticsearch, helpers

from core.config import REPO_ROOT, get_settings
from core.drain import drain_state
from crawlers.producer import produce
from services.demo_site import DemoSite
from services.es_node import ElasticsearchNode
from services.redis_server import RedisServer

ITEMS_INDEX = "items-demo"


def run_workers(job_id: str, base_url: str, outputs: list[Path], env: dict[str, str]) -> None:
    """Run one ``scrapy crawl demo`` worker per output file on the shared frontier."""
    workers = []
    for output in outputs:
        argv = [
            sys.executable, "-m", "scrapy", "crawl", "demo",
            "-O", str(output),
            "-a", f"job_id={job_id}",
            "-a", f"base_url={base_url}",
            # Close soon after the frontier empties (production workers run always-on).
            "-s", "FRONTIER_IDLE_CLOSE_SECONDS=3",
            "-s", f"LOG_FILE={output.with_suffix('.log')}",
        ]  # fmt: skip
        workers.append(subprocess.Popen(argv, cwd=REPO_ROOT, env=env))
    failed = [output for output, worker in zip(outputs, workers, strict=True) if worker.wait()]
    if failed:
        tail = failed[0].with_suffix(".log").read_text(errors="replace").splitlines()[-40:]
        raise RuntimeError("scrapy crawl demo failed:\n" + "\n".join(tail))


def read_items(path: Path) -> Iterator[dict[str, object]]:
    with path.open() as lines:
        for line in lines:
            if line.strip():
                yield json.loads(line)


def index_items(es: Elasticsearch, items: list[dict[str, object]]) -> int:
    """Bulk-index items with their SKU as the document id (re-runs overwrite, never duplicate)."""
    if not items:
        raise RuntimeError("the crawl produced no items: see the worker logs")
    actions = ({"_index": ITEMS_INDEX, "_id": item["sku"], "_source": item} for item in items)
    indexed, _ = helpers.bulk(es, actions, refresh="wait_for")
    return indexed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--products", type=int, default=1200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep-running", action="store_true", help="leave services up")
    args = parser.parse_args(argv)

    run_dir = get_settings().platform_run_dir / "demo"
    run_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()

    with ExitStack() as services:
        site = DemoSite(run_dir=run_dir, products=args.products)
        redis_server = RedisServer(run_dir=run_dir)
        es_node = ElasticsearchNode(run_dir=run_dir)
        for service in (site, redis_server, es_node):
            service.start()
            if not args.keep_running:
                services.callback(service.stop)
            print(f"  {service.name:<16} {service.url}  (ready in {service.started_in:.1f}s)")

        env = {
            **os.environ,
            "REDIS_URL": redis_server.url,
            "ELASTICSEARCH_URL": es_node.url,
            "DEMO_SITE_URL": site.url,
        }
        server = redis_server.client()
        job = produce(server, "demo", base_url=site.url)
        print(f"\n  producer          {job.entries} start entries for job {job.job_id}")
        outputs = [run_dir / f"items-worker-{n}.jsonl" for n in range(1, args.workers + 1)]
        run_workers(job.job_id, site.url, outputs, env)
        state = drain_state(server, "demo", job.job_id)
        print(f"  drain state       {state.describe()}")
        items = [item for output in outputs for item in read_items(output)]

        es = Elasticsearch(es_node.url)
        indexed = index_items(es, items)
        count = es.count(index=ITEMS_INDEX)["count"]
        hits = es.search(index=ITEMS_INDEX, query={"match": {"description": "waterproof"}}, size=3)[
            "hits"
        ]["hits"]

        print(f"\nCrawled {len(items)} products in {time.monotonic() - started:.1f}s")
        print(f"  items files       {', '.join(str(output) for output in outputs)}")
        print(f"  indexed           {indexed} documents; {count} in index {ITEMS_INDEX!r}")
        print('  search "waterproof":')
        for hit in hits:
            source = hit["_source"]
            print(f"    {hit['_score']:.2f}  {source['sku']}  {source['name']}")
        if args.keep_running:
            print(f"\nServices left running; stop them with: kill $(cat {run_dir}/*.pid)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

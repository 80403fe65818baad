"""Search latency through the search API, in the sites' languages: percentiles per mode,
and recall@5 per language from the same answers.

    .venv/bin/python -m bench.search [--rounds 5] [--languages en es pt it fr]

Stores ``bench.multilingual_catalog`` per language as that language's site, runs the real
LLM step, starts the search API as deployed (``python -m search.api``), then times every
query in each mode (``hybrid``, ``bm25``, ``knn``) on one keep-alive connection. Goals:
hybrid p50 <= 100 ms and p95 <= 200 ms; exit status 1 when one is missed. Columns:
docs/indexing-and-search.md "Benchmarks".
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from elasticsearch import Elasticsearch

from bench import smoke
from bench.multilingual import K, site_name, store_catalogue
from bench.multilingual_catalog import LANGUAGES, PRODUCTS, QUERIES
from core.config import REPO_ROOT
from harness.base import free_port, wait_until
from harness.es_node import ElasticsearchNode
from indexing.embedders import default_embedder
from indexing.process import process_items
from search.core import MODES, Mode

SETUP = "search"
P50_GOAL_MS = 100.0
P95_GOAL_MS = 200.0
# The variables that would point the API elsewhere than the run's node.
SERVICE_VARIABLES = ("ELASTICSEARCH_URL", "ELASTICSEARCH_USERNAME", "ELASTICSEARCH_PASSWORD")


@dataclass
class Samples:
    """One mode's requests: client-side latency and the API's ``took_ms``, in ms."""

    client_ms: list[float] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)
    # The API's ``timings_ms`` parts (embed, lists, items) of each request.
    parts: dict[str, list[float]] = field(default_factory=dict)

    def part(self, name: str) -> str:
        values = self.parts.get(name)
        return f"{statistics.median(values):.1f}" if values else "-"

    def percentile(self, p: int) -> float:
        return percentile(self.client_ms, p)


def percentile(values: Sequence[float], p: int) -> float:
    """The ``p``-th percentile (inclusive method: p50 is the median, p100 the maximum)."""
    if len(values) == 1:
        return values[0]
    return (
        statistics.quantiles(values, n=100, method="inclusive")[p - 1] if p < 100 else max(values)
    )


class Client:
    """One keep-alive HTTP connection to the API."""

    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def get(self, path: str) -> tuple[int, Any, float]:
        started = time.perf_counter()
        self.connection.request("GET", path)
        response = self.connection.getresponse()
        body = json.loads(response.read())
        return response.status, body, (time.perf_counter() - started) * 1000

    def search(self, query: str, site: str, mode: Mode) -> tuple[dict[str, Any], float]:
        status, body, ms = self.get(
            "/search?" + urlencode({"q": query, "site": site, "k": K, "mode": mode})
        )
        if status != 200:
            raise RuntimeError(f"{mode} search for {query!r} on {site}: HTTP {status} {body}")
        return body, ms

    def close(self) -> None:
        self.connection.close()


@contextmanager
def search_api(es_url: str, run_dir: Path) -> Iterator[tuple[Client, float]]:
    """``python -m search.api`` on a free port; the client and the seconds to healthy."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in SERVICE_VARIABLES}
    env["ELASTICSEARCH_URL"] = es_url
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    log = run_dir / "search-api.log"
    argv = [sys.executable, "-m", "search.api", "--port", str(port), "--log-level", "warning"]
    started = time.perf_counter()
    with log.open("wb") as out:
        process = subprocess.Popen(argv, env=env, cwd=REPO_ROOT, stdout=out, stderr=out)
    client = Client(port)
    try:

        def healthy() -> bool:
            try:
                return client.get("/health")[0] == 200
            except OSError:
                client.connection.close()
                return False

        wait_until(
            healthy,
            timeout=180,
            what="the search API",
            alive=lambda: process.poll() is None,
            log_tail=lambda: log.read_text(errors="replace")[-2000:],
        )
        yield client, time.perf_counter() - started
    finally:
        client.close()
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def index_sites(es_url: str, languages: Sequence[str]) -> str:
    """Each language's catalogue stored and run through the LLM step; the embedder's name."""
    es = Elasticsearch(es_url, request_timeout=120)
    embedder = default_embedder()
    try:
        for language in languages:
            site = site_name(SETUP, language)
            keys = store_catalogue(es_url, es, site, language)
            report = process_items(es, site, keys, embedder, language=language)
            if report.processed != len(keys) or report.failed_writes:
                raise RuntimeError(f"the LLM step on {site}: {report.as_dict()}")
    finally:
        es.close()
    return embedder.name


@dataclass
class Measured:
    start_seconds: float
    first_query_ms: float
    embedder: str
    samples: dict[Mode, Samples]
    recall: dict[tuple[Mode, str], float]


def measure(
    client: Client, languages: Sequence[str], rounds: int
) -> tuple[dict[Mode, Samples], dict[tuple[Mode, str], float]]:
    samples: dict[Mode, Samples] = {mode: Samples() for mode in MODES}
    found: dict[tuple[Mode, str], float] = {}
    turn = 0
    for round_no in range(rounds):
        for language in languages:
            site = site_name(SETUP, language)
            for query, relevant in QUERIES[language]:
                turn += 1
                for mode in MODES[turn % 3 :] + MODES[: turn % 3]:
                    body, ms = client.search(query, site, mode)
                    samples[mode].client_ms.append(ms)
                    samples[mode].server_ms.append(float(body["took_ms"]))
                    for part, ms in body.get("timings_ms", {}).items():
                        samples[mode].parts.setdefault(part, []).append(float(ms))
                    if round_no == 0:
                        skus = {str(hit["item"].get("sku")) for hit in body["hits"]}
                        share = len(skus & relevant) / len(relevant) / len(QUERIES[language])
                        found[mode, language] = found.get((mode, language), 0.0) + share
    return samples, found


def report(measured: Measured, languages: Sequence[str], rounds: int) -> list[tuple[str, bool]]:
    queries = sum(len(QUERIES[language]) for language in languages)
    print(
        f"search API ({measured.embedder}): {len(languages)} languages x {len(PRODUCTS)} "
        f"products, {queries} queries x {rounds} round(s) per mode, one request at a time"
    )
    print(
        f"start-up to healthy {measured.start_seconds:.1f} s; first query after it "
        f"(hybrid) {measured.first_query_ms:.0f} ms"
    )
    print(f"{'':<17}{'client-side latency, ms':^45}{'the API took_ms, p50':^44}")
    print(
        f"{'mode':<8}{'requests':>9}{'p50':>9}{'p95':>9}{'p99':>9}{'max':>9}{'mean':>9}"
        f"{'all':>11}{'embed':>11}{'lists':>11}{'items':>11}"
    )
    for mode in MODES:
        s = measured.samples[mode]
        print(
            f"{mode:<8}{len(s.client_ms):>9}{s.percentile(50):>9.1f}{s.percentile(95):>9.1f}"
            f"{s.percentile(99):>9.1f}{max(s.client_ms):>9.1f}"
            f"{statistics.mean(s.client_ms):>9.1f}{statistics.median(s.server_ms):>11.1f}"
            f"{s.part('embed'):>11}{s.part('lists'):>11}{s.part('items'):>11}"
        )
    print(f"recall@{K}  " + "".join(f"{mode:>8}" for mode in MODES))
    for language in languages:
        print(
            f"{language:<10}"
            + "".join(f"{measured.recall[mode, language]:>8.2f}" for mode in MODES)
        )
    hybrid = measured.samples["hybrid"]
    goals = [
        (
            f"hybrid p50 <= {P50_GOAL_MS:.0f} ms: {hybrid.percentile(50):.1f} ms",
            hybrid.percentile(50) <= P50_GOAL_MS,
        ),
        (
            f"hybrid p95 <= {P95_GOAL_MS:.0f} ms: {hybrid.percentile(95):.1f} ms",
            hybrid.percentile(95) <= P95_GOAL_MS,
        ),
    ]
    for text, met in goals:
        print(f"goal: {text} {'met' if met else 'MISSED'}")
    return goals


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="passes over the queries")
    parser.add_argument(
        "--languages", nargs="+", choices=LANGUAGES, default=list(LANGUAGES), metavar="LANG"
    )
    args = smoke.parse_args(parser, argv, rounds=1, languages=["en", "es"])
    if args.rounds < 1:
        parser.error("--rounds must be positive")
    languages = tuple(args.languages)
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start")
    with (
        tempfile.TemporaryDirectory(prefix="bench-search-") as tmp,
        ElasticsearchNode(run_dir=Path(tmp)) as node,
    ):
        embedder = index_sites(node.url, languages)
        with search_api(node.url, Path(tmp)) as (client, start_seconds):
            first_site = site_name(SETUP, languages[0])
            _, first_ms = client.search(QUERIES[languages[0]][0][0], first_site, "hybrid")
            samples, recall = measure(client, languages, args.rounds)
    measured = Measured(start_seconds, first_ms, embedder, samples, recall)
    goals = report(measured, languages, args.rounds)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return smoke.goals_status(args, all(met for _, met in goals))


if __name__ == "__main__":
    raise SystemExit(main())

"""The scaling benchmark's figures: what its table says follows from what it measured.

One tiny real run (1 and 2 full-path workers on a 48-product shop, the session's Redis
and ES node) checks the crawl is whole (every page of the catalogue fetched once, every
product stored) and latency-bound as pinned; the ratios, shares and goal verdicts are
checked on figures given by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.scaling import Bench, Measurement, ModeResult, Plan, RedisTarget, catalogue_pages, main
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisCluster, RedisServer
from standins.demo_site.catalog import build_catalog


def measured(workers: int, rate: float) -> Measurement:
    """A measurement whose steady window holds ``rate`` pages/s."""
    return Measurement(
        workers=workers,
        pages=2461,
        repeats=0,
        expected_pages=2461,
        items=1200,
        scraped=1200,
        crawl_seconds=2461 / rate,
        steady_pages=int(rate * 10),
        steady_seconds=10.0,
        worker_cores=0.1 * workers,
        machine_cpu=0.5,
        service_cores={"shop": 0.1, "redis": 0.05, "es": 0.2},
        rss_mb=(120.0,) * workers,
        wall_seconds=60.0,
    )


def test_ratios_shares_and_goals_come_from_the_median_rates() -> None:
    plan = Plan(rounds=3)
    result = ModeResult(plan, "single", "redis://127.0.0.1:1/0")
    rates = {1: (19.0, 20.0, 18.0), 2: (38.0, 39.0, 37.0), 4: (70.0, 68.0, 69.0), 8: (120, 150, 90)}
    for workers, values in rates.items():
        result.measurements[workers] = [measured(workers, rate) for rate in values]
    assert result.rate(1) == pytest.approx(19.0)
    assert result.ratio(4) == pytest.approx(69.0 / 19.0)
    assert result.share(8) == pytest.approx(120.0 / (8 * 20))
    assert [(w, met) for w, _, _, met in result.goals()] == [(4, True), (8, False)]
    table = result.table()
    assert f"{69.0 / 19.0:.2f}x" in table and f"{120 / 19.0:.2f}x MISSED" in table
    assert "3 round(s)" in table and "2461 pages" in table


def test_bad_arguments_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--workers", "0", "--redis", "single"])
    assert exited.value.code == 2
    assert "--workers" in capsys.readouterr().err


@pytest.mark.parametrize("mode", ["single", "cluster"])
def test_a_tiny_run_crawls_the_whole_catalogue_at_the_pinned_concurrency(
    mode: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
) -> None:
    plan = Plan(workers=(1, 2), products=48)
    expected = catalogue_pages(build_catalog(plan.seed, plan.products))
    with DemoSite(run_dir=tmp_path, products=plan.products, name="scaling-shop") as site:
        bench = Bench(plan, site, es_node, tmp_path, log=print)
        if mode == "cluster":
            cluster: RedisCluster = request.getfixturevalue("redis_cluster")
            client = cluster.client()
            pids = [node.pid or 0 for node in cluster.nodes]
            target = RedisTarget(mode, cluster.url, client, pids, {"REDIS_CLUSTER": "True"})
        else:
            client = redis_server.client()
            target = RedisTarget(mode, redis_server.url, client, [redis_server.pid or 0])
        result = bench.run_mode(target)
        client.flushall()
    assert sorted(result.measurements) == [1, 2]
    for workers, (m,) in result.measurements.items():
        assert (m.pages, m.expected_pages, m.repeats) == (expected, expected, 0), workers
        assert (m.items, m.scraped) == (plan.products, plan.products), workers
        assert 0 < m.steady_pages < m.pages and 0 < m.steady_seconds < m.crawl_seconds
        assert m.rate == pytest.approx(m.steady_pages / m.steady_seconds)
        # Pinned: 4 requests in flight at 200 ms cannot go faster than 20 pages/s a worker.
        assert m.rate <= 1.1 * workers * plan.ceiling, workers
        assert m.worker_cores > 0 and len(m.rss_mb) == workers and min(m.rss_mb) > 50
    assert result.ratio(2) == pytest.approx(result.rate(2) / result.rate(1))
    assert result.share(2) == pytest.approx(result.rate(2) / 40)
    rows = {line.split()[0]: line.split() for line in result.table().splitlines()[2:]}
    assert rows["2"][1] == f"{result.rate(2):.1f}" and rows["2"][3] == f"{result.ratio(2):.2f}x"
    assert rows["1"][3] == "1.00x" and rows["2"][5] == f"{result.share(2):.0%}"

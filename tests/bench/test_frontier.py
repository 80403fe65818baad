"""The frontier benchmark's fair table: what it says follows from what it measured.

The arithmetic (medians, ratios, ceilings, shares, CPU per page, the items check and the
goal verdicts) is checked on runs given by hand. One tiny real run on a 24-product shop
(the session's Redis and ES node) runs each kind of configuration once at 50 ms: bare
Scrapy, the frontier, the full path (pinned and with AutoThrottle) and, when its venv was
set up by the benchmark, crawlee; each fetches every page once and produces the same
items as bare Scrapy. A test never installs crawlee: without ``.venv-crawlee`` its run
is skipped with the reason.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.crawlee_env import crawlee_python
from bench.frontier import (
    BARE,
    CRAWLEE,
    FRONTIER_1,
    FRONTIER_2,
    FULL_1,
    FULL_1_HTTP11,
    FULL_2,
    FULL_THROTTLED,
    Bench,
    Config,
    Plan,
    Run,
    Table,
    configurations,
    main,
    measure_latency,
)
from bench.scaling import catalogue_pages
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from standins.demo_site.catalog import build_catalog

PAGES = 2461
PRODUCTS = 1200


def run(rate: float, cpu_ms: float = 3.0, *, items: int = PRODUCTS, digest: str = "d1") -> Run:
    seconds = PAGES / rate
    return Run(PAGES, PAGES, seconds, cpu_ms * PAGES / 1000, items, digest)


def table(latency_ms: int, rates: dict[str, tuple[float, ...]]) -> Table:
    plan = Plan(products=PRODUCTS, rounds=3)
    result = Table(plan, latency_ms, PAGES, configurations(latency_ms, crawlee=True))
    for config in result.configs:
        for rate in rates.get(config.name, ()):
            result.add(config, run(rate))
    return result


def rows(rendered: str) -> dict[str, list[str]]:
    """Each configuration's cells, split on the table's two-space column gaps."""
    lines = rendered.splitlines()[2:]
    return {cells[0]: cells[1:] for line in lines if len(cells := re.split(r"\s{2,}", line)) > 4}


def test_ratios_ceilings_shares_and_goals_at_a_latency() -> None:
    result = table(
        50,
        {
            BARE: (200.0, 210.0, 190.0),
            FULL_1: (290.0, 300.0, 295.0),
            FULL_1_HTTP11: (300.0, 310.0, 320.0),
            FULL_2: (560.0, 600.0, 580.0),
            FULL_THROTTLED: (100.0, 90.0, 110.0),
            CRAWLEE: (250.0, 240.0, 260.0),
        },
    )
    assert result.rate(FULL_1) == pytest.approx(295.0)
    assert result.ratio(FULL_1) == pytest.approx(295.0 / 200.0)
    assert result.ceiling(FULL_1) == pytest.approx(16 * 1000 / 50)
    assert result.ceiling(FULL_2) == pytest.approx(2 * 320)
    assert result.share(FULL_2) == pytest.approx(580.0 / 640)
    assert result.cpu_ms(BARE) == pytest.approx(3.0)
    assert [met for _, met in result.goals()] == [True, True, True]
    goals = "\n".join(text for text, _ in result.goals())
    assert "92%" in goals and "295 vs 250 pages/s (1.18x)" in goals and "1.97x" in goals
    rendered = result.render()
    cells = rows(rendered)
    assert cells[FULL_2] == ["580.0", "2.90x", "640", "91%", "3.00", "ok"]
    assert cells[CRAWLEE][:4] == ["250.0", "1.25x", "320", "78%"]
    assert "AutoThrottle on (project default) vs pinned, full path 1 worker: 0.34x" in rendered
    assert (
        "browser identity (curl_cffi) vs HTTP/1.1 handler, full path 1 worker: "
        "3.00 vs 3.00 CPU ms/page (1.00x), 0.95x the pages/s"
    ) in rendered
    assert "3 round(s)" in rendered and f"{PRODUCTS} products = {PAGES} pages" in rendered


def test_goals_missed_and_the_cpu_bound_table() -> None:
    result = table(0, {BARE: (400.0,), FULL_1: (300.0,), CRAWLEE: (600.0,)})
    assert result.ceiling(FULL_1) is None and result.share(FULL_1) is None
    assert result.goals() == [("full path 1 worker >= 0.9x bare Scrapy: 0.75x", False)]
    rendered = result.render()
    assert rows(rendered)[FULL_1][:4] == ["300.0", "0.75x", "-", "-"]
    assert "goal: full path 1 worker >= 0.9x bare Scrapy: 0.75x MISSED" in rendered
    assert FULL_THROTTLED not in rendered  # AutoThrottle's row is a latency's only
    slow = table(50, {BARE: (200.0,), FULL_1: (250.0,), FULL_2: (400.0,), CRAWLEE: (260.0,)})
    assert [met for _, met in slow.goals()] == [False, False, False]


def test_the_items_check_names_what_differed() -> None:
    result = table(0, {BARE: (400.0,)})
    frontier = Config(FRONTIER_1, "frontier")
    result.add(frontier, run(300.0))
    result.add(frontier, run(300.0, items=PRODUCTS - 1))
    result.add(Config(FRONTIER_2, "frontier", 2), run(500.0, digest="other"))
    result.add(Config(FULL_1, "full"), Run(PAGES + 1, PAGES, 10.0, 1.0, PRODUCTS, "d1"))
    assert result.check(BARE) == "ok"
    assert result.check(FRONTIER_1) == f"items {PRODUCTS - 1}/{PRODUCTS}"
    assert result.check(FRONTIER_2) == "items differ (other)"
    assert result.check(FULL_1) == f"pages {PAGES + 1} ({PAGES} distinct)/{PAGES}"


def test_politeness_is_pinned_except_on_the_autothrottle_row() -> None:
    configs = {config.name: config for config in configurations(50, crawlee=False)}
    assert CRAWLEE not in configs and FULL_THROTTLED in configs
    assert FULL_THROTTLED not in {config.name for config in configurations(0, crawlee=True)}
    for name, config in configs.items():
        settings = config.scrapy_settings(16)
        assert settings["CONCURRENT_REQUESTS"] == settings["CONCURRENT_REQUESTS_PER_DOMAIN"] == "16"
        pinned = settings.get("AUTOTHROTTLE_ENABLED") == "False"
        assert pinned is (name != FULL_THROTTLED), name
        # Equal work but for the plain-request handler: only its row names an identity.
        assert settings.get("FETCH_IDENTITY") == ("crawler" if name == FULL_1_HTTP11 else None)
        assert ("ITEM_PIPELINES" in settings) is (config.kind != "full"), name


def test_bad_arguments_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--rounds", "0"])
    assert exited.value.code == 2
    assert "--rounds" in capsys.readouterr().err


def tiny_run(
    tmp_path: Path,
    redis_server: RedisServer,
    es_node: ElasticsearchNode,
    crawlee: Path | None,
    only: tuple[str, ...] = (),
) -> tuple[Table, int]:
    """Every configuration at 50 ms on a 24-product shop, or ``only`` those named."""
    plan = Plan(products=24, rounds=1, latencies=(50,), concurrency=4)
    expected = catalogue_pages(build_catalog(plan.seed, plan.products))
    with DemoSite(run_dir=tmp_path, products=plan.products, name="frontier-shop") as site:
        bench = Bench(plan, site, redis_server, es_node, tmp_path, crawlee)
        try:
            if only:
                result = Table(plan, 50, bench.expected_pages, configurations(50, True))
                for config in result.configs:
                    if config.name in only:
                        result.add(config, bench.measure(config, 50, config.kind))
            else:
                result = measure_latency(bench, 50, print)
        finally:
            bench.client.flushall()
            bench.close()
    return result, expected


def assert_whole(result: Table, expected: int) -> None:
    assert result.expected_pages == expected
    assert result.reference.items == 24
    cells = rows(result.render())
    for name, runs in result.runs.items():
        (measured,) = runs
        assert result.check(name) == "ok", name
        assert (measured.pages, measured.items) == (expected, 24), name
        assert measured.digest == result.reference.digest, name
        assert measured.cpu_seconds > 0 and measured.rate > 0, name
        ceiling = result.ceiling(name)
        assert ceiling == 4 * 1000 / 50 * result.config(name).processes
        # Pinned at 4 requests in flight, 50 ms each: nothing goes past the ceiling.
        if name != FULL_THROTTLED:
            assert measured.rate <= 1.1 * ceiling, name
        assert cells[name][0] == f"{result.rate(name):.1f}"
        assert cells[name][1] == f"{result.ratio(name):.2f}x"
        assert cells[name][4] == f"{result.cpu_ms(name):.2f}"
        assert cells[name][5] == "ok"


def test_a_tiny_run_of_each_scrapy_configuration_produces_the_same_items(
    tmp_path: Path, redis_server: RedisServer, es_node: ElasticsearchNode
) -> None:
    result, expected = tiny_run(tmp_path, redis_server, es_node, crawlee=None)
    assert list(result.runs) == [
        BARE,
        FRONTIER_1,
        FRONTIER_2,
        FULL_1,
        FULL_1_HTTP11,
        FULL_2,
        FULL_THROTTLED,
    ]
    assert_whole(result, expected)


def test_crawlee_produces_the_same_items_as_scrapy(
    tmp_path: Path, redis_server: RedisServer, es_node: ElasticsearchNode
) -> None:
    crawlee = crawlee_python()
    if crawlee is None:
        pytest.skip("no .venv-crawlee at the current pins: `python -m bench.frontier` sets it up")
    result, expected = tiny_run(tmp_path, redis_server, es_node, crawlee, only=(BARE, CRAWLEE))
    assert list(result.runs) == [BARE, CRAWLEE]
    assert_whole(result, expected)

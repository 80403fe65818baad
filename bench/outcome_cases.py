"""The truth matrix's crawl scenarios: each a combination an operator meets, its expected
final word, and the figures it is checked on (``bench.outcomes`` runs them).

A scenario returns ``Check`` rows: the run's word (close reason and exit status of every
worker that ended by itself), the documents Elasticsearch holds against what the stand-in
served, and the job report's figures against both. Expected figures are derived from what
the stand-in served in this run (never typed in), so a check can only pass when the
platform's account and the truth agree.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from bench.outcome_access import AUTO, SESSIONS, defended
from bench.outcome_runs import (
    Services,
    crawl,
    spill_items,
    spill_lines,
    write_profile,
)
from bench.outcome_verdicts import Check, Outcome, Scenario, judged
from core.recrawl.layouts import BASELINE_FILE
from core.store import IndexLayout
from harness.base import free_port
from harness.loopback_proxy import LoopbackProxy

DEMO_INDEX = IndexLayout.index("demo", "demo_product")


# -- the shop as it is -----------------------------------------------------------------------


def plain(services: Services, run_dir: Path) -> Outcome:
    run = crawl(services, run_dir)
    return judged(
        run, "finished/0", run.served, extra=(Check("served", run.served, services.products),)
    )


def site_down(services: Services, run_dir: Path) -> Outcome:
    down = f"http://127.0.0.1:{free_port()}"
    run = crawl(services, run_dir, base_url=down, settings={"RETRY_TIMES": 1})
    return judged(run, "nothing_stored/4", 0)


def budget_pages(services: Services, run_dir: Path) -> Outcome:
    # Room for the listings and some product pages, not all: the budget ends the crawl.
    run = crawl(services, run_dir, settings={"CRAWL_MAX_PAGES": services.products // 2 + 10})
    # Pages in flight when the budget ended the job are fetched and refused (not stored):
    # ES is checked against the report, and against the shop's product pages at most.
    return judged(
        run,
        "budget_pages/0",
        run.stored,
        extra=(
            Check("some stored", run.stored > 0, True),
            Check("stored <= served", run.stored <= run.served, True),
            Check("budget refusals counted", run.counter("budget/refused/pages") > 0, True),
        ),
    )


# -- redirects -------------------------------------------------------------------------------


def _one_product(services: Services) -> str:
    return f"/product/{services.site.catalog().products[3].sku}"


def offsite_redirect(services: Services, run_dir: Path) -> Outcome:
    path = _one_product(services)
    services.site.control(offsite_redirect={"paths": [path]})
    run = crawl(services, run_dir)
    lost = run.counter("requests/dropped/offsite_redirect")
    return judged(
        run,
        "finished/0",
        services.products - 1,
        extra=(
            Check("served", run.served, services.products - 1),
            Check("dropped offsite", lost, 1),
        ),
    )


def redirect_loop(services: Services, run_dir: Path) -> Outcome:
    path = _one_product(services)
    services.site.control(redirect_loop={"paths": [path]})
    run = crawl(services, run_dir)
    failed = run.counter("requests/dropped/redirect_loop") + run.counter(
        "requests/failed/redirect_loop"
    )
    return judged(
        run,
        "finished/0",
        services.products - 1,
        extra=(
            Check("served", run.served, services.products - 1),
            Check("loop counted", failed > 0, True),
        ),
    )


# -- pages that do not give items --------------------------------------------------------------

BLIND = """item_type = "product"
base_url = "{url}"
start_page = "home"
[pages.home]
follow = [{{css = "a.no-such-link", to = "product-page"}}]
[pages.product-page]
url_patterns = ['^/product/']
item = "Product"
[pages.product-page.fields]
product_id = [{{url = '/product/([^/?#]+)'}}]
name = [{{css = "h1"}}]
"""

NAMELESS = """item_type = "product"
base_url = "{url}"
start_page = "home"
[pages.home]
follow = [{{css = "a.category-link", to = "listing"}}]
[pages.listing]
url_patterns = ['^/category/']
follow = [{{css = "a.product-link", to = "product-page"}}, {{css = "a.page-next", to = "listing"}}]
[pages.product-page]
url_patterns = ['^/product/']
item = "Product"
[pages.product-page.fields]
product_id = [{{url = '/product/([^/?#]+)'}}]
name = [{{css = "h1.no-such-heading"}}]
"""


def selectors_nothing(services: Services, run_dir: Path) -> Outcome:
    profiles = write_profile(run_dir / "profiles", "blind", BLIND.format(url=services.site.url))
    run = crawl(services, run_dir, site="blind", env={"SITE_PROFILES_DIR": str(profiles)})
    return judged(run, "nothing_stored/4", 0)


def all_invalid(services: Services, run_dir: Path) -> Outcome:
    profiles = write_profile(
        run_dir / "profiles", "nameless", NAMELESS.format(url=services.site.url)
    )
    run = crawl(services, run_dir, site="nameless", env={"SITE_PROFILES_DIR": str(profiles)})
    invalid = int(run.report.get("items_invalid") or 0)
    return judged(
        run,
        "nothing_stored/4",
        0,
        extra=(
            Check("served", run.served, services.products),
            Check("report items_invalid", invalid, run.served),
        ),
    )


def unreadable_products(services: Services, run_dir: Path) -> Outcome:
    services.site.control(unreadable={"paths": ["/product/"]})
    run = crawl(services, run_dir)
    unparsed = int(run.report.get("pages_unparsed") or 0)
    return judged(
        run,
        "nothing_stored/4",
        0,
        extra=(Check("report pages_unparsed", unparsed, run.served),),
    )


def refused_everywhere(services: Services, run_dir: Path) -> Outcome:
    services.site.control(forbidden={"rate": 1.0, "attempts": None})
    run = crawl(services, run_dir)
    return judged(run, "refused/3", 0)


def blocked_once(services: Services, run_dir: Path) -> Outcome:
    services.site.control(
        throttle={"rate": 1.0, "attempts": 1, "retry_after": 0, "paths": ["/product/"]}
    )
    run = crawl(services, run_dir)
    return judged(
        run,
        "finished/0",
        services.products,
        extra=(Check("served", run.served, services.products),),
    )


# -- the layout changes -------------------------------------------------------------------------


def layout_card_skip(services: Services, run_dir: Path) -> Outcome:
    """A full crawl (cards recorded), then product pages in a layout the spider cannot read
    and a new baseline accepted; the re-crawl with card skip must fetch every product page
    and store nothing of its own."""
    sites = run_dir / "sites"
    (sites / "demo").mkdir(parents=True)
    source = Path(__file__).resolve().parents[1] / "fingerprints" / "sites" / "demo"
    for name in (BASELINE_FILE, "coverage.json"):
        shutil.copy(source / name, sites / "demo")
    env = {"FINGERPRINT_SITES_DIR": str(sites)}
    first = crawl(services, run_dir / "first", settings={"RECRAWL_CARD_SKIP": True}, env=env)
    services.site.control(unreadable={"paths": ["/product/"]})
    baseline = sites / "demo" / BASELINE_FILE
    baseline.write_text(baseline.read_text().replace('"threshold": 0.85', '"threshold": 0.8', 1))
    second = crawl(services, run_dir / "second", settings={"RECRAWL_CARD_SKIP": True}, env=env)
    unparsed = int(second.report.get("pages_unparsed") or 0)
    return judged(
        second,
        "nothing_stored/4",
        services.products,  # the first job's documents, untouched
        report_stored=0,
        extra=(
            Check("first job word", first.word(), "finished/0"),
            Check("product pages fetched", second.served, services.products),
            Check("report pages_unparsed", unparsed, second.served),
            Check("counted unchanged", second.counter("items/unchanged"), 0),
        ),
    )


# -- the store --------------------------------------------------------------------------------


def _write_blocked(services: Services) -> None:
    """The demo's item index as the store declares it, refusing writes."""
    import asyncio

    from elasticsearch import AsyncElasticsearch

    from core.store import ensure_item_index
    from crawlers.items import schema_by_type

    async def declare() -> None:
        async with AsyncElasticsearch(services.es_node.url, request_timeout=30) as aes:
            properties = schema_by_type("demo_product").es_properties
            await ensure_item_index(aes, "demo", "demo_product", properties, replicas=0)

    asyncio.run(declare())
    services.es.indices.put_settings(index=DEMO_INDEX, settings={"index.blocks.write": True})


def _unblock(services: Services) -> None:
    services.es.options(ignore_status=404).indices.put_settings(
        index=DEMO_INDEX, settings={"index.blocks.write": False}
    )


FAST_STORE: dict[str, object] = {"STORE_SPILL_AFTER": 0.5, "STORE_RETRY_BACKOFF_MAX": 1.0}


def store_refusing_spill(services: Services, run_dir: Path) -> Outcome:
    """Frontier workers spill to Redis: every item waits there, none is lost."""
    _write_blocked(services)
    try:
        run = crawl(services, run_dir, settings=FAST_STORE)
    finally:
        _unblock(services)
    waiting = spill_items(services, "demo")
    return judged(
        run,
        "nothing_stored/4",
        0,
        extra=(
            Check("items in the spill", waiting, run.served),
            Check("report spill_remaining", int(run.report.get("spill_remaining") or 0), waiting),
        ),
    )


def store_refusing_file_spill(services: Services, run_dir: Path) -> Outcome:
    """Local mode spills to a file: every item there."""
    _write_blocked(services)
    try:
        run = crawl(services, run_dir, settings=FAST_STORE, frontier=False)
    finally:
        _unblock(services)
    return judged(
        run,
        "nothing_stored/4",
        0,
        extra=(Check("items in the spill file", spill_lines(run_dir), run.served),),
    )


def store_refusing_no_spill(services: Services, run_dir: Path) -> Outcome:
    _write_blocked(services)
    (run_dir / "spill" / "demo.jsonl").mkdir(parents=True)  # a spill that cannot be written
    try:
        run = crawl(
            services, run_dir, settings={**FAST_STORE, "STORE_CLOSE_TIMEOUT": 3}, frontier=False
        )
    finally:
        _unblock(services)
    return judged(run, "store_failed/5", 0)


def mapping_conflict(services: Services, run_dir: Path) -> Outcome:
    services.es.indices.create(
        index=DEMO_INDEX, mappings={"properties": {"price": {"type": "keyword"}}}
    )
    run = crawl(services, run_dir)
    dead = int(run.report.get("items_dead_letter") or 0)
    return judged(run, "store_failed/5", 0, extra=(Check("report dead letters", dead, run.served),))


# -- proxies ------------------------------------------------------------------------------------


def proxy_dead(services: Services, run_dir: Path) -> Outcome:
    dead = f"http://127.0.0.1:{free_port()}"
    run = crawl(
        services, run_dir, settings={"ROTATING_PROXY_LIST": [dead], "RETRY_TIMES": 1}, budget=120
    )
    return judged(run, "nothing_stored/4", 0, extra=(Check("served", run.served, 0),))


def proxy_dropping(services: Services, run_dir: Path) -> Outcome:
    with LoopbackProxy(run_dir=run_dir, mode="drop") as proxy:
        run = crawl(
            services,
            run_dir,
            settings={"ROTATING_PROXY_LIST": [proxy.url], "RETRY_TIMES": 1},
            budget=120,
        )
    return judged(run, "nothing_stored/4", 0, extra=(Check("served", run.served, 0),))


def proxy_working(services: Services, run_dir: Path) -> Outcome:
    with LoopbackProxy(run_dir=run_dir) as proxy:
        run = crawl(services, run_dir, settings={"ROTATING_PROXY_LIST": [proxy.url]})
    return judged(
        run,
        "finished/0",
        services.products,
        extra=(Check("served", run.served, services.products),),
    )


CRAWLS: tuple[Scenario, ...] = (
    Scenario("plain", "the shop as it is: every product stored, the report says so", plain, True),
    Scenario(
        "site down", "nothing listens at the base URL: nothing_stored, exit 4", site_down, True
    ),
    Scenario(
        "page budget",
        "CRAWL_MAX_PAGES reached: budget_pages, exit 0, what it read stored",
        budget_pages,
    ),
    Scenario(
        "offsite redirect",
        "a product 302s to another host: its lease fails, the job drains, 1 lost",
        offsite_redirect,
        True,
    ),
    Scenario(
        "redirect loop",
        "a product redirects in a loop: dropped and counted, the job drains",
        redirect_loop,
    ),
    Scenario(
        "selectors match nothing",
        "a profile whose follow rule matches no link: nothing_stored",
        selectors_nothing,
    ),
    Scenario(
        "all items invalid",
        "every item dropped by validation: nothing_stored, the report's invalid = pages served",
        all_invalid,
    ),
    Scenario(
        "product pages unreadable",
        "a layout the spider cannot parse: nothing_stored, unparsed = served",
        unreadable_products,
    ),
    Scenario("refused everywhere", "every page a 403 block: refused, exit 3", refused_everywhere),
    Scenario(
        "throttled once", "every product 429 once: retried, every product stored", blocked_once
    ),
    Scenario(
        "layout accepted + card skip",
        "a new baseline accepted, product pages unreadable: the re-crawl fetches every "
        "page, nothing counted unchanged",
        layout_card_skip,
    ),
    Scenario(
        "store refusing, spill",
        "frontier workers, ES write-blocked: nothing_stored, every item in the Redis spill",
        store_refusing_spill,
    ),
    Scenario(
        "store refusing, file spill",
        "local mode, ES write-blocked: nothing_stored, every item in the spill file",
        store_refusing_file_spill,
    ),
    Scenario(
        "store refusing, no spill",
        "local mode, ES write-blocked, spill file unwritable: store_failed at "
        "STORE_CLOSE_TIMEOUT, exit 5",
        store_refusing_no_spill,
        True,
    ),
    Scenario(
        "mapping conflict",
        "an index with a conflicting mapping: store_failed, every item a dead letter",
        mapping_conflict,
    ),
    Scenario(
        "proxy dead",
        "the only proxy refuses connections: nothing_stored, the site never reached",
        proxy_dead,
    ),
    Scenario(
        "proxy dropping", "the only proxy closes every connection: nothing_stored", proxy_dropping
    ),
    Scenario(
        "proxy working", "through a loopback forwarding proxy: every product stored", proxy_working
    ),
    Scenario(
        "sessions, cloudflare",
        "challenge level, sessions: every product, challenges counted as the stand-in saw",
        defended("cloudflare", SESSIONS),
    ),
    Scenario(
        "sessions + auto, cloudflare",
        "challenge level, sessions + RENDER_MODE=auto",
        defended("cloudflare", AUTO),
    ),
    Scenario("sessions, aws", "the AWS-style challenge, sessions", defended("aws", SESSIONS)),
    Scenario(
        "sessions + auto, aws",
        "the AWS-style challenge, sessions + RENDER_MODE=auto",
        defended("aws", AUTO),
    ),
    Scenario(
        "worker killed, sessions",
        "2 workers behind the challenge, one SIGKILLed mid-job and replaced: every "
        "product once, challenges counted",
        defended("cloudflare", SESSIONS, workers=2, kill=True),
    ),
)

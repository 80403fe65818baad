"""docker/kibana/saved_objects.ndjson against the mappings a real demo job leaves in the
real Elasticsearch node.

The module fixture runs the demo job's data path for real: the demo shop, the producer, a
`scrapy crawl demo` worker on the Redis frontier storing through the item pipelines, the
job document (core.jobs.index.write_job_document) and the LLM step (indexing.process.process_job,
with a tiny deterministic embedder instead of the offline model: only the vector size
differs, not the mapping). The other sites have no spider yet, so their item indices are
created by the store's own function (core.store.ensure_item_index with the item type's
schema), exactly as their first stored item would create them.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
import redis
from elasticsearch import AsyncElasticsearch, Elasticsearch

from core.jobs.index import JOBS_ALIAS, job_counters, job_started_at, write_job_document
from core.store import ensure_item_index
from crawlers.cli.producer import produce
from crawlers.items import schema_by_type
from crawlers.profiles import profile_sites
from harness.demo_site import DemoSite
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from indexing.chunking import Chunker
from indexing.process import process_job
from orchestration import kibana_objects as generator
from tests.crawlers.pipelines.support import start_store_worker
from tests.crawlers.support import log_excerpt, wait_all
from tests.docker.support import SAVED_OBJECTS

PRODUCTS = 48
NUMERIC = {"long", "integer", "short", "byte", "double", "float", "half_float", "scaled_float"}
# Lens operation -> the field types it works on.
OPERATION_TYPES = {
    "date_histogram": {"date", "date_nanos"},
    "terms": {"keyword", "ip", "boolean"} | NUMERIC,
    "sum": NUMERIC,
    "average": NUMERIC,
    "max": NUMERIC | {"date"},
    "min": NUMERIC | {"date"},
    "unique_count": {"keyword", "ip", "boolean", "date"} | NUMERIC,
}


class TinyEmbedder:
    """Deterministic unit vectors of 8 floats: the LLM step's interface, no model."""

    name = "test:sha256-8"
    dims = 8

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = []
        for text in texts:
            raw = [b - 127.5 for b in hashlib.sha256(text.encode()).digest()[: self.dims]]
            norm = math.sqrt(sum(v * v for v in raw)) or 1.0
            vectors.append([v / norm for v in raw])
        return vectors


@dataclass
class Stack:
    """Field name -> type, per concrete index, as the node holds them."""

    fields: dict[str, dict[str, str]]
    es: Elasticsearch

    def indices(self, pattern: str) -> list[str]:
        """Concrete indices of an index pattern, alias or wildcard (as Kibana resolves it)."""
        resolved = self.es.indices.resolve_index(name=pattern)
        names = {index["name"] for index in resolved["indices"]}
        for alias in resolved["aliases"]:
            names |= set(alias["indices"])
        return sorted(names)

    def field_types(self, pattern: str) -> dict[str, set[str]]:
        types: dict[str, set[str]] = {}
        for index in self.indices(pattern):
            for name, kind in self.fields[index].items():
                types.setdefault(name, set()).add(kind)
        return types


def flatten(properties: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    fields: dict[str, str] = {}
    for name, spec in properties.items():
        path = f"{prefix}{name}"
        if "properties" in spec:
            fields[path] = spec.get("type", "object")
            fields |= flatten(spec["properties"], f"{path}.")
        else:
            fields[path] = spec["type"]
        for sub, sub_spec in (spec.get("fields") or {}).items():
            fields[f"{path}.{sub}"] = sub_spec["type"]
    return fields


def _cleanup(es: Elasticsearch, server: redis.Redis) -> None:
    """Only what this module creates: the sites' item indices, chunks-demo, the jobs index,
    changes-demo."""
    for key in server.scan_iter("demo:*"):
        server.delete(key)
    sites = ",".join(f"items-{site}-*" for site in generator.item_types())
    for pattern in (sites, "chunks-demo", "platform-jobs-*", "changes-demo*"):
        es.indices.delete(index=pattern, ignore_unavailable=True, allow_no_indices=True)


async def _declare_item_indices(es_url: str, sites: Mapping[str, str]) -> None:
    async with AsyncElasticsearch(es_url, request_timeout=60) as client:
        for site, item_type in sites.items():
            await ensure_item_index(
                client, site, item_type, schema_by_type(item_type).es_properties
            )


@pytest.fixture(scope="module")
def stack(
    redis_server: RedisServer, es_node: ElasticsearchNode, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    run_dir = tmp_path_factory.mktemp("kibana-demo-job")
    server = redis_server.client()
    es = Elasticsearch(es_node.url, request_timeout=60)
    _cleanup(es, server)
    with DemoSite(run_dir=run_dir, products=PRODUCTS, name="kibana-demo-site") as site:
        # The demo job: producer -> an always-on-style worker draining the frontier.
        job = produce(server, "demo", base_url=site.url)
        log = run_dir / "worker.log"
        worker = start_store_worker(
            job_id=job.job_id,
            base_url=site.url,
            log_path=log,
            redis_url=redis_server.url,
            es_url=es_node.url,
        )
        assert wait_all([worker], timeout=180) == [0], log_excerpt(log)
    counters = job_counters(server, "demo", job.job_id)
    assert counters.get("items/new", 0) == PRODUCTS, counters
    write_job_document(
        es,
        "demo",
        job.job_id,
        "completed",
        job_started_at(server, "demo", job.job_id),
        dt.datetime.now(dt.UTC),
        counters,
        refresh=True,
    )
    report = process_job(
        es,
        server,
        "demo",
        job.job_id,
        TinyEmbedder(),
        chunker=Chunker(use_model_tokenizer=False),
    )
    assert report.processed == PRODUCTS and report.chunks_written >= PRODUCTS, report
    others = {s: t for s, t in generator.item_types().items() if s != "demo"}
    asyncio.run(_declare_item_indices(es_node.url, others))
    # changes-demo: declared by the worker's history pipeline when it opened.
    es.indices.refresh(index="items-*,chunks-*,platform-jobs-*,changes-*")
    mappings = es.indices.get_mapping(index="items-*,chunks-*,changes-*," + JOBS_ALIAS)
    fields = {
        index: flatten(body["mappings"].get("properties", {}))
        for index, body in mappings.body.items()
    }
    yield Stack(fields=fields, es=es)
    _cleanup(es, server)
    es.close()


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    return [json.loads(line) for line in SAVED_OBJECTS.read_text().splitlines()]


def by_id(objects: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(obj["type"], obj["id"]): obj for obj in objects}


# -- the file itself -------------------------------------------------------------------------


def test_every_line_parses_and_ids_are_unique() -> None:
    lines = SAVED_OBJECTS.read_text().splitlines()
    assert lines and all(line.strip() for line in lines)
    parsed = [json.loads(line) for line in lines]
    assert all(isinstance(obj, dict) for obj in parsed)
    keys = [(obj["type"], obj["id"]) for obj in parsed]
    assert len(keys) == len(set(keys))
    for obj in parsed:
        assert obj["coreMigrationVersion"] and obj["typeMigrationVersion"], obj["id"]
        assert isinstance(obj["attributes"], dict) and isinstance(obj["references"], list)
        for name, value in obj["attributes"].items():
            if name.endswith("JSON") and isinstance(value, str):
                json.loads(value)  # embedded JSON strings parse too
        meta = obj["attributes"].get("kibanaSavedObjectMeta", {})
        if "searchSourceJSON" in meta:
            json.loads(meta["searchSourceJSON"])


def test_file_is_what_the_generator_prints() -> None:
    assert SAVED_OBJECTS.read_text() == generator.render(), (
        "regenerate from the site profiles: python -m orchestration.wiring"
    )


def test_what_the_issue_asks_for_is_there(objects: list[dict[str, Any]]) -> None:
    views = {o["attributes"]["title"]: o for o in objects if o["type"] == "index-pattern"}
    assert set(views) == {"items-*", "chunks-*", JOBS_ALIAS, "changes-*"}
    searches = {o["id"] for o in objects if o["type"] == "search"}
    assert searches == {f"platform-items-{site}" for site in profile_sites()}
    [board] = [o for o in objects if o["type"] == "dashboard"]
    titles = {
        by_id(objects)[("lens", ref["id"])]["attributes"]["title"] for ref in board["references"]
    }
    for wanted in (
        "Items scraped per site per day",
        "New and changed items per job",
        "Block rate per site over time",
        "Job durations per site",
        "Job statuses",
        "Price history",
    ):
        assert wanted in titles


def test_saved_searches_show_fields_of_each_profiles_item_type(
    objects: list[dict[str, Any]],
) -> None:
    searches = {o["id"]: o for o in objects if o["type"] == "search"}
    for site, item_type in generator.item_types().items():
        fields = set(schema_by_type(item_type).field_names)  # declared in crawlers/items.py
        attributes = searches[f"platform-items-{site}"]["attributes"]
        assert item_type in attributes["description"]
        columns = [c for c in attributes["columns"] if c not in generator.COMMON_COLUMNS]
        assert columns and {c.split(".")[0] for c in columns} <= fields, (site, columns)


def test_an_item_type_without_listed_columns_shows_its_required_and_history_fields(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(generator.COLUMNS_BY_ITEM_TYPE, "hotel")
    schema = schema_by_type("hotel")
    columns = generator.columns_of("hotel")
    assert columns[-3:] == generator.COMMON_COLUMNS
    own = columns[: -len(generator.COMMON_COLUMNS)]
    assert own and len(own) <= generator.DEFAULT_COLUMN_COUNT
    assert set(own) <= set(schema.required) | set(schema.history)
    assert "url" not in own  # once, among the common columns


def test_references_resolve_within_the_file(objects: list[dict[str, Any]]) -> None:
    known = by_id(objects)
    for obj in objects:
        for ref in obj["references"]:
            assert (ref["type"], ref["id"]) in known, (obj["id"], ref)


def test_lens_state_is_self_consistent(objects: list[dict[str, Any]]) -> None:
    for obj in (o for o in objects if o["type"] == "lens"):
        state = obj["attributes"]["state"]
        layers = state["datasourceStates"]["formBased"]["layers"]
        ref_names = {ref["name"] for ref in obj["references"]}
        for layer_id, layer in layers.items():
            assert f"indexpattern-datasource-layer-{layer_id}" in ref_names, obj["id"]
            assert set(layer["columnOrder"]) == set(layer["columns"]), obj["id"]
            for column in layer["columns"].values():
                order = column.get("params", {}).get("orderBy", {})
                if order.get("type") == "column":
                    assert order["columnId"] in layer["columns"], obj["id"]
        columns = {c for layer in layers.values() for c in layer["columns"]}
        visualization = state["visualization"]
        if obj["attributes"]["visualizationType"] == "lnsXY":
            for layer in visualization["layers"]:
                assert layer["layerId"] in layers
                used = [layer["xAccessor"], *layer["accessors"]]
                used += [layer["splitAccessor"]] if "splitAccessor" in layer else []
                assert set(used) <= columns, obj["id"]
        else:
            assert obj["attributes"]["visualizationType"] == "lnsDatatable"
            assert {c["columnId"] for c in visualization["columns"]} == columns
            assert visualization["sorting"]["columnId"] in columns


def test_dashboard_panels_match_their_references(objects: list[dict[str, Any]]) -> None:
    [board] = [o for o in objects if o["type"] == "dashboard"]
    panels = json.loads(board["attributes"]["panelsJSON"])
    refs = {ref["name"]: ref for ref in board["references"]}
    cells: set[tuple[int, int]] = set()
    for panel in panels:
        name = f"{panel['panelIndex']}:{panel['panelRefName']}"
        assert name in refs and refs[name]["type"] == panel["type"] == "lens"
        grid = panel["gridData"]
        assert grid["i"] == panel["panelIndex"] and grid["x"] + grid["w"] <= 48
        area = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not area & cells, "panels overlap"
        cells |= area
    assert len(panels) == len(refs)


# -- every field a Kibana object references exists in the real mapping -------------------------


def _kql_fields(query: str) -> set[str]:
    return set(re.findall(r"([A-Za-z_][\w.]*)\s*:", query))


def _data_view(objects: list[dict[str, Any]], ref_id: str) -> str:
    return str(by_id(objects)[("index-pattern", ref_id)]["attributes"]["title"])


def test_data_view_time_fields_are_dates_in_every_index(
    stack: Stack, objects: list[dict[str, Any]]
) -> None:
    for view in (o for o in objects if o["type"] == "index-pattern"):
        pattern = view["attributes"]["title"]
        indices = stack.indices(pattern)
        assert indices, f"{pattern} matches no index after a demo job"
        time_field = view["attributes"]["timeFieldName"]
        for index in indices:
            assert stack.fields[index].get(time_field) == "date", (pattern, index, time_field)


def test_lens_fields_exist_with_fitting_types(stack: Stack, objects: list[dict[str, Any]]) -> None:
    checked = 0
    for obj in (o for o in objects if o["type"] == "lens"):
        state = obj["attributes"]["state"]
        for layer_id, layer in state["datasourceStates"]["formBased"]["layers"].items():
            [ref] = [
                r
                for r in obj["references"]
                if r["name"] == f"indexpattern-datasource-layer-{layer_id}"
            ]
            pattern = _data_view(objects, ref["id"])
            types = stack.field_types(pattern)
            for column in layer["columns"].values():
                field = column.get("sourceField")
                if column["operationType"] == "count":
                    assert field == "___records___"
                    continue
                assert field in types, f"{obj['id']}: {field} is not a field of {pattern}"
                allowed = OPERATION_TYPES[column["operationType"]]
                assert types[field] <= allowed, (obj["id"], field, types[field])
                checked += 1
        for field in _kql_fields(state["query"]["query"]):
            assert field in stack.field_types(pattern), (obj["id"], field)
    assert checked >= 15


def test_saved_search_fields_exist_for_their_site(
    stack: Stack, objects: list[dict[str, Any]]
) -> None:
    for search in (o for o in objects if o["type"] == "search"):
        site = search["id"].removeprefix("platform-items-")
        [ref] = search["references"]
        assert _data_view(objects, ref["id"]) == "items-*"
        source = json.loads(search["attributes"]["kibanaSavedObjectMeta"]["searchSourceJSON"])
        assert source["indexRefName"] == ref["name"]
        assert source["query"] == {"query": f'site : "{site}"', "language": "kuery"}
        site_types = stack.field_types(f"items-{site}")  # the site's read alias
        assert site_types, f"no items-{site} index"
        wanted = set(search["attributes"]["columns"])
        wanted |= {field for field, _ in search["attributes"]["sort"]}
        wanted |= _kql_fields(source["query"]["query"])
        missing = sorted(field for field in wanted if field not in site_types)
        assert missing == [], f"{search['id']}: {missing}"


def test_the_demo_job_is_visible_through_the_data_views(stack: Stack) -> None:
    # The documents the dashboard counts are there, with the fields it aggregates.
    jobs = stack.es.search(index=JOBS_ALIAS, query={"term": {"site": "demo"}})["hits"]["hits"]
    assert len(jobs) == 1
    job = jobs[0]["_source"]
    assert job["items_new"] == PRODUCTS and job["finished_at"] and job["status"] == "completed"
    assert stack.es.count(index="items-*", query={"term": {"site": "demo"}})["count"] == PRODUCTS
    assert stack.es.count(index="chunks-*", query={"term": {"site": "demo"}})["count"] >= PRODUCTS


def test_mapping_checks_catch_a_wrong_field(stack: Stack) -> None:
    # The same lookups reject what does not exist or has the wrong type.
    items = stack.field_types("items-*")
    assert "no_such_field" not in items
    assert not items["site"] <= OPERATION_TYPES["date_histogram"]
    assert "price" not in stack.field_types("items-g2")  # reviews have no price

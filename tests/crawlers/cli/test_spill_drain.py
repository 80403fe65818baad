"""``python -m crawlers.cli.spill drain <site>``: with a Redis URL it drains the
site's Redis spill and its spill file, printing what it drained, what is left and the
dead letters. (Without Redis, after a real crawl: test_local_mode.py.)"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from elasticsearch import Elasticsearch

from core.config import ENVIRONMENT, OperatorError
from core.keys import SiteKeys
from core.store import FileSpill
from crawlers.cli.spill import main
from crawlers.items import DemoProduct
from harness.es_node import ElasticsearchNode
from harness.redis_server import RedisServer
from standins.demo_site.catalog import build_catalog
from tests.core.store.support import BASE, action_for, clean_site, docs
from tests.crawlers.support import REPO_ROOT, crawl_env


@pytest.fixture
def site(es: Elasticsearch, redis_server: RedisServer) -> Iterator[str]:
    name = f"t{uuid.uuid4().hex[:8]}"
    yield name
    clean_site(es, name)
    server = redis_server.client()
    server.delete(SiteKeys(name).store_spill, SiteKeys(name).store_dead_letters)


def test_drains_the_redis_spill_and_the_spill_file_once(
    es: Elasticsearch,
    es_node: ElasticsearchNode,
    redis_server: RedisServer,
    site: str,
    tmp_path: Path,
) -> None:
    products = [DemoProduct(**p.to_dict(BASE)) for p in build_catalog(n_products=40).products]
    actions = [action_for(site, p, seen=2, first=1) for p in products]
    server: redis.Redis = redis_server.client()
    # Products 0-29 wait in Redis, 20-39 in the file: ten were spilled in both places.
    server.rpush(SiteKeys(site).store_spill, *[a.to_json() for a in actions[:30]])
    spill_file = tmp_path / f"{site}.jsonl"
    asyncio.run(FileSpill(spill_file).push(actions[20:]))
    with spill_file.open("a") as out:
        out.write("{not json\n")  # undecodable: a dead letter, not a blocked drain

    argv = [sys.executable, "-m", "crawlers.cli.spill", "drain", site]
    argv += ["--redis-url", redis_server.url, "--elasticsearch-url", es_node.url]
    argv += ["--spill-file", str(spill_file)]
    done = subprocess.run(
        argv, cwd=REPO_ROOT, env=crawl_env(), capture_output=True, text=True, timeout=120
    )

    assert done.returncode == 0, done.stdout + done.stderr
    keys = SiteKeys(site)
    assert done.stdout.splitlines() == [
        f"{site}: redis list {keys.store_spill}: drained 30, 0 left; 0 dead letters "
        f"({keys.store_dead_letters})",
        f"{site}: file {spill_file}: drained 21, 0 left; 1 dead letters "
        f"({tmp_path / f'{site}.dead.jsonl'})",
    ]
    stored = docs(es, site)
    assert sorted(stored) == sorted(a.doc_id for a in actions)  # each product once
    assert server.llen(keys.store_spill) == 0
    assert not spill_file.exists()


def test_nothing_to_drain_is_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for variable in ENVIRONMENT:
        monkeypatch.delenv(variable.name, raising=False)
    missing = tmp_path / "demo.jsonl"
    argv = ["drain", "demo", "--elasticsearch-url", "http://127.0.0.1:9"]
    assert main([*argv, "--spill-file", str(missing)]) == 0
    assert (
        capsys.readouterr().out
        == f"demo: nothing to drain (no REDIS_URL, no spill file {missing})\n"
    )
    assert not missing.exists()


def test_an_unknown_site_with_nothing_spilled_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ENVIRONMENT:
        monkeypatch.delenv(variable.name, raising=False)
    argv = ["drain", "dmeo", "--elasticsearch-url", "http://127.0.0.1:9"]
    with pytest.raises(OperatorError) as raised:
        main([*argv, "--spill-file", str(tmp_path / "dmeo.jsonl")])
    assert raised.value.message.startswith("unknown site 'dmeo': known sites are booking_com, ")
    assert raised.value.code == 2

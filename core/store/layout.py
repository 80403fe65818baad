"""Where item documents live: index, alias and template names, ids, the index declaration.

Per site and item type: the concrete index ``items-<site>-<type>-v1`` (from a composable
template of ``items-common`` + ``items-type-<type>``), its write alias
``items-<site>-<type>`` (written with ``require_alias``), the read alias ``items-<site>``.
A document's ``_id`` is its item key (hashed over 512 bytes). Replicas are decided when the
index is created.

Reads: ``STORE_INDEX_REPLICAS`` (``auto``: one replica with two or more data nodes).
Details: docs/pipelines.md "Index layout".
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping
from typing import Any

from elasticsearch import AsyncElasticsearch, BadRequestError, Elasticsearch

from core.config import ConfigurationError
from core.items_schema import DATE, KEYWORD, UnknownItemType

# ES refuses longer ids (512 bytes); such keys (long URLs) are hashed instead.
MAX_ID_BYTES = 512

COMMON_PROPERTIES: dict[str, Any] = {
    "item_key": dict(KEYWORD),
    "site": dict(KEYWORD),
    "item_type": dict(KEYWORD),
    "job_id": dict(KEYWORD),
    # The last job that extracted the item from its page (a full write; a touch of an
    # item seen unchanged without its page, moves job_id only): what coverage judges.
    "extracted_job_id": dict(KEYWORD),
    "content_hash": dict(KEYWORD),
    "first_seen": dict(DATE),
    "last_seen": dict(DATE),
    "last_changed": dict(DATE),
    # Set when the item was not seen in K consecutive complete jobs (core.recrawl.removals).
    "removed_at": dict(DATE),
}


class IndexLayout:
    """Index, alias and template names (see the module docstring)."""

    common_component = "items-common"
    version = 1
    all_sites = "items-*"

    @staticmethod
    def index(site: str, item_type: str, version: int = 1) -> str:
        return f"items-{site}-{item_type}-v{version}"

    @staticmethod
    def write_alias(site: str, item_type: str) -> str:
        return f"items-{site}-{item_type}"

    @staticmethod
    def read_alias(site: str) -> str:
        return f"items-{site}"

    @staticmethod
    def template(site: str, item_type: str) -> str:
        return f"items-{site}-{item_type}"

    @staticmethod
    def type_component(item_type: str) -> str:
        return f"items-type-{item_type}"


AUTO_REPLICAS = "auto"


def replicas_setting(value: object, name: str = "STORE_INDEX_REPLICAS") -> int | None:
    """A replicas setting: a count >= 0, or None for ``auto`` (see the module docstring)."""
    if value is None or str(value).strip().lower() == AUTO_REPLICAS:
        return None
    try:
        count = int(str(value).strip())
    except ValueError:
        count = -1
    if count < 0:
        raise ConfigurationError(
            f"{name}={value!r} is not a replica count: set it to auto or a number >= 0"
        )
    return count


def replicas_for(data_nodes: int) -> int:
    """``auto``: one replica once a second data node can hold it, else none."""
    return 1 if data_nodes >= 2 else 0


async def cluster_replicas(es: AsyncElasticsearch, replicas: int | None = None) -> int:
    """``replicas`` if given, else ``auto`` for the cluster ``es`` talks to."""
    if replicas is not None:
        return replicas
    health = await es.cluster.health()
    return replicas_for(int(health["number_of_data_nodes"]))


def cluster_replicas_sync(es: Elasticsearch, replicas: int | None = None) -> int:
    """``cluster_replicas`` for the synchronous client."""
    if replicas is not None:
        return replicas
    return replicas_for(int(es.cluster.health()["number_of_data_nodes"]))


def doc_id_for(key: str) -> str:
    """The deterministic ``_id`` of an item key: the key itself unless it is too long."""
    if len(key.encode()) <= MAX_ID_BYTES:
        return key
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()


def index_for_key(key: str) -> str:
    """The alias holding an item key's document (``<site>:<type>:<id>`` -> its type's)."""
    site, item_type, _ = key.split(":", 2)
    return IndexLayout.write_alias(site, item_type)


def iso_ms(epoch_ms: int) -> str:
    moment = dt.datetime.fromtimestamp(epoch_ms / 1000, tz=dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def epoch_ms(iso: str) -> int:
    return int(dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


async def ensure_item_index(
    es: AsyncElasticsearch,
    site: str,
    item_type: str,
    properties: Mapping[str, Any] | None,
    *,
    replicas: int | None = None,
) -> None:
    """Templates, concrete index and aliases of ``site``/``item_type``; idempotent.

    ``replicas`` None: one when the cluster has two or more data nodes, else none.

    With ``properties`` (the item schema's mapping) everything is (re)declared and new
    fields are added to the existing index. Without them (a process that does not know
    the item type, e.g. draining another worker's spill) the write alias must exist.
    """
    layout = IndexLayout
    write_alias = layout.write_alias(site, item_type)
    if properties is None:
        if await es.indices.exists_alias(name=write_alias):
            return
        raise UnknownItemType(
            f"{write_alias} does not exist and item type {item_type!r} is not declared here "
            "(crawlers.items declares the platform's)"
        )
    await es.cluster.put_component_template(
        name=layout.common_component,
        template={"mappings": {"dynamic": "strict", "properties": COMMON_PROPERTIES}},
        meta={"managed_by": "core.store", "what": "fields every item document carries"},
    )
    await es.cluster.put_component_template(
        name=layout.type_component(item_type),
        template={"mappings": {"properties": dict(properties)}},
        meta={"managed_by": "core.store", "item_type": item_type},
    )
    index = layout.index(site, item_type, layout.version)
    await es.indices.put_index_template(
        name=layout.template(site, item_type),
        index_patterns=[f"items-{site}-{item_type}-v*"],
        composed_of=[layout.common_component, layout.type_component(item_type)],
        priority=200,
        template={
            "settings": {
                "number_of_shards": 1,
                "number_of_replicas": await cluster_replicas(es, replicas),
                "refresh_interval": "1s",
            }
        },
        meta={"managed_by": "core.store", "site": site, "item_type": item_type},
    )
    aliases = {
        write_alias: {"is_write_index": True},
        # Explicitly not a write index: a stray write to the read alias fails loudly.
        layout.read_alias(site): {"is_write_index": False},
    }
    try:
        await es.indices.create(index=index, aliases=aliases)
    except BadRequestError as exc:
        if exc.error != "resource_already_exists_exception":
            raise
        await es.indices.put_mapping(index=index, properties={**COMMON_PROPERTIES, **properties})
        if not await es.indices.exists_alias(name=write_alias, index=index):
            await es.indices.update_aliases(
                actions=[
                    {"add": {"index": index, "alias": name, **spec}}
                    for name, spec in aliases.items()
                ]
            )

"""Store items into Elasticsearch: bulk upserts, deterministic ids, nothing lost.

One module per job:

* ``layout``: index, alias and template names, document ids, the index declaration;
* ``actions``: one document write (``StoreAction``) and its outcomes;
* ``bulk``: the hop to Elasticsearch (one bulk, each result classified);
* ``writer``: ``ItemStore``, buffered durable writes (the one retry layer of the hop),
  with ``batch`` (its pending writes), ``outage`` (Elasticsearch's availability) and
  ``failures`` (dead letters, a spill that cannot be written, items given up);
* ``spill`` / ``spill_redis`` / ``spill_file``: where writes wait while ES is away;
* ``settings``: ``StoreSettings`` from the crawl's ``STORE_*`` settings;
* ``state``: dedup state read back from the stored documents (local mode, no Redis);
* ``read``: the one read path of stored items (LLM step, search, health);
* ``replay``: drain a site's spill from outside a crawl.

See docs/pipelines.md.
"""

from core.store.actions import (
    DeadLettered,
    Outcome,
    StoreAction,
    StoreUnavailable,
    build_action,
    build_touch,
)
from core.store.batch import StoreReport
from core.store.bulk import INDEX_PREPARERS, IndexPreparer
from core.store.changes import prepare_changes_index
from core.store.layout import (
    IndexLayout,
    doc_id_for,
    ensure_item_index,
    epoch_ms,
    index_for_key,
    iso_ms,
)
from core.store.read import get_items, item_keys, items_index, job_items
from core.store.replay import drain_site_spill
from core.store.settings import MissingSetting, StoreSettings
from core.store.spill import SPILL_ERRORS, Spill
from core.store.spill_file import FileSpill
from core.store.spill_redis import RedisSpill, dead_letters, spill_size
from core.store.state import DocumentState
from core.store.writer import ItemStore

# Indices the store writes besides items: declared before their first bulk write.
INDEX_PREPARERS.setdefault("changes-", prepare_changes_index)

__all__ = [
    "INDEX_PREPARERS",
    "SPILL_ERRORS",
    "DeadLettered",
    "DocumentState",
    "FileSpill",
    "IndexLayout",
    "IndexPreparer",
    "ItemStore",
    "MissingSetting",
    "Outcome",
    "RedisSpill",
    "Spill",
    "StoreAction",
    "StoreReport",
    "StoreSettings",
    "StoreUnavailable",
    "build_action",
    "build_touch",
    "dead_letters",
    "doc_id_for",
    "drain_site_spill",
    "ensure_item_index",
    "epoch_ms",
    "get_items",
    "index_for_key",
    "iso_ms",
    "item_keys",
    "items_index",
    "job_items",
    "spill_size",
]

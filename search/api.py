"""The search API (FastAPI).

    GET /search?q=...&site=demo&k=10&mode=hybrid   fused hits with item fields and scores
    GET /health                                     ES reachability, per-site freshness
    GET /items/{key}/history?limit=100              the item's changes, newest first

Run: ``.venv/bin/python -m search.api --port 8088`` (uvicorn; Elasticsearch from
``ELASTICSEARCH_URL``, the embedder from ``OPENAI_*`` / the offline model, see
``indexing.embedders.default_embedder``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import time
from typing import Annotated, Any

import uvicorn
from elastic_transport import TransportError
from elasticsearch import ApiError, Elasticsearch
from fastapi import FastAPI, HTTPException, Query
from fastapi.responses import JSONResponse

from core.config import get_settings
from indexing.embedders import Embedder, EmbeddingError, default_embedder
from search.core import (
    MODES,
    HybridSearch,
    Mode,
    QueryEmbedderMismatch,
    SearchError,
    UnknownItem,
    UnknownSite,
    item_history,
)
from search.health import DEFAULT_STALE_AFTER, check_health

logger = logging.getLogger(__name__)

SITE_PATTERN = r"^[a-z0-9][a-z0-9_.-]*$"


def create_app(
    es: Elasticsearch,
    embedder: Embedder | None,
    *,
    stale_after: dt.timedelta = DEFAULT_STALE_AFTER,
) -> FastAPI:
    """The API over ``es``; ``embedder`` embeds queries (None: BM25 only)."""
    app = FastAPI(title="Scraping platform search", version="1")
    searcher = HybridSearch(es, embedder)

    # Plain ``def`` endpoints: FastAPI runs them in its thread pool, so the blocking
    # Elasticsearch client and the CPU-bound embedder never stall the event loop.
    @app.get("/search")
    def search(
        q: Annotated[str, Query(min_length=1, max_length=1000, description="the query")],
        site: Annotated[str | None, Query(pattern=SITE_PATTERN)] = None,
        k: Annotated[int, Query(ge=1, le=100)] = 10,
        mode: Annotated[Mode, Query(description=", ".join(MODES))] = "hybrid",
    ) -> dict[str, Any]:
        if embedder is None and mode != "bm25":
            raise HTTPException(400, "no embedder is configured here: use mode=bm25")
        try:
            return searcher.search(q, site=site, k=k, mode=mode).as_dict()
        except UnknownSite as exc:
            raise HTTPException(404, str(exc)) from None
        except QueryEmbedderMismatch as exc:
            raise HTTPException(409, str(exc)) from None
        except SearchError as exc:
            raise HTTPException(400, str(exc)) from None
        except EmbeddingError as exc:
            raise HTTPException(502, f"query embedding failed: {exc}") from None
        except (TransportError, ApiError) as exc:
            logger.warning("search failed: %s", exc)
            raise HTTPException(503, f"Elasticsearch: {type(exc).__name__}") from None

    @app.get("/items/{key:path}/history")
    def history(
        key: str,
        limit: Annotated[int, Query(ge=1, le=1000, description="at most this many")] = 100,
    ) -> dict[str, Any]:
        """The item's change documents (price, availability, ...), newest first: an empty
        list for an item that never changed, 404 for a key no stored item has."""
        try:
            return {"item_key": key, "changes": item_history(es, key, limit=limit)}
        except UnknownItem as exc:
            raise HTTPException(404, str(exc)) from None
        except (TransportError, ApiError) as exc:
            logger.warning("history failed: %s", exc)
            raise HTTPException(503, f"Elasticsearch: {type(exc).__name__}") from None

    @app.get("/health")
    def health() -> JSONResponse:
        report = check_health(es, stale_after=stale_after).as_dict()
        report["embedder"] = embedder.name if embedder is not None else None
        # Stale data is still served: only an Elasticsearch unreachable or refusing
        # the credentials ("denied") is unhealthy.
        status = 503 if report["status"] in ("down", "denied") else 200
        return JSONResponse(report, status_code=status)

    return app


def warm_up(embedder: Embedder) -> None:
    """One embedding before serving: an offline model loads on first use, once, and an
    endpoint's connection opens; not in the first query's time. An endpoint that does not
    answer yet is tried again by each query (502 meanwhile)."""
    started = time.perf_counter()
    try:
        embedder.embed(["warm-up"])
    except EmbeddingError as exc:
        logger.warning("query embedder %s did not answer at start: %s", embedder.name, exc)
        return
    logger.info(
        "query embedder: %s (%d dims), ready in %.1f s",
        embedder.name,
        embedder.dims,
        time.perf_counter() - started,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve the search API with uvicorn.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8088)
    parser.add_argument(
        "--stale-after-hours",
        type=float,
        default=DEFAULT_STALE_AFTER.total_seconds() / 3600,
        help="a site whose items were last seen longer ago is reported stale",
    )
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s %(message)s")
    es = Elasticsearch(**get_settings().elasticsearch_client_kwargs(), request_timeout=30)  # type: ignore[arg-type]
    embedder: Embedder | None
    try:
        embedder = default_embedder()
    except EmbeddingError as exc:
        logger.warning("no query embedder (%s): serving BM25 only", exc)
        embedder = None
    if embedder is not None:
        warm_up(embedder)
    app = create_app(es, embedder, stale_after=dt.timedelta(hours=args.stale_after_hours))
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    finally:
        es.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

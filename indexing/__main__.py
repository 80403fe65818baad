"""Operator CLI for the llm-process step.

    .venv/bin/python -m indexing process --site demo --job <job id>   # a job's new/changed items
    .venv/bin/python -m indexing backfill --site demo                 # every item of the site
    .venv/bin/python -m indexing backfill --site idealista --language es

``--language`` (ISO 639-1) picks the text analyzer when the chunks index is created (the
flow passes the site profile's language); an existing index keeps its own.

Elasticsearch from ``ELASTICSEARCH_URL``, Redis from ``REDIS_URL`` (``process`` only), the
embedder from ``OPENAI_*`` or the offline model. Prints the report as JSON.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from elasticsearch import Elasticsearch

from core.config import get_settings, redacted
from core.redis_client import check_mode, connect
from indexing.embedders import EmbeddingError, default_embedder
from indexing.index import EmbedderMismatch
from indexing.process import ChunkIndexError, backfill_site, process_job


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m indexing", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    process = commands.add_parser("process", help="a job's new and changed items")
    process.add_argument("--site", required=True)
    process.add_argument("--job", required=True)
    backfill = commands.add_parser("backfill", help="every item of a site")
    backfill.add_argument("--site", required=True)
    for command in (process, backfill):
        command.add_argument("--language", help="the site's language (es, pt, it, fr, en)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s %(message)s")
    settings = get_settings()
    es = Elasticsearch(**settings.elasticsearch_client_kwargs(), request_timeout=120)
    try:
        embedder = default_embedder(settings)
        if args.command == "process":
            if not settings.redis_url:
                parser.error("process needs REDIS_URL (the job's new/changed keys live there)")
            server = connect(settings.redis_url, cluster=settings.redis_cluster)
            check_mode(server, redacted(settings.redis_url))  # else: one line, exit 2
            report = process_job(es, server, args.site, args.job, embedder, language=args.language)
        else:
            report = backfill_site(es, args.site, embedder, language=args.language)
    except (EmbeddingError, EmbedderMismatch, ChunkIndexError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        es.close()
    print(json.dumps(report.as_dict(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Operator CLI: search from a terminal, or print the search health.

    .venv/bin/python -m search "waterproof head torch" --site demo -k 5
    .venv/bin/python -m search "..." --site demo --mode bm25 --json
    .venv/bin/python -m search --health

Talks to Elasticsearch directly (``ELASTICSEARCH_URL``) with the configured embedder, the
same code as the API, and checks its arguments as the API does: ``--site`` a site name
(the API's 422) with a chunks index (its 404), ``-k`` within the API's bounds (its 422).
Exit status: 0 ok, 1 search error or unhealthy, 2 an operator's mistake (one line).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
from typing import NoReturn

from elastic_transport import TransportError
from elasticsearch import ApiError, Elasticsearch
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from core.config import OperatorError, get_settings
from core.es_access import auth_line, client_kwargs, is_auth_error, where, who
from indexing.embedders import Embedder, EmbeddingError, default_embedder
from indexing.index import CHUNKS_PREFIX
from search.api import SITE_PATTERN
from search.core import MODES, HybridSearch, SearchError, SearchResult, UnknownSite
from search.health import DEFAULT_STALE_AFTER, Health, check_health

# The API's bound of ``k`` (search.api: ``Query(ge=1, le=100)``; a test holds them equal).
K_MAX = 100


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line (``OperatorError``: exit status 2)."""

    def error(self, message: str) -> NoReturn:
        raise OperatorError(f"{self.prog}: {message} (see --help)")


def site_name(value: str) -> str:
    if not re.fullmatch(SITE_PATTERN, value):
        raise argparse.ArgumentTypeError(
            f"{value!r} is no site name (lowercase letters, digits, '_', '.' or '-', like demo)"
        )
    return value


def result_count(value: str) -> int:
    try:
        k = int(value)
    except ValueError:
        k = 0
    if not 1 <= k <= K_MAX:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to {K_MAX}, got {value!r}")
    return k


def elasticsearch_kwargs() -> dict[str, object]:
    """The configured Elasticsearch; without ``ELASTICSEARCH_URL``, the local stack's when
    one is up (``make prefect-up`` / ``make demo`` listen elsewhere than 9200), said once
    on stderr."""
    settings = get_settings()
    local = settings.local_stack_state().get("elasticsearch_url")
    if settings.elasticsearch_url is None and local:
        print(f"ELASTICSEARCH_URL unset: searching the local stack's {local}", file=sys.stderr)
        settings = settings.model_copy(update={"elasticsearch_url": local})
    return settings.elasticsearch_client_kwargs()


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m search", description=__doc__.splitlines()[0])
    parser.add_argument("query", nargs="?", help="what to search for")
    parser.add_argument(
        "--site", type=site_name, help="one site (default: every site's chunks index)"
    )
    parser.add_argument(
        "-k", type=result_count, default=10, help=f"how many items, 1 to {K_MAX} (default 10)"
    )
    parser.add_argument("--mode", choices=MODES, default="hybrid")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--health", action="store_true", help="print ES and index freshness")
    parser.add_argument(
        "--stale-after-hours", type=float, default=DEFAULT_STALE_AFTER.total_seconds() / 3600
    )
    args = parser.parse_args(argv)
    if not args.health and not args.query:
        parser.error("give a query, or --health")
    console = Console(soft_wrap=False)
    es = Elasticsearch(**elasticsearch_kwargs(), request_timeout=30)  # type: ignore[arg-type]
    try:
        if args.health:
            health = check_health(es, stale_after=dt.timedelta(hours=args.stale_after_hours))
            if args.json:
                _print_json(console, health.as_dict())
            else:
                _health(console, health)
            return 0 if health.status == "ok" else 1
        embedder: Embedder | None = None if args.mode == "bm25" else default_embedder()
        result = HybridSearch(es, embedder).search(
            args.query, site=args.site, k=args.k, mode=args.mode
        )
        if args.json:
            _print_json(console, result.as_dict())
        else:
            _table(console, result)
        return 0
    except UnknownSite as exc:
        if args.site is None:  # no chunks index at all: nothing indexed yet, no mistake
            console.print(f"[red]error:[/red] {escape(str(exc))}")
            return 1
        raise OperatorError(
            f"unknown site {args.site!r}: {exc}; sites with a chunks index: "
            f"{', '.join(_indexed_sites(es)) or 'none'} (python -m search --health)"
        ) from None
    except (SearchError, EmbeddingError) as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        return 1
    except (TransportError, ApiError) as exc:
        if is_auth_error(exc):
            assert isinstance(exc, ApiError)
            raise OperatorError(_auth_line(exc.meta.status, es)) from None
        if isinstance(exc, TransportError):  # no answer at all: one line, the fix in it
            print(
                f"Elasticsearch unreachable at {where(client_kwargs(es))} "
                f"({type(exc).__name__}): start it, or set ELASTICSEARCH_URL to where it runs",
                file=sys.stderr,
            )
            return 1
        # Elasticsearch's text names paths in brackets ([/chunks-*/_search]): never markup.
        console.print(f"[red]Elasticsearch error:[/red] {escape(f'{type(exc).__name__}: {exc}')}")
        return 1
    finally:
        es.close()


def _auth_line(status: int, es: Elasticsearch) -> str:
    """``auth_line``, or, when a password is set without its user (so the client sent no
    credentials at all), the missing user named."""
    kwargs = client_kwargs(es)
    settings = get_settings()
    if status == 401 and who(kwargs) == "no credentials" and settings.elasticsearch_password:
        return (
            f"Elasticsearch refused the request (401) at {where(kwargs)}: "
            "ELASTICSEARCH_PASSWORD is set but ELASTICSEARCH_USERNAME is not, so no "
            "credentials were sent; set ELASTICSEARCH_USERNAME to the password's user"
        )
    return auth_line(status, kwargs)


def _indexed_sites(es: Elasticsearch) -> list[str]:
    names = es.indices.get(index=f"{CHUNKS_PREFIX}*", allow_no_indices=True)
    return sorted(name.removeprefix(CHUNKS_PREFIX) for name in names.body)


def _print_json(console: Console, data: object) -> None:
    console.print_json(json.dumps(data, ensure_ascii=False, default=str))


def _table(console: Console, result: SearchResult) -> None:
    table = Table(
        title=f"{result.mode} search {result.query!r} ({result.took_ms:.0f} ms)",
        title_justify="left",
    )
    for column in ("#", "score", "bm25", "knn", "site", "name", "url"):
        table.add_column(column, overflow="fold")
    for rank, hit in enumerate(result.hits, start=1):
        table.add_row(
            str(rank),
            f"{hit.score:.4f}",
            str(hit.bm25.rank) if hit.bm25 else "-",
            str(hit.knn.rank) if hit.knn else "-",
            Text(hit.site),
            Text(hit.name),  # scraped text: brackets in it are not markup
            Text(hit.url or ""),
        )
    console.print(table)
    if not result.hits:
        console.print("no results")


def _health(console: Console, health: Health) -> None:
    es_state = health.elasticsearch
    if es_state.get("problem"):
        state = f"refused: {es_state['problem']}"
    elif es_state.get("reachable"):
        state = f"{es_state.get('version')} reachable"
    else:
        state = "UNREACHABLE"
    console.print(Text(f"status {health.status}; Elasticsearch {state}"))
    table = Table(title_justify="left")
    for column in ("site", "items", "last seen", "chunks", "indexed at", "embedder", "stale"):
        table.add_column(column, overflow="fold")
    for site, entry in health.sites.items():
        table.add_row(
            Text(site),
            str(entry.items.documents),
            entry.items.latest or "-",
            str(entry.chunks.documents),
            entry.chunks.latest or "-",
            entry.chunks.embedder or "-",
            Text("; ".join(entry.reasons) if entry.stale else "no"),
        )
    console.print(table)


if __name__ == "__main__":
    sys.exit(main())

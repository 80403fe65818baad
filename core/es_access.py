"""Whether Elasticsearch takes our credentials, as one line naming the problem and its fix.

Wrong credentials are not an outage: Elasticsearch answers, with 401 (who are you?) or
403 (you may not). A ping (``HEAD /``) turns both into False, which callers used to
report as "unreachable"; ``access_problem`` tells the three apart. It asks
``GET /_security/_authenticate``, which any authenticated user may call whatever its
roles; a node without security answers it 400/404 (no such endpoint): reachable, no
credentials needed.

The lines never hold a password: the URL is redacted and only the user name is named.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from elastic_transport import TransportError
from elasticsearch import ApiError, AsyncElasticsearch, Elasticsearch

from core.config import redacted

AUTH_FIX = (
    "set ELASTICSEARCH_USERNAME and ELASTICSEARCH_PASSWORD (or ELASTICSEARCH_API_KEY) "
    "to a user Elasticsearch knows"
)
AUTH_REFUSED = 401
FORBIDDEN = 403


class ElasticsearchAuthError(RuntimeError):
    """Elasticsearch refused the credentials (401) or their privileges (403)."""

    def __init__(self, line: str, status: int) -> None:
        super().__init__(line)
        self.line = line
        self.status = status


def who(kwargs: Mapping[str, Any]) -> str:
    """The identity the client presents, for a message: ``user 'x'``, an API key, none."""
    basic = kwargs.get("basic_auth")
    if isinstance(basic, tuple | list) and basic:
        return f"user {basic[0]!r}"
    if kwargs.get("api_key"):
        return "the API key in ELASTICSEARCH_API_KEY"
    return "no credentials"


def where(kwargs: Mapping[str, Any]) -> str:
    hosts = kwargs.get("hosts")
    if isinstance(hosts, list | tuple):
        return redacted(",".join(str(h) for h in hosts))
    return redacted(str(hosts))


def auth_line(status: int, kwargs: Mapping[str, Any]) -> str:
    """The one line for a 401/403 of a client built from ``kwargs``."""
    if status == AUTH_REFUSED:
        return (
            f"Elasticsearch refused the credentials (401) of {who(kwargs)} at "
            f"{where(kwargs)}: {AUTH_FIX}"
        )
    return (
        f"Elasticsearch denied {who(kwargs)} at {where(kwargs)} (403): the user lacks a "
        "privilege the platform needs (see docker/elasticsearch/setup.sh for its roles)"
    )


def is_auth_error(exc: BaseException) -> bool:
    """A 401 or 403 from Elasticsearch (its security layer), not a document's rejection."""
    return isinstance(exc, ApiError) and exc.meta.status in (AUTH_REFUSED, FORBIDDEN)


def _verdict(exc: BaseException | None, kwargs: Mapping[str, Any]) -> str | None:
    if exc is None:
        return None
    if is_auth_error(exc):
        assert isinstance(exc, ApiError)
        return auth_line(exc.meta.status, kwargs)
    if isinstance(exc, ApiError):
        return None  # it answered: no security endpoint (no security), or similar
    return f"Elasticsearch unreachable at {where(kwargs)} ({type(exc).__name__})"


def access_problem(es: Elasticsearch, kwargs: Mapping[str, Any]) -> str | None:
    """None when Elasticsearch answers and takes the credentials; else one line."""
    try:
        es.security.authenticate()
    except (ApiError, TransportError, OSError) as exc:
        return _verdict(exc, kwargs)
    return None


async def access_problem_async(es: AsyncElasticsearch, kwargs: Mapping[str, Any]) -> str | None:
    """``access_problem`` for an asyncio client."""
    try:
        await es.security.authenticate()
    except (ApiError, TransportError, OSError) as exc:
        return _verdict(exc, kwargs)
    return None


def check_access(kwargs: Mapping[str, Any]) -> None:
    """Raise ``ElasticsearchAuthError`` when Elasticsearch refuses the credentials of a
    client built from ``kwargs``; unreachable is not this check's business (the store
    waits and spills)."""
    es = Elasticsearch(**{**kwargs, "max_retries": 0})
    try:
        es.security.authenticate()
    except ApiError as exc:
        if is_auth_error(exc):
            line = auth_line(exc.meta.status, kwargs)
            raise ElasticsearchAuthError(line, exc.meta.status) from None
    except (TransportError, OSError):
        pass
    finally:
        es.close()

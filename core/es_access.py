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

import base64
import contextlib
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
# A crawl Elasticsearch refused the credentials of: its close reason, and the stat holding
# the line (``scrapy crawl`` exits 2 on it).
AUTH_REASON = "elasticsearch_auth"
AUTH_STAT = "store/auth_refused"


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
    """A 401, or a 403 of Elasticsearch's security layer (``security_exception``): not a
    block (an index made read-only answers 403 ``cluster_block_exception``, which passes)."""
    if not isinstance(exc, ApiError):
        return False
    if exc.meta.status == AUTH_REFUSED:
        return True
    return exc.meta.status == FORBIDDEN and error_type(exc.body) == "security_exception"


def error_type(body: object) -> str | None:
    """The ``error.type`` of an Elasticsearch error body, if it has one."""
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping):
            kind = error.get("type")
            return str(kind) if kind is not None else None
    return None


def _verdict(exc: BaseException | None, kwargs: Mapping[str, Any]) -> str | None:
    if exc is None:
        return None
    if is_auth_error(exc):
        assert isinstance(exc, ApiError)
        return auth_line(exc.meta.status, kwargs)
    if isinstance(exc, ApiError):
        return None  # it answered: no security endpoint (no security), or similar
    return f"Elasticsearch unreachable at {where(kwargs)} ({type(exc).__name__})"


def client_kwargs(es: Elasticsearch | AsyncElasticsearch) -> dict[str, Any]:
    """What ``who`` and ``where`` need, read back from a built client: its nodes and the
    user of its Basic credentials (never the password)."""
    nodes = es.transport.node_pool.all()
    hosts = [node.base_url for node in nodes]
    # The client's own credentials, else a node's (from a URL's userinfo).
    headers = [es._headers, *(node.config.headers for node in nodes)]
    header = next((str(h["authorization"]) for h in headers if h.get("authorization")), "")
    kind, _, value = header.partition(" ")
    kwargs: dict[str, Any] = {"hosts": hosts}
    if kind == "Basic":
        with contextlib.suppress(ValueError):
            kwargs["basic_auth"] = (base64.b64decode(value).decode().partition(":")[0], "")
    elif kind == "ApiKey":
        kwargs["api_key"] = True
    return kwargs


def access_problem(es: Elasticsearch, kwargs: Mapping[str, Any] | None = None) -> str | None:
    """None when Elasticsearch answers and takes the credentials; else one line
    (``kwargs``: what the client was built from; default: read back from it)."""
    try:
        es.security.authenticate()
    except (ApiError, TransportError, OSError) as exc:
        return _verdict(exc, client_kwargs(es) if kwargs is None else kwargs)
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

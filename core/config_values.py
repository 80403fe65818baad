"""The values of the environment, parsed and checked: Redis, HTTP and Elasticsearch URLs,
proxy entries, the Chromium binary, secrets, and the Elasticsearch client's arguments.

A malformed value raises ``ConfigurationError`` naming the variable and the fix, a
password masked (``redacted``). ``core.config`` applies these to every variable.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import SecretStr

from core.errors import ConfigurationError

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")

REDIS_SCHEMES = ("redis", "rediss", "unix")
HTTP_SCHEMES = ("http", "https")
# A host name (letters, digits, ``.``, ``-``, ``_`` as compose services have) or an IP
# address (IPv6 as urlsplit gives it: without its brackets, maybe with a zone).
HOST_PATTERN = re.compile(r"[\w.-]+|[0-9a-fA-F:.]+(%[\w.-]+)?")


# ``://user:password@`` in a list of URLs: the password runs to the last ``@`` before the
# next ``/`` (so a ``,`` or ``@`` inside it is masked too; the next URL starts after ``//``).
_LISTED_PASSWORD = re.compile(r"(://[^/@]*?:)[^/]*@")


def redacted(url: str) -> str:
    """``url`` with the password of its userinfo masked, for messages (also when ``url`` is
    malformed: then everything before its host is masked). A comma-separated list of URLs
    (ELASTICSEARCH_URL) has every URL's password masked."""
    if "," in url:
        return _LISTED_PASSWORD.sub(r"\1****@", url)
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        scheme, sep, rest = url.rpartition("://")
        return f"{scheme}{sep}****@{rest.rpartition('@')[2]}" if "@" in rest else url
    if password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:****@{netloc}"))


def check_url(name: str, value: object, schemes: tuple[str, ...], example: str) -> str | None:
    """``value`` if it is a URL with one of ``schemes``; ConfigurationError naming ``name``."""
    if value is None or value == "":
        return None
    text = str(value).strip()
    fix = f"set {name} like {example}, or unset it"
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError on a port that is no number
    except ValueError:
        raise ConfigurationError(f"{name}={redacted(text)!r} is not a valid URL: {fix}") from None
    if parts.scheme not in schemes:
        raise ConfigurationError(
            f"{name}={redacted(text)!r} must start with {' or '.join(s + '://' for s in schemes)}"
            f": {fix}"
        )
    if parts.scheme != "unix" and not parts.hostname:
        raise ConfigurationError(f"{name}={redacted(text)!r} names no host: {fix}")
    if any(char.isspace() for char in text) or (
        parts.hostname and not HOST_PATTERN.fullmatch(parts.hostname)
    ):
        # urlsplit accepts ``http://not a url``; the clients refuse it at first use.
        raise ConfigurationError(f"{name}={redacted(text)!r} is not a valid URL: {fix}")
    return text


def check_redis_url(value: object, name: str = "REDIS_URL") -> str | None:
    return check_url(name, value, REDIS_SCHEMES, "redis://[:password@]host:6379/0")


def check_http_url(value: object, name: str) -> str | None:
    return check_url(name, value, HTTP_SCHEMES, "http://host:port")


def split_hosts(value: str) -> list[str]:
    """The URLs of a comma-separated list (``http://es1:9200,http://es2:9200``), stripped."""
    return [part.strip() for part in value.split(",") if part.strip()]


def check_elasticsearch_url(value: object, name: str = "ELASTICSEARCH_URL") -> str | None:
    """``value`` if it is one http(s) URL or a comma-separated list of them (the nodes of a
    cluster); ConfigurationError naming ``name`` and the URL at fault otherwise."""
    if value is None or value == "":
        return None
    text = str(value).strip()
    if "," not in text:
        return check_http_url(text, name)
    hosts = split_hosts(text)
    fix = f"set {name} like http://es1:9200,http://es2:9200, or unset it"
    if len(hosts) != text.count(",") + 1:
        raise ConfigurationError(f"{name}={redacted(text)!r} has an empty entry: {fix}")
    for number, host in enumerate(hosts, 1):
        try:
            check_http_url(host, name)
        except ConfigurationError:
            # Named by position, the whole list masked: one host alone may hold a piece of a
            # password that had a comma in it.
            raise ConfigurationError(
                f"{name}={redacted(text)!r}: host {number} of {len(hosts)} is not an http(s) "
                f"URL with a host: {fix}"
            ) from None
    return ",".join(hosts)


# What the downloaders speak to a proxy (Scrapy's HTTP/1.1 handler, Playwright's Chromium):
# no SOCKS, no FTP. A bare ``host:port`` means http (``crawlers.fetch.redact``).
PROXY_SCHEMES = ("http", "https")
PROXY_FORM = (
    "scheme://[user:password@]host:port with scheme http or https "
    "(e.g. http://user:secret@10.0.0.1:8080)"
)


def check_proxy_url(entry: str, name: str = "PROXY_LIST") -> str:
    """``entry`` if it is a proxy URL the downloaders can use; else ConfigurationError
    naming the entry (password masked) and the expected form: a malformed list would
    otherwise fail every request of the crawl, one by one."""
    text = entry.strip()
    url = text if "://" in text else f"http://{text}"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        parts, port = None, None
    usable = (
        parts is not None
        and parts.scheme in PROXY_SCHEMES
        and bool(parts.hostname)
        and port is not None
        and parts.path in ("", "/")
        and not parts.query
        and not any(char.isspace() for char in text)
    )
    if not usable:
        raise ConfigurationError(
            f"{name} entry {redacted(text)!r} is not a proxy: expected {PROXY_FORM}"
        )
    return text


def read_proxy_file(path: Path, name: str = "PROXY_LIST_FILE") -> list[str]:
    """One proxy per line (blank lines and ``#`` comments skipped), each checked."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise ConfigurationError(
            f"{name}={str(path)!r} cannot be read ({exc.strerror or type(exc).__name__}): "
            "point it at a file with one proxy URL per line, or unset it"
        ) from None
    entries = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    return [check_proxy_url(entry, f"{name} ({path})") for entry in entries]


def find_chromium(configured: str | None = None) -> str | None:
    """Chromium for Playwright: the configured path, else Debian's package."""
    if configured:
        return configured
    for candidate in CHROMIUM_CANDIDATES:
        if Path(candidate).exists():
            return candidate
    return shutil.which("chromium")


def secret_value(value: object) -> str | None:
    """A secret as plain text, whether it came as ``SecretStr`` (environment) or ``str``
    (``scrapy crawl -s NAME=...``); None when unset. Unwrap only where the secret is used."""
    if value is None or value == "":
        return None
    if isinstance(value, SecretStr):
        return value.get_secret_value() or None
    return str(value)


def elasticsearch_client_kwargs(
    url: str | None,
    *,
    username: str | None = None,
    password: object = None,
    api_key: object = None,
) -> dict[str, Any]:
    """Arguments for ``elasticsearch.Elasticsearch`` / ``AsyncElasticsearch``: the one place
    the store's credentials are unwrapped (API key first, else basic auth).

    ``url`` may list several nodes (``http://es1:9200,http://es2:9200``): the client gets
    them all and spreads requests over them; a node that refuses connections is marked dead
    and skipped (retried after a back-off), so losing one node of a cluster costs only the
    requests that were on it. No sniffing: the listed hosts are the ones reachable (nodes
    publish their own bind addresses, which may not be, e.g. behind Docker's network).
    """
    kwargs: dict[str, Any] = {"hosts": split_hosts(url or "") or ["http://127.0.0.1:9200"]}
    key, secret = secret_value(api_key), secret_value(password)
    if key is not None:
        kwargs["api_key"] = key
    elif username and secret is not None:
        kwargs["basic_auth"] = (username, secret)
    return kwargs


def settings_elasticsearch_kwargs(settings: Any) -> dict[str, Any]:
    """``elasticsearch_client_kwargs`` from Scrapy settings (ELASTICSEARCH_*)."""
    return elasticsearch_client_kwargs(
        settings.get("ELASTICSEARCH_URL"),
        username=settings.get("ELASTICSEARCH_USERNAME"),
        password=settings.get("ELASTICSEARCH_PASSWORD"),
        api_key=settings.get("ELASTICSEARCH_API_KEY"),
    )

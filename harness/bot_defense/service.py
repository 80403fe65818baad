"""``BotDefense``: the stand-in as a supervised subprocess on a free loopback port."""

from __future__ import annotations

import contextlib
import json
import ssl
import sys
import urllib.request
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from core.config import REPO_ROOT
from harness.base import ManagedProcess
from harness.bot_defense.certs import spki_sha256
from harness.bot_defense.sessions import DIFFICULTY
from harness.bot_defense.styles import cookie_name


class BotDefense(ManagedProcess):
    """``python -m harness.bot_defense`` in front of ``upstream`` at ``level`` (0-4), in a
    vendor's ``style`` (``harness.bot_defense.styles``: cloudflare, aws, datadome).

    Its files live in ``run_dir``: ``<name>.crt``/``<name>.key`` (made at each start),
    ``<name>.access.jsonl`` (its own log, one line per response), ``<name>.log``.
    """

    name = "bot-defense"
    # Levels 2+ run Chromium once before they are ready (about 1 s, far less than this).
    start_timeout = 90.0
    stop_timeout = 10.0

    def __init__(
        self,
        *,
        upstream: str,
        level: int,
        port: int | None = None,
        run_dir: Path | None = None,
        name: str | None = None,
        cookie_ttl: float = 600.0,
        session_rate: int = 20,
        rate_window: float = 10.0,
        difficulty: int = DIFFICULTY,
        chromium: str | None = None,
        allow_fingerprints: Sequence[str] = (),
        style: str = "cloudflare",
        challenge_robots: bool = False,
    ) -> None:
        super().__init__(port=port, run_dir=run_dir)
        self.name = name or f"bot-defense-{level}-{self.port}"
        self.upstream = upstream
        self.level = level
        self.cookie_ttl = cookie_ttl
        self.session_rate = session_rate
        self.rate_window = rate_window
        self.difficulty = difficulty
        self.chromium = chromium
        self.allow_fingerprints = tuple(allow_fingerprints)
        self.style = style  # harness.bot_defense.styles
        self.challenge_robots = challenge_robots

    # -- files ------------------------------------------------------------------------
    @property
    def cert_path(self) -> Path:
        """The self-signed certificate (PEM) clients may trust instead of not verifying."""
        return self.run_dir / f"{self.name}.crt"

    @property
    def key_path(self) -> Path:
        return self.run_dir / f"{self.name}.key"

    @property
    def access_log_path(self) -> Path:
        return self.run_dir / f"{self.name}.access.jsonl"

    @property
    def spki_sha256(self) -> str:
        """Base64 SHA-256 of the certificate's public key, for Chromium's
        ``--ignore-certificate-errors-spki-list`` (valid once the service started)."""
        return spki_sha256(self.cert_path)

    # -- the process ------------------------------------------------------------------
    def command(self) -> Sequence[str]:
        argv = [sys.executable, "-m", "harness.bot_defense", "--host", self.host]
        argv += ["--port", str(self.port), "--upstream", self.upstream]
        argv += ["--level", str(self.level), "--log", str(self.access_log_path)]
        argv += ["--cert", str(self.cert_path), "--key", str(self.key_path)]
        argv += ["--cookie-ttl", str(self.cookie_ttl), "--session-rate", str(self.session_rate)]
        argv += ["--rate-window", str(self.rate_window), "--difficulty", str(self.difficulty)]
        argv += ["--style", self.style]
        if self.challenge_robots:
            argv.append("--challenge-robots")
        if self.chromium:
            argv += ["--chromium", self.chromium]
        for fingerprint in self.allow_fingerprints:
            argv += ["--allow-fingerprint", fingerprint]
        return argv

    def environment(self) -> dict[str, str]:
        return {"PYTHONPATH": str(REPO_ROOT)}

    def prepare(self) -> None:
        # A certificate left by an earlier run must not pass for this run's.
        for path in (self.cert_path, self.key_path, self.access_log_path):
            path.unlink(missing_ok=True)
        self.__dict__.pop("_ssl_context", None)

    @property
    def cookie_name(self) -> str:
        """The style's session cookie (``__defense_session``, ``aws-waf-token``, ``datadome``)."""
        return cookie_name(self.style)

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"

    def ready(self) -> bool:
        return bool(self.stats().get("ready"))

    # -- its endpoints and log --------------------------------------------------------
    @cached_property
    def _ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.cert_path))

    def ssl_context(self) -> ssl.SSLContext:
        """A client context that trusts this service's certificate (and only it)."""
        return self._ssl_context

    def _call(self, method: str, path: str) -> dict[str, Any]:
        request = urllib.request.Request(self.url + path, method=method)  # noqa: S310
        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=self._ssl_context)
        )
        with opener.open(request, timeout=10) as response:
            result: dict[str, Any] = json.loads(response.read())
            return result

    def stats(self) -> dict[str, Any]:
        """Counters by decision and reason, sessions, allowlist, level (``/__defense/stats``)."""
        return self._call("GET", "/__defense/stats")

    def clear_log(self) -> dict[str, Any]:
        """Empty the log and zero the counters at once; sessions and allowlist stay.
        Returns the (zeroed) stats."""
        return self._call("POST", "/__defense/clear")

    def log_records(self) -> list[dict[str, Any]]:
        """The log's records, oldest first (one per response sent)."""
        with contextlib.suppress(FileNotFoundError):
            text = self.access_log_path.read_text()
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        return []

    def allowed_fingerprints(self) -> list[str]:
        return [entry["id"] for entry in self.stats()["allowlist"]]

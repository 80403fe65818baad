"""The stand-in's own account of what it answered: a JSONL log and the counters that
``/__defense/stats`` returns, kept under one lock so the two always agree.

Benchmarks compare the platform's block figures with this log, so it is exact: one line
per response sent to a client (internal endpoints excepted), written with one
``write`` on an ``O_APPEND`` descriptor before the response leaves.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

# Every decision a logged response carries.
PASS = "pass"  # noqa: S105 - a decision, not a password; relayed to the upstream (whatever it answered)
HEADERS = "headers"  # level 1 refused the headers
TLS = "tls"  # level 2 refused the connection's TLS fingerprint
CHALLENGE = "challenge"  # level 3 answered with the JavaScript challenge
VERIFIED = "verified"  # a verify POST that issued a session cookie
VERIFY_FAILED = "verify_failed"  # a verify POST that did not
CAPTCHA = "captcha"  # level 4: rate exceeded, or the session is burnt
BAD_REQUEST = "bad_request"  # not parseable as HTTP/1.1: answered 400 by the server
DECISIONS = (PASS, HEADERS, TLS, CHALLENGE, VERIFIED, VERIFY_FAILED, CAPTCHA, BAD_REQUEST)


class Ledger:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._fd: int | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._reset_counters()

    def _reset_counters(self) -> None:
        self.requests = 0
        self.by_decision: Counter[str] = Counter()
        self.by_reason: dict[str, Counter[str]] = {}
        self.by_status: Counter[int] = Counter()
        self.sessions_issued = 0
        self.sessions_burnt = 0
        self.upstream_errors = 0
        self.connections = 0
        self.handshake_failures = 0
        self.connections_by_tls: Counter[str] = Counter()
        self.since = time.time()

    def record(
        self,
        *,
        method: str,
        path: str,
        status: int,
        decision: str,
        reason: str | None,
        session: str | None,
        user_agent: str | None,
        tls: str,
        client: str,
        ref: str | None = None,
    ) -> None:
        """One response: a log line and the counters, atomically."""
        entry = {
            "ts": round(time.time(), 6),
            "method": method,
            "path": path,
            "status": status,
            "decision": decision,
            "reason": reason,
            "session": session,
            "ua": user_agent,
            "tls": tls,
            "client": client,
            "ref": ref,
        }
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        with self._lock:
            if self._fd is not None:
                os.write(self._fd, line)
            self.requests += 1
            self.by_decision[decision] += 1
            self.by_reason.setdefault(decision, Counter())[reason or "-"] += 1
            self.by_status[status] += 1
            if decision == VERIFIED:
                self.sessions_issued += 1
            if decision == CAPTCHA and reason == "rate":
                self.sessions_burnt += 1
            if decision == PASS and reason == "upstream_error":
                self.upstream_errors += 1

    def connection(self, tls: str | None) -> None:
        """A TLS connection was accepted (``tls``: its fingerprint id) or its handshake
        failed (None)."""
        with self._lock:
            if tls is None:
                self.handshake_failures += 1
            else:
                self.connections += 1
                self.connections_by_tls[tls] += 1

    def clear(self) -> None:
        """An empty log and zero counters, in one step (sessions and allowlist stay)."""
        with self._lock:
            if self._fd is not None:
                os.ftruncate(self._fd, 0)
            self._reset_counters()

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "since": self.since,
                "requests": self.requests,
                "by_decision": {d: self.by_decision[d] for d in DECISIONS},
                "by_reason": {
                    decision: dict(sorted(counts.items()))
                    for decision, counts in sorted(self.by_reason.items())
                },
                "by_status": {str(k): v for k, v in sorted(self.by_status.items())},
                "sessions_issued": self.sessions_issued,
                "sessions_burnt": self.sessions_burnt,
                "upstream_errors": self.upstream_errors,
                "connections": self.connections,
                "handshake_failures": self.handshake_failures,
                "connections_by_tls": dict(self.connections_by_tls.most_common()),
            }

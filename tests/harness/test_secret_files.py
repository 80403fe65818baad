"""The harness's credential stand-ins take their secrets from a file of their own (mode
0600), never from their argv: the Elasticsearch auth gate and the loopback proxy, started
with marker credentials while ``ps`` is sampled, still demand exactly those credentials."""

from __future__ import annotations

import base64
import http.client
import stat
from pathlib import Path

from harness.base import free_port
from harness.es_auth_gate import EsAuthGate
from harness.loopback_proxy import LoopbackProxy
from tests.argv import ArgvWatch

PASSWORD = "g4te-marker-7f8e9d"
PROXY_SECRET = "pr0xy-marker-1c2b3a"


def _status(host: str, port: int, path: str, headers: dict[str, str]) -> int:
    connection = http.client.HTTPConnection(host, port, timeout=10)
    try:
        connection.request("GET", path, headers=headers)
        return connection.getresponse().status
    finally:
        connection.close()


def _basic(credentials: str) -> str:
    return "Basic " + base64.b64encode(credentials.encode()).decode()


def test_the_es_auth_gate_reads_its_password_from_a_private_file(tmp_path: Path) -> None:
    # Nothing listens upstream: the gate's own answers are what is looked at.
    upstream = f"http://127.0.0.1:{free_port()}"
    gate = EsAuthGate(upstream, user="writer", password=PASSWORD, run_dir=tmp_path)
    with gate, ArgvWatch(lambda: [gate.pid or 0], [PASSWORD]) as watch:
        refused = _status(gate.host, gate.port, "/", {"Authorization": _basic("writer:wrong")})
        accepted = _status(
            gate.host,
            gate.port,
            "/_security/_authenticate",
            {"Authorization": _basic(f"writer:{PASSWORD}")},
        )
    assert (refused, accepted) == (401, 200)
    assert watch.saw("harness.es_auth_gate") and watch.leaks() == []
    [secret_file] = tmp_path.glob("es-auth-gate-*.user")
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600


def test_the_loopback_proxy_reads_its_credentials_from_a_private_file(tmp_path: Path) -> None:
    proxy = LoopbackProxy(auth=f"crawler:{PROXY_SECRET}", run_dir=tmp_path, name="proxy-argv")
    target = f"http://127.0.0.1:{free_port()}/"  # absolute form: a request to relay
    with proxy, ArgvWatch(lambda: [proxy.pid or 0], [PROXY_SECRET]) as watch:
        without = _status(proxy.host, proxy.port, target, {})
        wrong = _status(
            proxy.host, proxy.port, target, {"Proxy-Authorization": _basic("crawler:nope")}
        )
        stats = proxy.stats()
    assert (without, wrong) == (407, 407) and stats["auth_failures"] == 2
    assert watch.saw("harness.loopback_proxy") and watch.leaks() == []
    assert stat.S_IMODE((tmp_path / "proxy-argv.auth").stat().st_mode) == 0o600
    assert PROXY_SECRET in proxy.url  # what a crawl is configured with

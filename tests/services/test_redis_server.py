"""The Redis the harness starts is a real server: commands, Lua, persistence, stop."""

from __future__ import annotations

from pathlib import Path

from services.base import port_open
from services.redis_server import RedisServer


def test_real_redis_answers_commands_and_lua(redis_server: RedisServer) -> None:
    client = redis_server.client()
    info = client.info("server")
    assert int(str(info["redis_version"]).split(".")[0]) >= 6
    client.rpush("t:list", "a", "b")
    # Lua scripting is what the frontier's atomic lease/ack is built on.
    popped = client.eval("return redis.call('LPOP', KEYS[1])", 1, "t:list")
    assert popped == b"a"
    assert client.llen("t:list") == 1


def test_persistent_redis_survives_restart(tmp_path: Path) -> None:
    server = RedisServer(run_dir=tmp_path, persistent=True)
    with server:
        server.client().set("frontier:key", "kept")
    pid = server.pid
    assert pid is None  # stop() forgets the process
    assert not port_open(server.host, server.port)
    with RedisServer(run_dir=tmp_path, port=server.port, persistent=True) as again:
        assert again.client().get("frontier:key") == b"kept"


def test_stop_kills_by_pid_and_frees_port(tmp_path: Path) -> None:
    server = RedisServer(run_dir=tmp_path).start()
    pid = server.pid
    assert pid is not None and server.pid_path.read_text().strip() == str(pid)
    server.stop()
    assert not server.alive()
    assert not server.pid_path.exists()
    assert not port_open(server.host, server.port)

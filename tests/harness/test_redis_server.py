"""The Redis the harness starts is a real server: commands, Lua, persistence, stop."""

from __future__ import annotations

from pathlib import Path

from harness.base import port_open
from harness.redis_server import RedisCluster, RedisServer


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


def test_cluster_has_three_masters_covering_every_slot(redis_cluster: RedisCluster) -> None:
    client = redis_cluster.client()
    try:
        primaries = client.get_primaries()
        assert sorted(node.port for node in primaries) == sorted(
            node.port for node in redis_cluster.nodes
        )
        for node in redis_cluster.nodes:
            info = node.client().cluster("INFO")
            assert info["cluster_state"] == "ok"
            assert int(info["cluster_slots_assigned"]) == 16384
        # Lua on a cluster: keys of one hash tag are one slot, on one master.
        assert client.eval("return redis.call('INCR', KEYS[1])", 1, "{t}:n") == 1
    finally:
        client.delete("{t}:n")
        client.close()


def test_a_restarted_cluster_master_keeps_its_slots_and_keys(
    redis_cluster: RedisCluster,
) -> None:
    client = redis_cluster.client()
    try:
        client.set("{restart}:key", "kept")
        owner = client.get_node_from_key("{restart}:key")
        index = next(i for i, n in enumerate(redis_cluster.nodes) if n.port == owner.port)
        node = redis_cluster.nodes[index]
        port, data_dir = node.port, node.data_dir
        redis_cluster.stop_node(index)
        assert not port_open(node.host, port)
        redis_cluster.start_node(index)  # waits for cluster_state:ok on every node
        assert (node.port, node.data_dir) == (port, data_dir)
        assert client.get("{restart}:key") == b"kept"
        assert client.get_node_from_key("{restart}:key").port == port
    finally:
        client.delete("{restart}:key")
        client.close()

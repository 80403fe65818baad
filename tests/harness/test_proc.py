"""A service never adopts a process it did not start: an occupied port is one line."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import redis

from harness.base import PortInUse, free_port
from harness.proc import describe_holder, holders
from harness.redis_server import RedisServer


def test_redis_on_an_occupied_port_names_the_holder_and_leaves_it_alone(tmp_path: Path) -> None:
    port = free_port()
    binary = shutil.which("redis-server")
    assert binary is not None, "redis-server is needed (the harness's Redis)"
    # A foreign Redis, started by hand (not through the harness).
    foreign = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = redis.Redis(port=port)
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                subprocess.run(["sleep", "0.05"], check=True)
        service = RedisServer(port=port, run_dir=tmp_path)
        with pytest.raises(PortInUse) as raised:
            service.start()
        line = str(raised.value)
        assert "\n" not in line
        assert f"port {port}" in line
        assert f"pid {foreign.pid}" in line and "redis-server" in line
        assert service.process is None and not service.alive()
        # The foreign server is untouched and still answers.
        assert foreign.poll() is None
        assert client.ping()
        client.close()
    finally:
        foreign.terminate()
        foreign.wait(timeout=10)


def test_holders_finds_this_process_listening(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        found = holders(port)
        assert [holder.pid for holder in found] == [os.getpid()]
        assert describe_holder(port).startswith(f"pid {os.getpid()} (")

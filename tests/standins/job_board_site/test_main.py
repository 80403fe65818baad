"""``python -m standins.job_board_site``: its arguments, and operator mistakes as one line,
exit 2."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from standins.job_board_site.__main__ import main, parse_args
from standins.job_board_site.server import JobBoardSiteConfig


def test_arguments_make_the_config(tmp_path: Path) -> None:
    log = tmp_path / "access.jsonl"
    argv = ["--port", "0", "--seed", "3", "--jobs", "40", "--access-log", str(log)]
    assert parse_args(argv) == JobBoardSiteConfig(port=0, seed=3, jobs=40, access_log=log)
    assert parse_args([]) == JobBoardSiteConfig()


def test_no_jobs_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--jobs", "0"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert (
        err == "python -m standins.job_board_site: --jobs must be at least 1 (got 0); "
        "a board needs a posting\n"
    )


def test_a_taken_port_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit) as exited:
            main(["--port", str(port), "--jobs", "5"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"python -m standins.job_board_site: cannot listen on 127.0.0.1:{port} (")
    assert "pick another --port" in err

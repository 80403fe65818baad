"""``python -m search``: its arguments are checked as the API checks them, one line, exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from core.config import OperatorError
from harness.es_auth_gate import EsAuthGate
from harness.es_node import ElasticsearchNode
from search.__main__ import K_MAX, main
from search.api import create_app

REPO = Path(__file__).resolve().parents[2]


def cli(
    *args: str, es_url: str = "http://127.0.0.1:1", **env_vars: str
) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "REDIS_", "ELASTICSEARCH_"))
    }
    env.update(ELASTICSEARCH_URL=es_url, PYTHONPATH=str(REPO), **env_vars)
    return subprocess.run(
        [sys.executable, "-m", "search", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert (result.returncode, result.stdout) == (2, ""), result.stderr[-2000:]
    [line] = result.stderr.splitlines()
    return line


def test_k_has_the_api_s_bounds() -> None:
    app = create_app(Elasticsearch("http://127.0.0.1:1"), None)
    [k] = [p for p in app.openapi()["paths"]["/search"]["get"]["parameters"] if p["name"] == "k"]
    assert (k["schema"]["minimum"], k["schema"]["maximum"]) == (1, K_MAX)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["-k", "0"], "argument -k: must be a whole number from 1 to 100, got '0'"),
        (["-k", "101"], "argument -k: must be a whole number from 1 to 100, got '101'"),
        (["-k", "ten"], "argument -k: must be a whole number from 1 to 100, got 'ten'"),
        (["--site", "Demo Shop"], "argument --site: 'Demo Shop' is no site name (lowercase"),
        (["--site", "../etc"], "argument --site: '../etc' is no site name (lowercase"),
    ],
)
def test_a_bad_site_or_k_is_one_line_before_elasticsearch_is_asked(
    args: list[str], line: str
) -> None:
    # Elasticsearch at a closed port: the mistake is named before any request.
    with pytest.raises(OperatorError) as info:
        main(["torch", *args])
    assert info.value.message.startswith(f"python -m search: {line}")
    assert info.value.message.endswith("(see --help)")


def test_no_query_is_a_mistake_too() -> None:
    with pytest.raises(OperatorError, match=r"^python -m search: give a query, or --health"):
        main([])


def test_the_process_prints_the_line_and_exits_2() -> None:
    assert one_line(cli("torch", "-k", "0")) == (
        "python -m search: argument -k: must be a whole number from 1 to 100, got '0' (see --help)"
    )


def test_a_site_without_a_chunks_index_is_one_line_naming_the_indexed_ones(
    es_node: ElasticsearchNode,
) -> None:
    line = one_line(cli("torch", "--site", "nosuchsite", "--mode", "bm25", es_url=es_node.url))
    assert line.startswith(
        "unknown site 'nosuchsite': no chunks index for site 'nosuchsite' (chunks-nosuchsite); "
        "sites with a chunks index: "
    ), line
    assert line.endswith("(python -m search --health)")


def test_refused_credentials_are_one_line_naming_them(
    es_node: ElasticsearchNode, run_dir: Path
) -> None:
    with EsAuthGate(
        es_node.url, user="search_reader", password="right", deny_index=["chunks-"], run_dir=run_dir
    ) as gate:
        wrong = f"http://search_reader:wrong@127.0.0.1:{gate.port}"
        line = one_line(cli("torch", "--mode", "bm25", es_url=wrong))
        assert line == (
            f"Elasticsearch refused the credentials (401) of user 'search_reader' at "
            f"http://127.0.0.1:{gate.port}: set ELASTICSEARCH_USERNAME and "
            "ELASTICSEARCH_PASSWORD (or ELASTICSEARCH_API_KEY) to a user Elasticsearch knows"
        )
        assert "wrong" not in line
        # Its reason names the request in brackets ([/chunks-*/_search]): never markup.
        right = f"http://search_reader:right@127.0.0.1:{gate.port}"
        denied = one_line(cli("torch", "--mode", "bm25", es_url=right))
        assert denied.startswith("Elasticsearch denied user 'search_reader' at ")
        assert "(403)" in denied and "MarkupError" not in denied
        health = cli("--health", es_url=wrong)
        assert health.returncode == 1
        shown = " ".join(health.stdout.split())
        assert (
            "status denied; Elasticsearch refused: Elasticsearch refused the credentials " in shown
        )


def test_elasticsearch_down_is_one_line_naming_the_url_and_the_fix() -> None:
    result = cli("waterproof dog bed", "--mode", "bm25", es_url="http://127.0.0.1:1")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [
        "Elasticsearch unreachable at http://127.0.0.1:1 (ConnectionError): start it, or set "
        "ELASTICSEARCH_URL to where it runs"
    ]


def test_a_password_without_its_user_is_named(es_node: ElasticsearchNode, run_dir: Path) -> None:
    with EsAuthGate(es_node.url, user="reader", password="right", run_dir=run_dir) as gate:
        result = cli("torch", "--mode", "bm25", es_url=gate.url, ELASTICSEARCH_PASSWORD="right")
    assert one_line(result) == (
        f"Elasticsearch refused the request (401) at {gate.url}: ELASTICSEARCH_PASSWORD is "
        "set but ELASTICSEARCH_USERNAME is not, so no credentials were sent; set "
        "ELASTICSEARCH_USERNAME to the password's user"
    )


def test_without_elasticsearch_url_it_finds_the_local_stack(
    es_node: ElasticsearchNode, tmp_path: Path
) -> None:
    (tmp_path / "stack").mkdir()
    state = {"elasticsearch_url": es_node.url, "prefect_ui": "http://127.0.0.1:1"}
    (tmp_path / "stack" / "stack.json").write_text(json.dumps(state))
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "REDIS_", "ELASTICSEARCH_"))
    }
    env.update(PLATFORM_RUN_DIR=str(tmp_path), PYTHONPATH=str(REPO))
    argv = [sys.executable, "-m", "search", "torch", "--site", "nosuchsite", "--mode", "bm25"]
    result = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    lines = result.stderr.splitlines()
    # It reached the stack's node (which has no such site), not the default 9200.
    assert lines[0] == f"ELASTICSEARCH_URL unset: searching the local stack's {es_node.url}"
    assert result.returncode == 2 and lines[1].startswith("unknown site 'nosuchsite'"), lines

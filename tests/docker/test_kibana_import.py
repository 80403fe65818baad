"""orchestration.kibana: the saved-objects import, against a local HTTP server that
records each request and answers like Kibana's ``_import`` API."""

from __future__ import annotations

import base64
import email.parser
import email.policy
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from orchestration import kibana
from tests.docker.support import REPO_ROOT, SAVED_OBJECTS

PASSWORD = "s3cret-not-for-logs"


class FakeKibana(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _KibanaHandler)
        self.requests: list[dict[str, Any]] = []
        # Queue of (status, payload) answers; when empty: a successful import.
        self.answers: list[tuple[int, dict[str, Any]]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _KibanaHandler(BaseHTTPRequestHandler):
    server: FakeKibana

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        parts = urlsplit(self.path)
        record = {
            "method": self.command,
            "path": parts.path,
            "query": parse_qs(parts.query),
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body,
        }
        self.server.requests.append(record)
        if self.server.answers:
            status, payload = self.server.answers.pop(0)
        else:
            status, payload = 200, _success(_file_part(record)[1])
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _file_part(record: dict[str, Any]) -> tuple[str, bytes, str]:
    """(filename, content, form field) of the request's file, parsed as MIME multipart."""
    head = f"Content-Type: {record['headers']['content-type']}\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + record["body"])
    assert message.is_multipart()
    parts = list(message.iter_parts())
    assert len(parts) == 1
    part = parts[0]
    return (
        part.get_filename(),
        part.get_payload(decode=True),
        part.get_param("name", header="content-disposition"),
    )


def _success(ndjson: bytes) -> dict[str, Any]:
    objects = [json.loads(line) for line in ndjson.splitlines() if line.strip()]
    results = [{"type": o["type"], "id": o["id"], "meta": {}} for o in objects]
    return {"success": True, "successCount": len(results), "successResults": results}


@pytest.fixture
def fake_kibana() -> Iterator[FakeKibana]:
    server = FakeKibana()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def credentials() -> kibana.Credentials:
    return kibana.Credentials(username="elastic", password=PASSWORD)


def test_import_posts_the_file_as_multipart_with_xsrf_and_basic_auth(
    fake_kibana: FakeKibana,
) -> None:
    content = SAVED_OBJECTS.read_bytes()
    result = kibana.import_saved_objects(fake_kibana.url, content, credentials=credentials())
    [request] = fake_kibana.requests
    assert request["method"] == "POST"
    assert request["path"] == "/api/saved_objects/_import"
    assert request["query"] == {"overwrite": ["true"]}
    assert request["headers"]["kbn-xsrf"] == "true"
    expected = base64.b64encode(f"elastic:{PASSWORD}".encode()).decode()
    assert request["headers"]["authorization"] == f"Basic {expected}"
    filename, uploaded, field = _file_part(request)
    assert (filename, field) == ("saved_objects.ndjson", "file")
    assert uploaded == content
    lines = content.decode().splitlines()
    assert result.success_count == len(lines)
    assert result.objects[0] == ("index-pattern", "platform-items")


def test_space_and_api_key(fake_kibana: FakeKibana) -> None:
    key = kibana.Credentials(api_key="a2V5OnNlY3JldA==")
    ndjson = b'{"type":"search","id":"s1"}\n'
    kibana.import_saved_objects(fake_kibana.url + "/", ndjson, credentials=key, space="ops")
    [request] = fake_kibana.requests
    assert request["path"] == "/s/ops/api/saved_objects/_import"
    assert request["headers"]["authorization"] == "ApiKey a2V5OnNlY3JldA=="
    assert "a2V5OnNlY3JldA==" not in repr(key) and PASSWORD not in repr(credentials())


def test_success_false_lists_every_error(fake_kibana: FakeKibana) -> None:
    fake_kibana.answers = [
        (
            200,
            {
                "success": False,
                "successCount": 1,
                "errors": [
                    {
                        "id": "platform-overview",
                        "type": "dashboard",
                        "meta": {"title": "Scraping platform"},
                        "error": {
                            "type": "missing_references",
                            "references": [{"type": "lens", "id": "platform-lens-x"}],
                        },
                    },
                    {
                        "id": "platform-items-demo",
                        "type": "search",
                        "title": "Items: demo",
                        "error": {"type": "unknown", "message": "bad attribute"},
                    },
                ],
            },
        )
    ]
    with pytest.raises(kibana.KibanaImportError) as failure:
        kibana.import_saved_objects(fake_kibana.url, b"{}\n", credentials=credentials())
    message = str(failure.value)
    assert "imported 1 object(s) and refused 2" in message
    assert "dashboard/platform-overview 'Scraping platform': missing_references" in message
    assert "lens/platform-lens-x" in message
    assert "search/platform-items-demo 'Items: demo': unknown (bad attribute)" in message
    assert PASSWORD not in message


def test_non_2xx_fails_with_kibanas_answer(fake_kibana: FakeKibana) -> None:
    fake_kibana.answers = [(401, {"statusCode": 401, "message": "Unauthorized"})]
    with pytest.raises(kibana.KibanaImportError, match=r"HTTP 401.*Unauthorized") as failure:
        kibana.import_saved_objects(fake_kibana.url, b"{}\n", credentials=credentials())
    assert PASSWORD not in str(failure.value)


def test_wait_retries_while_kibana_starts(fake_kibana: FakeKibana) -> None:
    fake_kibana.answers = [(503, {"message": "Kibana server is not ready yet"})] * 2
    result = kibana.import_with_wait(
        fake_kibana.url,
        b'{"type":"x","id":"y"}\n',
        credentials=credentials(),
        wait=10,
        interval=0.05,
    )
    assert result.success_count == 1 and len(fake_kibana.requests) == 3
    # A refusal that is not "starting" is not retried.
    fake_kibana.requests.clear()
    fake_kibana.answers = [(400, {"message": "bad request"})]
    with pytest.raises(kibana.KibanaImportError, match="HTTP 400"):
        kibana.import_with_wait(
            fake_kibana.url, b"{}\n", credentials=credentials(), wait=10, interval=0.05
        )
    assert len(fake_kibana.requests) == 1


def test_urls_with_credentials_or_other_schemes_are_refused() -> None:
    with pytest.raises(kibana.KibanaImportError, match="must not carry credentials") as failure:
        kibana.import_url(f"http://elastic:{PASSWORD}@kibana:5601")
    assert PASSWORD not in str(failure.value)
    with pytest.raises(kibana.KibanaImportError, match="http"):
        kibana.import_url("file:///etc/passwd")


def test_command_line_reads_the_environment(fake_kibana: FakeKibana, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KIBANA_", "ELASTICSEARCH_"))}
    env |= {
        "KIBANA_URL": fake_kibana.url,
        "ELASTICSEARCH_USERNAME": "platform",  # the fallbacks when KIBANA_* are unset
        "ELASTICSEARCH_PASSWORD": PASSWORD,
    }
    ok = subprocess.run(
        [sys.executable, "-m", "orchestration.kibana"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stderr
    objects = len(SAVED_OBJECTS.read_text().splitlines())  # one per line (ndjson)
    assert f"imported {objects} saved object(s)" in ok.stdout and "platform-overview" in ok.stdout
    [request] = fake_kibana.requests
    assert _file_part(request)[1] == SAVED_OBJECTS.read_bytes()  # the default file
    expected = base64.b64encode(f"platform:{PASSWORD}".encode()).decode()
    assert request["headers"]["authorization"] == f"Basic {expected}"
    fake_kibana.answers = [(500, {"message": "boom"})]
    failed = subprocess.run(
        [sys.executable, "-m", "orchestration.kibana", "--file", str(SAVED_OBJECTS)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert failed.returncode == 1 and "HTTP 500" in failed.stderr
    assert PASSWORD not in failed.stdout + failed.stderr + ok.stdout + ok.stderr

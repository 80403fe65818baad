"""docker/compose.yaml: valid Compose, complete, and consistent with the code and .env.example.

No Docker engine is needed: the file is validated against the Compose Specification's
JSON schema (tests/docker/compose-spec.schema.json) before and after interpolation with
the values docker/.env would have, and checked against what the code expects.
"""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest

from core.config import ENVIRONMENT
from crawlers.profiles import profile_sites
from orchestration import local_stack
from orchestration.register_flows import WORK_POOL
from tests.docker.support import (
    COMPOSE_SCHEMA,
    DOCKERFILE,
    ENV_EXAMPLE,
    REPO_ROOT,
    InterpolationError,
    code_environment_reads,
    env_example_entries,
    example_environment,
    interpolate,
    interpolate_document,
    load_compose,
    load_module,
    referenced_variables,
    settings_variables,
    strings_in,
)

ONE_SHOT = {"es-setup", "kibana-setup"}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_compose()


@pytest.fixture(scope="module")
def env() -> dict[str, str]:
    """What docker/.env would hold: the example's values, random secrets."""
    return example_environment()


@pytest.fixture(scope="module")
def resolved(compose: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    return dict(interpolate_document(compose, env))


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft7Validator:
    schema = json.loads(COMPOSE_SCHEMA.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def _errors(validator: jsonschema.Draft7Validator, document: Any) -> list[str]:
    return [
        f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
        for error in validator.iter_errors(document)
    ]


def test_schema_is_the_compose_specification(validator: jsonschema.Draft7Validator) -> None:
    schema = validator.schema
    assert schema["title"] == "Compose Specification"
    assert "service" in schema["definitions"] and "healthcheck" in schema["definitions"]
    # The schema rejects what it should: it is not accidentally permissive.
    assert _errors(validator, {"services": {"x": {"image": "a", "no_such_key": 1}}})
    assert _errors(validator, {"services": {"x": {"restart": ["always"]}}})


def test_compose_file_validates_against_the_schema(
    compose: dict[str, Any], resolved: dict[str, Any], validator: jsonschema.Draft7Validator
) -> None:
    assert _errors(validator, compose) == []
    assert _errors(validator, resolved) == []
    # What is left after interpolation was escaped ($$) for the container's shell: each
    # such variable must be in that container's environment.
    for name, service in resolved["services"].items():
        for text in strings_in({k: service.get(k) for k in ("command", "healthcheck")}):
            for variable in referenced_variables(text):
                assert variable in service.get("environment", {}), (name, variable)


def test_interpolation_matches_compose_rules() -> None:
    env = {"SET": "value", "EMPTY": ""}
    assert interpolate("${SET:-d} ${EMPTY:-d} ${EMPTY-d} ${NOPE-d}", env) == "value d  d"
    assert interpolate("${NOPE:-${SET}} $${SHELL} $SET", env) == "value ${SHELL} value"
    assert interpolate("${SET:+yes}${EMPTY:+no}${EMPTY+set}", env) == "yesset"
    with pytest.raises(InterpolationError, match="EMPTY: give it"):
        interpolate("${EMPTY:?give it}", env)


def test_secrets_are_required_and_never_defaulted(compose: dict[str, Any]) -> None:
    init_env = load_module(REPO_ROOT / "docker" / "init_env.py", "init_env")
    env = example_environment(secret_values=False)
    for secret in init_env.SECRETS:
        assert env_example_entries()[secret] == "", f"{secret} has a value in .env.example"
        without = {**example_environment(), secret: ""}
        with pytest.raises(InterpolationError, match=secret):
            interpolate_document(compose, without)
    # Every variable compose insists on is one init_env.py generates.
    required = set()
    for text in strings_in(compose):
        required |= set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*):?\?", text))
    assert required == set(init_env.SECRETS)
    assert not [key for key, value in env.items() if key in init_env.SECRETS and value]


def test_every_variable_compose_reads_is_in_env_example(compose: dict[str, Any]) -> None:
    listed = set(env_example_entries())
    referenced = set()
    for text in strings_in(compose):
        referenced |= referenced_variables(text)
    # `KEY:` with no value passes KEY through from docker/.env: listed there too.
    for service in compose["services"].values():
        environment = service.get("environment") or {}
        referenced |= {key for key, value in environment.items() if value is None}
    assert referenced - listed == set()
    # And nothing stale: each active (uncommented) key is used by compose or the code.
    active = {key for key, value in env_example_entries().items() if value is not None}
    used = referenced | settings_variables() | set(code_environment_reads())
    compose_cli = {"COMPOSE_PROFILES"}  # read by docker compose itself
    assert active - used - compose_cli == set()


def test_every_environment_variable_the_code_reads_is_in_env_example() -> None:
    listed = set(env_example_entries())
    code_reads = code_environment_reads()
    # core.config's table holds every platform variable (SCRAPE_JOB_ID, crawl-only, too).
    table = {variable.name for variable in ENVIRONMENT}
    wanted = settings_variables() | table | set(code_reads)
    missing = {name: code_reads.get(name, ["core/config.py"]) for name in wanted - listed}
    assert missing == {}, f"add these to {ENV_EXAMPLE.relative_to(REPO_ROOT)}"
    # The collectors find what they should (so an empty result above is meaningful).
    assert {"ES_JAVA_HOME", "PYTHONPATH", "KIBANA_URL"} <= set(code_reads)
    assert {"SCRAPE_JOB_ID", "PLATFORM_RUN_DIR"} <= table
    assert {"REDIS_URL", "ELASTICSEARCH_URL", "SLACK_WEBHOOK_URL"} <= settings_variables()


SECRET_BLOCKS = ("x-redis-env", "x-es-writer-env", "x-es-reader-env", "x-fetch-env", "x-flow-env")


def test_platform_services_get_every_setting(compose: dict[str, Any]) -> None:
    # Every setting is declared once: the common block, or the block of a secret.
    platform_env = compose["x-platform-env"]
    declared = set(platform_env).union(*(compose[block] for block in SECRET_BLOCKS))
    assert declared - {"PREFECT_API_AUTH_STRING"} == settings_variables() - {"PLATFORM_RUN_DIR"}
    for name in ("prefect-worker", "search-api", "worker-demo", "worker-idealista"):
        assert set(platform_env) <= set(compose["services"][name]["environment"]), name


def test_services_the_code_expects_exist(compose: dict[str, Any], resolved: dict[str, Any]) -> None:
    services = compose["services"]
    # Makefile: `$(COMPOSE) exec <service> ...`
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert set(re.findall(r"\$\(COMPOSE\) exec (\S+)", makefile)) <= set(services)
    assert "docker/compose.yaml" in makefile and "docker/.env" in makefile
    # orchestration.local_stack runs the same stack as processes.
    local_equivalent = {
        "redis": "redis",
        "elasticsearch": "elasticsearch",
        "prefect": "prefect-server",
        "demo": "demo-site",
    }
    assert set(local_stack.PORTS) == set(local_equivalent)
    assert set(local_equivalent.values()) <= set(services)
    # The design's production column: Kibana, Prefect's worker, the search API, PostgreSQL.
    assert {"kibana", "prefect-worker", "search-api", "postgres"} <= set(services)
    # Every URL the platform is given points at a service of the stack, on its port.
    for name, value in resolved["x-platform-env"].items():
        if isinstance(value, str) and "://" in value:
            host = urlsplit(value).hostname
            assert host in services, f"{name}={value}"


def test_an_always_on_worker_per_scheduled_site(compose: dict[str, Any]) -> None:
    services = compose["services"]
    spiders = {path.stem for path in (REPO_ROOT / "crawlers" / "spiders").glob("*.py")}
    for site in profile_sites():
        worker = services[f"worker-{site}"]
        assert worker["command"] == ["scrapy", "crawl", site, "-a", "always_on=true"]
        assert worker["build"]["target"] == "worker"
        assert worker["healthcheck"]["test"][-2:] == ["worker", site]
        assert "ports" not in worker and "container_name" not in worker  # scalable
        assert site in worker["profiles"]
    assert "demo" in spiders  # the one site whose spider exists today runs by default
    assert services["worker-demo"]["profiles"] == ["demo"]
    assert "COMPOSE_PROFILES=demo" in ENV_EXAMPLE.read_text()
    # No worker for a site the flows do not know.
    workers = {name.removeprefix("worker-") for name in services if name.startswith("worker-")}
    assert workers == set(profile_sites())


def test_prefect_worker_registers_deployments_and_serves_the_pool(
    compose: dict[str, Any],
) -> None:
    worker = compose["services"]["prefect-worker"]
    command = " ".join(worker["command"])
    assert "python -m orchestration.register_flows" in command
    assert f"prefect worker start --pool {WORK_POOL} --type process" in command
    assert worker["depends_on"]["prefect-server"]["condition"] == "service_healthy"
    server = compose["services"]["prefect-server"]
    assert server["environment"]["PREFECT_SERVER_DATABASE_DRIVER"] == "postgresql+asyncpg"
    assert server["environment"]["PREFECT_SERVER_DATABASE_HOST"] == "postgres"
    assert server["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_health_restart_limits_and_volumes(
    compose: dict[str, Any], resolved: dict[str, Any]
) -> None:
    services = resolved["services"]
    for name, service in services.items():
        limits = service["deploy"]["resources"]["limits"]
        assert limits.get("memory") and limits.get("cpus"), name
        assert service.get("logging", {}).get("options", {}).get("max-size"), name
        if name in ONE_SHOT:
            assert service["restart"] == "no", name
            continue
        assert service["restart"] == "unless-stopped", name
        assert service["healthcheck"]["test"][0] in ("CMD", "CMD-SHELL"), name
        for dependency, spec in (service.get("depends_on") or {}).items():
            expected = "service_completed_successfully" if dependency in ONE_SHOT else None
            assert spec["condition"] == (expected or "service_healthy"), (name, dependency)
    declared = set(compose["volumes"])
    for name, service in compose["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if source.startswith("."):
                assert (REPO_ROOT / "docker" / source).exists(), (name, source)
            else:
                assert source in declared, (name, source)
    stateful = {"redis": "/data", "elasticsearch": "/usr/share/elasticsearch/data"}
    stateful |= {"postgres": "/var/lib/postgresql/data", "kibana": "/usr/share/kibana/data"}
    for name, path in stateful.items():
        assert any(v.endswith(f":{path}") for v in compose["services"][name]["volumes"]), name
    # Health checks run a script the image has.
    for service in services.values():
        test = service.get("healthcheck", {}).get("test", [])
        for part in test:
            if part.startswith("/app/"):
                assert (REPO_ROOT / part.removeprefix("/app/")).exists(), part


def test_redis_is_persistent_and_password_protected(
    resolved: dict[str, Any], env: dict[str, str]
) -> None:
    script = resolved["services"]["redis"]["command"][-1]
    assert "--appendonly yes" in script and "--maxmemory-policy noeviction" in script
    # The password reaches redis-server in a file written by a shell builtin, not its argv.
    assert "printf 'requirepass %s\\n' \"$REDISCLI_AUTH\" > /tmp/redis-auth.conf" in script
    assert "exec redis-server /tmp/redis-auth.conf" in script
    assert env["REDIS_PASSWORD"] not in script
    redis_url = resolved["x-redis-env"]["REDIS_URL"]
    assert redis_url == f"redis://:{env['REDIS_PASSWORD']}@redis:6379/0"
    assert resolved["services"]["redis"]["environment"]["REDISCLI_AUTH"] == env["REDIS_PASSWORD"]


def test_elastic_stack_versions_match_the_client_and_the_test_node(
    compose: dict[str, Any],
) -> None:
    pom = (REPO_ROOT / "harness" / "java" / "es-node" / "pom.xml").read_text()
    node_version = re.search(r"<elasticsearch.version>([^<]+)<", pom)
    assert node_version is not None
    es_image = compose["services"]["elasticsearch"]["image"]
    kibana_image = compose["services"]["kibana"]["image"]
    assert es_image.startswith(f"elasticsearch:{node_version.group(1)}@sha256:")
    assert kibana_image.startswith(f"kibana:{node_version.group(1)}@sha256:")
    assert compose["services"]["es-setup"]["image"] == es_image
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    client = next(d for d in pyproject["project"]["dependencies"] if d.startswith("elasticsearch"))
    assert client.split("==")[1].split(".")[0] == node_version.group(1).split(".")[0]
    es_env = compose["services"]["elasticsearch"]["environment"]
    assert es_env["xpack.security.enabled"] == "true"
    assert es_env["ELASTIC_PASSWORD"].startswith("${ELASTIC_PASSWORD:?")
    kibana_env = compose["services"]["kibana"]["environment"]
    assert kibana_env["ELASTICSEARCH_USERNAME"] == "kibana_system"


def test_images_are_pinned_and_builds_name_real_stages(compose: dict[str, Any]) -> None:
    stages = set(re.findall(r"^FROM \S+ AS (\S+)$", DOCKERFILE.read_text(), re.MULTILINE))
    for name, service in compose["services"].items():
        if "build" in service:
            assert service["build"]["target"] in stages, name
            assert (REPO_ROOT / service["build"]["dockerfile"]) == DOCKERFILE
            assert Path(REPO_ROOT / "docker" / service["build"]["context"]).resolve() == REPO_ROOT
        else:
            image = service["image"]
            assert re.fullmatch(r"[a-z0-9./-]+:[\w.-]+@sha256:[0-9a-f]{64}", image), name
            assert ":latest" not in image


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("prefect-up", "up -d"),
        ("prefect-down", "down"),
        ("prefect-build", "build"),
        ("prefect-logs", "logs -f"),
        (
            "prefect-flow",
            "exec prefect-worker python -m orchestration.deployment_run scrape-site --site demo",
        ),
    ],
)
def test_make_targets_use_this_compose_file_when_docker_answers(target: str, expected: str) -> None:
    # A dry run (-n) with Docker declared present: prints the commands, runs nothing.
    result = subprocess.run(
        ["make", "-n", target, "HAVE_DOCKER=yes"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    compose = "docker compose -f docker/compose.yaml --env-file docker/.env"
    commands = re.sub(r"\\\n\s*", "", result.stdout)  # join continued lines
    assert f"{compose} {expected}" in commands
    if target in ("prefect-up", "prefect-build"):
        assert "test -f docker/.env || .venv/bin/python docker/init_env.py" in result.stdout

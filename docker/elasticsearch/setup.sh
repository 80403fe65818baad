#!/usr/bin/env bash
# One-shot setup of a secured Elasticsearch (compose service es-setup), idempotent:
#   1. the built-in kibana_system user gets KIBANA_SYSTEM_PASSWORD (Kibana logs in with it),
#   2. role platform_writer: what the crawlers, flows and search API do (index templates,
#      the items-*, chunks-* and jobs indices and aliases, cluster health),
#   3. user PLATFORM_ES_USERNAME with PLATFORM_ES_PASSWORD and that role.
# Everything authenticates as `elastic` (ELASTIC_PASSWORD). Passwords are never echoed.
set -euo pipefail

es="${ES_URL:-http://elasticsearch:9200}"
: "${ELASTIC_PASSWORD:?}" "${KIBANA_SYSTEM_PASSWORD:?}" "${PLATFORM_ES_PASSWORD:?}"
user="${PLATFORM_ES_USERNAME:-platform}"
wait_seconds="${SETUP_WAIT_SECONDS:-300}"

# Passwords go into JSON bodies unescaped: allow only characters that need no escaping.
for name in ELASTIC_PASSWORD KIBANA_SYSTEM_PASSWORD PLATFORM_ES_PASSWORD; do
  if [[ ! "${!name}" =~ ^[A-Za-z0-9._~-]+$ ]]; then
    echo "es-setup: $name may only contain letters, digits and ._~- (use: openssl rand -hex 32)" >&2
    exit 2
  fi
done

# curl reads the credentials from stdin (-K -), so they never appear in argv.
es_call() {
  local method=$1 path=$2 body=${3:-}
  local args=(-sS -o /dev/null -w '%{http_code}' -X "$method" "$es$path" -K -)
  if [[ -n "$body" ]]; then
    args+=(-H 'Content-Type: application/json' --data-binary "$body")
  fi
  printf 'user = "elastic:%s"\n' "$ELASTIC_PASSWORD" | curl "${args[@]}"
}

echo "es-setup: waiting for $es"
deadline=$((SECONDS + wait_seconds))
until [[ "$(es_call GET '/_cluster/health?wait_for_status=yellow&timeout=5s' || true)" == 200 ]]; do
  if ((SECONDS >= deadline)); then
    echo "es-setup: $es not ready (or ELASTIC_PASSWORD wrong) after ${wait_seconds}s" >&2
    exit 1
  fi
  sleep 2
done

expect_ok() {
  local what=$1 code=$2
  if [[ "$code" != 200 && "$code" != 201 ]]; then
    echo "es-setup: $what failed with HTTP $code" >&2
    exit 1
  fi
  echo "es-setup: $what: ok"
}

code=$(es_call POST /_security/user/kibana_system/_password \
  "{\"password\":\"$KIBANA_SYSTEM_PASSWORD\"}")
expect_ok "kibana_system password" "$code"

code=$(es_call PUT /_security/role/platform_writer '{
  "cluster": ["monitor", "manage_index_templates"],
  "indices": [
    {"names": ["items-*", "chunks-*", "platform-jobs-*", "jobs"], "privileges": ["all"]}
  ]
}')
expect_ok "role platform_writer" "$code"

code=$(es_call PUT "/_security/user/$user" \
  "{\"password\":\"$PLATFORM_ES_PASSWORD\",\"roles\":[\"platform_writer\"],\"full_name\":\"Scraping platform\"}")
expect_ok "user $user" "$code"

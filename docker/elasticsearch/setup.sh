#!/usr/bin/env bash
# One-shot setup of a secured Elasticsearch (compose service es-setup), idempotent:
#   1. the built-in kibana_system user gets KIBANA_SYSTEM_PASSWORD (Kibana logs in with it),
#   2. role platform_writer: what the crawlers and flows do (index templates, the items-*,
#      changes-*, chunks-*, platform-jobs-* and jobs indices and aliases, cluster health),
#      and user PLATFORM_ES_USERNAME (PLATFORM_ES_PASSWORD) with it,
#   3. role platform_reader: what the search API does (read those indices, nothing else),
#      and user SEARCH_ES_USERNAME (SEARCH_ES_PASSWORD) with it,
#   4. role platform_kibana_setup: what kibana-setup does (Kibana's saved objects: data
#      views, dashboards, searches; read the platform's indices), and user
#      KIBANA_SETUP_USERNAME (KIBANA_SETUP_PASSWORD) with it. No service but this job
#      uses the superuser.
# Everything here authenticates as `elastic` (ELASTIC_PASSWORD). Passwords are never echoed.
set -euo pipefail

es="${ES_URL:-http://elasticsearch:9200}"
: "${ELASTIC_PASSWORD:?}" "${KIBANA_SYSTEM_PASSWORD:?}" "${PLATFORM_ES_PASSWORD:?}"
: "${SEARCH_ES_PASSWORD:?}" "${KIBANA_SETUP_PASSWORD:?}"
user="${PLATFORM_ES_USERNAME:-platform}"
search_user="${SEARCH_ES_USERNAME:-search}"
kibana_setup_user="${KIBANA_SETUP_USERNAME:-kibana_setup}"
wait_seconds="${SETUP_WAIT_SECONDS:-300}"

# Passwords go into JSON bodies unescaped: allow only characters that need no escaping.
for name in ELASTIC_PASSWORD KIBANA_SYSTEM_PASSWORD PLATFORM_ES_PASSWORD SEARCH_ES_PASSWORD \
  KIBANA_SETUP_PASSWORD; do
  if [[ ! "${!name}" =~ ^[A-Za-z0-9._~-]+$ ]]; then
    echo "es-setup: $name may only contain letters, digits and ._~- (use: openssl rand -hex 32)" >&2
    exit 2
  fi
done

# curl reads its whole configuration from stdin (-K -): the credentials and the body (which
# holds a password) never appear in an argv, which `ps` shows to every user of the host.
# printf and the functions are bash builtins: nothing but curl is started, with no secret.
curl_quoted() {  # a value for curl's config syntax: in double quotes, \ " and newlines escaped
  local value=${1//\\/\\\\}
  value=${value//\"/\\\"}
  value=${value//$'\n'/\\n}
  printf '"%s"' "$value"
}

es_call() {
  local method=$1 path=$2 body=${3:-}
  {
    printf 'user = %s\n' "$(curl_quoted "elastic:$ELASTIC_PASSWORD")"
    if [[ -n "$body" ]]; then
      printf 'header = "Content-Type: application/json"\n'
      printf 'data-binary = %s\n' "$(curl_quoted "$body")"
    fi
  } | curl -sS -o /dev/null -w '%{http_code}' -X "$method" "$es$path" -K -
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
    {"names": ["items-*", "changes-*", "chunks-*", "platform-jobs-*", "jobs"], "privileges": ["all"]}
  ]
}')
expect_ok "role platform_writer" "$code"

code=$(es_call PUT "/_security/user/$user" \
  "{\"password\":\"$PLATFORM_ES_PASSWORD\",\"roles\":[\"platform_writer\"],\"full_name\":\"Scraping platform\"}")
expect_ok "user $user" "$code"

code=$(es_call PUT /_security/role/platform_reader '{
  "cluster": ["monitor"],
  "indices": [
    {"names": ["items-*", "changes-*", "chunks-*", "platform-jobs-*", "jobs"], "privileges": ["read", "view_index_metadata"]}
  ]
}')
expect_ok "role platform_reader" "$code"

code=$(es_call PUT "/_security/user/$search_user" \
  "{\"password\":\"$SEARCH_ES_PASSWORD\",\"roles\":[\"platform_reader\"],\"full_name\":\"Search API\"}")
expect_ok "user $search_user" "$code"

code=$(es_call PUT /_security/role/platform_kibana_setup '{
  "indices": [
    {"names": ["items-*", "changes-*", "chunks-*", "platform-jobs-*", "jobs"], "privileges": ["read", "view_index_metadata"]}
  ],
  "applications": [
    {"application": "kibana-.kibana", "resources": ["*"],
     "privileges": ["feature_discover.all", "feature_dashboard.all", "feature_visualize.all",
                    "feature_indexPatterns.all", "feature_savedObjectsManagement.all"]}
  ]
}')
expect_ok "role platform_kibana_setup" "$code"

code=$(es_call PUT "/_security/user/$kibana_setup_user" \
  "{\"password\":\"$KIBANA_SETUP_PASSWORD\",\"roles\":[\"platform_kibana_setup\"],\"full_name\":\"Kibana setup\"}")
expect_ok "user $kibana_setup_user" "$code"

#!/usr/bin/env bash
# Creates the toolgate namespace (when missing) and registers toolgate's custom search attributes.
# Runs in the temporalio/admin-tools image as the one-shot `temporal-create-namespace` compose service,
# after the `temporal` service reports healthy. Safe to re-run: existing items are left as they are, and an
# attribute that already exists with a type other than Keyword is reported as an error.
#
# PostgreSQL visibility gives each namespace a fixed number of Keyword slots (more than the 7 used here);
# see the Temporal docs on custom search attributes before adding many more.
set -euo pipefail

: "${TEMPORAL_ADDRESS:?TEMPORAL_ADDRESS must be set}"
: "${TEMPORAL_NAMESPACE:=default}"
: "${TEMPORAL_NAMESPACE_RETENTION:=168h}"
: "${WAIT_ATTEMPTS:=60}"
: "${WAIT_INTERVAL:=2}"

# Every one is of type Keyword (exact-match filters in visibility queries).
SEARCH_ATTRIBUTES=(ToolName ToolTier CallStatus CallEffect Tenant Principal ReasonCode)

log() { echo "[register-search-attributes] $*"; }

tcli() { temporal --address "${TEMPORAL_ADDRESS}" "$@"; }

retry() {
  local what="$1" attempt
  shift
  for ((attempt = 1; attempt <= WAIT_ATTEMPTS; attempt++)); do
    if "$@" >/dev/null 2>&1; then
      return 0
    fi
    log "Waiting for ${what} (${attempt}/${WAIT_ATTEMPTS})..."
    sleep "${WAIT_INTERVAL}"
  done
  log "Gave up waiting for ${what}." >&2
  return 1
}

server_serving() { tcli operator cluster health | grep -qw SERVING; }

retry "Temporal at ${TEMPORAL_ADDRESS}" server_serving

if tcli operator namespace describe --namespace "${TEMPORAL_NAMESPACE}" >/dev/null 2>&1; then
  log "Namespace ${TEMPORAL_NAMESPACE} already exists."
else
  log "Creating namespace ${TEMPORAL_NAMESPACE} (retention ${TEMPORAL_NAMESPACE_RETENTION})."
  tcli operator namespace create --namespace "${TEMPORAL_NAMESPACE}" \
    --retention "${TEMPORAL_NAMESPACE_RETENTION}" \
    --description "toolgate tool calls"
fi

# A new namespace takes a moment to reach the frontend's namespace cache.
retry "namespace ${TEMPORAL_NAMESPACE}" tcli operator search-attribute list --namespace "${TEMPORAL_NAMESPACE}"

existing="$(tcli operator search-attribute list --namespace "${TEMPORAL_NAMESPACE}")"
for name in "${SEARCH_ATTRIBUTES[@]}"; do
  if line="$(grep -w -- "${name}" <<<"${existing}")"; then
    if grep -qw Keyword <<<"${line}"; then
      log "Search attribute ${name} (Keyword) already registered."
      continue
    fi
    log "Search attribute ${name} exists with another type: ${line}" >&2
    exit 1
  fi
  log "Registering search attribute ${name} (Keyword)."
  tcli operator search-attribute create --namespace "${TEMPORAL_NAMESPACE}" --name "${name}" --type Keyword
done

log "Namespace ${TEMPORAL_NAMESPACE} is ready with ${#SEARCH_ATTRIBUTES[@]} toolgate search attributes."

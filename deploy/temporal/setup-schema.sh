#!/usr/bin/env bash
# Creates (when missing) and migrates Temporal's two PostgreSQL databases with temporal-sql-tool.
# Runs in the temporalio/admin-tools image as the one-shot `temporal-schema-setup` compose service.
#
# Safe to run on every `docker compose up`:
#   - a database is created only when pg_database does not list it yet;
#   - `setup-schema -v 0.0` only creates the schema_version tables, and leaves the recorded version alone
#     when the database is already past 0.0;
#   - `update-schema` applies only the versioned migrations newer than the recorded version.
# Any failure exits non-zero, so `temporal` (which waits for service_completed_successfully) does not start
# on a half-migrated database.
set -euo pipefail

: "${SQL_HOST:?SQL_HOST must be set}"
: "${SQL_USER:?SQL_USER must be set}"
: "${SQL_PASSWORD:?SQL_PASSWORD must be set}"
: "${SQL_PORT:=5432}"
: "${SQL_PLUGIN:=postgres12}"
: "${TEMPORAL_DB:=temporal}"
: "${TEMPORAL_VISIBILITY_DB:=temporal_visibility}"
: "${SCHEMA_ROOT:=/etc/temporal/schema/postgresql/v12}"
: "${WAIT_ATTEMPTS:=60}"
: "${WAIT_INTERVAL:=2}"

# temporal-sql-tool reads its connection settings from these variables.
export SQL_HOST SQL_PORT SQL_USER SQL_PASSWORD SQL_PLUGIN
# psql and pg_isready read the password from PGPASSWORD, so it never appears on a command line.
export PGPASSWORD="${SQL_PASSWORD}"

log() { echo "[setup-schema] $*"; }

wait_for_postgres() {
  local attempt
  for ((attempt = 1; attempt <= WAIT_ATTEMPTS; attempt++)); do
    if pg_isready -h "${SQL_HOST}" -p "${SQL_PORT}" -U "${SQL_USER}" -d postgres >/dev/null 2>&1; then
      log "PostgreSQL at ${SQL_HOST}:${SQL_PORT} is ready."
      return 0
    fi
    log "Waiting for PostgreSQL (${attempt}/${WAIT_ATTEMPTS})..."
    sleep "${WAIT_INTERVAL}"
  done
  log "PostgreSQL did not become ready in time." >&2
  return 1
}

database_exists() {
  local name="$1" found
  # The name is inlined into SQL below, so accept plain identifiers only.
  if [[ ! "${name}" =~ ^[a-z_][a-z0-9_]*$ ]]; then
    log "Refusing unusual database name '${name}'." >&2
    return 2
  fi
  found="$(psql -h "${SQL_HOST}" -p "${SQL_PORT}" -U "${SQL_USER}" -d postgres -tA -v ON_ERROR_STOP=1 \
    -c "SELECT 1 FROM pg_database WHERE datname = '${name}'")" || return 2
  [[ "${found}" == "1" ]]
}

migrate() {
  local name="$1" schema_dir="$2"
  if [[ ! -d "${schema_dir}" ]]; then
    log "Schema directory ${schema_dir} not found in this image." >&2
    return 1
  fi
  local status=0
  database_exists "${name}" || status=$?
  if [[ ${status} -eq 0 ]]; then
    log "Database ${name} already exists."
  elif [[ ${status} -eq 1 ]]; then
    log "Creating database ${name}."
    temporal-sql-tool --db "${name}" create-database
  else
    return "${status}"
  fi
  log "Setting up versioning for ${name}."
  temporal-sql-tool --db "${name}" setup-schema -v 0.0
  log "Migrating ${name} with ${schema_dir}."
  temporal-sql-tool --db "${name}" update-schema -d "${schema_dir}"
}

wait_for_postgres
migrate "${TEMPORAL_DB}" "${SCHEMA_ROOT}/temporal/versioned"
migrate "${TEMPORAL_VISIBILITY_DB}" "${SCHEMA_ROOT}/visibility/versioned"
log "Temporal schemas are up to date."

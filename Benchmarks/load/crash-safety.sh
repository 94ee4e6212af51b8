#!/usr/bin/env bash
# Crash safety (issue 10): `kill -9` of siwa serve during sustained sign-ins and refreshes, restart, five times, on
# SQLite and on PostgreSQL. Afterwards every sign-in and refresh that was answered 200 must have its account and its
# refresh token in the database, no row may be orphaned, and SQLite's integrity check must pass.
# Loopback only; bounded by the token count and KILLS x about 2 s.
#
#   Benchmarks/load/crash-safety.sh                  # both databases, 5 kills each
#   DATABASES=sqlite KILLS=3 SIWA_BINARY=/tmp/siwa Benchmarks/load/crash-safety.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
DATABASES=${DATABASES:-"sqlite postgres"}
KILLS=${KILLS:-5}
TOKENS=${TOKENS:-10000}
EMULATOR_PORT=${EMULATOR_PORT:-19390}
SERVER_PORT=${SERVER_PORT:-18380}

if [[ " $DATABASES " == *" postgres "* ]] && [ -z "${SIWA_TEST_POSTGRES_URL:-}" ]; then
  exec "$ROOT/scripts/with-postgres" "$0" "$@"
fi
command -v sqlite3 >/dev/null || { apt-get update >/dev/null && apt-get install -y sqlite3 >/dev/null; }
if [ -n "${SIWA_BINARY:-}" ]; then
  SIWA="$SIWA_BINARY"
else
  swift build -c release --product siwa >/dev/null
  SIWA="$ROOT/.build/release/siwa"
fi
WORK=$(mktemp -d)
PIDS=()
cleanup() { for pid in "${PIDS[@]:-}"; do kill -9 "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
FAILED=0
wait_for() { for _ in $(seq 1 300); do curl -sf "$1" >/dev/null && return 0; sleep 0.1; done; echo "not up: $1" >&2; return 1; }

(cd "$WORK" && exec "$SIWA" emulator --port "$EMULATOR_PORT" >"$WORK/emulator.log" 2>&1) &
PIDS+=($!)
wait_for "http://127.0.0.1:$EMULATOR_PORT/auth/keys"

start_server() {
  local database=$1
  local env=(SIWA_APPLE_BASE_URL="http://127.0.0.1:$EMULATOR_PORT" SIWA_TEAM_ID=DEMOTEAM01 SIWA_KEY_ID=DEMOKEY001
    SIWA_PRIVATE_KEY_FILE="$WORK/siwa-emulator/AuthKey_DEMOKEY001.p8" SIWA_BUNDLE_IDS=com.example.siwa.demo
    SIWA_PORT="$SERVER_PORT" SIWA_RATE_LIMIT=0 SIWA_DATA_KEY_FILE="$WORK/data.key"
    SIWA_DATABASE_PATH="$WORK/crash.sqlite")
  if [ "$database" = postgres ]; then env+=(SIWA_DATABASE_URL="$SIWA_TEST_POSTGRES_URL"); fi
  (cd "$WORK" && exec env "${env[@]}" "$SIWA" serve >>"$WORK/server-$database.log" 2>&1) &
  SERVER=$!
  PIDS+=($SERVER)
  wait_for "http://127.0.0.1:$SERVER_PORT/healthz"
}

for database in $DATABASES; do
  echo "== $database: $KILLS kills during sign-ins and refreshes"
  python3 Benchmarks/load/tokens.py "$EMULATOR_PORT" "$TOKENS" "crash-$database-" com.example.siwa.demo >"$WORK/tokens"
  rm -f "$WORK/stop"
  start_server "$database"
  python3 Benchmarks/load/crash_driver.py "$WORK/tokens" "$SERVER_PORT" "$WORK/results-$database" "$WORK/stop" \
    >"$WORK/driver-$database.json" &
  driver=$!
  for kill in $(seq 1 "$KILLS"); do
    sleep "1.$((RANDOM % 10))"
    kill -9 "$SERVER"
    wait "$SERVER" 2>/dev/null || true
    echo "killed the server ($kill/$KILLS) after $(wc -l <"$WORK/results-$database") answers so far"
    start_server "$database"
  done
  sleep 1
  touch "$WORK/stop"
  wait "$driver"
  echo "driver: $(cat "$WORK/driver-$database.json")"
  kill -9 "$SERVER"
  wait "$SERVER" 2>/dev/null || true
  if [ "$database" = postgres ]; then
    where=$(echo "$SIWA_TEST_POSTGRES_URL" | sed 's/?sslmode=disable//')
  else
    where="$WORK/crash.sqlite"
  fi
  if python3 Benchmarks/load/crash_check.py "$WORK/results-$database" "$database" "$where"; then
    echo "PASS  $database: every answered sign-in and refresh is stored, nothing orphaned"
  else
    echo "FAIL  $database"
    FAILED=1
  fi
done
exit $FAILED

#!/usr/bin/env bash
# Crash safety (issue 10): `kill -9` of siwa serve during sustained sign-ins and refreshes, restart, five times, on
# SQLite and on PostgreSQL. Afterwards every sign-in and refresh that was answered 200 must have its account and its
# refresh token in the database, no row may be orphaned, and SQLite's integrity check must pass.
# Loopback only; bounded by the token count and KILLS x about 2 s.
#
#   Benchmarks/load/crash-safety.sh                  # both databases, 5 kills each
#   DATABASES=sqlite KILLS=3 SIWA_BINARY=/tmp/siwa Benchmarks/load/crash-safety.sh
set -euo pipefail
DATABASES=${DATABASES:-"sqlite postgres"}
KILLS=${KILLS:-5}
TOKENS=${TOKENS:-10000}
EMULATOR_PORT=${EMULATOR_PORT:-19390}
SERVER_PORT=${SERVER_PORT:-18380}

if [[ " $DATABASES " == *" postgres "* ]] && [ -z "${SIWA_TEST_POSTGRES_URL:-}" ]; then
  exec "$(dirname "$0")/../../scripts/with-postgres" "$0" "$@"
fi
KILL_SIGNAL=KILL
source "$(dirname "$0")/common.sh"
need sqlite3
start_emulator "$EMULATOR_PORT"

start_server() {
  local database=$1
  server_environment "$database" "$SERVER_PORT" "$WORK/crash.sqlite"
  (cd "$WORK" && exec env "${SERVER_ENV[@]}" "$SIWA" serve >>"$WORK/server-$database.log" 2>&1) &
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

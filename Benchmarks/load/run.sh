#!/usr/bin/env bash
# Load run for siwa serve (issue 4): GET /healthz, GET /api/me, POST /auth/apple/native (returning user) and
# POST /auth/refresh, on SQLite and on PostgreSQL, with wrk on this machine. Loopback only; every run is bounded
# (DURATION seconds, CONNECTIONS connections). Prints one table with requests/s, p99 and the ratio to /healthz,
# and the server's resident memory after the runs.
#
#   Benchmarks/load/run.sh                 # both databases
#   DATABASES=sqlite Benchmarks/load/run.sh
#   SIWA_BINARY=/tmp/siwa DURATION=5 Benchmarks/load/run.sh
#   ROUTES=me DATABASES=sqlite Benchmarks/load/run.sh   # /healthz and /api/me only
set -euo pipefail
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
DATABASES=${DATABASES:-"sqlite postgres"}
# Which routes besides /healthz (measured in every run: the ratios are to it): me, native, refresh.
ROUTES=${ROUTES:-"me native refresh"}
SERVER_PORT=${SERVER_PORT:-18080}
EMULATOR_PORT=${EMULATOR_PORT:-19090}

# PostgreSQL comes from the same private server the tests use.
if [[ " $DATABASES " == *" postgres "* ]] && [ -z "${SIWA_TEST_POSTGRES_URL:-}" ]; then
  exec "$(dirname "$0")/../../scripts/with-postgres" "$0" "$@"
fi
source "$(dirname "$0")/common.sh"
need wrk
start_emulator "$EMULATOR_PORT" --server-url "http://127.0.0.1:$SERVER_PORT"

run_database() {
  local database=$1
  server_environment "$database" "$SERVER_PORT" "$WORK/load-$database.sqlite"
  (cd "$WORK" && exec env "${SERVER_ENV[@]}" "$SIWA" serve >"$WORK/server-$database.log" 2>&1) &
  local server=$!
  PIDS+=($server)
  wait_for "http://127.0.0.1:$SERVER_PORT/healthz"

  # One returning user: a first sign-in, then a fresh identity token for the runs; 4 x connections sessions for refresh.
  local credential token
  credential=$(curl -s -X POST "127.0.0.1:$EMULATOR_PORT/emulator/native-sign-in" -H 'content-type: application/json' \
    -d '{"clientId":"com.example.siwa.demo","email":"load@example.com","givenName":"Load","expiresIn":3600}')
  token=$(echo "$credential" | python3 -c 'import json,sys; print(json.load(sys.stdin)["identityToken"])')
  echo "$token" >"$WORK/identity-token"
  : >"$WORK/refresh-tokens"
  for _ in $(seq 1 $((CONNECTIONS * 4))); do
    curl -s -X POST "127.0.0.1:$SERVER_PORT/auth/apple/native" -H 'content-type: application/json' \
      -d "{\"identityToken\":\"$token\"}" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["refreshToken"]); open("'"$WORK"'/access-token","w").write(d["accessToken"]+"\n")' >>"$WORK/refresh-tokens"
  done

  bench() { # name, path, lua
    local out
    out=$(SIWA_IDENTITY_TOKEN_FILE="$WORK/identity-token" SIWA_ACCESS_TOKEN_FILE="$WORK/access-token" \
      SIWA_REFRESH_TOKENS="$WORK/refresh-tokens" SIWA_WRK_THREADS="$THREADS" \
      wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency ${3:+-s "$3"} "http://127.0.0.1:$SERVER_PORT$2")
    local rps p99 errors
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
    errors=$(echo "$out" | awk '/Non-2xx/ {print $5}')
    printf "%-9s %-28s %10s %10s %8s\n" "$database" "$1" "$rps" "$p99" "${errors:-0}"
    echo "$rps" >"$WORK/rps-$database-$(echo "$1" | tr ' /' '__')"
  }
  bench "GET /healthz" "/healthz" ""
  local names=()
  for route in $ROUTES; do
    case $route in
      me) bench "GET /api/me" "/api/me" "Benchmarks/load/me.lua"; names+=("GET /api/me") ;;
      native) bench "POST /auth/apple/native" "/auth/apple/native" "Benchmarks/load/native.lua"; names+=("POST /auth/apple/native") ;;
      refresh) bench "POST /auth/refresh" "/auth/refresh" "Benchmarks/load/refresh.lua"; names+=("POST /auth/refresh") ;;
      *) echo "unknown route $route (me, native, refresh)" >&2; exit 64 ;;
    esac
  done
  local rss
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$server/status")
  printf "%-9s resident memory after the runs: %d MB\n" "$database" $((rss / 1024))
  for name in "${names[@]}"; do
    awk -v a="$(cat "$WORK/rps-$database-$(echo "$name" | tr ' /' '__')")" -v b="$(cat "$WORK/rps-$database-GET__healthz")" \
      -v n="$name" -v d="$database" 'BEGIN { printf "%-9s %-28s %5.0f%% of /healthz\n", d, n, 100 * a / b }'
  done
  kill "$server"; wait "$server" 2>/dev/null || true
}

printf "%-9s %-28s %10s %10s %8s\n" "database" "route" "req/s" "p99" "non-2xx"
for database in $DATABASES; do
  run_database "$database"
done

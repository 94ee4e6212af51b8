#!/usr/bin/env bash
# Soak (issue 10): mixed load at half of the measured peak for DURATION seconds (10 minutes by default), with the
# server's resident memory and open file descriptors sampled every 10 s, on SQLite and on PostgreSQL. Loopback only;
# every phase is bounded in time. Fails when memory or descriptors show a growth trend (see soak_trend.py).
#
#   Benchmarks/load/soak.sh                                   # both databases, 600 s each
#   SIWA_BINARY=/tmp/siwa DATABASES=sqlite DURATION=120 Benchmarks/load/soak.sh
#
# The mix (Benchmarks/load/mixed.lua): /api/me, refresh, returning and first native sign-ins, logout, a web-flow
# start, /healthz and the JWKS. Access tokens live 60 s (the least siwa accepts) so that everything held in memory
# for an access token's lifetime (the revocation list) turns over ten times within the run; a 10-minute soak at the
# default 15 minutes would show the list filling and call it growth. For the same reason the user cache holds 2,000
# accounts (SIWA_USER_CACHE_SIZE) and starts over several times, instead of filling towards its default 50,000.
set -euo pipefail
DURATION=${DURATION:-600}
PEAK_DURATION=${PEAK_DURATION:-15}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
LOAD_SHARE=${LOAD_SHARE:-50}
NEW_USERS_PER_SECOND=${NEW_USERS_PER_SECOND:-40}
ACCESS_TOKEN_LIFETIME=${ACCESS_TOKEN_LIFETIME:-60}
SAMPLE_EVERY=${SAMPLE_EVERY:-10}
DATABASES=${DATABASES:-"sqlite postgres"}
SERVER_PORT=${SERVER_PORT:-18580}
EMULATOR_PORT=${EMULATOR_PORT:-19590}
RESULTS=${RESULTS:-}

if [[ " $DATABASES " == *" postgres "* ]] && [ -z "${SIWA_TEST_POSTGRES_URL:-}" ]; then
  exec "$(dirname "$0")/../../scripts/with-postgres" "$0" "$@"
fi
source "$(dirname "$0")/common.sh"
need wrk
start_emulator "$EMULATOR_PORT" --server-url "http://127.0.0.1:$SERVER_PORT"

# Sessions for the refresh queue: COUNT native sign-ins of the returning user; prints refresh tokens, keeps the last
# access token in $WORK/access-token.
sessions() {
  python3 - "$SERVER_PORT" "$1" "$WORK/identity-token" "$WORK/access-token" <<'PY'
import http.client, json, sys
port, count, token_file, access_file = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
token = open(token_file).read().strip()
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
for _ in range(count):
    connection.request("POST", "/auth/apple/native", json.dumps({"identityToken": token}), {"content-type": "application/json"})
    answer = connection.getresponse()
    data = json.loads(answer.read())
    if answer.status != 200:
        sys.exit(f"sign-in answered {answer.status}: {data}")
    print(data["refreshToken"])
open(access_file, "w").write(data["accessToken"] + "\n")
PY
}

mixed() { # seconds, delay in ms, refresh-token file, new-user token file, output
  SIWA_IDENTITY_TOKEN_FILE="$WORK/identity-token" SIWA_ACCESS_TOKEN_FILE="$WORK/access-token" \
    SIWA_REFRESH_TOKENS="$3" SIWA_NEW_USER_TOKENS="$4" SIWA_DELAY_MS="$2" SIWA_WRK_THREADS="$THREADS" \
    SIWA_NEW_USERS_PER_SECOND="$NEW_USERS_PER_SECOND" \
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"${1}s" --timeout 5s --latency -s Benchmarks/load/mixed.lua \
    "http://127.0.0.1:$SERVER_PORT/healthz" >"$5" 2>&1
}

run_database() {
  local database=$1
  server_environment "$database" "$SERVER_PORT" "$WORK/soak-$database.sqlite"
  SERVER_ENV+=(SIWA_ACCESS_TOKEN_LIFETIME="$ACCESS_TOKEN_LIFETIME" SIWA_USER_CACHE_SIZE=2000)
  (cd "$WORK" && exec env "${SERVER_ENV[@]}" "$SIWA" serve >"$WORK/server-$database.log" 2>&1) &
  local server=$!
  PIDS+=($server)
  wait_for "http://127.0.0.1:$SERVER_PORT/healthz"

  python3 Benchmarks/load/tokens.py "$EMULATOR_PORT" 1 "soak-returning-$database" com.example.siwa.demo >"$WORK/identity-token"
  sessions $((CONNECTIONS * 4)) >"$WORK/refresh-peak"
  sessions $((CONNECTIONS * 4)) >"$WORK/refresh-soak"
  python3 Benchmarks/load/tokens.py "$EMULATOR_PORT" 2000 "soak-peak-$database-" com.example.siwa.demo >"$WORK/new-peak"
  python3 Benchmarks/load/tokens.py "$EMULATOR_PORT" $((NEW_USERS_PER_SECOND * DURATION)) "soak-$database-" \
    com.example.siwa.demo >"$WORK/new-soak"

  # The peak: the same mix with no pause.
  mixed "$PEAK_DURATION" 0 "$WORK/refresh-peak" "$WORK/new-peak" "$WORK/wrk-peak-$database"
  local peak delay
  peak=$(awk '/Requests\/sec/ {printf "%d", $2}' "$WORK/wrk-peak-$database")
  # Each connection sends one request, then waits: CONNECTIONS / (delay + latency) requests per second in all.
  delay=$(awk -v c="$CONNECTIONS" -v p="$peak" -v s="$LOAD_SHARE" 'BEGIN { d = c * 1000 / (p * s / 100); printf "%d", d < 1 ? 1 : d }')
  echo "$database: mixed peak $peak requests/s; soak at $LOAD_SHARE% with ${delay} ms between a connection's requests"

  # The soak, with samples every SAMPLE_EVERY seconds: elapsed, resident KB (and its anonymous, file-backed and
  # shared parts), open descriptors, threads.
  local samples="$WORK/samples-$database.csv"
  echo "seconds,rss_kb,anon_kb,file_kb,shmem_kb,fds,threads" >"$samples"
  mixed "$DURATION" "$delay" "$WORK/refresh-soak" "$WORK/new-soak" "$WORK/wrk-soak-$database" &
  local load=$!
  local started=$SECONDS
  while kill -0 "$load" 2>/dev/null; do
    local memory
    memory=$(awk '/^(VmRSS|RssAnon|RssFile|RssShmem):/ {printf "%s,", $2}' "/proc/$server/status")
    echo "$((SECONDS - started)),$memory$(ls "/proc/$server/fd" | wc -l),$(awk '/^Threads:/ {print $2}' "/proc/$server/status")" >>"$samples"
    sleep "$SAMPLE_EVERY" & wait $! || true
  done
  wait "$load" || true
  local wrk_out="$WORK/wrk-soak-$database"
  local rate p99 errors socket_errors
  rate=$(awk '/Requests\/sec/ {printf "%d", $2}' "$wrk_out")
  p99=$(awk '$1 == "99%" {print $2}' "$wrk_out")
  errors=$(awk '/Non-2xx/ {print $5}' "$wrk_out")
  socket_errors=$(awk '/Socket errors/ {print $0}' "$wrk_out")
  echo "$database: soak $(awk '/requests in/ {print $1}' "$wrk_out") requests in ${DURATION} s, $rate requests/s" \
    "($((100 * rate / peak))% of peak), p99 $p99, non-2xx ${errors:-0}${socket_errors:+, $socket_errors}"
  [ "${errors:-0}" = 0 ] || { echo "FAIL  $database: $errors non-2xx answers during the soak"; FAILED=1; }
  curl -sf "http://127.0.0.1:$SERVER_PORT/readyz" >/dev/null || { echo "FAIL  $database: not ready after the soak"; FAILED=1; }
  # Warm-up: the revocation list keeps a logout for the access-token lifetime plus 120 s.
  python3 Benchmarks/load/soak_trend.py "$database" "$samples" $((ACCESS_TOKEN_LIFETIME + 120)) || FAILED=1
  if [ -n "$RESULTS" ]; then mkdir -p "$RESULTS" && cp "$samples" "$wrk_out" "$WORK/wrk-peak-$database" "$RESULTS/"; fi
  kill "$server"; wait "$server" 2>/dev/null || true
}

for database in $DATABASES; do
  run_database "$database"
done
exit $FAILED

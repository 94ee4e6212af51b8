#!/usr/bin/env bash
# PostgreSQL restarts under siwa (issue 17): during sustained sign-ins and refreshes, the PostgreSQL server is stopped
# (fast shutdown, which ends every session) and started again after DOWN seconds, RESTARTS times. While it is down siwa
# must answer 503 with Retry-After (never hang, never 500) and /readyz must say not ready; it must reconnect by itself;
# afterwards every sign-in and refresh that was answered 200 must be stored (crash_check.py).
# Loopback only; bounded by the token count and RESTARTS x (DOWN + UP) seconds.
#
#   Benchmarks/load/pg-restart.sh
#   RESTARTS=3 DOWN=4 SIWA_BINARY=.build/debug/siwa Benchmarks/load/pg-restart.sh
set -euo pipefail
RESTARTS=${RESTARTS:-3}
DOWN=${DOWN:-4}
UP=${UP:-5}
TOKENS=${TOKENS:-20000}
EMULATOR_PORT=${EMULATOR_PORT:-19490}
SERVER_PORT=${SERVER_PORT:-18480}

if [ -z "${SIWA_TEST_POSTGRES_STOP:-}" ]; then
  exec "$(dirname "$0")/../../scripts/with-postgres" "$0" "$@"
fi
source "$(dirname "$0")/common.sh"
start_emulator "$EMULATOR_PORT"

echo "== postgres: $RESTARTS restarts ($DOWN s down, $UP s up) during sign-ins and refreshes"
python3 Benchmarks/load/tokens.py "$EMULATOR_PORT" "$TOKENS" "pg-restart-" com.example.siwa.demo >"$WORK/tokens"
server_environment postgres "$SERVER_PORT" "$WORK/unused.sqlite"
(cd "$WORK" && exec env "${SERVER_ENV[@]}" "$SIWA" serve >>"$WORK/server.log" 2>&1) &
SERVER=$!
PIDS+=($SERVER)
wait_for "http://127.0.0.1:$SERVER_PORT/readyz"

python3 Benchmarks/load/pg_restart_driver.py "$WORK/tokens" "$SERVER_PORT" "$WORK/results" "$WORK/stop" \
  "$WORK/timeline" >"$WORK/driver.json" &
driver=$!
sleep "$UP"
for restart in $(seq 1 "$RESTARTS"); do
  before=$(wc -l <"$WORK/results")
  "$SIWA_TEST_POSTGRES_STOP" >/dev/null
  echo "stopped PostgreSQL ($restart/$RESTARTS) after $before stored answers"
  sleep "$DOWN"
  "$SIWA_TEST_POSTGRES_START" >/dev/null
  sleep "$UP"
  echo "started it again; $(( $(wc -l <"$WORK/results") - before )) answers stored since the stop"
done
touch "$WORK/stop"
wait "$driver"
summary=$(cat "$WORK/driver.json")
echo "driver: $summary"
kill -TERM "$SERVER"
stopped=false
for _ in $(seq 1 300); do
  if ! kill -0 "$SERVER" 2>/dev/null || grep -q "^State:.*Z" "/proc/$SERVER/status" 2>/dev/null; then stopped=true; break; fi
  sleep 0.1
done
if [ "$stopped" = false ]; then kill -KILL "$SERVER" 2>/dev/null || true; fi
wait "$SERVER" 2>/dev/null || true

field() { python3 -c "import json,sys; s=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1" <<<"$summary"; }
server_errors=$(field 'sum(n for k, n in s["statuses"].items() if k.split()[1].startswith("5") and k.split()[1] != "503")')
unavailable=$(field 'sum(n for k, n in s["statuses"].items() if k.endswith(" 503") and not k.startswith("readyz"))')
check "no 5xx but 503 while PostgreSQL was down ($server_errors)" "$([ "$server_errors" -eq 0 ] && echo true || echo false)"
check "every 503 carried Retry-After ($unavailable answered 503)" "$([ "$(field 's["no_retry_after"]')" -eq 0 ] && echo true || echo false)"
check "no request went unanswered (timeout 15 s; slowest $(field 's["slowest"]') s)" "$([ "$(field 's["no_answer"]')" -eq 0 ] && echo true || echo false)"
check "/readyz said not ready during an outage and ready after ($(field 's["readyz"]'))" "$(field '"true" if s["readyz"].get("503", 0) > 0 and s["readyz"].get("200", 0) > 0 else "false"')"
last_ok=$(python3 -c "
import json
lines = [json.loads(l) for l in open('$WORK/timeline')]
print(sum(1 for l in lines[-200:] if l['kind'] == 'sign-in' and l['status'] == 200))")
check "siwa serve finished its graceful shutdown within 30 s of SIGTERM" "$stopped"
check "sign-ins succeed again after the last restart ($last_ok of the last 200 answers)" "$([ "$last_ok" -gt 0 ] && echo true || echo false)"
where=$(echo "$SIWA_TEST_POSTGRES_URL" | sed 's/?sslmode=disable//')
if python3 Benchmarks/load/crash_check.py "$WORK/results" postgres "$where"; then
  check "every answered sign-in and refresh is stored" true
else
  check "every answered sign-in and refresh is stored" false
fi
exit "$FAILED"

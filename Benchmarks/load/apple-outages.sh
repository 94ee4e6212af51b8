#!/usr/bin/env bash
# Apple outages (issue 10), with the emulator's fault modes, on SQLite: what sign-ins see while Apple's keys endpoint
# fails or hangs, while its token endpoint fails, and while its revoke endpoint fails. Loopback only; each load phase
# lasts DURATION seconds; the hang phase is bounded by the server's own Apple timeout.
#
#   Benchmarks/load/apple-outages.sh
#   SIWA_BINARY=/tmp/siwa DURATION=5 Benchmarks/load/apple-outages.sh
set -euo pipefail
DURATION=${DURATION:-5}
CONNECTIONS=${CONNECTIONS:-32}
EMULATOR_PORT=${EMULATOR_PORT:-19490}
SERVER_PORT=${SERVER_PORT:-18480}
source "$(dirname "$0")/common.sh"
need wrk
emulator() { curl -s -X POST "127.0.0.1:$EMULATOR_PORT/emulator/$1" -H 'content-type: application/json' -d "$2"; }
fault() { emulator faults "{\"endpoint\":\"$1\",\"mode\":\"$2\"}" >/dev/null; }
calls() { curl -s "127.0.0.1:$EMULATOR_PORT/emulator/log" | python3 -c "import json,sys; print(sum(1 for e in json.load(sys.stdin) if e.get('endpoint') == '$1'))"; }
credential() { emulator native-sign-in "{\"clientId\":\"com.example.siwa.demo\",\"email\":\"$1\",\"expiresIn\":3600}"; }
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
# POST /auth/apple/native with the JSON body $1; prints "status seconds error".
native() {
  curl -s -o "$WORK/answer" -w '%{http_code} %{time_total}' -X POST "127.0.0.1:$SERVER_PORT/auth/apple/native" \
    -H 'content-type: application/json' -d "$1"
  printf ' %s\n' "$(python3 -c "import json; print(json.load(open('$WORK/answer')).get('error', '-'))" 2>/dev/null || echo -)"
}
load() { # name, token file
  SIWA_IDENTITY_TOKEN_FILE="$2" wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency -s Benchmarks/load/native.lua \
    "http://127.0.0.1:$SERVER_PORT/auth/apple/native" >"$WORK/wrk-$1" 2>&1
  printf "%-34s %10s sign-ins/s  p99 %9s  non-2xx %s\n" "$1" "$(awk '/Requests\/sec/ {print $2}' "$WORK/wrk-$1")" \
    "$(awk '$1 == "99%" {print $2}' "$WORK/wrk-$1")" "$(awk '/Non-2xx/ {print $5}' "$WORK/wrk-$1" | sed 's/^$/0/')"
}

start_emulator "$EMULATOR_PORT"
start_server() {
  server_environment sqlite "$SERVER_PORT" "$WORK/outage.sqlite"
  (cd "$WORK" && exec env "${SERVER_ENV[@]}" "$SIWA" serve >>"$WORK/server.log" 2>&1) &
  SERVER=$!
  PIDS+=($SERVER)
  wait_for "http://127.0.0.1:$SERVER_PORT/healthz"
}
start_server

credential returning@example.com | field identityToken >"$WORK/token"
native "{\"identityToken\":\"$(cat "$WORK/token")\"}" >/dev/null
echo "== returning-user native sign-ins, $DURATION s each"
load "no fault" "$WORK/token"

echo "== Apple's keys endpoint failing (500)"
fault keys error
before=$(calls keys)
load "keys failing, known key" "$WORK/token"
check "sign-ins with a known key keep working while the keys endpoint fails" \
  "$([ -z "$(awk '/Non-2xx/ {print $5}' "$WORK/wrk-keys failing, known key")" ] && echo true || echo false)"
check "no keys fetch while the key is known ($(( $(calls keys) - before )) calls)" \
  "$([ "$(calls keys)" = "$before" ] && echo true || echo false)"
emulator rotate-keys '{}' >/dev/null
credential rotated@example.com | field identityToken >"$WORK/token-new-kid"
before=$(calls keys)
read -r status seconds error < <(native "{\"identityToken\":\"$(cat "$WORK/token-new-kid")\"}")
echo "unknown key while the keys endpoint fails: $status $error in ${seconds}s"
check "an unknown key fails fast with a clear error ($status $error)" \
  "$([ "$status" -ge 400 ] && [ "$status" -lt 600 ] && [ "$error" != - ] && awk -v s="$seconds" 'BEGIN { exit !(s < 1) }' && echo true || echo false)"
for _ in $(seq 1 50); do native "{\"identityToken\":\"$(cat "$WORK/token-new-kid")\"}" >/dev/null; done
fetches=$(( $(calls keys) - before ))
check "51 sign-ins with the unknown key made at most 2 keys fetches ($fetches)" \
  "$([ "$fetches" -le 2 ] && echo true || echo false)"
fault keys off

echo "== Apple's keys endpoint hanging, on a server that has not fetched the new key yet"
emulator rotate-keys '{}' >/dev/null
credential hang@example.com | field identityToken >"$WORK/token-hang"
sleep 61  # the server refetches an unknown key at most once a minute
fault keys timeout
read -r status seconds error < <(native "{\"identityToken\":\"$(cat "$WORK/token-hang")\"}")
echo "unknown key while the keys endpoint hangs: $status $error in ${seconds}s"
check "no sign-in waits past the server's Apple timeout of 10 s (answered $status $error in ${seconds}s)" \
  "$([ "$error" != - ] && awk -v s="$seconds" 'BEGIN { exit !(s < 11) }' && echo true || echo false)"
load "keys hanging, known key" "$WORK/token"
check "sign-ins with a known key keep working while the keys endpoint hangs" \
  "$([ -z "$(awk '/Non-2xx/ {print $5}' "$WORK/wrk-keys hanging, known key")" ] && echo true || echo false)"
fault keys off
# The hung fetch left the rotated key unknown for the refetch interval (a minute): a restart learns it at once.
kill "$SERVER"; wait "$SERVER" 2>/dev/null || true
start_server

echo "== Apple's token endpoint failing: a native sign-in with a code"
fault token error
credential code@example.com >"$WORK/code-credential"
body=$(python3 -c "import json; c=json.load(open('$WORK/code-credential')); print(json.dumps({'identityToken': c['identityToken'], 'authorizationCode': c['authorizationCode']}))")
read -r status seconds error < <(native "$body")
echo "sign-in with a code while the token endpoint fails: $status $error in ${seconds}s"
check "native sign-in succeeds on the identity token alone" "$([ "$status" = 200 ] && echo true || echo false)"
fault token off

echo "== Apple's revoke endpoint failing: DELETE /api/me"
credential revoke@example.com >"$WORK/revoke-credential"
body=$(python3 -c "import json; c=json.load(open('$WORK/revoke-credential')); print(json.dumps({'identityToken': c['identityToken'], 'authorizationCode': c['authorizationCode']}))")
native "$body" >/dev/null
access=$(python3 -c "import json; print(json.load(open('$WORK/answer'))['accessToken'])")
fault revoke error
status=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "127.0.0.1:$SERVER_PORT/api/me" -H "authorization: Bearer $access")
check "DELETE /api/me answers 204 while Apple's revoke fails ($status)" "$([ "$status" = 204 ] && echo true || echo false)"
queued=$(sqlite3 "$WORK/outage.sqlite" "SELECT count(*) FROM apple_revocations" 2>/dev/null || echo "?")
check "the revocation is queued for retry ($queued)" "$([ "$queued" = 1 ] && echo true || echo false)"
exit $FAILED

#!/usr/bin/env bash
# Scale-out run (issue 10): three siwa serve instances on one PostgreSQL. The refresh race checks exactly-once
# rotation, so the grace window for racing tabs (SIWA_REFRESH_REUSE_GRACE) is off here.
#   1. Throughput: returning-user native sign-ins with wrk for DURATION seconds against one instance, then against
#      three at once (one wrk each), same run.
#   2. Correctness: USERS distinct first sign-ins spread round-robin over the three instances (a Python driver, each
#      token sent exactly once), then the accounts and sessions counted in the database.
#   3. Refresh tokens raced: each of RACE_TOKENS refresh tokens presented to two instances at the same moment.
#   4. Endings under load: while instances 1 and 2 serve returning-user sign-ins with wrk for DURATION seconds, ENDINGS
#      sessions are signed in and logged out at instance 1 and instance 3 is asked until it refuses each access token.
#      The instances' poll of the database is set to ten minutes, so only the announcements (LISTEN/NOTIFY) count.
#   5. Limits for the deployment: three more instances on a database of their own, with a rate limit of 5 a second
#      (burst 10) and the bound of 3 sessions per identity token. One client paces refreshes above its rate, round
#      robin: the deployment admits what one bucket admits, within 10%, not three buckets' worth; one identity token
#      signed in four times round robin opens 3 sessions (three_limits.py).
#   6. An instance killed under load: KILL_TOKENS distinct first sign-ins round robin from WORKERS threads while
#      instance 3 is killed (SIGKILL) after a second; a request it refused to connect goes to the next instance, as a
#      proxy's would (kill_one.py). Every sign-in answered 200 must have its account; instances 1 and 2 go on serving.
# What the shared limits cost a sign-in is measured by Benchmarks/load/bound-cost.sh (the bound) and peers.sh with
# LIMITS=rate (the rate limit), each against the build before.
# Loopback only; phases 1 and 4 are bounded by DURATION (and phase 4 by ENDINGS), phases 2, 3, 5 and 6 by their counts.
#
#   Benchmarks/load/scale-out.sh                     # 10,000 users
#   USERS=2000 DURATION=5 SIWA_BINARY=/tmp/siwa Benchmarks/load/scale-out.sh
#
# Checks, printed as PASS or FAIL (exit 1 on any FAIL): every sign-in answered 200, exactly USERS accounts and USERS
# sessions, no refresh token accepted twice, each raced token accepted exactly once, no 5xx anywhere, every ending
# refused by instance 3 with a p99 under 250 ms, one client's rate limit and an identity token's bound holding for the
# deployment, every sign-in answered while an instance was killed kept, and the two others serving after it.
set -euo pipefail
USERS=${USERS:-10000}
RACE_TOKENS=${RACE_TOKENS:-2000}
ENDINGS=${ENDINGS:-200}
KILL_TOKENS=${KILL_TOKENS:-3000}
CONNECTIONS=${CONNECTIONS:-24}
DURATION=${DURATION:-8}
WORKERS=${WORKERS:-16}
EMULATOR_PORT=${EMULATOR_PORT:-19290}
BASE_PORT=${BASE_PORT:-18280}

if [ -z "${SIWA_TEST_POSTGRES_URL:-}" ]; then
  exec "$(dirname "$0")/../../scripts/with-postgres" "$0" "$@"
fi
source "$(dirname "$0")/common.sh"
need wrk
echo "work folder: $WORK"
sql() { psql "$(database_url "$1" | sed 's/?sslmode=disable//')" -tAc "$2"; }

start_emulator "$EMULATOR_PORT"
DATA_KEY=$(head -c 32 /dev/urandom | base64)

# Starts instance N (1-based) on database $1 with the settings of EXTRA_ENV last; prints nothing, records the pid.
EXTRA_ENV=()
start_instance() {
  local database=$1 index=$2
  (cd "$WORK" && exec env SIWA_APPLE_BASE_URL="http://127.0.0.1:$EMULATOR_PORT" SIWA_TEAM_ID=DEMOTEAM01 \
    SIWA_KEY_ID=DEMOKEY001 SIWA_PRIVATE_KEY_FILE="$WORK/siwa-emulator/AuthKey_DEMOKEY001.p8" \
    SIWA_BUNDLE_IDS=com.example.siwa.demo SIWA_PORT=$((BASE_PORT + index)) SIWA_METRICS_PORT=$((BASE_PORT + index + 2000)) \
    SIWA_RATE_LIMIT=0 \
    SIWA_REFRESH_REUSE_GRACE=0 SIWA_MAX_SESSIONS_PER_IDENTITY_TOKEN=0 SIWA_MAX_CONNECTIONS_PER_ADDRESS=100000 \
    SIWA_DATA_KEY="$DATA_KEY" SIWA_DATABASE_URL="$(database_url "$database")" SIWA_DATABASE_POLL_INTERVAL=600 \
    "${EXTRA_ENV[@]}" "$SIWA" serve >"$WORK/server-$database-$index.log" 2>&1) &
  PIDS+=($!)
  echo $! >"$WORK/pid-$database-$index"
}

# Runs returning-user sign-ins with identity token file $2 against instance $3 in the background, into $WORK/wrk-$1.
sign_in_load() {
  SIWA_IDENTITY_TOKEN_FILE="$2" wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency -s Benchmarks/load/native.lua \
    "http://127.0.0.1:$((BASE_PORT + $3))/auth/apple/native" >"$WORK/wrk-$1" 2>&1 &
  LOADS+=($!)
}
LOADS=()
wait_loads() { for pid in "${LOADS[@]}"; do wait "$pid"; done; LOADS=(); }
rate() { awk '/Requests\/sec/ {print $2}' "$WORK/wrk-$1"; }
non2xx() { awk '/Non-2xx/ {print $5}' "$WORK/wrk-$1"; }
p99() { awk '$1 == "99%" {print $2}' "$WORK/wrk-$1"; }

sql siwa_test "CREATE DATABASE three" >/dev/null
for index in 1 2 3; do start_instance three "$index"; done
for index in 1 2 3; do wait_for "http://127.0.0.1:$((BASE_PORT + index))/healthz"; done

echo "== throughput: returning-user native sign-ins, $DURATION s, one instance then three"
python3 Benchmarks/load/tokens.py "$EMULATOR_PORT" 1 returning com.example.siwa.demo >"$WORK/token-returning"
sign_in_load one "$WORK/token-returning" 1
wait_loads
echo "one instance:    $(rate one) sign-ins/s, p99 $(p99 one)"
check "one instance: every answer 2xx" "$([ -z "$(non2xx one)" ] && echo true || echo false)"
for index in 1 2 3; do sign_in_load "three$index" "$WORK/token-returning" "$index"; done
wait_loads
total=0
for index in 1 2 3; do
  echo "instance $index:      $(rate "three$index") sign-ins/s, p99 $(p99 "three$index")"
  total=$(awk -v a="$total" -v b="$(rate "three$index")" 'BEGIN { printf "%.0f", a + b }')
  check "instance $index: every answer 2xx" "$([ -z "$(non2xx "three$index")" ] && echo true || echo false)"
done
echo "three instances: $total sign-ins/s together (one instance: $(rate one))"

echo "== $USERS distinct first sign-ins over the three instances"
python3 Benchmarks/load/tokens.py "$EMULATOR_PORT" "$USERS" scale com.example.siwa.demo >"$WORK/tokens-all"
if python3 Benchmarks/load/sign_in_many.py "$WORK/tokens-all" "$WORK/refresh-all" "$WORKERS" \
  $((BASE_PORT + 1)) $((BASE_PORT + 2)) $((BASE_PORT + 3)) >"$WORK/sign-in.json"; then signed=true; else signed=false; fi
cat "$WORK/sign-in.json"
check "every distinct sign-in answered 200" "$signed"
accounts=$(sql three "SELECT count(*) FROM users")
check "exactly $USERS accounts besides the returning user's (found $((accounts - 1)))" \
  "$([ "$accounts" = "$((USERS + 1))" ] && echo true || echo false)"
sessions=$(sql three "SELECT count(*) FROM sessions s JOIN users u ON u.id = s.user_id WHERE u.email LIKE 'scale%'")
check "one session per distinct sign-in (found $sessions)" "$([ "$sessions" = "$USERS" ] && echo true || echo false)"

echo "== refresh tokens raced across instances 1 and 2: $RACE_TOKENS tokens, each presented to both at once"
head -n "$RACE_TOKENS" "$WORK/refresh-all" >"$WORK/race-tokens"
if python3 Benchmarks/load/refresh_race.py "$WORK/race-tokens" $((BASE_PORT + 1)) $((BASE_PORT + 2)) >"$WORK/race.json"; then
  raced=true
else
  raced=false
fi
cat "$WORK/race.json"
check "no refresh token accepted twice, no 5xx" "$raced"
check "every raced token accepted exactly once" "$(python3 -c "import json; r=json.load(open('$WORK/race.json')); print('true' if r['tokensWithOneSuccess'] == r['tokens'] else 'false')")"

echo "== endings under sign-in load: $ENDINGS logouts at instance 1, refused by instance 3; wrk on instances 1 and 2"
python3 Benchmarks/load/tokens.py "$EMULATOR_PORT" "$ENDINGS" ending com.example.siwa.demo >"$WORK/tokens-endings"
for index in 1 2; do sign_in_load "ending$index" "$WORK/token-returning" "$index"; done
if python3 Benchmarks/load/endings.py "$WORK/tokens-endings" $((BASE_PORT + 1)) $((BASE_PORT + 3)) >"$WORK/endings.json"
then ended=true; else ended=false; fi
wait_loads
cat "$WORK/endings.json"
for index in 1 2; do echo "load on instance $index: $(rate "ending$index") sign-ins/s, p99 $(p99 "ending$index")"; done
check "every ending refused by instance 3 within 30 s" "$ended"
check "endings refused by instance 3 with a p99 under 250 ms" "$(python3 -c "import json; r=json.load(open('$WORK/endings.json')); print('true' if r['p99_ms'] is not None and r['p99_ms'] < 250 else 'false')")"

echo "== limits for the deployment: rate 5/s, burst 10, 3 sessions per identity token; instances 4 to 6"
sql siwa_test "CREATE DATABASE limits" >/dev/null
EXTRA_ENV=(SIWA_RATE_LIMIT=5 SIWA_RATE_BURST=10 SIWA_MAX_SESSIONS_PER_IDENTITY_TOKEN=3)
for index in 4 5 6; do start_instance limits "$index"; done
for index in 4 5 6; do wait_for "http://127.0.0.1:$((BASE_PORT + index))/healthz"; done
EXTRA_ENV=()
python3 Benchmarks/load/tokens.py "$EMULATOR_PORT" 1 replayed com.example.siwa.demo >"$WORK/token-replayed"
if python3 Benchmarks/load/three_limits.py 5 10 3 "$(cat "$WORK/token-replayed")" \
  $((BASE_PORT + 4)) $((BASE_PORT + 5)) $((BASE_PORT + 6)) >"$WORK/limits.json"; then limited=true; else limited=false; fi
cat "$WORK/limits.json"
check "one client's rate limit and an identity token's bound hold for the deployment" "$limited"

echo "== instance 3 killed under load: $KILL_TOKENS distinct first sign-ins round robin, $WORKERS threads"
python3 Benchmarks/load/tokens.py "$EMULATOR_PORT" "$KILL_TOKENS" kill com.example.siwa.demo >"$WORK/tokens-kill"
python3 Benchmarks/load/kill_one.py "$WORK/tokens-kill" "$WORKERS" "$(cat "$WORK/pid-three-3")" 1 \
  $((BASE_PORT + 1)) $((BASE_PORT + 2)) $((BASE_PORT + 3)) >"$WORK/kill.json"
python3 -c "import json; r=json.load(open('$WORK/kill.json')); r.pop('emails'); print(json.dumps(r))"
python3 -c "import json; print('\n'.join(json.load(open('$WORK/kill.json'))['emails']))" >"$WORK/kill-answered"
sql three "SELECT email FROM users WHERE email LIKE 'kill%' ORDER BY email" >"$WORK/kill-stored"
lost=$(comm -23 "$WORK/kill-answered" "$WORK/kill-stored" | wc -l)
check "every sign-in answered 200 while instance 3 was killed has its account ($lost lost)" \
  "$([ "$lost" = 0 ] && [ -s "$WORK/kill-answered" ] && echo true || echo false)"
check "instances 1 and 2 served after the kill, no sign-in refused" "$(python3 -c "import json; r=json.load(open('$WORK/kill.json')); a=r['answeredAfterKillByPort']; print('true' if a['$((BASE_PORT + 1))'] > 0 and a['$((BASE_PORT + 2))'] > 0 and r['refused'] == 0 else 'false')")"
exit $FAILED

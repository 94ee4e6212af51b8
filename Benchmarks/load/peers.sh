#!/usr/bin/env bash
# siwa against its peer and its floor, in one run (issue 21). Starts the Apple ID emulator, siwa (SQLite; also
# PostgreSQL with DATABASES="sqlite postgres") and the Vapor 4 tutorial's server (Benchmarks/peer-vapor) twice: with
# SQLite's defaults, and with WAL and synchronous=NORMAL. Mints genuine identity tokens for USERS returning users,
# signs each in once everywhere, then runs wrk against every target, alternating A B C ... for ROUNDS rounds:
#
#   sign-in  siwa POST /auth/apple/native | siwa POST /api/auth/siwa (the tutorial's contract) | peer POST /api/auth/siwa
#   me       siwa GET /api/me, one token (the verified-token cache) and DISTINCT tokens (each verified again) |
#            siwa GET /api/users/me (the contract's opaque token, a database lookup) | peer GET /api/users/me
#   refresh  siwa POST /auth/refresh;   baseline  siwa GET /healthz
#
# Server CPU per request comes from /proc (utime + stime of the server process over the run, divided by the requests
# wrk completed). Each round ends with the floor benchmark (Benchmarks/floor, one core), so that the floor meets the
# machine the routes met. Then the report: medians, ranges, p99, the ratios siwa / peer, each route's share of
# /healthz, and CPU against the floor (its medians over the rounds) for siwa, the baseline and PostgreSQL. Loopback
# only; every run is bounded (DURATION seconds, CONNECTIONS connections).
#
# BASELINE_BINARY (another build of siwa, e.g. the commit before a change) adds it as a target of its own on SQLite,
# "siwa-baseline", which runs every one of siwa's routes (in the ROUTES groups) but /healthz in the same rounds, so
# that both databases grow alike, and goes first every other round (an even ROUNDS balances the order exactly): a
# change's effect in one run. (A baseline that skipped routes had the smaller file and ran second in every round: two
# builds swapped between the roles showed about 2.5% for the role alone.) With DATABASES="sqlite postgres" the baseline
# also runs on PostgreSQL, "siwa-baseline-pg", on a database of its own in the same PostgreSQL server, in the same
# rounds and alternating order as "siwa-pg".
#
# ROUTES (default "sign-in me refresh") picks the groups of routes to run, e.g. ROUTES="sign-in" for a sign-in change:
# /healthz and the floor run in every round regardless (the report needs them).
#
#   Benchmarks/load/peers.sh
#   ROUTES=sign-in BASELINE_BINARY=/tmp/siwa-before SIWA_BINARY=/tmp/siwa Benchmarks/load/peers.sh
#   DURATION=5 ROUNDS=3 SIWA_BINARY=/tmp/siwa PEER_BINARY=/tmp/peer Benchmarks/load/peers.sh
#   BASELINE_BINARY=/tmp/siwa-before SIWA_BINARY=/tmp/siwa Benchmarks/load/peers.sh
set -euo pipefail
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-3}
USERS=${USERS:-200}
DISTINCT=${DISTINCT:-20000}
DATABASES=${DATABASES:-sqlite}
ROUTES=$(echo ${ROUTES:-sign-in me refresh}) # one space between names (the checks below match " name ")
for group in $ROUTES; do
  case "$group" in sign-in | me | refresh) ;; *) echo "ROUTES names sign-in, me and refresh" >&2; exit 2 ;; esac
done
SERVER_PORT=${SERVER_PORT:-18080}
PG_SERVER_PORT=${PG_SERVER_PORT:-18083}
PEER_PORT=${PEER_PORT:-18081}
PEER_WAL_PORT=${PEER_WAL_PORT:-18082}
BASELINE_PORT=${BASELINE_PORT:-18084}
BASELINE_PG_PORT=${BASELINE_PG_PORT:-18085}
EMULATOR_PORT=${EMULATOR_PORT:-19090}
BUNDLE=com.example.siwa.demo

if [[ " $DATABASES " == *" postgres "* ]] && [ -z "${SIWA_TEST_POSTGRES_URL:-}" ]; then
  exec "$(dirname "$0")/../../scripts/with-postgres" "$0" "$@"
fi
source "$(dirname "$0")/common.sh"
need wrk
need python3
dpkg -s libsqlite3-dev >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y libsqlite3-dev >/dev/null; }

if [ -n "${PEER_BINARY:-}" ]; then
  PEER="$PEER_BINARY"
else
  (cd Benchmarks/peer-vapor && swift build -c release >/dev/null)
  PEER="$ROOT/Benchmarks/peer-vapor/.build/release/VaporTutorialPeer"
fi
if [ -n "${FLOOR_BINARY:-}" ]; then
  FLOOR="$FLOOR_BINARY"
else
  (cd Benchmarks/floor && swift build -c release >/dev/null)
  FLOOR="$ROOT/Benchmarks/floor/.build/release/siwa-floor"
fi

start_emulator "$EMULATOR_PORT" --server-url "http://127.0.0.1:$SERVER_PORT"

declare -A PID_OF PORT_OF
start_siwa() { # name database port [binary] [PostgreSQL URL]
  server_environment "$2" "$3" "$WORK/$1.sqlite"
  [ -n "${5:-}" ] && SERVER_ENV+=(SIWA_DATABASE_URL="$5") # the later assignment wins in env
  (cd "$WORK" && exec env "${SERVER_ENV[@]}" SIWA_COMPAT=vapor "${4:-$SIWA}" serve >"$WORK/$1.log" 2>&1) &
  PIDS+=($!)
  PID_OF[$1]=$!
  PORT_OF[$1]=$3
  wait_for "http://127.0.0.1:$3/healthz"
}
start_peer() { # name port wal
  (cd "$WORK" && exec env PEER_PORT="$2" PEER_DATABASE="$WORK/$1.sqlite" PEER_SQLITE_WAL="$3" PEER_BUNDLE_ID=$BUNDLE \
    PEER_APPLE_KEYS_URL="http://127.0.0.1:$EMULATOR_PORT/auth/keys" "$PEER" serve --env production \
    >"$WORK/$1.log" 2>&1) &
  PIDS+=($!)
  PID_OF[$1]=$!
  PORT_OF[$1]=$2
  for _ in $(seq 1 300); do
    curl -s -o /dev/null "http://127.0.0.1:$2/api/users/me" && return 0
    sleep 0.1
  done
  echo "the peer $1 did not start: $(tail -5 "$WORK/$1.log")" >&2
  exit 1
}

start_siwa siwa sqlite "$SERVER_PORT"
SIWAS=(siwa)
if [ -n "${BASELINE_BINARY:-}" ]; then
  start_siwa siwa-baseline sqlite "$BASELINE_PORT" "$BASELINE_BINARY"
  SIWAS+=(siwa-baseline)
fi
PG_SIWAS=()
if [[ " $DATABASES " == *" postgres "* ]]; then
  start_siwa siwa-pg postgres "$PG_SERVER_PORT"
  PG_SIWAS+=(siwa-pg)
  if [ -n "${BASELINE_BINARY:-}" ]; then
    psql -q "$SIWA_TEST_POSTGRES_URL" -c "DROP DATABASE IF EXISTS siwa_baseline" -c "CREATE DATABASE siwa_baseline"
    start_siwa siwa-baseline-pg postgres "$BASELINE_PG_PORT" "$BASELINE_BINARY" \
      "$(database_url siwa_baseline)"
    PG_SIWAS+=(siwa-baseline-pg)
  fi
  SIWAS+=("${PG_SIWAS[@]}")
fi
start_peer peer "$PEER_PORT" 0
start_peer peer-wal "$PEER_WAL_PORT" 1

# Genuine identity tokens of USERS users (valid for an hour); each user signs in once everywhere first, so that every
# measured sign-in is a returning user's.
python3 Benchmarks/load/tokens.py "$EMULATOR_PORT" "$USERS" peer $BUNDLE >"$WORK/identity-tokens"
for name in "${SIWAS[@]}"; do
  python3 Benchmarks/load/sign_in_all.py "${PORT_OF[$name]}" /auth/apple/native identityToken accessToken \
    "$WORK/identity-tokens" >"$WORK/$name-access"
  head -1 "$WORK/$name-access" >"$WORK/$name-access-one"
  python3 Benchmarks/load/sign_in_all.py "${PORT_OF[$name]}" /api/auth/siwa appleIdentityToken accessToken \
    "$WORK/identity-tokens" >"$WORK/$name-contract"
done
# The SQLite builds (siwa, and the baseline when there is one) run the same routes, so that their databases grow
# alike: a build whose file has more rows pays for it in every write and would look slower than it is.
SQLITE_SIWAS=(siwa)
[ -n "${BASELINE_BINARY:-}" ] && SQLITE_SIWAS+=(siwa-baseline)
for name in "${SQLITE_SIWAS[@]}"; do
  [[ " $ROUTES " == *" me "* ]] || break # DISTINCT tokens for /api/me only
  python3 Benchmarks/load/sign_in_all.py "${PORT_OF[$name]}" /auth/apple/native identityToken accessToken \
    "$WORK/identity-tokens" $((DISTINCT / USERS)) >"$WORK/$name-access-many"
done
for name in peer peer-wal; do
  python3 Benchmarks/load/sign_in_all.py "${PORT_OF[$name]}" /api/auth/siwa appleIdentityToken accessToken \
    "$WORK/identity-tokens" >"$WORK/$name-bearer"
done

RESULTS="$WORK/results"
: >"$RESULTS"
run() { # label target path mode tokens-file
  local label=$1 target=$2 path=$3 mode=$4 tokens=$5 script=Benchmarks/load/cycle.lua
  [ "${label%%:*}" = healthz ] || [[ " $ROUTES " == *" ${label%%:*} "* ]] || return 0
  [ "$mode" = refresh ] && script=Benchmarks/load/refresh.lua
  [ "$mode" = none ] && script=""
  local measured
  measured=$(PEER_TOKENS="$tokens" PEER_MODE="$mode" SIWA_REFRESH_TOKENS="$tokens" SIWA_WRK_THREADS="$THREADS" \
    wrk_measure "${PID_OF[$target]}" "http://127.0.0.1:${PORT_OF[$target]}$path" "$script")
  echo "$label $measured" | tee -a "$RESULTS"
}

echo "label req/s cpu-us-per-request p99-ms non-2xx"
for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round of $ROUNDS"
  # With a baseline, it goes first every other round: a machine that slows down or speeds up during a run then
  # favours neither build.
  ORDER=("${SQLITE_SIWAS[@]}")
  [ "${#ORDER[@]}" -eq 2 ] && [ $((round % 2)) -eq 0 ] && ORDER=("${ORDER[1]}" "${ORDER[0]}")
  PG_ORDER=("${PG_SIWAS[@]}")
  [ "${#PG_ORDER[@]}" -eq 2 ] && [ $((round % 2)) -eq 0 ] && PG_ORDER=("${PG_ORDER[1]}" "${PG_ORDER[0]}")
  ROUND_SIWAS=("${ORDER[@]}" "${PG_ORDER[@]}") # then PostgreSQL, when it runs
  run "healthz:siwa" siwa /healthz none ""
  for name in "${ROUND_SIWAS[@]}"; do
    run "sign-in:$name-native" "$name" /auth/apple/native native "$WORK/identity-tokens"
  done
  for name in "${ORDER[@]}"; do
    run "sign-in:$name-contract" "$name" /api/auth/siwa vapor "$WORK/identity-tokens"
  done
  run "sign-in:peer" peer /api/auth/siwa vapor "$WORK/identity-tokens"
  run "sign-in:peer-wal" peer-wal /api/auth/siwa vapor "$WORK/identity-tokens"
  for name in "${ORDER[@]}"; do
    run "me:$name-api-me-one-token" "$name" /api/me bearer "$WORK/$name-access-one"
    run "me:$name-api-me-distinct" "$name" /api/me bearer "$WORK/$name-access-many"
    run "me:$name-contract" "$name" /api/users/me bearer "$WORK/$name-contract"
  done
  run "me:peer" peer /api/users/me bearer "$WORK/peer-bearer"
  run "me:peer-wal" peer-wal /api/users/me bearer "$WORK/peer-wal-bearer"
  for name in "${ROUND_SIWAS[@]}"; do
    [[ " $ROUTES " == *" refresh "* ]] || break
    # Fresh sessions each round (refresh tokens rotate: a token from an earlier round would be reuse).
    python3 Benchmarks/load/sign_in_all.py "${PORT_OF[$name]}" /auth/apple/native identityToken refreshToken \
      "$WORK/identity-tokens" $((CONNECTIONS * 8 / USERS + 1)) >"$WORK/$name-refresh-$round"
    run "refresh:$name" "$name" /auth/refresh refresh "$WORK/$name-refresh-$round"
  done
  # The floor in every round too, so that it meets the machine the routes met: the report takes its medians.
  echo "== floor (one core), round $round"
  taskset -c 0 "$FLOOR" "$WORK/floor" | tee -a "$WORK/floor.json"
done

python3 Benchmarks/load/peers_report.py "$RESULTS" "$WORK/floor.json" "$(nproc) cores, $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"

#!/usr/bin/env bash
# Where siwa's CPU goes under one route's load (issue 21): starts the Apple ID emulator and siwa (SQLite, or
# PostgreSQL with DATABASE=postgres), signs USERS returning users in once, then samples siwa with `perf record -g` (the
# kernel's cpu-clock: it needs no hardware counters) while wrk runs the route for DURATION seconds, and prints the
# symbols with the most samples of their own and the shares of a few groups (SQLite, thread switches, reference
# counting, allocation, crypto). siwa runs with the Vapor tutorial's routes too (SIWA_COMPAT=vapor), as in peers.sh.
# Loopback only; bounded by DURATION.
#
#   ROUTE=sign-in Benchmarks/load/profile.sh          # or ROUTE=contract (the Vapor tutorial's), refresh, me
#   SIWA_BINARY=/tmp/siwa DURATION=10 Benchmarks/load/profile.sh
#   DATABASE=postgres Benchmarks/load/profile.sh      # siwa on PostgreSQL (a private one, as peers.sh starts it)
set -euo pipefail
ROUTE=${ROUTE:-sign-in}
DATABASE=${DATABASE:-sqlite}
case "$DATABASE" in sqlite | postgres) ;; *) echo "DATABASE is sqlite or postgres" >&2; exit 2 ;; esac
if [ "$DATABASE" = postgres ] && [ -z "${SIWA_TEST_POSTGRES_URL:-}" ]; then
  exec "$(dirname "$0")/../../scripts/with-postgres" "$0" "$@"
fi
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-64}
USERS=${USERS:-200}
SERVER_PORT=${SERVER_PORT:-18180}
EMULATOR_PORT=${EMULATOR_PORT:-19190}
BUNDLE=com.example.siwa.demo
source "$(dirname "$0")/common.sh"
need wrk
command -v perf >/dev/null || { apt-get update >/dev/null && apt-get install -y linux-perf >/dev/null; }

start_emulator "$EMULATOR_PORT" --server-url "http://127.0.0.1:$SERVER_PORT"
server_environment "$DATABASE" "$SERVER_PORT" "$WORK/siwa.sqlite"
(cd "$WORK" && exec env "${SERVER_ENV[@]}" SIWA_COMPAT=vapor "$SIWA" serve >"$WORK/siwa.log" 2>&1) &
SERVER=$!
PIDS+=($SERVER)
wait_for "http://127.0.0.1:$SERVER_PORT/healthz"

python3 Benchmarks/load/tokens.py "$EMULATOR_PORT" "$USERS" profile $BUNDLE >"$WORK/identity-tokens"
python3 Benchmarks/load/sign_in_all.py "$SERVER_PORT" /auth/apple/native identityToken accessToken \
  "$WORK/identity-tokens" >"$WORK/access"
case "$ROUTE" in
  sign-in) path=/auth/apple/native mode=native tokens="$WORK/identity-tokens" script=Benchmarks/load/cycle.lua ;;
  contract) path=/api/auth/siwa mode=vapor tokens="$WORK/identity-tokens" script=Benchmarks/load/cycle.lua ;;
  refresh)
    python3 Benchmarks/load/sign_in_all.py "$SERVER_PORT" /auth/apple/native identityToken refreshToken \
      "$WORK/identity-tokens" $((CONNECTIONS * 8 / USERS + 1)) >"$WORK/refresh"
    path=/auth/refresh mode=refresh tokens="$WORK/refresh" script=Benchmarks/load/refresh.lua ;;
  me) path=/api/me mode=bearer tokens="$WORK/access" script=Benchmarks/load/cycle.lua ;;
  *) echo "ROUTE is sign-in, contract, refresh or me" >&2; exit 2 ;;
esac

perf record -F 1999 -g -e cpu-clock -p "$SERVER" -o "$WORK/perf.data" -- sleep "$DURATION" >/dev/null 2>&1 &
RECORD=$!
PEER_TOKENS="$tokens" PEER_MODE="$mode" SIWA_REFRESH_TOKENS="$tokens" SIWA_WRK_THREADS=2 \
  wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" -s "$script" "http://127.0.0.1:$SERVER_PORT$path" | grep -E "Requests/sec|Non-2xx" || true
wait "$RECORD"

perf report -i "$WORK/perf.data" --no-children --sort symbol --stdio --percent-limit 0.7 2>/dev/null \
  | grep -E "^ +[0-9]" | head -40
echo "== groups (share of all samples, self time)"
perf report -i "$WORK/perf.data" --no-children --sort dso,symbol --stdio 2>/dev/null | grep -E "^ +[0-9]" | awk '
  { share = $1 + 0; symbol = ""; for (i = 4; i <= NF; i++) symbol = symbol " " $i; dso = $2
    group = "other"
    if (symbol ~ /sqlite/) group = "SQLite"
    else if (dso ~ /kernel/) group = "kernel (syscalls, thread switches, I/O)"
    else if (symbol ~ /swift_(retain|release|bridgeObject|unknownObject)|swift_getGenericMetadata|swift_conformsTo|swift_dynamicCast|getCache/) group = "reference counting, generic metadata, casts"
    else if (symbol ~ /malloc|free|_int_|cfree|swift_allocObject|swift_deallocObject|swift_slowAlloc|swift_slowDealloc/) group = "allocation"
    else if (symbol ~ /bn_|BN_|rsa|RSA|ecp_|p256|sha256|SHA256|CRYPTO/) group = "crypto (BoringSSL)"
    else if (symbol ~ /swift_task|swift_job|swift_continuation|Concurrency|swift::/) group = "concurrency runtime"
    total[group] += share }
  END { for (g in total) printf "%6.1f%%  %s\n", total[g], g }' | sort -rn

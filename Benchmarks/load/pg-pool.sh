#!/usr/bin/env bash
# How many PostgreSQL connections a siwa process needs (SIWA_DATABASE_MAX_CONNECTIONS): starts the Apple ID emulator,
# a private PostgreSQL (scripts/with-postgres) and one siwa per pool size in POOLS, all on the same database (as
# instances of one deployment are), signs USERS returning users in once on each, then runs wrk against each in turn,
# ROUTE (sign-in or refresh), for ROUNDS rounds with the order rotating, and prints per pool size the medians and
# ranges of requests/s, siwa's CPU per request and PostgreSQL's (utime + stime from /proc: siwa's process, and the
# server's postmaster with its children, so that a pool that moved work into the database would show it; a child that
# exits during a run, such as an autovacuum worker, takes its share with it) and p99. ROUNDS a multiple of the number
# of POOLS gives each size each place in the order equally often. The private server (scripts/with-postgres) runs with
# fsync and synchronous_commit off. Loopback only; every run is bounded (DURATION seconds, CONNECTIONS connections).
#
#   Benchmarks/load/pg-pool.sh
#   POOLS="8 16" ROUTE=refresh SIWA_BINARY=/tmp/siwa DURATION=8 ROUNDS=4 Benchmarks/load/pg-pool.sh
set -euo pipefail
if [ -z "${SIWA_TEST_POSTGRES_URL:-}" ]; then
  exec "$(dirname "$0")/../../scripts/with-postgres" "$0" "$@"
fi
POOLS=${POOLS:-8 16 32 64}
ROUTE=${ROUTE:-sign-in}
DURATION=${DURATION:-8}
ROUNDS=${ROUNDS:-4}
CONNECTIONS=${CONNECTIONS:-64}
USERS=${USERS:-200}
EMULATOR_PORT=${EMULATOR_PORT:-19290}
FIRST_PORT=${FIRST_PORT:-18280}
BUNDLE=com.example.siwa.demo
source "$(dirname "$0")/common.sh"
need wrk
case "$ROUTE" in sign-in | refresh) ;; *) echo "ROUTE is sign-in or refresh" >&2; exit 2 ;; esac
if [ "$(printf '%s\n' $POOLS | sort | uniq -d)" != "" ]; then echo "POOLS names each size once" >&2; exit 2; fi

start_emulator "$EMULATOR_PORT" --server-url "http://127.0.0.1:$FIRST_PORT"
declare -A PID_OF PORT_OF
port=$FIRST_PORT
for pool in $POOLS; do
  server_environment postgres "$port" "$WORK/unused.sqlite"
  (cd "$WORK" && exec env "${SERVER_ENV[@]}" SIWA_DATABASE_MAX_CONNECTIONS="$pool" "$SIWA" serve \
    >"$WORK/siwa-$pool.log" 2>&1) &
  PIDS+=($!)
  PID_OF[$pool]=$!
  PORT_OF[$pool]=$port
  wait_for "http://127.0.0.1:$port/healthz"
  port=$((port + 1))
done

python3 Benchmarks/load/tokens.py "$EMULATOR_PORT" "$USERS" pgpool $BUNDLE >"$WORK/identity-tokens"
for pool in $POOLS; do
  python3 Benchmarks/load/sign_in_all.py "${PORT_OF[$pool]}" /auth/apple/native identityToken accessToken \
    "$WORK/identity-tokens" >/dev/null
done

# The server of SIWA_TEST_POSTGRES_URL: the postmaster listening on its port (none when it runs elsewhere).
PG_PORT=$(sed -E 's|.*@[^:/]+:([0-9]+)/.*|\1|' <<<"$SIWA_TEST_POSTGRES_URL")
POSTMASTER=$(pgrep -o -f -- "-p $PG_PORT( |\$)" || true)
[ -n "$POSTMASTER" ] || echo "PostgreSQL's CPU is not read: no process on this machine listens on port $PG_PORT" >&2
postgres_ticks() {
  [ -n "$POSTMASTER" ] || { echo 0; return; }
  for pid in $POSTMASTER $(pgrep -P "$POSTMASTER" || true); do
    awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || true # a child may exit meanwhile
  done | awk '{ s += $1 } END { print s + 0 }'
}
RESULTS="$WORK/results"
: >"$RESULTS"
echo "pool req/s cpu-us-per-request p99-ms non-2xx postgres-cpu-us-per-request"
read -r -a ORDER <<<"$POOLS"
for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round of $ROUNDS"
  for pool in "${ORDER[@]}"; do
    if [ "$ROUTE" = refresh ]; then
      # Fresh sessions each round: a refresh token from an earlier round would be reuse.
      python3 Benchmarks/load/sign_in_all.py "${PORT_OF[$pool]}" /auth/apple/native identityToken refreshToken \
        "$WORK/identity-tokens" $((CONNECTIONS * 8 / USERS + 1)) >"$WORK/refresh-$pool-$round"
      path=/auth/refresh mode=refresh tokens="$WORK/refresh-$pool-$round" script=Benchmarks/load/refresh.lua
    else
      path=/auth/apple/native mode=native tokens="$WORK/identity-tokens" script=Benchmarks/load/cycle.lua
    fi
    measured=$(PEER_TOKENS="$tokens" PEER_MODE="$mode" SIWA_REFRESH_TOKENS="$tokens" SIWA_WRK_THREADS=2 \
      wrk_measure "${PID_OF[$pool]}" "http://127.0.0.1:${PORT_OF[$pool]}$path" "$script" postgres_ticks)
    echo "$pool $measured" | tee -a "$RESULTS"
  done
  ORDER=("${ORDER[@]:1}" "${ORDER[0]}") # each pool size takes each place in turn
done

python3 - "$RESULTS" "$ROUTE" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    pool, rps, cpu, p99, errors, postgres = line.split()
    runs.setdefault(int(pool), []).append((float(rps), float(cpu), float(p99), float(postgres), int(errors)))
print(f"\n{sys.argv[2]} on PostgreSQL by pool size (medians, ranges):\n")
print("| connections | req/s | siwa CPU µs/request | PostgreSQL CPU µs/request | p99 ms | non-2xx |")
print("|---|---|---|---|---|---|")
for pool in sorted(runs):
    cols = []
    for index, digits in [(0, 0), (1, 0), (3, 0), (2, 1)]:
        values = [run[index] for run in runs[pool]]
        cols.append(f"{statistics.median(values):,.{digits}f} ({min(values):,.{digits}f}–{max(values):,.{digits}f})")
    print(f"| {pool} | {' | '.join(cols)} | {sum(run[4] for run in runs[pool])} |")
EOF

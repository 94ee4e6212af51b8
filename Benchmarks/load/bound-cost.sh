#!/usr/bin/env bash
# What the bound on the sessions one identity token may open costs a PostgreSQL sign-in, as production signs in:
# every sign-in with a fresh identity token (peers.sh cycles a few hundred tokens, which are replays past the first
# use). Two builds, SIWA_BINARY and BASELINE_BINARY, each on a database of its own in one PostgreSQL server, with the
# bound at BOUND (default 3, siwa's default; 0 turns it off) and the rate limit on but too high to refuse. Mints
# USERS users' tokens, signs each user in once on both, then alternates the builds ROUNDS times (each first every
# other round): wrk with once.lua for DURATION seconds, each token used once (PER_RUN tokens a run: more than a run
# signs in, or once.lua says the run replayed). Reports per run and as medians: sign-ins a second, siwa's CPU and
# PostgreSQL's (the postmaster and its children) per sign-in, p99. Loopback only; bounded in time and count.
#
#   SIWA_BINARY=/tmp/siwa-new BASELINE_BINARY=/tmp/siwa-old Benchmarks/load/bound-cost.sh
#   BOUND=0 DURATION=5 ROUNDS=4 SIWA_BINARY=… BASELINE_BINARY=… Benchmarks/load/bound-cost.sh
set -euo pipefail
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-4}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
USERS=${USERS:-200}
PER_RUN=${PER_RUN:-30000}
BOUND=${BOUND:-3}
EMULATOR_PORT=${EMULATOR_PORT:-19290}
PORT=${PORT:-18280}
BASELINE_PORT=${BASELINE_PORT:-18281}
BUNDLE=com.example.siwa.demo
[ -n "${BASELINE_BINARY:-}" ] || { echo "BASELINE_BINARY names the build to compare with" >&2; exit 2; }
if [ -z "${SIWA_TEST_POSTGRES_URL:-}" ]; then
  exec "$(dirname "$0")/../../scripts/with-postgres" "$0" "$@"
fi
source "$(dirname "$0")/common.sh"
need wrk
need python3
HZ=$(getconf CLK_TCK)

PG_PORT=$(sed -E 's|.*@[^:/]+:([0-9]+)/.*|\1|' <<<"$SIWA_TEST_POSTGRES_URL")
POSTMASTER=$(pgrep -o -f -- "-p $PG_PORT( |\$)")

start_emulator "$EMULATOR_PORT"
declare -A PID_OF PORT_OF
start_siwa() { # name port binary
  psql -q "$SIWA_TEST_POSTGRES_URL" -c "DROP DATABASE IF EXISTS bound_$1" -c "CREATE DATABASE bound_$1"
  server_environment postgres "$2" "$WORK/$1.sqlite"
  SERVER_ENV+=(SIWA_DATABASE_URL="$(database_url "bound_$1")" SIWA_MAX_SESSIONS_PER_IDENTITY_TOKEN="$BOUND"
    SIWA_RATE_LIMIT=1000000)
  (cd "$WORK" && exec env "${SERVER_ENV[@]}" "$3" serve >"$WORK/$1.log" 2>&1) &
  PIDS+=($!)
  PID_OF[$1]=$!
  PORT_OF[$1]=$2
  wait_for "http://127.0.0.1:$2/healthz"
}
start_siwa new "$PORT" "$SIWA"
start_siwa baseline "$BASELINE_PORT" "$BASELINE_BINARY"

# One token per user to make them returning users on both, then the fresh ones, a file per measured run.
python3 Benchmarks/load/tokens.py "$EMULATOR_PORT" "$USERS" bound $BUNDLE >"$WORK/first-tokens"
for name in new baseline; do
  python3 Benchmarks/load/sign_in_all.py "${PORT_OF[$name]}" /auth/apple/native identityToken accessToken \
    "$WORK/first-tokens" >/dev/null
done
runs=$((ROUNDS * 2))
echo "== minting $((runs * PER_RUN)) identity tokens" >&2
python3 Benchmarks/load/tokens.py "$EMULATOR_PORT" "$USERS" bound $BUNDLE $(((runs * PER_RUN + USERS - 1) / USERS)) |
  split -l "$PER_RUN" -d -a 3 - "$WORK/fresh-"

RESULTS="$WORK/results"
: >"$RESULTS"
echo "round build sign-ins/s siwa-us pg-us p99-ms non-2xx"
run=0
for round in $(seq 1 "$ROUNDS"); do
  ORDER=(new baseline)
  [ $((round % 2)) -eq 0 ] && ORDER=(baseline new)
  for name in "${ORDER[@]}"; do
    tokens=$(printf '%s/fresh-%03d' "$WORK" "$run")
    run=$((run + 1))
    s0=$(ticks "${PID_OF[$name]}") p0=$(group_ticks "$POSTMASTER")
    out=$(PEER_TOKENS="$tokens" SIWA_WRK_THREADS="$THREADS" wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" \
      --latency -s Benchmarks/load/once.lua "http://127.0.0.1:${PORT_OF[$name]}/auth/apple/native" 2>&1)
    s1=$(ticks "${PID_OF[$name]}") p1=$(group_ticks "$POSTMASTER")
    if grep -q "once.lua:" <<<"$out"; then echo "$out" >&2; echo "PER_RUN=$PER_RUN is too few tokens" >&2; exit 1; fi
    echo "$out" | awk -v r="$round" -v b="$name" -v s=$((s1 - s0)) -v p=$((p1 - p0)) -v hz="$HZ" '
      / requests in / { n = $1 }
      /Requests\/sec/ { rps = $2 }
      $1 == "99%" { p99 = $2; if (p99 ~ /us$/) p99 = p99 / 1000; else if (p99 ~ /ms$/) p99 = p99 + 0; else p99 = p99 * 1000 }
      /Non-2xx/ { errors = $5 }
      END { printf "%d %s %.0f %.1f %.1f %.2f %d\n", r, b, rps, s * 1e6 / hz / n, p * 1e6 / hz / n, p99, errors + 0 }' |
      tee -a "$RESULTS"
  done
done

echo
echo "medians over $ROUNDS rounds (bound $BOUND; $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)):"
python3 - "$RESULTS" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
for build in ("new", "baseline"):
    mine = [r for r in rows if r[1] == build]
    med = lambda i: statistics.median(float(r[i]) for r in mine)
    print(f"{build:9} {med(2):8.0f} sign-ins/s  siwa {med(3):6.1f} us  PostgreSQL {med(4):6.1f} us  "
          f"both {med(3) + med(4):6.1f} us  p99 {med(5):.2f} ms")
new = [r for r in rows if r[1] == "new"]; old = [r for r in rows if r[1] == "baseline"]
both = lambda rs: statistics.median(float(r[3]) + float(r[4]) for r in rs)
print(f"new / baseline, siwa + PostgreSQL CPU per sign-in: {both(new) / both(old):.3f}")
PY

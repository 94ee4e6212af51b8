# Shared by the load scripts in this folder; each sources it after setting its own defaults:
#
#   source "$(dirname "$0")/common.sh"
#
# It moves to the repository's root and sets ROOT; SIWA, the siwa binary to run ($SIWA_BINARY, e.g. a release build
# copied aside while other builds go on, or else a fresh release build); WORK, a temporary folder removed at exit
# (kept when KEEP_WORK is set); PIDS, processes stopped at exit (with KILL_SIGNAL, TERM by default); FAILED and
# check (PASS/FAIL lines); wait_for; need (installs a missing tool from apt); start_emulator; server_environment;
# wrk_measure; ticks and group_ticks (CPU ticks of processes); database_url.
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT=$(pwd)

need() { command -v "$1" >/dev/null || { apt-get update >/dev/null && apt-get install -y "$1" >/dev/null; }; }

if [ -n "${SIWA_BINARY:-}" ]; then
  SIWA="$SIWA_BINARY"
else
  swift build -c release --product siwa >/dev/null
  SIWA="$ROOT/.build/release/siwa"
fi

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]:-}"; do kill "-${KILL_SIGNAL:-TERM}" "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

FAILED=0
check() { if [ "$2" = true ]; then echo "PASS  $1"; else echo "FAIL  $1"; FAILED=1; fi; }

# Waits up to 30 s for a URL to answer 2xx.
wait_for() { for _ in $(seq 1 300); do curl -sf "$1" >/dev/null && return 0; sleep 0.1; done; echo "not up: $1" >&2; return 1; }

# Starts the Apple ID emulator on PORT (extra arguments passed on) in WORK, where it keeps its keys.
start_emulator() {
  local port=$1
  shift
  (cd "$WORK" && exec "$SIWA" emulator --port "$port" "$@" >"$WORK/emulator.log" 2>&1) &
  PIDS+=($!)
  wait_for "http://127.0.0.1:$port/auth/keys"
}

# Sets SERVER_ENV: the settings of a siwa serve on PORT against the emulator on EMULATOR_PORT, with the SQLite file
# DATABASE_FILE, or PostgreSQL (SIWA_TEST_POSTGRES_URL) when DATABASE is postgres. Rate limits off (but see LIMITS); the load comes
# from one address and replays a few identity tokens, so the per-address connection cap and the bound on sessions per
# identity token are lifted too. The metrics listener gets PORT + 2000: it counts as a deployment's does, and several
# servers of one run each need a port of their own. With LIMITS=on, the rate limit and the bound on sessions per
# identity token stay on, set so high that they refuse nothing: what counting them costs (on PostgreSQL, shared with
# every instance of the database); LIMITS=rate keeps the rate limit alone on.
server_environment() {
  local database=$1 port=$2 database_file=$3 rate=0 sessions=0
  if [ "${LIMITS:-off}" = on ]; then rate=1000000 sessions=1000000; fi
  if [ "${LIMITS:-off}" = rate ]; then rate=1000000; fi # the rate limit alone
  SERVER_ENV=(SIWA_APPLE_BASE_URL="http://127.0.0.1:$EMULATOR_PORT" SIWA_TEAM_ID=DEMOTEAM01 SIWA_KEY_ID=DEMOKEY001
    SIWA_PRIVATE_KEY_FILE="$WORK/siwa-emulator/AuthKey_DEMOKEY001.p8" SIWA_BUNDLE_IDS=com.example.siwa.demo
    SIWA_SERVICES_ID=com.example.siwa.demo.web SIWA_PORT="$port" SIWA_METRICS_PORT=$((port + 2000)) SIWA_RATE_LIMIT=$rate
    SIWA_MAX_CONNECTIONS_PER_ADDRESS=100000 SIWA_MAX_SESSIONS_PER_IDENTITY_TOKEN=$sessions
    SIWA_DATA_KEY_FILE="$WORK/data.key" SIWA_DATABASE_PATH="$database_file")
  if [ "$database" = postgres ]; then SERVER_ENV+=(SIWA_DATABASE_URL="$SIWA_TEST_POSTGRES_URL"); fi
}

# Runs wrk (THREADS threads, CONNECTIONS connections, DURATION seconds, the Lua SCRIPT when given, which reads its
# settings from the caller's environment) against URL and prints "req/s cpu-us-per-request p99-ms non-2xx" for process
# PID: its utime + stime from /proc over the run, divided by the requests wrk completed. With TICKS, the name of a
# command that prints a CPU tick count (e.g. a database's processes), its ticks per request follow as a fifth column.
wrk_measure() { # PID URL [SCRIPT] [TICKS]
  local pid=$1 url=$2 script=${3:-} other=${4:-} before after other_before=0 other_after=0 out
  before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  [ -z "$other" ] || other_before=$("$other")
  out=$(wrk -t"${THREADS:-2}" -c"$CONNECTIONS" -d"${DURATION}s" --latency ${script:+-s "$script"} "$url") || return 1
  after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  [ -z "$other" ] || other_after=$("$other")
  echo "$out" | awk -v ticks=$((after - before)) -v other=$((other_after - other_before)) -v extra="$other" \
    -v hz="$(getconf CLK_TCK)" '
    / requests in / { requests = $1 }
    /Requests\/sec/ { rps = $2 }
    $1 == "99%" { p99 = $2; if (p99 ~ /us$/) p99 = p99 / 1000; else if (p99 ~ /ms$/) p99 = p99 + 0; else p99 = p99 * 1000 }
    /Non-2xx/ { errors = $5 }
    END {
      printf "%s %.1f %.2f %d", rps, requests ? ticks * 1e6 / hz / requests : 0, p99, errors + 0
      if (extra != "") printf " %.1f", requests ? other * 1e6 / hz / requests : 0
      printf "\n"
    }'
}

ticks() { # PID...: utime + stime of each, added up (a process that exits meanwhile counts nothing)
  for pid in "$@"; do awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || true; done |
    awk '{ s += $1 } END { print s + 0 }'
}
# PID with its children: theirs while they run, and once they exit, the parent's cutime + cstime, which holds the time
# of the children it has waited for (PostgreSQL's backends and autovacuum workers, nginx's workers).
group_ticks() {
  [ -n "$1" ] || { echo 0; return; }
  { awk '{print $16 + $17}' "/proc/$1/stat"; ticks "$1" $(pgrep -P "$1" || true); } | awk '{ s += $1 } END { print s + 0 }'
}

# SIWA_TEST_POSTGRES_URL with the database NAME in place of its own (the same server, user and options).
database_url() { # NAME
  python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/" + sys.argv[2])))' \
    "$SIWA_TEST_POSTGRES_URL" "$1"
}

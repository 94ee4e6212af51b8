#!/usr/bin/env bash
# The figures of the sizing guide (docs/sizing.md): CPU per operation of siwa's process, of PostgreSQL's (the private
# server's postmaster with its children) and of nginx's (master and workers), and siwa's memory with its user cache
# full. Starts the Apple ID emulator (with a team whose Services ID accepts the three callbacks below), a private
# PostgreSQL (scripts/with-postgres) and three siwa serve instances on one database, reached three ways:
#
#   http   plain http straight to siwa
#   tls    siwa's own TLS (SIWA_TLS_CERTIFICATE_FILE, a throwaway self-signed P-256 certificate made here)
#   proxy  Debian's nginx terminating TLS with docs/deployment/nginx-tls.conf and proxying to siwa over http with
#          docs/deployment/nginx-proxy.conf (keepalive 16), run with its own configuration in the work folder
#
# and measures on each, in every round (the modes' order rotating):
#
#   sign-in     POST /auth/apple/native, returning users: genuine identity tokens of USERS users cycled (wrk)
#   sign-in+code the same with an authorization code, which siwa exchanges at the emulator (Apple) and whose refresh
#               token it keeps sealed: CODES sign-ins, each code used once (native_with_code.py, WEB_THREADS threads;
#               the codes are minted first, while siwa idles)
#   refresh     POST /auth/refresh with fresh refresh tokens, each presented once (wrk, refresh.lua)
#   me          GET /api/me with the access tokens of USERS users cycled: verified once, then from the cache (wrk);
#               access tokens name the public URL of the instance that issued them, so each way in mints its own
#   me-uncached GET /api/me with DISTINCT access tokens cycled, more than the verified-token cache holds (10,000), so
#               that every request verifies its token's signature (wrk; DISTINCT=0 leaves it out)
#   web         WEB browser sign-ins of returning users (web_sign_in.py, WEB_THREADS threads): GET
#               /auth/apple/authorize, the emulator's authorize page and its form (action=continue), then the
#               emulator's form_post fields POSTed to siwa's callback with the flow cookie; siwa verifies the identity
#               token and exchanges the code with the emulator
#
# CPU per operation is the process group's utime + stime from /proc over the run divided by the operations completed
# (children that exit during a run are counted from their parent's cutime + cstime). The emulator, wrk and the Python drivers run
# on the same machine and are not counted: they stand for Apple and the clients. Connections are kept alive (wrk's
# CONNECTIONS, one per driver thread for the web), so a TLS handshake's cost is spread over many requests, as a
# client that keeps its connection does.
#
# Memory: a fourth instance, with SIWA_USER_CACHE_SIZE=USERS_CACHE (default 50,000, siwa's default), gives its resident
# memory (VmRSS) idle after start and after USERS_CACHE new users signed in and read GET /api/me once each
# (fill_cache.py), which fills its user cache (and its cache of verified access tokens, 10,000); the three measured
# instances' VmRSS and peak (VmHWM) after the load are printed too.
#
# Access tokens live an hour here (SIWA_ACCESS_TOKEN_LIFETIME=3600; 900 s by default) so that the tokens minted at
# the start outlive the run; verifying one costs the same. The limits a deployment has on by default stay on, counted
# in PostgreSQL for every instance as they are in production, but set so high that they refuse nothing (common.sh's
# LIMITS=on: the rate limit and the bound on sessions per identity token; the web flows per client too); LIMITS=off
# turns the first two off, as the other load scripts do.
# Loopback only; every run is bounded (DURATION seconds, CONNECTIONS connections, CODES and WEB sign-ins, USERS_CACHE
# users): about ten minutes with the defaults on a 2-core machine, three of them filling the cache. Prints the command,
# the machine, one table of medians and ranges over ROUNDS, and the memory table. No PASS or FAIL: it measures.
#
#   Benchmarks/load/sizing.sh
#   SIWA_BINARY=/tmp/siwa DURATION=8 ROUNDS=2 Benchmarks/load/sizing.sh
#   MODES=http USERS_CACHE=5000 DISTINCT=0 SIWA_BINARY=/tmp/siwa DURATION=3 ROUNDS=1 Benchmarks/load/sizing.sh  # quick
set -euo pipefail
if [ -z "${SIWA_TEST_POSTGRES_URL:-}" ]; then
  exec "$(dirname "$0")/../../scripts/with-postgres" "$0" "$@"
fi
SETTINGS='SIWA_BINARY|DURATION|ROUNDS|CONNECTIONS|THREADS|USERS|USERS_CACHE|DISTINCT|WEB|WEB_THREADS|CODES|MODES|LIMITS'
COMMAND_LINE="$(env | grep -E "^($SETTINGS)=" | sort | tr '\n' ' ')$0"
DURATION=${DURATION:-8}
ROUNDS=${ROUNDS:-2}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
USERS=${USERS:-200}
DISTINCT=${DISTINCT:-11000}
WEB=${WEB:-600}
WEB_THREADS=${WEB_THREADS:-4}
CODES=${CODES:-600}
LIMITS=${LIMITS:-on}
USERS_CACHE=${USERS_CACHE:-50000}
MODES=$(echo ${MODES:-http tls proxy})
for mode in $MODES; do
  case "$mode" in http | tls | proxy) ;; *) echo "MODES names http, tls and proxy" >&2; exit 2 ;; esac
done
EMULATOR_PORT=${EMULATOR_PORT:-19590}
HTTP_PORT=${HTTP_PORT:-18580}
TLS_PORT=${TLS_PORT:-18581}
UPSTREAM_PORT=${UPSTREAM_PORT:-18582}
PROXY_PORT=${PROXY_PORT:-18583}
MEMORY_PORT=${MEMORY_PORT:-18584}
BUNDLE=com.example.siwa.demo
source "$(dirname "$0")/common.sh"
need wrk
need openssl
need python3
if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
  # Debian's package starts a system nginx on port 80 after installing (scripts/with-nginx): keep it from starting.
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y nginx >/dev/null
  rm -f /usr/sbin/policy-rc.d
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
HZ=$(getconf CLK_TCK)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
STARTED=$(date -u '+%Y-%m-%d %H:%M UTC')

# The certificate siwa and nginx serve (both trust nothing else; the Python driver trusts this one).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
  -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$WORK/tls-key.pem" -out "$WORK/tls-cert.pem" 2>/dev/null

# The emulator's team: the demo team's ids, its key made here, a Services ID whose Return URLs are the three ways in.
mkdir -p "$WORK/siwa-emulator"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$WORK/siwa-emulator/AuthKey_DEMOKEY001.p8"
python3 - "$WORK" "$HTTP_PORT" "$TLS_PORT" "$PROXY_PORT" <<'EOF'
import json, subprocess, sys
work, http_port, tls_port, proxy_port = sys.argv[1:5]
public = subprocess.run(["openssl", "ec", "-in", f"{work}/siwa-emulator/AuthKey_DEMOKEY001.p8", "-pubout"],
                        capture_output=True, text=True, check=True).stdout
callbacks = [f"http://127.0.0.1:{http_port}/auth/apple/callback", f"https://127.0.0.1:{tls_port}/auth/apple/callback",
             f"https://127.0.0.1:{proxy_port}/auth/apple/callback"]
json.dump({"teams": [{"teamID": "DEMOTEAM01", "keyID": "DEMOKEY001", "publicKeyPEM": public, "clients": [
    {"clientID": "com.example.siwa.demo"}, {"clientID": "com.example.siwa.demo.web", "redirectURIs": callbacks}]}],
    "allowLocalRedirectURIs": True}, open(f"{work}/emulator.json", "w"))
EOF
start_emulator "$EMULATOR_PORT" --config "$WORK/emulator.json"

wait_https() { # URL: up to 30 s for it to answer 2xx over the certificate made above
  for _ in $(seq 1 300); do curl -sf --cacert "$WORK/tls-cert.pem" "$1" >/dev/null && return 0; sleep 0.1; done
  echo "not up: $1" >&2
  return 1
}
declare -A PID_OF
start_siwa() { # name port public-url [VARIABLE=value...]
  local name=$1 port=$2 public=$3
  shift 3
  server_environment postgres "$port" "$WORK/unused.sqlite"
  (cd "$WORK" && exec env "${SERVER_ENV[@]}" SIWA_PUBLIC_URL="$public" SIWA_ACCESS_TOKEN_LIFETIME=3600 \
    SIWA_MAX_FLOWS_PER_CLIENT=1000000 "$@" "$SIWA" serve >"$WORK/siwa-$name.log" 2>&1) &
  PIDS+=($!)
  PID_OF[$name]=$!
}
# One at a time: the first creates the schema and the signing key that the others read.
start_siwa http "$HTTP_PORT" "http://127.0.0.1:$HTTP_PORT"
wait_for "http://127.0.0.1:$HTTP_PORT/healthz"
start_siwa tls "$TLS_PORT" "https://127.0.0.1:$TLS_PORT" SIWA_TLS_CERTIFICATE_FILE="$WORK/tls-cert.pem" \
  SIWA_TLS_KEY_FILE="$WORK/tls-key.pem"
wait_https "https://127.0.0.1:$TLS_PORT/healthz"
start_siwa proxy "$UPSTREAM_PORT" "https://127.0.0.1:$PROXY_PORT" SIWA_TRUSTED_PROXIES=127.0.0.1
wait_for "http://127.0.0.1:$UPSTREAM_PORT/healthz"
start_siwa memory "$MEMORY_PORT" "http://127.0.0.1:$MEMORY_PORT" SIWA_USER_CACHE_SIZE="$USERS_CACHE"
wait_for "http://127.0.0.1:$MEMORY_PORT/healthz"

# nginx as the deployment guide runs it (worker_processes auto, as Debian's nginx.conf has), in its own folder.
mkdir -p "$WORK/nginx"
cat >"$WORK/nginx/nginx.conf" <<EOF
daemon off;
worker_processes auto;
$([ "$(id -u)" -eq 0 ] && echo "user root;")
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $WORK/nginx/body;
    proxy_temp_path $WORK/nginx/proxy;
    fastcgi_temp_path $WORK/nginx/fastcgi;
    uwsgi_temp_path $WORK/nginx/uwsgi;
    scgi_temp_path $WORK/nginx/scgi;
    upstream siwa { server 127.0.0.1:$UPSTREAM_PORT; keepalive 16; keepalive_timeout 20s; }
    server {
        listen 127.0.0.1:$PROXY_PORT ssl;
        server_name localhost;
        ssl_certificate $WORK/tls-cert.pem;
        ssl_certificate_key $WORK/tls-key.pem;
        include $ROOT/docs/deployment/nginx-tls.conf;
        client_header_timeout 10s;
        location / {
            proxy_pass http://siwa;
            include $ROOT/docs/deployment/nginx-proxy.conf;
        }
    }
}
EOF
"$NGINX" -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" >"$WORK/nginx/stdout.log" 2>&1 &
PIDS+=($!)
NGINX_PID=$!
wait_https "https://127.0.0.1:$PROXY_PORT/healthz"
declare -A BASE_OF=([http]="http://127.0.0.1:$HTTP_PORT" [tls]="https://127.0.0.1:$TLS_PORT"
  [proxy]="https://127.0.0.1:$PROXY_PORT")

# Idle memory, a few seconds after start.
sleep 3
rss() { awk -v key="$2:" '$1 == key {print $2}' "/proc/$1/status"; } # PID FIELD: kB
declare -A IDLE_RSS
for name in http tls proxy memory; do IDLE_RSS[$name]=$(rss "${PID_OF[$name]}" VmRSS); done

# Genuine identity tokens of USERS users (an hour), each user signed in once (every measured sign-in is a returning
# user's) and through one web sign-in (so that the measured ones are returning too). Access tokens name the public URL
# of the instance that issued them, so each way in gets its own: USERS, and DISTINCT more.
python3 Benchmarks/load/tokens.py "$EMULATOR_PORT" "$USERS" sizing $BUNDLE >"$WORK/identity-tokens"
sign_in() { # MODE ANSWER-FIELD COPIES: signs every user in COPIES times through MODE's way in, prints the answers
  local to=$HTTP_PORT
  [ "$1" = http ] || to=${BASE_OF[$1]}
  SSL_CERT_FILE="$WORK/tls-cert.pem" python3 Benchmarks/load/sign_in_all.py "$to" /auth/apple/native identityToken \
    "$2" "$WORK/identity-tokens" "$3"
}
sign_in http accessToken 1 >/dev/null
python3 Benchmarks/load/web_sign_in.py "http://127.0.0.1:$HTTP_PORT" "$EMULATOR_PORT" "$USERS" "$WEB_THREADS" \
  "$USERS" sizing >/dev/null
for mode in $MODES; do
  sign_in "$mode" accessToken 1 >"$WORK/access-$mode"
  [ "$DISTINCT" -eq 0 ] || sign_in "$mode" accessToken $(((DISTINCT + USERS - 1) / USERS)) >"$WORK/distinct-$mode"
done

# The server of SIWA_TEST_POSTGRES_URL: the postmaster listening on its port, and its children.
PG_PORT=$(sed -E 's|.*@[^:/]+:([0-9]+)/.*|\1|' <<<"$SIWA_TEST_POSTGRES_URL")
POSTMASTER=$(pgrep -o -f -- "-p $PG_PORT( |\$)" || true)
[ -n "$POSTMASTER" ] || echo "PostgreSQL's CPU is not read: no process on this machine listens on port $PG_PORT" >&2

# wrk against URL with SCRIPT; prints "operations rate p99-ms non-2xx".
wrk_run() { # URL SCRIPT
  local out
  out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$2" "$1") || return 1
  echo "$out" | awk '
    / requests in / { requests = $1 }
    /Requests\/sec/ { rps = $2 }
    $1 == "99%" { p99 = $2; if (p99 ~ /us$/) p99 = p99 / 1000; else if (p99 ~ /ms$/) p99 = p99 + 0; else p99 = p99 * 1000 }
    /Non-2xx/ { errors = $5 }
    END { printf "%d %.1f %.2f %d\n", requests, rps, p99, errors + 0 }'
}
driver_run() { # SCRIPT ARGUMENTS...: a Python driver that prints "COUNT SECONDS"; prints "operations rate - 0"
  local count seconds
  read -r count seconds < <(python3 "$@")
  awk -v n="$count" -v s="$seconds" 'BEGIN { printf "%d %.1f - 0\n", n, n / s }'
}

RESULTS="$WORK/results"
: >"$RESULTS"
measure() { # mode operation command...: appends "mode operation operations rate p99 non-2xx siwa-us pg-us nginx-us"
  local mode=$1 operation=$2 pid=${PID_OF[$1]} s0 p0 n0 s1 p1 n1 out nginx_us=- operations rate p99 errors
  shift 2
  s0=$(ticks "$pid") p0=$(group_ticks "$POSTMASTER") n0=$(group_ticks "$NGINX_PID")
  out=$("$@")
  s1=$(ticks "$pid") p1=$(group_ticks "$POSTMASTER") n1=$(group_ticks "$NGINX_PID")
  read -r operations rate p99 errors <<<"$out"
  [ "$mode" != proxy ] ||
    nginx_us=$(awk -v t=$((n1 - n0)) -v n="$operations" -v hz="$HZ" 'BEGIN { printf "%.1f", t * 1e6 / hz / n }')
  awk -v m="$mode" -v o="$operation" -v n="$operations" -v r="$rate" -v p="$p99" -v e="$errors" -v s=$((s1 - s0)) \
    -v g=$((p1 - p0)) -v x="$nginx_us" -v hz="$HZ" \
    'BEGIN { printf "%s %s %d %s %s %s %.1f %.1f %s\n", m, o, n, r, p, e, s * 1e6 / hz / n, g * 1e6 / hz / n, x }' |
    tee -a "$RESULTS"
}

# The cost of doing nothing, the yardstick for the slower operations (the web sign-in runs about 150 a second): one
# instance's CPU and PostgreSQL's (four instances connected) over DURATION seconds of no load.
s0=$(ticks "${PID_OF[http]}") p0=$(group_ticks "$POSTMASTER")
sleep "$DURATION"
s1=$(ticks "${PID_OF[http]}") p1=$(group_ticks "$POSTMASTER")
IDLE=$(awk -v s=$((s1 - s0)) -v p=$((p1 - p0)) -v t="$DURATION" -v hz="$HZ" \
  'BEGIN { printf "siwa %.1f ms of CPU a second, PostgreSQL %.1f ms a second", s * 1e3 / hz / t, p * 1e3 / hz / t }')

echo "mode operation operations rate p99-ms non-2xx siwa-us pg-us nginx-us"
read -r -a ORDER <<<"$MODES"
for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round of $ROUNDS"
  for mode in "${ORDER[@]}"; do
    base=${BASE_OF[$mode]}
    # Fresh sessions for each refresh run: a refresh token from an earlier run would be reuse.
    sign_in "$mode" refreshToken $((CONNECTIONS * 8 / USERS + 1)) >"$WORK/refresh-tokens"
    PEER_TOKENS="$WORK/identity-tokens" PEER_MODE=native measure "$mode" sign-in \
      wrk_run "$base/auth/apple/native" Benchmarks/load/cycle.lua
    measure "$mode" sign-in+code driver_run Benchmarks/load/native_with_code.py "$base" "$EMULATOR_PORT" "$CODES" \
      "$WEB_THREADS" "$USERS" sizing $BUNDLE "$WORK/tls-cert.pem"
    SIWA_REFRESH_TOKENS="$WORK/refresh-tokens" SIWA_WRK_THREADS="$THREADS" measure "$mode" refresh \
      wrk_run "$base/auth/refresh" Benchmarks/load/refresh.lua
    PEER_TOKENS="$WORK/access-$mode" PEER_MODE=bearer measure "$mode" me \
      wrk_run "$base/api/me" Benchmarks/load/cycle.lua
    if [ "$DISTINCT" -gt 0 ]; then
      PEER_TOKENS="$WORK/distinct-$mode" PEER_MODE=bearer measure "$mode" me-uncached \
        wrk_run "$base/api/me" Benchmarks/load/cycle.lua
    fi
    measure "$mode" web driver_run Benchmarks/load/web_sign_in.py "$base" "$EMULATOR_PORT" "$WEB" "$WEB_THREADS" \
      "$USERS" sizing "$WORK/tls-cert.pem"
  done
  ORDER=("${ORDER[@]:1}" "${ORDER[0]}") # each mode takes each place in turn
done
declare -A LOADED_RSS LOADED_HWM
for mode in $MODES; do
  LOADED_RSS[$mode]=$(rss "${PID_OF[$mode]}" VmRSS) LOADED_HWM[$mode]=$(rss "${PID_OF[$mode]}" VmHWM)
done

# The user cache filled: USERS_CACHE new users, each signed in and read once.
read -r _ FILL_SECONDS < <(python3 Benchmarks/load/fill_cache.py "$EMULATOR_PORT" "$MEMORY_PORT" "$USERS_CACHE" cache \
  $BUNDLE)
sleep 2
FULL_RSS=$(rss "${PID_OF[memory]}" VmRSS)
FULL_HWM=$(rss "${PID_OF[memory]}" VmHWM)
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

echo
echo "Command: $COMMAND_LINE"
echo "Started: $STARTED; siwa: $SIWA; $(nproc) cores, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"\
  "$(lscpu 2>/dev/null | awk -F': +' '/^Hypervisor vendor/ {print "(" $2 " guest)"}'), $(free -m | awk '/^Mem:/ {print $2}') MB"
echo "Load average (1, 5, 15 min) before: $LOAD_BEFORE; after: $LOAD_AFTER"
echo "$("$NGINX" -v 2>&1 | head -n 1); PostgreSQL $("$(readlink "/proc/$POSTMASTER/exe")" --version | awk '{print $3}'),"\
  "fsync and synchronous_commit off (scripts/with-postgres); wrk $THREADS threads, $CONNECTIONS connections, ${DURATION} s;"\
  "$USERS users; $CODES sign-ins with a code and $WEB web sign-ins from $WEB_THREADS threads; LIMITS=$LIMITS"
echo "Idle for $DURATION s, no load: $IDLE; the whole run took $SECONDS s"
python3 - "$RESULTS" "$ROUNDS" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    mode, operation, operations, rate, p99, errors, siwa, pg, nginx = line.split()
    rows.setdefault((mode, operation), []).append((float(rate), float(siwa), float(pg),
        None if nginx == "-" else float(nginx), None if p99 == "-" else float(p99), int(errors)))
def cell(values, digits=0):
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    median = f"{statistics.median(values):,.{digits}f}"
    return median if len(values) == 1 else f"{median} ({min(values):,.{digits}f}–{max(values):,.{digits}f})"
print(f"\nCPU per operation, medians (ranges) over {sys.argv[2]} rounds:\n")
print("| mode | operation | ops/s | siwa CPU µs | PostgreSQL CPU µs | nginx CPU µs | per core of siwa /s "
      "| per core of PostgreSQL /s | p99 ms | non-2xx |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (mode, operation), runs in rows.items():
    siwa = statistics.median(r[1] for r in runs)
    pg = statistics.median(r[2] for r in runs)
    print(f"| {mode} | {operation} | {cell([r[0] for r in runs])} | {cell([r[1] for r in runs])} "
          f"| {cell([r[2] for r in runs])} | {cell([r[3] for r in runs])} | {1e6 / siwa:,.0f} "
          f"| {f'{1e6 / pg:,.0f}' if pg >= 10 else '–'} | {cell([r[4] for r in runs], 1)} | {sum(r[5] for r in runs)} |")
EOF
echo
echo "Memory, MB (VmRSS; VmHWM is the peak):"
echo
echo "| instance | idle after start | after the load runs | peak |"
echo "|---|---|---|---|"
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
for mode in $MODES; do
  echo "| $mode | $(mb "${IDLE_RSS[$mode]}") | $(mb "${LOADED_RSS[$mode]}") | $(mb "${LOADED_HWM[$mode]}") |"
done
echo "| user cache of $USERS_CACHE filled (in ${FILL_SECONDS} s) | $(mb "${IDLE_RSS[memory]}") | $(mb "$FULL_RSS") |"\
  "$(mb "$FULL_HWM") |"
awk -v a="${IDLE_RSS[memory]}" -v b="$FULL_RSS" -v n="$USERS_CACHE" \
  'BEGIN { printf "\nThe filled cache added %.1f MB: %.2f kB per cached user.\n", (b - a) / 1024, (b - a) / n }'

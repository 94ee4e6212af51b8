#!/usr/bin/env bash
# Connection floods (issue 15, part 1): siwa under systemd's default open-file limit (ulimit -n 1024, and here the
# hard limit too, so that siwa cannot raise it) while flooders hold connections open with slow request heads, slow
# bodies (a byte every 2 s, inside the idle timeout) and idle sockets. Meanwhile a prober on another loopback address
# asks /healthz and signs in; afterwards the process must be alive with its descriptors back to where they were.
# Two phases: from 4 addresses (the per-address cap holds them; the prober must be served throughout), and from 64
# addresses (together past the total cap: new connections are refused at once, the prober's too, and the process
# keeps its descriptors under the limit).
# Loopback only; each phase lasts DURATION seconds and opens at most FLOOD connections at a time.
#
#   Benchmarks/load/flood.sh
#   SIWA_BINARY=.build/debug/siwa DURATION=20 Benchmarks/load/flood.sh
set -euo pipefail
DURATION=${DURATION:-30}
FLOOD=${FLOOD:-1600}
EMULATOR_PORT=${EMULATOR_PORT:-19590}
SERVER_PORT=${SERVER_PORT:-18580}
source "$(dirname "$0")/common.sh"

start_emulator "$EMULATOR_PORT"
server_environment sqlite "$SERVER_PORT" "$WORK/flood.sqlite"
# The defaults a deployment gets (a per-address cap of 64, head 10 s, body 30 s), not the load runs' lifted cap.
SERVER_ENV=("${SERVER_ENV[@]/SIWA_MAX_CONNECTIONS_PER_ADDRESS=100000/SIWA_MAX_CONNECTIONS_PER_ADDRESS=64}")
(cd "$WORK" && ulimit -Sn 1024 && ulimit -Hn 1024 && exec env "${SERVER_ENV[@]}" "$SIWA" serve >"$WORK/server.log" 2>&1) &
SERVER=$!
PIDS+=($SERVER)
wait_for "http://127.0.0.1:$SERVER_PORT/healthz"
grep -o 'the connection cap is lowered[^"]*' "$WORK/server.log" | head -1 || true
baseline=$(ls /proc/$SERVER/fd | wc -l)
echo "siwa pid $SERVER: open-file limit $(awk '/Max open files/ {print $4}' /proc/$SERVER/limits), $baseline descriptors at rest"

python3 Benchmarks/load/tokens.py "$EMULATOR_PORT" 400 flood-prober- com.example.siwa.demo >"$WORK/tokens"
for phase in few many; do
  echo "== $phase flooding addresses: $FLOOD connections at a time for $DURATION s (slow heads, slow bodies, idle)"
  python3 Benchmarks/load/flood.py "$SERVER_PORT" "$phase" "$FLOOD" "$DURATION" "$WORK/tokens" "$SERVER" \
    | tee "$WORK/flood-$phase"
  grep -q '^alive yes' "$WORK/flood-$phase" && alive=true || alive=false
  check "siwa is alive after the $phase-address flood" "$alive"
  if [ "$phase" = few ]; then
    # A few addresses fill only their own per-address caps: everyone else must be served.
    grep -q '^prober ok' "$WORK/flood-$phase" && ok=true || ok=false
    check "/healthz and sign-ins from another address kept answering during the $phase-address flood" "$ok"
  else
    # Enough addresses fill the total cap: new connections, the prober's too, are refused at once rather than
    # queued, and the process keeps its descriptors under the cap.
    max_fds=$(awk '/server descriptors during the flood/ {gsub(",", "", $7); print $7}' "$WORK/flood-$phase")
    check "descriptors stayed under the open-file limit during the $phase-address flood (max $max_fds of 1024)" \
      "$([ "$max_fds" -lt 1024 ] && echo true || echo false)"
  fi
  sleep 3
  after=$(ls /proc/$SERVER/fd 2>/dev/null | wc -l)
  echo "descriptors: $baseline at rest, $after three seconds after the flood"
  check "descriptors back to normal after the $phase-address flood ($after, at rest $baseline)" \
    "$([ "$after" -le $((baseline + 8)) ] && echo true || echo false)"
done
exit $FAILED

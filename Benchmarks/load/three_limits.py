"""The limits of three siwa instances on one PostgreSQL, checked from clients of their own (scale-out.sh, phase 5).

Usage: three_limits.py RATE BURST BOUND IDENTITY_TOKEN PORT PORT PORT
  rate   one client (127.0.0.2) posts a refresh every 100 ms for 5 s, round robin over the instances: the deployment
         must admit what one bucket of RATE a second and BURST admits, within 10%, not three buckets' worth
  bound  IDENTITY_TOKEN signed in BOUND + 1 times from 127.0.0.3, round robin: BOUND answers 200, then 401
Prints one JSON line: {"rate": {...}, "bound": {...}}. Exit 1 when either does not hold.
"""
import http.client
import json
import sys
import time

rate, burst, bound, identity_token = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ports = [int(port) for port in sys.argv[5:]]


def post(port, path, body, source):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
    connection.request("POST", path, json.dumps(body), {"content-type": "application/json"})
    answer = connection.getresponse()
    data = answer.read()
    connection.close()
    return answer.status, data


sent, admitted, statuses = 50, 0, {}
started = time.monotonic()
last = started
for index in range(sent):
    time.sleep(max(0.0, started + index * 0.1 - time.monotonic()))
    last = time.monotonic()
    status, _ = post(ports[index % len(ports)], "/auth/refresh", {"refreshToken": "not-a-refresh-token"}, "127.0.0.2")
    statuses[status] = statuses.get(status, 0) + 1
    if status != 429:
        admitted += 1
elapsed = last - started
expected = min(sent, burst + rate * elapsed)
rate_holds = expected * 0.9 - 1 <= admitted <= expected * 1.1 + 1

answers = []
for index in range(bound + 1):
    status, data = post(ports[index % len(ports)], "/auth/apple/native", {"identityToken": identity_token}, "127.0.0.3")
    answers.append(status if status == 200 else f"{status} {json.loads(data).get('error')}")
bound_holds = answers == [200] * bound + ["401 identity_token_replayed"]

print(json.dumps({
    "rate": {"sent": sent, "seconds": round(elapsed, 2), "admitted": admitted, "oneBucketAdmits": round(expected, 1),
             "instancesWouldAdmit": round(min(sent, len(ports) * burst + rate * elapsed), 1), "statuses": statuses,
             "holds": rate_holds},
    "bound": {"bound": bound, "answers": answers, "holds": bound_holds},
}))
sys.exit(0 if rate_holds and bound_holds else 1)

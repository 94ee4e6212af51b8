"""Times endings across instances: each identity token of a file signs in at instance A, its access token is checked at
instance C, the session is logged out at A, and C is asked every 2 ms until it refuses the access token.

Usage: endings.py TOKENS_FILE PORT_A PORT_C
Prints one JSON line: endings, the delays from the logout's answer to C's first refusal in milliseconds (p50, p99,
max), and how many were not refused within 30 s. Exit 1 when any was not refused or a step did not answer as expected.
"""
import http.client
import json
import sys
import time

tokens_file, port_a, port_c = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
tokens = [line.strip() for line in open(tokens_file) if line.strip()]
a = http.client.HTTPConnection("127.0.0.1", port_a, timeout=30)
c = http.client.HTTPConnection("127.0.0.1", port_c, timeout=30)


def call(connection, method, path, body=None, bearer=None):
    headers = {"content-type": "application/json"} if body is not None else {}
    if bearer:
        headers["authorization"] = "Bearer " + bearer
    connection.request(method, path, json.dumps(body) if body is not None else None, headers)
    answer = connection.getresponse()
    return answer.status, answer.read()


delays, unrefused, unexpected = [], 0, []
for token in tokens:
    status, data = call(a, "POST", "/auth/apple/native", {"identityToken": token})
    if status != 200:
        unexpected.append(("sign-in", status))
        continue
    access = json.loads(data)["accessToken"]
    status, _ = call(c, "GET", "/api/me", bearer=access)
    if status != 200:
        unexpected.append(("before", status))
        continue
    status, _ = call(a, "POST", "/auth/logout", bearer=access)
    if status not in (200, 204):
        unexpected.append(("logout", status))
        continue
    ended = time.monotonic()
    while True:
        status, _ = call(c, "GET", "/api/me", bearer=access)
        if status in (401, 403):
            delays.append((time.monotonic() - ended) * 1000)
            break
        if time.monotonic() - ended > 30:
            unrefused += 1
            break
        time.sleep(0.002)

delays.sort()


def percentile(fraction):
    return round(delays[min(len(delays) - 1, int(fraction * len(delays)))], 1) if delays else None


print(json.dumps({
    "endings": len(delays),
    "p50_ms": percentile(0.5),
    "p99_ms": percentile(0.99),
    "max_ms": round(delays[-1], 1) if delays else None,
    "not_refused_within_30s": unrefused,
    "unexpected": unexpected[:10],
}))
sys.exit(0 if unrefused == 0 and not unexpected else 1)

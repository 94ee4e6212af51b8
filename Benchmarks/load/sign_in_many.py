"""Signs in every identity token of a file once, spread round-robin over several siwa instances, from WORKERS threads.

Usage: sign_in_many.py TOKENS_FILE REFRESH_OUT WORKERS PORT [PORT...]
Writes each answer's refresh token to REFRESH_OUT and prints one JSON line: sent, statuses, seconds, rate.
Exit 1 when any answer was not 200.
"""
import http.client
import json
import sys
import threading
import time
from collections import Counter

tokens_file, refresh_out, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
ports = [int(port) for port in sys.argv[4:]]
tokens = [line.strip() for line in open(tokens_file) if line.strip()]
statuses = Counter()
refresh_tokens = []
lock = threading.Lock()


def worker(start):
    connections = {}
    for index in range(start, len(tokens), workers):
        port = ports[index % len(ports)]
        connection = connections.get(port) or http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connections[port] = connection
        body = json.dumps({"identityToken": tokens[index]})
        connection.request("POST", "/auth/apple/native", body, {"content-type": "application/json"})
        answer = connection.getresponse()
        data = answer.read()
        with lock:
            statuses[answer.status] += 1
            if answer.status == 200:
                refresh_tokens.append(json.loads(data)["refreshToken"])


started = time.monotonic()
threads = [threading.Thread(target=worker, args=(start,)) for start in range(workers)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
seconds = time.monotonic() - started
with open(refresh_out, "w") as out:
    out.write("\n".join(refresh_tokens) + "\n")
print(json.dumps({
    "sent": len(tokens),
    "statuses": {str(status): count for status, count in sorted(statuses.items())},
    "seconds": round(seconds, 2),
    "rate": round(len(tokens) / seconds),
}))
sys.exit(0 if statuses.get(200, 0) == len(tokens) else 1)

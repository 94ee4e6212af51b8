"""Presents each refresh token to two instances at the same moment and counts who wins.

Usage: refresh_race.py TOKENS_FILE PORT_A PORT_B [PAIRS_IN_FLIGHT]
Prints one JSON line: tokens, successes by count per token, statuses. Exit 1 when a token succeeded twice or any
answer was 5xx.
"""
import http.client
import json
import sys
import threading
from collections import Counter

tokens_file, port_a, port_b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
workers = int(sys.argv[4]) if len(sys.argv) > 4 else 8
tokens = [line.strip() for line in open(tokens_file) if line.strip()]
successes = [0] * len(tokens)
statuses = Counter()
lock = threading.Lock()


def present(port, index, barrier, connections):
    connection = connections.setdefault(port, http.client.HTTPConnection("127.0.0.1", port, timeout=30))
    body = json.dumps({"refreshToken": tokens[index]})
    barrier.wait()
    connection.request("POST", "/auth/refresh", body, {"content-type": "application/json"})
    answer = connection.getresponse()
    answer.read()
    with lock:
        statuses[answer.status] += 1
        if answer.status == 200:
            successes[index] += 1


def worker(start):
    connections_a, connections_b = {}, {}
    for index in range(start, len(tokens), workers):
        barrier = threading.Barrier(2)
        other = threading.Thread(target=present, args=(port_b, index, barrier, connections_b))
        other.start()
        present(port_a, index, barrier, connections_a)
        other.join()


threads = [threading.Thread(target=worker, args=(start,)) for start in range(workers)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()

by_count = Counter(successes)
result = {
    "tokens": len(tokens),
    "tokensWithOneSuccess": by_count.get(1, 0),
    "tokensWithNoSuccess": by_count.get(0, 0),
    "tokensWithTwoSuccesses": by_count.get(2, 0),
    "statuses": {str(status): count for status, count in sorted(statuses.items())},
}
print(json.dumps(result))
five_xx = sum(count for status, count in statuses.items() if status >= 500)
sys.exit(1 if by_count.get(2, 0) or five_xx else 0)

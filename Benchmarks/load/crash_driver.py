"""Signs in distinct users and refreshes their sessions against one siwa instance that gets killed and restarted
underneath, until the token file is used up or STOP_FILE appears. Records every answer that came back 200.

Usage: crash_driver.py TOKENS_FILE PORT RESULTS_FILE STOP_FILE [WORKERS]
RESULTS_FILE gets one JSON line per 200 answer: {"kind": "sign-in"|"refresh", "user": id, "refreshToken": token}.
"""
import http.client
import json
import os
import sys
import threading
import time

tokens_file, port, results_file, stop_file = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
workers = int(sys.argv[5]) if len(sys.argv) > 5 else 8
tokens = [line.strip() for line in open(tokens_file) if line.strip()]
lock = threading.Lock()
results = open(results_file, "w")
counts = {"sign-in": 0, "refresh": 0, "failed": 0}


def post(connection, path, body):
    connection.request("POST", path, json.dumps(body), {"content-type": "application/json"})
    answer = connection.getresponse()
    return answer.status, answer.read()


def record(kind, user, refresh_token):
    with lock:
        counts[kind] += 1
        results.write(json.dumps({"kind": kind, "user": user, "refreshToken": refresh_token}) + "\n")
        results.flush()


def worker(start):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for index in range(start, len(tokens), workers):
        if os.path.exists(stop_file):
            return
        try:
            status, data = post(connection, "/auth/apple/native", {"identityToken": tokens[index]})
            if status != 200:
                raise RuntimeError(status)
            answer = json.loads(data)
            record("sign-in", answer["user"]["id"], answer["refreshToken"])
            status, data = post(connection, "/auth/refresh", {"refreshToken": answer["refreshToken"]})
            if status == 200:
                record("refresh", answer["user"]["id"], json.loads(data)["refreshToken"])
        except Exception:
            with lock:
                counts["failed"] += 1
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            time.sleep(0.05)


threads = [threading.Thread(target=worker, args=(start,)) for start in range(workers)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps(counts))

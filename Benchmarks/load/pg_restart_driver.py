"""Signs in distinct users and refreshes their sessions while the PostgreSQL server under siwa restarts, and probes
/readyz, until STOP_FILE appears. Records every answer: 200s with what they stored (for crash_check.py), and a summary
of every status, the slowest answer, 503s without Retry-After and requests that got no answer at all.

Usage: pg_restart_driver.py TOKENS_FILE PORT RESULTS_FILE STOP_FILE TIMELINE_FILE [WORKERS]
TIMELINE_FILE gets one JSON line per answer: {"t": seconds since start, "kind", "status"}.
"""
import http.client
import json
import os
import sys
import threading
import time

tokens_file, port, results_file, stop_file, timeline_file = sys.argv[1:6]
port = int(port)
workers = int(sys.argv[6]) if len(sys.argv) > 6 else 8
tokens = [line.strip() for line in open(tokens_file) if line.strip()]
lock = threading.Lock()
results = open(results_file, "w")
timeline = open(timeline_file, "w")
start = time.monotonic()
summary = {"statuses": {}, "slowest": 0.0, "no_retry_after": 0, "no_answer": 0, "readyz": {}}


def note(kind, status, seconds, headers):
    with lock:
        key = f"{kind} {status}"
        summary["statuses"][key] = summary["statuses"].get(key, 0) + 1
        summary["slowest"] = max(summary["slowest"], round(seconds, 3))
        if status == 503 and kind != "readyz" and headers.get("retry-after") is None:
            summary["no_retry_after"] += 1
        timeline.write(json.dumps({"t": round(time.monotonic() - start, 3), "kind": kind, "status": status}) + "\n")


def call(connection, method, path, body, kind):
    began = time.monotonic()
    try:
        connection.request(method, path, json.dumps(body) if body is not None else None,
                           {"content-type": "application/json"} if body is not None else {})
        answer = connection.getresponse()
        data = answer.read()
    except Exception:
        with lock:
            summary["no_answer"] += 1
        raise
    note(kind, answer.status, time.monotonic() - began, {k.lower(): v for k, v in answer.getheaders()})
    return answer.status, data


def record(kind, user, refresh_token):
    with lock:
        results.write(json.dumps({"kind": kind, "user": user, "refreshToken": refresh_token}) + "\n")
        results.flush()


def worker(first):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    for index in range(first, len(tokens), workers):
        if os.path.exists(stop_file):
            return
        try:
            status, data = call(connection, "POST", "/auth/apple/native", {"identityToken": tokens[index]}, "sign-in")
            if status != 200:
                time.sleep(0.05)
                continue
            answer = json.loads(data)
            record("sign-in", answer["user"]["id"], answer["refreshToken"])
            status, data = call(connection, "POST", "/auth/refresh", {"refreshToken": answer["refreshToken"]},
                                "refresh")
            if status == 200:
                record("refresh", answer["user"]["id"], json.loads(data)["refreshToken"])
        except Exception:
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
            time.sleep(0.05)


def prober():
    while not os.path.exists(stop_file):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
        try:
            status, _ = call(connection, "GET", "/readyz", None, "readyz")
            with lock:
                summary["readyz"][str(status)] = summary["readyz"].get(str(status), 0) + 1
        except Exception:
            pass
        connection.close()
        time.sleep(0.1)


threads = [threading.Thread(target=worker, args=(first,)) for first in range(workers)]
threads.append(threading.Thread(target=prober))
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps(summary, sort_keys=True))

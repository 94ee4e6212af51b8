"""Distinct first sign-ins round robin over three siwa instances while one of them is killed (scale-out.sh, phase 6).

Usage: kill_one.py TOKENS_FILE WORKERS PID_TO_KILL KILL_AFTER_SECONDS PORT PORT PORT
The last PORT is PID_TO_KILL's. Each worker sends its share of the tokens in turn to the instances; after
KILL_AFTER_SECONDS the process is killed (SIGKILL). A request to the killed instance that fails is sent again to the
next instance, as a proxy does for a connection it could not make; one that was in flight when it died counts as
lost in flight. Prints one JSON line: the emails answered 200 (to check in the database), counts before and after the
kill, and how many each instance answered after it.
"""
import http.client
import json
import os
import signal
import sys
import threading
import time

tokens_file, workers, victim, kill_after = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
ports = [int(port) for port in sys.argv[5:]]
tokens = [line.strip() for line in open(tokens_file) if line.strip()]
lock = threading.Lock()
killed_at = None
answered, failed_in_flight, refused = [], 0, 0
after_kill = {port: 0 for port in ports}


def worker(start):
    global failed_in_flight, refused
    for index in range(start, len(tokens), workers):
        for attempt in range(len(ports)):
            port = ports[(index + attempt) % len(ports)]
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                connection.request("POST", "/auth/apple/native", json.dumps({"identityToken": tokens[index]}),
                                   {"content-type": "application/json"})
                answer = connection.getresponse()
                data = json.loads(answer.read() or b"{}")
                connection.close()
            except ConnectionRefusedError:
                continue  # never reached an instance: the next one, as a proxy would
            except (ConnectionError, http.client.HTTPException, OSError):
                with lock:
                    failed_in_flight += 1
                break
            with lock:
                if answer.status == 200:
                    answered.append((data["user"].get("email"), time.monotonic()))
                    if killed_at is not None:
                        after_kill[port] += 1
                else:
                    refused += 1
            break


threads = [threading.Thread(target=worker, args=(start,)) for start in range(workers)]
started = time.monotonic()
for thread in threads:
    thread.start()
time.sleep(kill_after)
os.kill(victim, signal.SIGKILL)
killed_at = time.monotonic()
for thread in threads:
    thread.join()
print(json.dumps({
    "sent": len(tokens), "answered": len(answered),
    "answeredBeforeKill": sum(1 for _, at in answered if at < killed_at),
    "answeredAfterKill": sum(1 for _, at in answered if at >= killed_at),
    "answeredAfterKillByPort": {str(port): count for port, count in after_kill.items()},
    "lostInFlight": failed_in_flight, "refused": refused, "seconds": round(time.monotonic() - started, 2),
    "emails": sorted(email for email, _ in answered),
}))

"""Signs COUNT distinct new users in at a siwa server and reads each one's GET /api/me once, so that its user cache
holds COUNT accounts; eight threads. Prints "COUNT SECONDS".

Usage: fill_cache.py EMULATOR_PORT SIWA_PORT COUNT PREFIX CLIENT_ID

Each user: an identity token from the emulator's control API (POST /emulator/native-sign-in), POST
/auth/apple/native with it, GET /api/me with the access token answered. Exits non-zero on any answer other than 200.
"""
import http.client
import json
import sys
import threading
import time

emulator_port, siwa_port, count, prefix, client_id = sys.argv[1:6]
emulator_port, siwa_port, count = int(emulator_port), int(siwa_port), int(count)
THREADS = 8
failure = []


def call(connection, method, path, body=None, headers=None):
    connection.request(method, path, body, headers or {})
    answer = connection.getresponse()
    data = answer.read()
    if answer.status != 200:
        raise RuntimeError(f"{method} {path} answered {answer.status}: {data[:200]!r}")
    return json.loads(data)


def work(start):
    apple = http.client.HTTPConnection("127.0.0.1", emulator_port, timeout=60)
    own = http.client.HTTPConnection("127.0.0.1", siwa_port, timeout=60)
    json_type = {"content-type": "application/json"}
    try:
        for index in range(start, count, THREADS):
            if failure:
                return
            body = json.dumps({"clientId": client_id, "email": f"{prefix}{index}@example.com", "expiresIn": 3600})
            token = call(apple, "POST", "/emulator/native-sign-in", body, json_type)["identityToken"]
            signed_in = call(own, "POST", "/auth/apple/native", json.dumps({"identityToken": token}), json_type)
            call(own, "GET", "/api/me", headers={"authorization": f"Bearer {signed_in['accessToken']}"})
    except Exception as error:  # noqa: BLE001 - reported, and the run fails
        failure.append(str(error))


began = time.monotonic()
workers = [threading.Thread(target=work, args=(start,)) for start in range(THREADS)]
for worker in workers:
    worker.start()
for worker in workers:
    worker.join()
if failure:
    sys.exit(failure[0])
print(count, f"{time.monotonic() - began:.3f}")

"""Runs COUNT native sign-ins that carry an authorization code, from THREADS threads, and prints "COUNT SECONDS".

Usage: native_with_code.py SIWA_URL EMULATOR_PORT COUNT THREADS USERS PREFIX CLIENT_ID [CA_FILE]

First mints COUNT identity tokens with their authorization codes from the emulator's control API (POST
/emulator/native-sign-in, as PREFIX<i>@example.com, i cycling over USERS), then POSTs each pair once to
SIWA_URL/auth/apple/native, where siwa verifies the token, exchanges the code at the emulator and keeps Apple's
refresh token: an app's sign-in as Apple hands it over. A code is single use, so no pair is sent twice. SECONDS is the
time of the sign-ins alone; the minting comes first, while siwa idles. SIWA_URL is http:// or https://; CA_FILE is the
certificate to trust for https. Exits non-zero on any answer other than 200.
"""
import http.client
import json
import ssl
import sys
import threading
import time
import urllib.parse

siwa_url, emulator_port, count, threads, users, prefix, client_id = sys.argv[1:8]
emulator_port, count, threads, users = int(emulator_port), int(count), int(threads), int(users)
ca_file = sys.argv[8] if len(sys.argv) > 8 else None
siwa = urllib.parse.urlsplit(siwa_url)
context = ssl.create_default_context(cafile=ca_file) if siwa.scheme == "https" else None
failure = []
pairs = [None] * count


def mint(start):
    apple = http.client.HTTPConnection("127.0.0.1", emulator_port, timeout=60)
    try:
        for index in range(start, count, threads):
            body = json.dumps({"clientId": client_id, "email": f"{prefix}{index % users}@example.com",
                               "expiresIn": 3600})
            apple.request("POST", "/emulator/native-sign-in", body, {"content-type": "application/json"})
            answer = apple.getresponse()
            data = answer.read()
            if answer.status != 200:
                raise RuntimeError(f"the emulator answered {answer.status}: {data[:200]!r}")
            credential = json.loads(data)
            pairs[index] = {"identityToken": credential["identityToken"],
                            "authorizationCode": credential["authorizationCode"]}
    except Exception as error:  # noqa: BLE001 - reported, and the run fails
        failure.append(str(error))


def sign_in(start):
    if context is not None:
        own = http.client.HTTPSConnection(siwa.hostname, siwa.port, context=context, timeout=60)
    else:
        own = http.client.HTTPConnection(siwa.hostname, siwa.port, timeout=60)
    try:
        for index in range(start, count, threads):
            if failure:
                return
            own.request("POST", "/auth/apple/native", json.dumps(pairs[index]), {"content-type": "application/json"})
            answer = own.getresponse()
            data = answer.read()
            if answer.status != 200:
                raise RuntimeError(f"POST /auth/apple/native answered {answer.status}: {data[:200]!r}")
    except Exception as error:  # noqa: BLE001 - reported, and the run fails
        failure.append(str(error))


def run(work):
    workers = [threading.Thread(target=work, args=(start,)) for start in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if failure:
        sys.exit(failure[0])


run(mint)
began = time.monotonic()
run(sign_in)
print(count, f"{time.monotonic() - began:.3f}")

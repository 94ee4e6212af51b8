"""Prints COUNT identity tokens of distinct users from the Apple ID emulator's control API (one per line); with
PER_USER, that many rounds of them: each user's token of every round is a different one, as each sign-in on a
device gets a fresh token.

Usage: tokens.py EMULATOR_PORT COUNT PREFIX CLIENT_ID [PER_USER]
"""
import http.client
import json
import sys

port, count, prefix, client_id = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
per_user = int(sys.argv[5]) if len(sys.argv) > 5 else 1
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
for index in [index for _ in range(per_user) for index in range(count)]:
    body = json.dumps({"clientId": client_id, "email": f"{prefix}{index}@example.com", "expiresIn": 3600})
    connection.request("POST", "/emulator/native-sign-in", body, {"content-type": "application/json"})
    answer = connection.getresponse()
    data = answer.read()
    if answer.status != 200:
        sys.exit(f"emulator answered {answer.status}: {data[:200]!r}")
    print(json.loads(data)["identityToken"])

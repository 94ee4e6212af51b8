"""Signs each identity token of TOKENS_FILE in at a server COPIES times and prints the bearer tokens it answered.

Usage: sign_in_all.py PORT PATH BODY_FIELD ANSWER_FIELD TOKENS_FILE [COPIES]
  PORT          a port of 127.0.0.1 (plain http), or an https:// URL (the certificates Python trusts, e.g. the one
                SSL_CERT_FILE names)
  PATH          /auth/apple/native (siwa) or /api/auth/siwa (the Vapor tutorial's route, siwa's or the peer's)
  BODY_FIELD    identityToken or appleIdentityToken
  ANSWER_FIELD  accessToken
Eight connections at once; exits non-zero on any answer other than 200.
"""
import http.client
import json
import ssl
import sys
import threading
import urllib.parse

port, path, body_field, answer_field, tokens_file = sys.argv[1:6]
copies = int(sys.argv[6]) if len(sys.argv) > 6 else 1
identity_tokens = [line.strip() for line in open(tokens_file) if line.strip()] * copies
answers = [None] * len(identity_tokens)
failure = []


def work(start):
    if port.startswith("https://"):
        url = urllib.parse.urlsplit(port)
        connection = http.client.HTTPSConnection(url.hostname, url.port, context=ssl.create_default_context(),
                                                 timeout=60)
    else:
        connection = http.client.HTTPConnection("127.0.0.1", int(port), timeout=60)
    for index in range(start, len(identity_tokens), 8):
        body = json.dumps({body_field: identity_tokens[index]})
        connection.request("POST", path, body, {"content-type": "application/json"})
        answer = connection.getresponse()
        data = answer.read()
        if answer.status != 200:
            failure.append(f"{path} answered {answer.status}: {data[:200]!r}")
            return
        answers[index] = json.loads(data)[answer_field]


threads = [threading.Thread(target=work, args=(start,)) for start in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
if failure:
    sys.exit(failure[0])
for token in answers:
    print(token)

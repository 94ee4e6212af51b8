"""Runs COUNT web sign-ins the way a browser does them, from THREADS threads, and prints "COUNT SECONDS".

Usage: web_sign_in.py SIWA_URL EMULATOR_PORT COUNT THREADS USERS PREFIX [CA_FILE]

Each sign-in: GET SIWA_URL/auth/apple/authorize (siwa answers 302 to the emulator's authorize page and sets the flow
cookie), GET that page, POST its form with action=continue as the Apple ID PREFIX<i>@example.com (i cycles over USERS),
read the emulator's form_post page and POST its fields to the action it names (siwa's callback, which verifies the
identity token, exchanges the code with the emulator and answers 303 with the session cookies) with the flow cookie.
Each thread keeps one connection to siwa and one to the emulator open, as a browser does. SIWA_URL is http:// or
https://; CA_FILE is the certificate to trust for https. Exits non-zero on the first unexpected answer.
"""
import html
import http.client
import re
import ssl
import sys
import threading
import time
import urllib.parse

siwa_url, emulator_port, count, threads, users, prefix = sys.argv[1:7]
emulator_port, count, threads, users = int(emulator_port), int(count), int(threads), int(users)
ca_file = sys.argv[7] if len(sys.argv) > 7 else None
siwa = urllib.parse.urlsplit(siwa_url)
context = ssl.create_default_context(cafile=ca_file) if siwa.scheme == "https" else None
INPUT = re.compile(r'<input type="hidden" name="([^"]*)" value="([^"]*)">')
ACTION = re.compile(r'<form method="post" action="([^"]*)"')
failure = []


def connect_siwa():
    if context is not None:
        return http.client.HTTPSConnection(siwa.hostname, siwa.port, context=context, timeout=60)
    return http.client.HTTPConnection(siwa.hostname, siwa.port, timeout=60)


def expect(answer, status, step):
    body = answer.read()
    if answer.status != status:
        raise RuntimeError(f"{step} answered {answer.status}, not {status}: {body[:300]!r}")
    return body.decode()


def sign_in(own, apple, email):
    own.request("GET", "/auth/apple/authorize")
    answer = own.getresponse()
    expect(answer, 302, "GET /auth/apple/authorize")
    cookies = "; ".join(value.split(";", 1)[0] for name, value in answer.getheaders() if name.lower() == "set-cookie")
    authorize = urllib.parse.urlsplit(answer.getheader("location"))
    apple.request("GET", f"{authorize.path}?{authorize.query}")
    page = expect(apple.getresponse(), 200, "the emulator's authorize page")
    fields = [(name, html.unescape(value)) for name, value in INPUT.findall(page)]
    fields += [("email", email), ("given_name", "Load"), ("family_name", "Test"), ("hide_email", "false"),
               ("action", "continue")]
    apple.request("POST", "/auth/authorize", urllib.parse.urlencode(fields),
                  {"content-type": "application/x-www-form-urlencoded"})
    page = expect(apple.getresponse(), 200, "the emulator's consent")
    callback = urllib.parse.urlsplit(html.unescape(ACTION.search(page).group(1)))
    fields = [(name, html.unescape(value)) for name, value in INPUT.findall(page)]
    own.request("POST", callback.path, urllib.parse.urlencode(fields),
                {"content-type": "application/x-www-form-urlencoded", "cookie": cookies,
                 "origin": f"http://127.0.0.1:{emulator_port}"})
    answer = own.getresponse()
    expect(answer, 303, f"POST {callback.path}")
    if not any(name.lower() == "set-cookie" and "siwa_session=" in value for name, value in answer.getheaders()):
        raise RuntimeError("the callback set no session cookie")


def work(start):
    own, apple = connect_siwa(), http.client.HTTPConnection("127.0.0.1", emulator_port, timeout=60)
    try:
        for index in range(start, count, threads):
            if failure:
                return
            sign_in(own, apple, f"{prefix}{index % users}@example.com")
    except Exception as error:  # noqa: BLE001 - reported, and the run fails
        failure.append(str(error))


began = time.monotonic()
workers = [threading.Thread(target=work, args=(start,)) for start in range(threads)]
for worker in workers:
    worker.start()
for worker in workers:
    worker.join()
if failure:
    sys.exit(failure[0])
print(count, f"{time.monotonic() - began:.3f}")

"""An app backend's webhook endpoint: verifies each delivery with the Standard Webhooks reference library (the
`standardwebhooks` package) and records it.

Usage: webhook_receiver.py SECRET PORT_FILE LOG_FILE FAIL_FIRST [REDIRECT_TO]

Listens on 127.0.0.1 at a free port, which it writes to PORT_FILE once it listens. Answers the first FAIL_FIRST
deliveries with 503 (an outage), then 204. Each request appends one JSON line to LOG_FILE: {"verified", "status",
"webhook_id", "payload" or "error"}. With REDIRECT_TO, every answer is instead a 302 to that URL. Runs until it
is terminated.
"""
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

SECRET, PORT_FILE, LOG_FILE, FAIL_FIRST = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
REDIRECT_TO = sys.argv[5] if len(sys.argv) > 5 else None
lock = threading.Lock()
received = 0


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (the library's name)
        global received
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        headers = {name.lower(): value for name, value in self.headers.items()}
        entry = {"webhook_id": headers.get("webhook-id"), "content_type": headers.get("content-type")}
        try:
            entry["payload"] = Webhook(SECRET).verify(body, headers)
            entry["verified"] = True
        except WebhookVerificationError as error:
            entry["verified"] = False
            entry["error"] = str(error)
        with lock:
            received += 1
            status = 503 if received <= FAIL_FIRST else (204 if entry["verified"] else 400)
            if REDIRECT_TO:
                status = 302
            entry["status"] = status
            with open(LOG_FILE, "a", encoding="utf-8") as log:
                log.write(json.dumps(entry) + "\n")
        self.send_response(status)
        if REDIRECT_TO:
            self.send_header("location", REDIRECT_TO)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the library's name)
        pass


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    temporary = PORT_FILE + ".partial"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(str(server.server_address[1]))
    os.rename(temporary, PORT_FILE)
    server.serve_forever()


if __name__ == "__main__":
    main()

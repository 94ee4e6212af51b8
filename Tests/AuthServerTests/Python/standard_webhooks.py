"""Verifies siwa's webhook signatures with the Standard Webhooks reference library (the `standardwebhooks` package).

Usage: standard_webhooks.py SECRET BODY_FILE WEBHOOK_ID WEBHOOK_TIMESTAMP WEBHOOK_SIGNATURE

Prints one JSON line: {"verified": true, "payload": ...}, or {"verified": false, "error": "..."}.
"""
import json
import sys

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def main() -> None:
    secret, body_file, webhook_id, timestamp, signature = sys.argv[1:6]
    with open(body_file, "rb") as handle:
        body = handle.read()
    headers = {"webhook-id": webhook_id, "webhook-timestamp": timestamp, "webhook-signature": signature}
    try:
        payload = Webhook(secret).verify(body, headers)
        print(json.dumps({"verified": True, "payload": payload}))
    except WebhookVerificationError as error:
        print(json.dumps({"verified": False, "error": str(error)}))


if __name__ == "__main__":
    main()

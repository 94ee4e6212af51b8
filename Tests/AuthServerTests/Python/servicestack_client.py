"""Drives siwa with ServiceStack's own Python client (the `servicestack` package from PyPI), as its apps do.

Usage: servicestack_client.py sign-in SERVER EMULATOR  -> prints {"bearerToken", "refreshToken", "userId"}
       servicestack_client.py after-expiry SERVER BEARER REFRESH USER_ID
       servicestack_client.py unauthenticated SERVER

Every check raises (exit status 1) when siwa answers differently from what the client expects.
"""

import json
import sys
from dataclasses import dataclass
from typing import Optional

import requests
from dataclasses_json import LetterCase, Undefined, dataclass_json
from servicestack import Authenticate, AuthenticateResponse, IGet, IReturn, JsonServiceClient, WebServiceException


@dataclass_json(letter_case=LetterCase.CAMEL, undefined=Undefined.EXCLUDE)
@dataclass
class HelloSecureResponse:
    result: Optional[str] = None


# The samples' test service: GET /api/HelloSecure?name=
@dataclass_json(letter_case=LetterCase.CAMEL, undefined=Undefined.EXCLUDE)
@dataclass
class HelloSecure(IReturn[HelloSecureResponse], IGet):
    name: Optional[str] = None


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def sign_in(server, emulator):
    # What the device gets from Apple (the emulator plays the device).
    credential = requests.post(
        f"{emulator}/emulator/native-sign-in",
        json={"clientId": "com.example.app", "email": "py@example.com", "givenName": "Py", "familyName": "Thon"},
        timeout=10,
    ).json()
    client = JsonServiceClient(server)
    response: AuthenticateResponse = client.post(
        Authenticate(
            provider="apple",
            access_token=credential["identityToken"],
            meta={
                "authorizationCode": credential["authorizationCode"],
                "givenName": "Py",
                "familyName": "Thon",
            },
        )
    )
    check(isinstance(response, AuthenticateResponse), f"typed response, got {type(response)}")
    check(response.bearer_token and response.refresh_token, "bearer and refresh tokens")
    check(response.display_name == "Py Thon", f"display name, got {response.display_name!r}")
    check(response.user_name == "py@example.com", f"user name, got {response.user_name!r}")
    client.bearer_token = response.bearer_token
    hello: HelloSecureResponse = client.get(HelloSecure(name="Py"))
    check(hello.result == "Secure Py!", f"hello, got {hello.result!r}")
    print(json.dumps({
        "bearerToken": response.bearer_token,
        "refreshToken": response.refresh_token,
        "userId": response.user_id,
    }))


def after_expiry(server, bearer, refresh, user_id):
    # The bearer token has expired: the client's own logic calls GetAccessToken and retries.
    client = JsonServiceClient(server)
    client.bearer_token = bearer
    client.refresh_token = refresh
    hello: HelloSecureResponse = client.get(HelloSecure(name="Again"))
    check(hello.result == "Secure Again!", f"hello after refresh, got {hello.result!r}")
    check(client.bearer_token != bearer, "the client took the new bearer token")
    session: AuthenticateResponse = client.post(Authenticate())
    check(session.user_id == user_id, f"the session's user, got {session.user_id!r}")
    print(json.dumps({"refreshedBearer": True}))


def unauthenticated(server):
    client = JsonServiceClient(server)
    try:
        client.get(HelloSecure(name="Nobody"))
    except WebServiceException as error:
        check(error.status_code == 401, f"status, got {error.status_code}")
        check(error.response_status.error_code == "Unauthorized", f"error code, got {error.response_status}")
        check(error.response_status.message == "Not Authenticated", f"message, got {error.response_status}")
        print(json.dumps({"errorCode": error.response_status.error_code}))
        return
    raise AssertionError("an unauthenticated call must fail")


if __name__ == "__main__":
    command, arguments = sys.argv[1], sys.argv[2:]
    {"sign-in": sign_in, "after-expiry": after_expiry, "unauthenticated": unauthenticated}[command](*arguments)

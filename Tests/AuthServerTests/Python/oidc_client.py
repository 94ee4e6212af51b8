"""Drives siwa's OpenID provider with independent libraries from PyPI, as relying parties and API services do.

Usage: oidc_client.py verify-access-token ISSUER TOKEN AUDIENCE
           -> PyJWT's PyJWKClient, found through discovery alone, verifies siwa's access token; prints {"sub", "sid"}
       oidc_client.py authlib-flow ISSUER CLIENT_ID CLIENT_SECRET REDIRECT_URI LOGOUT_URI EMAIL
           -> Authlib's OAuth2Session: authorization code + PKCE with the emulator's consent page driven as a
              browser drives it, the ID token validated through discovery and the JWKS (authlib.jose), userinfo,
              refresh, logout; prints what it saw
       oidc_client.py backchannel-rp ISSUER CLIENT_ID CLIENT_SECRET REDIRECT_URI EMAIL PORT STATE_FILE
           -> a relying party that signs in with Authlib, writes {"sub", "sid"} to STATE_FILE, listens on PORT for
              siwa's back-channel logout, verifies the logout token with pyoidc's BackChannelLogoutRequest and with
              PyJWT per the specification, ends its own session and prints what it checked

Every check raises (exit status 1) when siwa answers differently from what the library expects.
"""

import html
import json
import os
import queue
import re
import secrets
import sys
import threading
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urljoin, urlparse

import jwt
import requests
from cryptography.hazmat.primitives.asymmetric import ec
from authlib.integrations.requests_client import OAuth2Session

with warnings.catch_warnings():
    # authlib.jose is deprecated in favour of joserfc but kept until Authlib 2; it is what OIDC apps use today.
    warnings.simplefilter("ignore")
    from authlib.jose import JsonWebKey
    from authlib.jose import jwt as authlib_jwt
    from authlib.oidc.core import CodeIDToken

BACKCHANNEL_LOGOUT_EVENT = "http://schemas.openid.net/event/backchannel-logout"


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def discover(issuer):
    metadata = requests.get(f"{issuer}/.well-known/openid-configuration", timeout=10).json()
    check(metadata["issuer"] == issuer, f"issuer, got {metadata['issuer']!r}")
    return metadata


def verify_access_token(issuer, token, audience):
    metadata = discover(issuer)
    keys = jwt.PyJWKClient(metadata["jwks_uri"])
    signing_key = keys.get_signing_key_from_jwt(token)
    claims = jwt.decode(
        token,
        signing_key.key,
        algorithms=metadata["id_token_signing_alg_values_supported"],
        audience=audience,
        issuer=issuer,
        options={"require": ["exp", "iat", "sub", "iss", "aud"]},
    )
    # A token signed by another key must not verify.
    other = jwt.encode(
        {"iss": issuer, "aud": audience, "sub": claims["sub"], "exp": claims["exp"]},
        ec.generate_private_key(ec.SECP256R1()),
        algorithm="ES256",
        headers={"kid": signing_key.key_id},
    )
    try:
        jwt.decode(other, signing_key.key, algorithms=["ES256"], audience=audience, issuer=issuer)
        raise AssertionError("a token signed by a stranger's key verified")
    except jwt.InvalidSignatureError:
        pass
    print(json.dumps({"sub": claims["sub"], "sid": claims["sid"]}))


def hidden_fields(page):
    return {
        html.unescape(name): html.unescape(value)
        for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page)
    }


def sign_in_at_apple(browser, authorize_url, email):
    """What a browser does on siwa's web sign-in: the redirect to Apple, the consent page, Apple's form_post."""
    to_apple = browser.get(authorize_url, allow_redirects=False, timeout=10)
    check(to_apple.status_code == 302, f"siwa's web sign-in redirects to Apple, got {to_apple.status_code}")
    # Browsers treat http://127.0.0.1 as a secure origin and send its `Secure` cookies (the flow binding); requests
    # does not, so the test marks them as a browser would treat them.
    for cookie in browser.cookies:
        cookie.secure = False
    apple_url = to_apple.headers["Location"]
    consent = browser.get(apple_url, timeout=10)
    check(consent.status_code == 200, f"Apple's consent page, got {consent.status_code}")
    apple = urlparse(apple_url)
    fields = hidden_fields(consent.text)
    fields.update(
        {"email": email, "given_name": "Ada", "family_name": "Lovelace", "hide_email": "false", "action": "continue"}
    )
    posted = browser.post(f"{apple.scheme}://{apple.netloc}/auth/authorize", data=fields, timeout=10)
    check(posted.status_code == 200, f"consent accepted, got {posted.status_code}")
    action = re.search(r'<form method="post" action="([^"]+)"', posted.text).group(1)
    # The auto-submitting form_post, cross-site from Apple's origin.
    return browser.post(
        html.unescape(action),
        data=hidden_fields(posted.text),
        headers={"Origin": f"{apple.scheme}://{apple.netloc}"},
        allow_redirects=False,
        timeout=10,
    )


def sign_in(issuer, client_id, client_secret, redirect_uri, email):
    """The authorization-code flow with PKCE through siwa's web sign-in; the ID token validated."""
    metadata = discover(issuer)
    client = OAuth2Session(
        client_id,
        client_secret,
        scope="openid email profile",
        redirect_uri=redirect_uri,
        code_challenge_method="S256",
    )
    nonce = secrets.token_urlsafe(16)
    code_verifier = secrets.token_urlsafe(48)
    url, state = client.create_authorization_url(
        metadata["authorization_endpoint"], nonce=nonce, code_verifier=code_verifier
    )

    browser = requests.Session()
    start = browser.get(url, allow_redirects=False, timeout=10)
    check(start.status_code == 303, f"no session yet: siwa's sign-in first, got {start.status_code}")
    callback = sign_in_at_apple(browser, urljoin(issuer, start.headers["Location"]), email)
    check(callback.status_code == 303, f"the callback signs in, got {callback.status_code}: {callback.text[:200]}")
    back = browser.get(urljoin(issuer, callback.headers["Location"]), allow_redirects=False, timeout=10)
    check(back.status_code == 302, f"back at authorize, a redirect to the app, got {back.status_code}")
    authorization_response = back.headers["Location"]
    check(authorization_response.startswith(redirect_uri + "?"), f"to the redirect URI: {authorization_response}")
    check(parse_qs(urlparse(authorization_response).query)["iss"] == [issuer], "RFC 9207 iss")

    token = client.fetch_token(
        metadata["token_endpoint"],
        authorization_response=authorization_response,
        code_verifier=code_verifier,
        state=state,
    )
    check(token["token_type"] == "Bearer", f"token type {token['token_type']}")

    # The ID token, validated through discovery and the JWKS alone.
    jwks = JsonWebKey.import_key_set(requests.get(metadata["jwks_uri"], timeout=10).json())
    claims = authlib_jwt.decode(
        token["id_token"],
        jwks,
        claims_cls=CodeIDToken,
        claims_options={"iss": {"essential": True, "value": issuer}},
        claims_params={"nonce": nonce, "client_id": client_id, "access_token": token["access_token"]},
    )
    claims.validate()
    check(claims["email"] == email, f"email claim {claims.get('email')!r}")
    check(claims["name"] == "Ada Lovelace", f"name claim {claims.get('name')!r}")
    return metadata, client, browser, url, token, claims


def authlib_flow(issuer, client_id, client_secret, redirect_uri, logout_uri, email):
    metadata, client, browser, url, token, claims = sign_in(issuer, client_id, client_secret, redirect_uri, email)

    userinfo = client.get(metadata["userinfo_endpoint"], timeout=10).json()
    check(userinfo["sub"] == claims["sub"], "userinfo's sub is the ID token's")
    check(userinfo["email"] == email, "userinfo's email")

    old_refresh = token["refresh_token"]
    refreshed = client.refresh_token(metadata["token_endpoint"])
    check(refreshed["refresh_token"] != old_refresh, "the refresh token rotates")
    check(client.get(metadata["userinfo_endpoint"], timeout=10).status_code == 200, "the new access token works")

    logout = browser.get(
        metadata["end_session_endpoint"],
        params={"id_token_hint": token["id_token"], "post_logout_redirect_uri": logout_uri, "state": "bye"},
        allow_redirects=False,
        timeout=10,
    )
    check(logout.status_code == 303, f"logout redirects, got {logout.status_code}")
    check(logout.headers["Location"] == f"{logout_uri}?state=bye", f"to the allowed URI: {logout.headers['Location']}")
    after = client.get(metadata["userinfo_endpoint"], timeout=10)
    check(after.status_code == 401, f"the relying party's session ended, userinfo got {after.status_code}")
    again = browser.get(url, allow_redirects=False, timeout=10)
    check(again.status_code == 303, "the browser's siwa session ended: authorize signs in again")
    print(json.dumps({"sub": claims["sub"], "email": userinfo["email"], "refreshed": True, "loggedOut": True}))


def backchannel_rp(issuer, client_id, client_secret, redirect_uri, email, port, state_file):
    requests_received = queue.Queue()

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
            requests_received.put((self.path, self.headers.get("Content-Type"), body))
            # §2.8: 200 on success, never cached.
            self.send_response(200)
            self.send_header("Cache-Control", "no-store")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *arguments):
            pass

    receiver = ThreadingHTTPServer(("127.0.0.1", int(port)), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()

    metadata, _, _, _, _, claims = sign_in(issuer, client_id, client_secret, redirect_uri, email)
    check(metadata.get("backchannel_logout_supported") is True, "discovery: backchannel_logout_supported")
    check(metadata.get("backchannel_logout_session_supported") is True, "discovery: backchannel_logout_session_supported")
    check("sid" in claims, "the ID token names its session (sid)")
    # The relying party's own sessions, by siwa's sid.
    sessions = {claims["sid"]: {"sub": claims["sub"], "active": True}}
    with open(state_file + ".tmp", "w") as out:
        json.dump({"sub": claims["sub"], "sid": claims["sid"]}, out)
    os.replace(state_file + ".tmp", state_file)

    path, content_type, body = requests_received.get(timeout=120)
    check(path == "/backchannel-logout", f"posted to the registered URI, got {path}")
    check(content_type == "application/x-www-form-urlencoded", f"a form post (§2.5), got {content_type!r}")
    jwks = requests.get(metadata["jwks_uri"], timeout=10).json()

    # pyoidc: the logout request and its token, verified by the library against the JWKS.
    from oic.oic.message import BackChannelLogoutRequest
    from oic.utils.keyio import KeyJar

    keyjar = KeyJar()
    keyjar.import_jwks(jwks, "")
    keyjar.import_jwks(jwks, issuer)
    logout_request = BackChannelLogoutRequest().from_urlencoded(body)
    logout_request.verify(aud=client_id, iss=issuer, keyjar=keyjar)
    verified = logout_request["logout_token"]

    # Per the specification with PyJWT: every required claim, the event member, no nonce, the explicit type.
    raw = parse_qs(body)["logout_token"][0]
    header = jwt.get_unverified_header(raw)
    check(header.get("typ") == "logout+jwt", f"typ logout+jwt (§2.4), got {header.get('typ')!r}")
    signing_key = jwt.PyJWKClient(metadata["jwks_uri"]).get_signing_key_from_jwt(raw)
    token = jwt.decode(
        raw,
        signing_key.key,
        algorithms=[header["alg"]],
        audience=client_id,
        issuer=issuer,
        options={"require": ["iss", "aud", "iat", "exp", "jti", "events", "sub", "sid"]},
    )
    check(token["events"] == {BACKCHANNEL_LOGOUT_EVENT: {}}, f"events {token['events']!r}")
    check("nonce" not in token, "a logout token has no nonce (§2.4)")
    check(verified["jti"] == token["jti"] and verified["sid"] == token["sid"], "both libraries read the same token")
    # A logout token is nothing else: not a session at siwa, not a relying party's access token, not a logout hint.
    me = requests.get(f"{issuer}/api/me", headers={"Authorization": f"Bearer {raw}"}, timeout=10)
    check(me.status_code == 401, f"the logout token as a bearer token at /api/me, got {me.status_code}")
    userinfo = requests.get(metadata["userinfo_endpoint"], headers={"Authorization": f"Bearer {raw}"}, timeout=10)
    check(userinfo.status_code == 401, f"the logout token at userinfo, got {userinfo.status_code}")
    hint = requests.get(
        metadata["end_session_endpoint"], params={"id_token_hint": raw}, allow_redirects=False, timeout=10
    )
    check(
        hint.status_code == 400 and "was not issued here" in hint.text,
        f"the logout token as an id_token_hint, got {hint.status_code}",
    )
    session = sessions.get(token["sid"])
    check(session is not None, f"the sid {token['sid']!r} is one of this relying party's sessions")
    check(session["sub"] == token["sub"], "the sub is the session's user")
    session["active"] = False
    receiver.shutdown()
    print(
        json.dumps(
            {
                "sub": token["sub"],
                "sid": token["sid"],
                "jti": token["jti"],
                "alg": header["alg"],
                "kid": header["kid"],
                "ended": not session["active"],
            }
        )
    )


if __name__ == "__main__":
    command, arguments = sys.argv[1], sys.argv[2:]
    if command == "verify-access-token":
        verify_access_token(*arguments)
    elif command == "authlib-flow":
        authlib_flow(*arguments)
    elif command == "backchannel-rp":
        backchannel_rp(*arguments)
    else:
        raise SystemExit(f"unknown command {command}")

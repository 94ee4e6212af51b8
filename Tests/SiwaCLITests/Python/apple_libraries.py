"""Other projects' Sign in with Apple libraries from PyPI, completing the web sign-in against `siwa emulator`.

Usage: apple_libraries.py LIBRARY EMULATOR_URL SITE_PORT TEAM_ID KEY_ID KEY_FILE CLIENT_ID EMAIL

LIBRARY is one of
  social-auth  social-auth-core's AppleIdAuth, in social-auth-app-django
  allauth      django-allauth's Apple provider

A Django site with the library, configured as its documentation says (team, key id, the .p8 key, the Services ID),
runs on 127.0.0.1:SITE_PORT; the only change from a production setup is the library's own constants for Apple's three
URLs, pointed at EMULATOR_URL. A browser (requests, with cookies) presses the site's sign-in button, follows it to the
emulator's consent page, presses Continue as EMAIL, and carries Apple's form_post back to the site; the library then
exchanges the code with its own ES256 client secret and verifies the identity token with the emulator's keys and its
own check of the issuer, https://appleid.apple.com. Prints, as its last line, the Apple user id (sub), e-mail and
first name the library stored and the user the site's session is signed in as.

Any step that goes differently from a sign-in raises (exit status 1).
"""

import importlib.metadata
import json
import sys
import tempfile
import threading
from html.parser import HTMLParser
from urllib.parse import urljoin
from wsgiref.simple_server import WSGIRequestHandler, make_server

import django
import requests
from django.conf import settings

# The site's URLs, filled in once Django is set up (ROOT_URLCONF is this module).
urlpatterns = []

TIMEOUT = 60  # seconds; generous, for a loaded CI machine


def check(condition, message):
    if not condition:
        raise AssertionError(message)


class Forms(HTMLParser):
    """The forms of a page: their action and their input fields, as a browser would post them."""

    def __init__(self):
        super().__init__()
        self.forms = []

    def handle_starttag(self, tag, attributes):
        attributes = dict(attributes)
        if tag == "form":
            self.forms.append({"action": attributes.get("action") or "", "fields": []})
        elif tag == "input" and self.forms and attributes.get("name"):
            if attributes.get("type") in ("hidden", "text", "email", None):
                self.forms[-1]["fields"].append((attributes["name"], attributes.get("value") or ""))


def only_form(response):
    check(response.status_code == 200, f"{response.url} answered {response.status_code}: {response.text[:500]}")
    parser = Forms()
    parser.feed(response.text)
    check(len(parser.forms) >= 1, f"no form on {response.url}: {response.text[:500]}")
    form = parser.forms[0]
    return urljoin(response.url, form["action"]), form["fields"]


def settings_for(library, team_id, key_id, private_key, client_id):
    common = dict(
        DEBUG=False,
        SECRET_KEY="siwa-emulator-compatibility-test",
        ALLOWED_HOSTS=["127.0.0.1"],
        ROOT_URLCONF=__name__,
        USE_TZ=True,
        DEFAULT_AUTO_FIELD="django.db.models.AutoField",
        EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend",
        LOGIN_REDIRECT_URL="/whoami/",
        TEMPLATES=[
            {
                "BACKEND": "django.template.backends.django.DjangoTemplates",
                "APP_DIRS": True,
                "OPTIONS": {
                    "context_processors": [
                        "django.template.context_processors.request",
                        "django.contrib.auth.context_processors.auth",
                        "django.contrib.messages.context_processors.messages",
                    ]
                },
            }
        ],
    )
    django_apps = [
        "django.contrib.auth",
        "django.contrib.contenttypes",
        "django.contrib.sessions",
        "django.contrib.messages",
    ]
    middleware = [
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.middleware.csrf.CsrfViewMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
        "django.contrib.messages.middleware.MessageMiddleware",
    ]
    if library == "social-auth":
        # social-auth-core's documented settings for Apple (backends/apple.py).
        return dict(
            common,
            INSTALLED_APPS=django_apps + ["social_django"],
            MIDDLEWARE=middleware,
            AUTHENTICATION_BACKENDS=[
                "social_core.backends.apple.AppleIdAuth",
                "django.contrib.auth.backends.ModelBackend",
            ],
            SOCIAL_AUTH_APPLE_ID_CLIENT=client_id,
            SOCIAL_AUTH_APPLE_ID_TEAM=team_id,
            SOCIAL_AUTH_APPLE_ID_KEY=key_id,
            SOCIAL_AUTH_APPLE_ID_SECRET=private_key,
            SOCIAL_AUTH_APPLE_ID_SCOPE=["name", "email"],
        )
    if library == "allauth":
        # django-allauth's documented app for Apple: client_id, the Key ID as secret, the Team ID as key, the .p8.
        return dict(
            common,
            INSTALLED_APPS=django_apps
            + ["allauth", "allauth.account", "allauth.socialaccount", "allauth.socialaccount.providers.apple"],
            MIDDLEWARE=middleware + ["allauth.account.middleware.AccountMiddleware"],
            AUTHENTICATION_BACKENDS=[
                "django.contrib.auth.backends.ModelBackend",
                "allauth.account.auth_backends.AuthenticationBackend",
            ],
            SOCIALACCOUNT_PROVIDERS={
                "apple": {
                    "APPS": [
                        {
                            "client_id": client_id,
                            "secret": key_id,
                            "key": team_id,
                            "settings": {"certificate_key": private_key},
                        }
                    ],
                    "SCOPE": ["name", "email"],
                }
            },
        )
    raise SystemExit(f"unknown library {library!r}: social-auth or allauth")


def point_at_emulator(library, emulator):
    """The only change from production: the library's constants for Apple's authorize, token and keys URLs."""
    if library == "social-auth":
        from social_core.backends.apple import AppleIdAuth

        AppleIdAuth.AUTHORIZATION_URL = f"{emulator}/auth/authorize"
        AppleIdAuth.ACCESS_TOKEN_URL = f"{emulator}/auth/token"
        AppleIdAuth.JWK_URL = f"{emulator}/auth/keys"
    else:
        from allauth.socialaccount.providers.apple.views import AppleOAuth2Adapter

        AppleOAuth2Adapter.authorize_url = f"{emulator}/auth/authorize"
        AppleOAuth2Adapter.access_token_url = f"{emulator}/auth/token"
        AppleOAuth2Adapter.public_key_url = f"{emulator}/auth/keys"


def site_urls(library):
    from django.http import HttpResponse, JsonResponse
    from django.middleware.csrf import get_token
    from django.urls import include, path

    def whoami(request):
        user = request.user
        if not user.is_authenticated:
            return JsonResponse({"signedIn": False})
        return JsonResponse({"signedIn": True, "username": user.get_username(), "email": user.email})

    def home(request):
        # The site's login page: social-auth-app-django starts a sign-in on a POST with the CSRF token.
        return HttpResponse(
            '<form method="post" action="/login/apple-id/">'
            f'<input type="hidden" name="csrfmiddlewaretoken" value="{get_token(request)}">'
            "<button>Sign in with Apple</button></form>"
        )

    patterns = [path("whoami/", whoami)]
    if library == "social-auth":
        patterns += [path("", home), path("", include("social_django.urls", namespace="social"))]
    else:
        patterns += [path("accounts/", include("allauth.urls"))]
    return patterns


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):
        pass


def serve(port):
    from django.core.handlers.wsgi import WSGIHandler

    server = make_server("127.0.0.1", port, WSGIHandler(), handler_class=QuietHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def sign_in(library, site, emulator, email):
    """The browser: the site's button, the emulator's consent page, Apple's form_post back to the site."""
    browser = requests.Session()
    start = f"{site}/" if library == "social-auth" else f"{site}/accounts/apple/login/"
    action, fields = only_form(browser.get(start, timeout=TIMEOUT))
    to_apple = browser.post(action, data=fields, allow_redirects=False, timeout=TIMEOUT)
    check(to_apple.status_code == 302, f"the site's sign-in answered {to_apple.status_code}: {to_apple.text[:500]}")
    authorize = to_apple.headers["Location"]
    check(authorize.startswith(f"{emulator}/auth/authorize?"), f"the library sent the browser to {authorize}")

    action, fields = only_form(browser.get(authorize, timeout=TIMEOUT))
    fields = [(name, value) for name, value in fields if name not in ("email", "given_name", "family_name")]
    fields += [
        ("email", email),
        ("given_name", "Py"),
        ("family_name", "Library"),
        ("hide_email", "false"),
        ("action", "continue"),
    ]
    callback, posted = only_form(browser.post(action, data=fields, timeout=TIMEOUT))
    names = {name for name, _ in posted}
    # `user` on the first sign-in only, `id_token` when the library asks for it (allauth does, social-auth does not).
    check({"code", "state"} <= names, f"Apple's form_post carries {sorted(names)}")
    landed = browser.post(callback, data=posted, timeout=TIMEOUT)
    check(landed.status_code == 200, f"the callback ended with {landed.status_code}: {landed.text[:800]}")
    check(landed.url == f"{site}/whoami/", f"the callback ended on {landed.url}: {landed.text[:800]}")
    return landed.json()


def stored_account(library):
    """What the library stored: its social account's uid, its user's e-mail and first name."""
    if library == "social-auth":
        from social_django.models import UserSocialAuth

        accounts = list(UserSocialAuth.objects.filter(provider="apple-id"))
        check(len(accounts) == 1, f"{len(accounts)} apple-id accounts")
        account = accounts[0]
    else:
        from allauth.socialaccount.models import SocialAccount

        accounts = list(SocialAccount.objects.filter(provider="apple"))
        check(len(accounts) == 1, f"{len(accounts)} apple accounts")
        account = accounts[0]
    return {"sub": account.uid, "email": account.user.email, "firstName": account.user.first_name}


def main(arguments):
    if len(arguments) != 8:
        raise SystemExit(__doc__)
    library, emulator, port, team_id, key_id, key_file, client_id, email = arguments
    with open(key_file, encoding="utf-8") as file:
        private_key = file.read()
    with tempfile.TemporaryDirectory(prefix="siwa-pylibs-") as folder:
        settings.configure(
            **settings_for(library, team_id, key_id, private_key, client_id),
            DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": f"{folder}/site.sqlite3"}},
        )
        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        urlpatterns.extend(site_urls(library))
        point_at_emulator(library, emulator)

        site = f"http://127.0.0.1:{port}"
        server = serve(int(port))
        try:
            session = sign_in(library, site, emulator, email)
        finally:
            server.shutdown()
            server.server_close()
        account = stored_account(library)
        package = "social-auth-core" if library == "social-auth" else "django-allauth"
        version = importlib.metadata.version(package)
        print(json.dumps({"library": package, "version": version, "session": session, **account}))


if __name__ == "__main__":
    main(sys.argv[1:])

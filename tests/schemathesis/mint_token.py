"""Mints a real access token for schemathesis: signs in through the sign-in and consent
pages as a local-directory user and exchanges the code at the token endpoint.

Usage: mint_token.py BASE_URL CLIENT_ID CLIENT_SECRET USERNAME PASSWORD  (prints the token)

Standard library only, so it runs in any venv.
"""

import base64
import html.parser
import http.cookiejar
import json
import sys
import urllib.error
import urllib.parse
import urllib.request

REDIRECT = "http://127.0.0.1/callback"


class Form(html.parser.HTMLParser):
    """The hidden fields of the first form on a page."""

    def __init__(self):
        super().__init__()
        self.fields = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "input" and a.get("type") == "hidden" and "name" in a:
            self.fields[a["name"]] = a.get("value") or ""


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def main(base, client_id, client_secret, username, password):
    jar = http.cookiejar.CookieJar()
    follow = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    stop = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect)

    def hidden(page):
        f = Form()
        f.feed(page)
        return f.fields

    def post(opener, path, fields):
        data = urllib.parse.urlencode(fields).encode()
        try:
            return opener.open(base + path, data=data, timeout=10)
        except urllib.error.HTTPError as e:  # a 303 is an HTTPError without redirects
            return e

    query = urllib.parse.urlencode(
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "state": "schemathesis",
            "scope": "read write",
        }
    )
    sign_in = follow.open(f"{base}/api/oauth/authorize?{query}", timeout=10).read().decode()
    fields = hidden(sign_in) | {"username": username, "password": password}
    consent = post(follow, "/api/oauth/login", fields).read().decode()
    fields = hidden(consent) | {"decision": "approve"}
    answer = post(stop, "/api/oauth/authorize", fields)
    location = answer.headers.get("Location", "")
    params = urllib.parse.parse_qs(urllib.parse.urlparse(location).query)
    if answer.status != 303 or "code" not in params:
        sys.exit(f"no code from the consent page: {answer.status} {location!r}")
    basic = base64.b64encode(f"{client_id}:{client_secret}".encode()).decode()
    request = urllib.request.Request(
        base + "/api/oauth/access_token",
        data=urllib.parse.urlencode(
            {"grant_type": "authorization_code", "code": params["code"][0], "redirect_uri": REDIRECT}
        ).encode(),
        headers={"Authorization": f"Basic {basic}"},
    )
    token = json.load(urllib.request.urlopen(request, timeout=10))["access_token"]
    print(token)


if __name__ == "__main__":
    main(*sys.argv[1:6])

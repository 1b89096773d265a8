"""Seeds a running medialib for bench/run.sh through its real HTTP API (standard library only).

Usage:
  seed.py setup BASE OUT CLIENT_ID CLIENT_SECRET USERNAME PASSWORD SMALL LARGE
      Signs in through the sign-in and consent pages (access_type=offline), exchanges a code
      for an access token, creates three libraries through describe PUT (one public video;
      SMALL objects; LARGE objects) and writes OUT/state.json (ids, the token, the session
      cookie and the consent form) plus the forms that wrk replays: OUT/login.body and
      OUT/login.cookie, a sign-in form POST (CSRF token bound to its cookie), and
      OUT/consent.body and OUT/consent.cookie, the approved consent form of the signed-in
      session (bench/wrk/mint.lua mints the token_code scenario's codes with it).
  seed.py refresh OUT N FILE
      Mints N codes and exchanges each for tokens; writes one refresh token a line.
  seed.py pages OUT LIBRARY LIMIT FILE
      Walks the catalog listing of LIBRARY in pages of LIMIT (following each page's `next`)
      and writes the path of every page a line, first page first, for wrk to rotate through.

Every call goes over keep-alive connections, several at once (BENCH_SEED_CONNECTIONS,
default 4). Any unexpected status stops the seeder with a non-zero exit.
"""

import base64
import html.parser
import http.client
import json
import os
import sys
import threading
import urllib.parse

REDIRECT = "http://127.0.0.1/callback"
CONNECTIONS = int(os.environ.get("BENCH_SEED_CONNECTIONS", "4"))


class Form(html.parser.HTMLParser):
    """The hidden fields of a page's forms."""

    def __init__(self):
        super().__init__()
        self.fields = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "input" and a.get("type") == "hidden" and "name" in a:
            self.fields[a["name"]] = a.get("value") or ""


def hidden(page):
    f = Form()
    f.feed(page)
    return f.fields


class Client:
    """One keep-alive connection with a tiny cookie store."""

    def __init__(self, base):
        u = urllib.parse.urlparse(base)
        self.host, self.port = u.hostname, u.port
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        self.cookies = {}

    def call(self, method, path, body=None, headers=None, expect=(200,)):
        h = dict(headers or {})
        if self.cookies:
            h["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if isinstance(body, dict):
            body = urllib.parse.urlencode(body)
            h.setdefault("Content-Type", "application/x-www-form-urlencoded")
        for attempt in (0, 1):
            try:
                self.conn.request(method, path, body=body, headers=h)
                r = self.conn.getresponse()
                data = r.read()
                break
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
                if attempt:
                    raise
        for name, value in r.getheaders():
            if name.lower() == "set-cookie":
                k, _, rest = value.partition("=")
                v = rest.split(";", 1)[0]
                if v:
                    self.cookies[k.strip()] = v
                else:
                    self.cookies.pop(k.strip(), None)
        if r.status not in expect:
            sys.exit(f"{method} {path}: {r.status} {data[:300]!r}")
        return r, data


def authorize_query(client_id):
    return urllib.parse.urlencode(
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "state": "bench",
            "scope": "read write",
            "access_type": "offline",
        }
    )


def code_from(r):
    location = r.getheader("Location", "")
    params = urllib.parse.parse_qs(urllib.parse.urlparse(location).query)
    if "code" not in params:
        sys.exit(f"no code in {location!r}")
    return params["code"][0]


def basic(client_id, secret):
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


def exchange(c, state, code):
    _, data = c.call(
        "POST",
        "/api/oauth/access_token",
        {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT},
        {"Authorization": basic(state["client_id"], state["client_secret"])},
    )
    return json.loads(data)


def parallel(total, work):
    """Runs work(client, i) for i in range(total) on CONNECTIONS keep-alive connections."""
    results = [None] * total
    errors = []

    def worker(k):
        c = Client(BASE)
        try:
            for i in range(k, total, CONNECTIONS):
                results[i] = work(c, i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(CONNECTIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        sys.exit(f"seeding failed: {errors[0]}")
    return results


def setup(out, client_id, secret, username, password, small, large):
    c = Client(BASE)
    query = authorize_query(client_id)
    _, page = c.call("GET", f"/api/oauth/authorize?{query}")
    login_fields = hidden(page.decode()) | {"username": username, "password": password}
    login_cookie = dict(c.cookies)
    # The form wrk replays: its CSRF token is bound to the cookie, not single use.
    with open(os.path.join(out, "login.body"), "w") as f:
        f.write(urllib.parse.urlencode(login_fields))
    with open(os.path.join(out, "login.cookie"), "w") as f:
        f.write("; ".join(f"{k}={v}" for k, v in login_cookie.items()))
    c.call("POST", "/api/oauth/login", login_fields, expect=(303,))
    _, page = c.call("GET", f"/api/oauth/authorize?{query}")
    consent = hidden(page.decode()) | {"decision": "approve"}
    r, _ = c.call("POST", "/api/oauth/authorize", consent, expect=(303,))
    with open(os.path.join(out, "consent.body"), "w") as f:
        f.write(urllib.parse.urlencode(consent))
    with open(os.path.join(out, "consent.cookie"), "w") as f:
        f.write("; ".join(f"{k}={v}" for k, v in c.cookies.items()))
    state = {
        "client_id": client_id,
        "client_secret": secret,
        "cookie": "; ".join(f"{k}={v}" for k, v in c.cookies.items()),
        "consent": consent,
    }
    token = exchange(c, state, code_from(r))["access_token"]
    auth = {"Authorization": f"Bearer {token}"}

    def library(title):
        _, data = c.call(
            "PUT", "/api/describe/c/0/o/0", {"type": "catalog", "title": title}, auth, (201,)
        )
        return json.loads(data)["uuid"]

    public_lib = library("bench public")
    _, data = c.call(
        "PUT",
        f"/api/describe/c/{public_lib}/o/0",
        {"type": "video", "title": "Public video", "public": "true", "duration": "90",
         "properties[course]": "BENCH101"},
        auth,
        (201,),
    )
    public_video = json.loads(data)["uuid"]
    libs = {}
    for n in (small, large):
        lib = library(f"bench {n}")
        libs[str(n)] = lib

        def add(cl, i, lib=lib):
            cl.call(
                "PUT",
                f"/api/describe/c/{lib}/o/0",
                {"type": "video", "title": f"Object {i:05d}", "public": "true" if i % 2 else "false",
                 "duration": str(60 + i % 600), "description": "A benchmark object",
                 "properties[course]": f"C{i % 50}"},
                auth,
                (201,),
            )

        parallel(n, add)
    state |= {
        "access_token": token,
        "public_library": public_lib,
        "public_video": public_video,
        "libraries": libs,
    }
    with open(os.path.join(out, "state.json"), "w") as f:
        json.dump(state, f)


def load(out):
    with open(os.path.join(out, "state.json")) as f:
        return json.load(f)


def mint_codes(state, n):
    def one(c, _i):
        c.cookies = dict(kv.split("=", 1) for kv in state["cookie"].split("; "))
        r, _ = c.call("POST", "/api/oauth/authorize", state["consent"], expect=(303,))
        return code_from(r)

    return parallel(n, one)


def refresh(out, n, path):
    state = load(out)
    got = mint_codes(state, n)
    tokens = parallel(n, lambda c, i: exchange(c, state, got[i])["refresh_token"])
    with open(path, "w") as f:
        f.write("\n".join(tokens) + "\n")


def pages(out, library, limit, path):
    state = load(out)
    c = Client(BASE)
    auth = {"Authorization": f"Bearer {state['access_token']}"}
    first = f"/api/catalog/c/{library}/o/0?limit={limit}"
    paths, url, listed = [first], first, 0
    while True:
        _, data = c.call("GET", url, None, auth, (200,))
        answer = json.loads(data)
        listed += len(answer["list"])
        if "next" not in answer:
            break
        # The cursor is safe in a query string as it is (digits, a dot, a uuid).
        url = f"{first}&after={answer['next']}"
        paths.append(url)
        if len(paths) > 100_000:
            sys.exit("the walk does not end")
    with open(path, "w") as f:
        f.write("\n".join(paths) + "\n")
    print(f"{len(paths)} pages of at most {limit}, {listed} members")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "setup":
        BASE = sys.argv[2]
        setup(sys.argv[3], *sys.argv[4:8], int(sys.argv[8]), int(sys.argv[9]))
    else:
        BASE = os.environ["BENCH_BASE"]
        if mode == "pages":
            pages(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
        elif mode == "refresh":
            refresh(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        else:
            sys.exit(f"unknown mode {mode!r}: setup, refresh or pages")

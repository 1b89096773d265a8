#!/usr/bin/env python3
"""medialib's OAuth 2.0 authorization server driven by an independent client: authlib.

authlib's ``OAuth2Session`` builds the authorization URL (PKCE S256, state), exchanges
the code (it checks ``state``), refreshes, revokes and introspects; a plain
``requests.Session`` plays the browser on the sign-in and consent forms and stops at the
redirect to the client (it reads ``Location`` instead of following it).

Runs, each a full authorization:

* ``discovery``: RFC 8414 metadata, validated by authlib, with the expected endpoints.
* ``offline-basic``: a fresh browser signs in, approves ``access_type=offline``; the
  tokens work with ``Bearer`` and ``OAuth`` headers; two refreshes with
  ``client_secret_basic``; reusing the refresh token just before the newest answers
  ``invalid_grant`` and revokes the whole family.
* ``offline-post``: the same browser, still signed in, goes straight to consent; two
  refreshes with ``client_secret_post``; reusing the first refresh token revokes the family.
* ``online``: no ``access_type=offline``: no refresh token; introspection and revocation.
* ``code-replay``: a code redeemed twice answers ``invalid_grant`` and revokes its tokens.
* ``deny``: the user denies: ``error=access_denied`` with the same ``state`` and ``iss``.

Prints one JSON line per check and a final summary line; exits 1 on any failure (the
failing check's line says why), 2 on bad arguments.

Arguments (or the environment variables in brackets): --base [MEDIALIB_E2E_BASE],
--client-id [MEDIALIB_E2E_CLIENT_ID], --client-secret [MEDIALIB_E2E_CLIENT_SECRET],
--redirect-uri [MEDIALIB_E2E_REDIRECT_URI], --username [MEDIALIB_E2E_USERNAME],
--password [MEDIALIB_E2E_PASSWORD].
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import time
import traceback
from html.parser import HTMLParser
from urllib.parse import parse_qs, urljoin, urlsplit

import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session, OAuthError
from authlib.oauth2.rfc8414 import AuthorizationServerMetadata

TIMEOUT = 20
SCOPE = "read write"


class CheckFailed(Exception):
    """A check did not hold; the message says what was expected and what came."""


class Report:
    """Prints one JSON line per check and counts them."""

    def __init__(self) -> None:
        self.passed = 0
        self.failed: list[str] = []
        self.started = time.monotonic()

    def ok(self, run: str, check: str, **detail: object) -> None:
        self.passed += 1
        emit({"run": run, "check": check, "ok": True, **detail})

    def fail(self, run: str, check: str, message: str) -> None:
        self.failed.append(f"{run}: {check}: {message}")
        emit({"run": run, "check": check, "ok": False, "message": message})

    def summary(self) -> int:
        seconds = round(time.monotonic() - self.started, 2)
        emit(
            {
                "summary": True,
                "passed": self.passed,
                "failed": len(self.failed),
                "seconds": seconds,
                "failures": self.failed,
            }
        )
        return 1 if self.failed else 0


def emit(record: dict) -> None:
    print(json.dumps(record, sort_keys=False), flush=True)


class Check:
    """A named check inside a run: ``with Check(report, run, name) as c: c.that(...)``."""

    def __init__(self, report: Report, run: str, name: str) -> None:
        self.report, self.run, self.name = report, run, name
        self.detail: dict[str, object] = {}
        self.started = time.monotonic()

    def that(self, condition: bool, message: str) -> None:
        if not condition:
            raise CheckFailed(message)

    def __enter__(self) -> Check:
        return self

    def __exit__(self, kind, value, tb) -> bool:
        if kind is None:
            ms = round((time.monotonic() - self.started) * 1000)
            self.report.ok(self.run, self.name, ms=ms, **self.detail)
            return False
        if issubclass(kind, CheckFailed):
            self.report.fail(self.run, self.name, str(value))
        elif issubclass(kind, OAuthError):
            self.report.fail(self.run, self.name, f"authlib: {value.error}: {value.description}")
        elif issubclass(kind, requests.RequestException):
            self.report.fail(self.run, self.name, f"HTTP request failed: {value!r}")
        else:
            message = "".join(traceback.format_exception(kind, value, tb)).strip()
            self.report.fail(self.run, self.name, f"unexpected error: {message}")
        # The run stops at its first failed check: the later ones depend on it.
        raise RunAborted from value


class RunAborted(Exception):
    """Raised after a failed check has been reported, to end its run."""


# --- HTML forms --------------------------------------------------------------------------


class Form:
    def __init__(self, attrs: dict[str, str]) -> None:
        self.action = attrs.get("action", "")
        self.method = attrs.get("method", "get").lower()
        self.inputs: list[dict[str, str]] = []
        self.buttons: list[dict[str, str]] = []

    def hidden(self) -> dict[str, str]:
        return {
            i["name"]: i.get("value", "")
            for i in self.inputs
            if i.get("type", "text").lower() == "hidden" and "name" in i
        }

    def input_by_id(self, ident: str) -> dict[str, str] | None:
        return next((i for i in self.inputs if i.get("id") == ident), None)


class FormParser(HTMLParser):
    """Collects every form with its inputs and buttons, and the page's text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.forms: list[Form] = []
        self.text: list[str] = []
        self._form: Form | None = None
        self._button: dict[str, str] | None = None

    def handle_starttag(self, tag: str, attrs_list) -> None:
        attrs = {k: (v if v is not None else "") for k, v in attrs_list}
        if tag == "form":
            self._form = Form(attrs)
            self.forms.append(self._form)
        elif tag == "input" and self._form is not None:
            self._form.inputs.append(attrs)
        elif tag == "button" and self._form is not None:
            self._button = {**attrs, "text": ""}
            self._form.buttons.append(self._button)

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._form = None
        elif tag == "button":
            self._button = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._button is not None:
            self._button["text"] += data


def parse_page(html: str) -> FormParser:
    parser = FormParser()
    parser.feed(html)
    parser.close()
    return parser


def brief(r: requests.Response) -> str:
    """A response's body for a message: an HTML page's text, on one line, cut short."""
    if "html" in r.headers.get("content-type", ""):
        text = "".join(parse_page(r.text).text)
    else:
        text = r.text
    return " ".join(text.split())[:300]


def form_posting_to(page: FormParser, path: str) -> Form | None:
    return next(
        (f for f in page.forms if urlsplit(f.action).path == path and f.method == "post"),
        None,
    )


# --- the flow ------------------------------------------------------------------------------


class Server:
    """What the runs need to know about the server under test."""

    def __init__(self, args: argparse.Namespace, metadata: dict) -> None:
        self.base = args.base.rstrip("/")
        self.metadata = metadata
        self.client_id = args.client_id
        self.client_secret = args.client_secret
        self.redirect_uri = args.redirect_uri
        self.username = args.username
        self.password = args.password
        # A library the user creates with its first token (set by check_token_works).
        self.collection: str | None = None

    @property
    def token_url(self) -> str:
        return self.metadata["token_endpoint"]

    def oauth(self, auth_method: str) -> OAuth2Session:
        return OAuth2Session(
            client_id=self.client_id,
            client_secret=self.client_secret,
            token_endpoint_auth_method=auth_method,
            revocation_endpoint_auth_method=auth_method,
            scope=SCOPE,
            redirect_uri=self.redirect_uri,
            code_challenge_method="S256",
            default_timeout=TIMEOUT,
        )

    def authenticated(self, header: str | None) -> str:
        """``/api/authenticate``'s answer (``"true"``/``"false"``) for an Authorization header."""
        headers = {"Authorization": header} if header else {}
        r = requests.get(f"{self.base}/api/authenticate", headers=headers, timeout=TIMEOUT)
        if r.status_code != 200:
            raise CheckFailed(f"/api/authenticate answered {r.status_code}: {brief(r)}")
        body = r.json()
        if body.get("type") != "authenticate":
            raise CheckFailed(f"/api/authenticate answered {body}")
        return body.get("authenticated")

    def me(self, header: str | None) -> requests.Response:
        """The caller's user record, read through the user's library (``o/0`` is the caller)."""
        headers = {"Authorization": header} if header else {}
        return requests.get(
            f"{self.base}/api/user/c/{self.collection}/o/0", headers=headers, timeout=TIMEOUT
        )

    def create_library(self, header: str) -> requests.Response:
        return requests.put(
            f"{self.base}/api/describe/c/0/o/0/",
            data={"type": "catalog", "title": "authlib e2e library"},
            headers={"Authorization": header},
            timeout=TIMEOUT,
        )

    def raw_refresh(self, refresh_token: str) -> requests.Response:
        return requests.post(
            self.token_url,
            data={"grant_type": "refresh_token", "refresh_token": refresh_token},
            auth=(self.client_id, self.client_secret),
            headers={"Accept": "application/json"},
            timeout=TIMEOUT,
        )


class Browser:
    """A cookie jar that fills in the sign-in and consent forms, as a person would."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.http = requests.Session()
        self.signed_in = False

    def get(self, url: str) -> requests.Response:
        return self.http.get(url, allow_redirects=False, timeout=TIMEOUT)

    def post(self, url: str, data: dict[str, str]) -> requests.Response:
        return self.http.post(url, data=data, allow_redirects=False, timeout=TIMEOUT)

    def to_consent(self, c: Check, authorization_url: str) -> tuple[str, FormParser]:
        """From the authorization URL to the consent page, signing in when asked."""
        r = self.get(authorization_url)
        c.that(r.status_code == 200, f"GET authorize answered {r.status_code}: {brief(r)}")
        page = parse_page(r.text)
        login = form_posting_to(page, "/api/oauth/login")
        if login is None:
            c.that(
                self.signed_in,
                "a fresh browser got no sign-in form (no form posting to /api/oauth/login)",
            )
            c.detail["sign_in"] = "skipped: the browser session is still signed in"
            return r.url, page
        c.that(
            not self.signed_in, "asked to sign in again although the browser session is signed in"
        )
        c.that(
            "medialib_login" in self.http.cookies,
            f"the sign-in page set no medialib_login cookie (cookies: {sorted(self.http.cookies.keys())})",
        )
        c.that(
            r.headers.get("x-frame-options", "").upper() == "DENY",
            "sign-in page without X-Frame-Options: DENY",
        )
        c.that(login.input_by_id("username") is not None, "the sign-in form has no #username input")
        c.that(login.input_by_id("password") is not None, "the sign-in form has no #password input")
        hidden = login.hidden()
        c.that(
            "csrf_token" in hidden and hidden["csrf_token"], "the sign-in form has no csrf_token"
        )
        c.that(
            any(
                b.get("type", "submit") == "submit" and "Sign in" in b["text"]
                for b in login.buttons
            ),
            "the sign-in form has no 'Sign in' submit button",
        )
        data = {
            **hidden,
            login.input_by_id("username").get("name", "username"): self.server.username,
            login.input_by_id("password").get("name", "password"): self.server.password,
        }
        r = self.post(urljoin(r.url, login.action), data)
        c.that(
            r.status_code == 303,
            f"POST /api/oauth/login answered {r.status_code}, not 303: {brief(r)}",
        )
        location = urljoin(r.url, r.headers.get("location", ""))
        c.that(
            urlsplit(location).path == "/api/oauth/authorize",
            f"the sign-in redirected to {location!r}, not /api/oauth/authorize",
        )
        c.that("medialib_session" in self.http.cookies, "signing in set no medialib_session cookie")
        self.signed_in = True
        c.detail["sign_in"] = "signed in"
        r = self.get(location)
        c.that(
            r.status_code == 200,
            f"GET {location} after signing in answered {r.status_code}: {brief(r)}",
        )
        return r.url, parse_page(r.text)

    def decide(self, c: Check, page_url: str, page: FormParser, decision: str) -> str:
        """Submits the consent form with ``decision``; returns the absolute Location."""
        consent = form_posting_to(page, "/api/oauth/authorize")
        c.that(
            consent is not None,
            "no consent form posting to /api/oauth/authorize: "
            + " ".join("".join(page.text).split())[:300],
        )
        hidden = consent.hidden()
        c.that(
            "csrf_token" in hidden and hidden["csrf_token"], "the consent form has no csrf_token"
        )
        values = {b.get("value") for b in consent.buttons if b.get("name") == "decision"}
        c.that({"approve", "deny"} <= values, f"the consent form's decision buttons are {values}")
        r = self.post(urljoin(page_url, consent.action), {**hidden, "decision": decision})
        c.that(
            r.status_code == 303,
            f"POST consent ({decision}) answered {r.status_code}, not 303: {brief(r)}",
        )
        location = r.headers.get("location", "")
        c.that(
            location.split("?", 1)[0] == self.server.redirect_uri,
            f"the consent redirected to {location!r}, not to the redirect_uri {self.server.redirect_uri!r}",
        )
        return location


def callback_params(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query, keep_blank_values=True).items()}


def authorize(
    report: Report,
    run: str,
    server: Server,
    browser: Browser,
    oauth: OAuth2Session,
    offline: bool,
    decision: str = "approve",
) -> tuple[str, str, str]:
    """Authorizes through the pages; returns (callback URL, state, code_verifier)."""
    code_verifier = generate_token(64)
    state = secrets.token_urlsafe(24)
    extra = {"access_type": "offline"} if offline else {}
    url, sent_state = oauth.create_authorization_url(
        server.metadata["authorization_endpoint"], state=state, code_verifier=code_verifier, **extra
    )
    with Check(report, run, "authorization URL (authlib, PKCE S256)") as c:
        q = callback_params(url)
        c.that(sent_state == state, "authlib changed the state")
        c.that(
            q.get("code_challenge_method") == "S256" and q.get("code_challenge"),
            f"no S256 challenge in {url}",
        )
        c.that((q.get("access_type") == "offline") == offline, f"access_type in {url}")
    with Check(report, run, "sign-in and consent pages") as c:
        page_url, page = browser.to_consent(c, url)
        text = " ".join("".join(page.text).split())
        c.that(
            ("offline" in text.lower()) or not offline,
            "the consent page does not mention offline access",
        )
        callback = browser.decide(c, page_url, page, decision)
    with Check(report, run, "callback parameters") as c:
        params = callback_params(callback)
        c.that(params.get("state") == state, f"state {params.get('state')!r} != sent {state!r}")
        c.that(
            params.get("iss") == server.metadata["issuer"],
            f"iss {params.get('iss')!r} != the metadata issuer {server.metadata['issuer']!r} (RFC 9207)",
        )
        if decision == "approve":
            c.that(bool(params.get("code")), f"no code in {callback}")
            c.that("error" not in params, f"error in {callback}")
        else:
            c.that(
                params.get("error") == "access_denied",
                f"error {params.get('error')!r}, not access_denied",
            )
            c.that(bool(params.get("error_description")), "no error_description")
            c.that("code" not in params, f"a code despite the denial: {callback}")
        c.detail["keys"] = sorted(params)
    return callback, state, code_verifier


def exchange(
    report: Report,
    run: str,
    server: Server,
    oauth: OAuth2Session,
    callback: str,
    state: str,
    code_verifier: str,
    offline: bool,
) -> dict:
    with Check(report, run, "code exchange (authlib fetch_token)") as c:
        token = oauth.fetch_token(
            server.token_url,
            authorization_response=callback,
            state=state,
            code_verifier=code_verifier,
        )
        check_token_response(c, token, offline)
        c.detail["auth_method"] = oauth.token_endpoint_auth_method
    return dict(token)


def check_token_response(c: Check, token: dict, offline: bool) -> None:
    c.that(
        str(token.get("token_type", "")).lower() == "bearer",
        f"token_type {token.get('token_type')!r}",
    )
    c.that(bool(token.get("access_token")), "no access_token")
    c.that(
        isinstance(token.get("expires_in"), int) and token["expires_in"] > 0,
        f"expires_in {token.get('expires_in')!r}",
    )
    c.that(
        set(str(token.get("scope", "")).split()) == set(SCOPE.split()),
        f"scope {token.get('scope')!r}",
    )
    if offline:
        c.that(
            bool(token.get("refresh_token")),
            "no refresh_token although access_type=offline was approved",
        )
    else:
        c.that("refresh_token" not in token, "a refresh_token without access_type=offline")


def check_token_works(
    report: Report, run: str, server: Server, access_token: str, what: str
) -> None:
    if server.collection is None:
        with Check(
            report, run, f"a write call with the {what} (PUT /api/describe: a library)"
        ) as c:
            r = server.create_library(f"Bearer {access_token}")
            c.that(r.status_code == 201, f"creating a library answered {r.status_code}: {brief(r)}")
            server.collection = r.json().get("uuid")
            c.that(bool(server.collection), f"no uuid in {brief(r)}")
            r = server.me(None)
            c.that(
                r.status_code == 401,
                f"/api/user/c/{{lib}}/o/0 without a token answered {r.status_code}, not 401",
            )
            c.that(
                server.authenticated(None) == "false",
                "/api/authenticate without a token is not false",
            )
    with Check(report, run, f"API with the {what} (Bearer and OAuth headers)") as c:
        for scheme in ("Bearer", "OAuth"):
            header = f"{scheme} {access_token}"
            got = server.authenticated(header)
            c.that(
                got == "true",
                f"/api/authenticate with '{scheme} <token>' says authenticated={got!r}",
            )
            r = server.me(header)
            c.that(
                r.status_code == 200,
                f"/api/user/c/{{lib}}/o/0 with '{scheme} <token>' answered {r.status_code}: {brief(r)}",
            )
            c.that(
                r.json().get("uniqueId") == server.username,
                f"/api/user/c/{{lib}}/o/0 is not the signed-in user: {brief(r)}",
            )


def check_token_dead(c: Check, server: Server, access_token: str, what: str) -> None:
    got = server.authenticated(f"Bearer {access_token}")
    c.that(got == "false", f"the {what} still authenticates (authenticated={got!r})")
    r = server.me(f"Bearer {access_token}")
    c.that(
        r.status_code == 401,
        f"/api/user/c/{{lib}}/o/0 with the {what} answered {r.status_code}, not 401",
    )


def expect_invalid_grant(c: Check, r: requests.Response, what: str) -> None:
    try:
        body = r.json()
    except ValueError:
        body = {}
    c.that(
        r.status_code == 400 and body.get("error") == "invalid_grant",
        f"{what}: expected 400 invalid_grant, got {r.status_code} {brief(r)}",
    )
    c.that(
        bool(body.get("error_description")) and bool(body.get("message")),
        f"{what}: no error_description/message: {body}",
    )


# --- runs ------------------------------------------------------------------------------------


def run_discovery(report: Report, args: argparse.Namespace) -> dict:
    base = args.base.rstrip("/")
    with Check(report, "discovery", "RFC 8414 metadata") as c:
        r = requests.get(f"{base}/.well-known/oauth-authorization-server", timeout=TIMEOUT)
        c.that(r.status_code == 200, f"metadata answered {r.status_code}: {brief(r)}")
        metadata = r.json()
        AuthorizationServerMetadata(metadata).validate()
        expected = {
            "authorization_endpoint": f"{base}/api/oauth/authorize",
            "token_endpoint": f"{base}/api/oauth/access_token",
            "revocation_endpoint": f"{base}/api/oauth/revoke",
        }
        for key, want in expected.items():
            c.that(metadata.get(key) == want, f"{key} is {metadata.get(key)!r}, not {want!r}")
        c.that(bool(metadata.get("introspection_endpoint")), "no introspection_endpoint")
        c.that(
            metadata.get("authorization_response_iss_parameter_supported") is True,
            "authorization_response_iss_parameter_supported is not true",
        )
        c.that(
            "S256" in metadata.get("code_challenge_methods_supported", []),
            "S256 is not a supported PKCE method",
        )
        c.detail["issuer"] = metadata.get("issuer")
    return metadata


def run_offline(
    report: Report, run: str, server: Server, browser: Browser, auth_method: str, reuse: str
) -> None:
    """Authorize offline, refresh twice, then reuse an old refresh token (``reuse``:
    ``previous`` or ``first``) and check the family is revoked."""
    oauth = server.oauth(auth_method)
    callback, state, verifier = authorize(report, run, server, browser, oauth, offline=True)
    token = exchange(report, run, server, oauth, callback, state, verifier, offline=True)
    check_token_works(report, run, server, token["access_token"], "first access token")
    with Check(report, run, "token info (GET /api/oauth/authorize/)") as c:
        r = requests.get(
            f"{server.base}/api/oauth/authorize/",
            headers={"Authorization": f"Bearer {token['access_token']}"},
            timeout=TIMEOUT,
        )
        c.that(r.status_code == 200, f"token info answered {r.status_code}: {brief(r)}")
        info = r.json()
        c.that(info.get("authenticated") == "true", f"token info: {info}")
        c.that(
            info.get("client_id") == server.client_id,
            f"token info names client {info.get('client_id')!r}",
        )
        c.that(
            set(str(info.get("scope", "")).split()) == set(SCOPE.split()),
            f"token info scope {info.get('scope')!r}",
        )

    refresh_tokens = [token["refresh_token"]]
    access_tokens = [token["access_token"]]
    for n in (1, 2):
        with Check(report, run, f"refresh {n} (authlib refresh_token, {auth_method})") as c:
            new = oauth.refresh_token(server.token_url, refresh_token=refresh_tokens[-1])
            check_token_response(c, new, offline=True)
            c.that(new["refresh_token"] != refresh_tokens[-1], "the refresh token was not rotated")
            c.that(new["access_token"] not in access_tokens, "the access token was not renewed")
            refresh_tokens.append(new["refresh_token"])
            access_tokens.append(new["access_token"])
        check_token_works(report, run, server, access_tokens[-1], f"access token of refresh {n}")

    old = refresh_tokens[-2] if reuse == "previous" else refresh_tokens[0]
    with Check(report, run, f"reuse of the {reuse} refresh token") as c:
        expect_invalid_grant(c, server.raw_refresh(old), f"the {reuse} (used) refresh token")
    with Check(report, run, "the whole family is revoked after the reuse") as c:
        check_token_dead(c, server, access_tokens[-1], "newest access token")
        expect_invalid_grant(c, server.raw_refresh(refresh_tokens[-1]), "the newest refresh token")


def run_online(report: Report, server: Server, browser: Browser) -> None:
    run = "online"
    oauth = server.oauth("client_secret_basic")
    callback, state, verifier = authorize(report, run, server, browser, oauth, offline=False)
    token = exchange(report, run, server, oauth, callback, state, verifier, offline=False)
    check_token_works(report, run, server, token["access_token"], "access token")
    introspect = server.metadata["introspection_endpoint"]
    with Check(report, run, "introspection of a live token (authlib introspect_token)") as c:
        r = oauth.introspect_token(
            introspect, token=token["access_token"], token_type_hint="access_token"
        )
        c.that(r.status_code == 200, f"introspection answered {r.status_code}: {brief(r)}")
        body = r.json()
        c.that(body.get("active") is True, f"introspection: {body}")
        c.that(
            body.get("client_id") in (None, server.client_id),
            f"introspection names client {body.get('client_id')!r}",
        )
    with Check(report, run, "revocation (authlib revoke_token)") as c:
        r = oauth.revoke_token(
            server.metadata["revocation_endpoint"],
            token=token["access_token"],
            token_type_hint="access_token",
        )
        c.that(r.status_code == 200, f"revocation answered {r.status_code}: {brief(r)}")
        check_token_dead(c, server, token["access_token"], "revoked access token")
        r = oauth.introspect_token(
            introspect, token=token["access_token"], token_type_hint="access_token"
        )
        c.that(
            r.status_code == 200 and r.json().get("active") is False,
            f"introspection of the revoked token: {r.status_code} {brief(r)}",
        )


def run_code_replay(report: Report, server: Server, browser: Browser) -> None:
    run = "code-replay"
    oauth = server.oauth("client_secret_post")
    callback, state, verifier = authorize(report, run, server, browser, oauth, offline=True)
    token = exchange(report, run, server, oauth, callback, state, verifier, offline=True)
    check_token_works(report, run, server, token["access_token"], "access token")
    with Check(report, run, "a code redeemed twice") as c:
        r = requests.post(
            server.token_url,
            data={
                "grant_type": "authorization_code",
                "code": callback_params(callback)["code"],
                "redirect_uri": server.redirect_uri,
                "code_verifier": verifier,
                "client_id": server.client_id,
                "client_secret": server.client_secret,
            },
            timeout=TIMEOUT,
        )
        expect_invalid_grant(c, r, "the second redemption")
        check_token_dead(c, server, token["access_token"], "access token of the replayed code")
        expect_invalid_grant(
            c, server.raw_refresh(token["refresh_token"]), "the refresh token of the replayed code"
        )


def run_deny(report: Report, server: Server, browser: Browser) -> None:
    oauth = server.oauth("client_secret_basic")
    authorize(report, "deny", server, browser, oauth, offline=True, decision="deny")


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    env = os.environ.get
    p.add_argument("--base", default=env("MEDIALIB_E2E_BASE"), help="http://127.0.0.1:PORT")
    p.add_argument("--client-id", default=env("MEDIALIB_E2E_CLIENT_ID"))
    p.add_argument("--client-secret", default=env("MEDIALIB_E2E_CLIENT_SECRET"))
    p.add_argument("--redirect-uri", default=env("MEDIALIB_E2E_REDIRECT_URI"))
    p.add_argument("--username", default=env("MEDIALIB_E2E_USERNAME"))
    p.add_argument("--password", default=env("MEDIALIB_E2E_PASSWORD"))
    args = p.parse_args(argv)
    missing = [k for k, v in vars(args).items() if not v]
    if missing:
        p.error("missing: " + ", ".join("--" + k.replace("_", "-") for k in missing))
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    report = Report()
    try:
        metadata = run_discovery(report, args)
    except RunAborted:
        return report.summary()
    server = Server(args, metadata)
    browser = Browser(server)
    runs = [
        lambda: run_offline(
            report, "offline-basic", server, browser, "client_secret_basic", "previous"
        ),
        lambda: run_offline(report, "offline-post", server, browser, "client_secret_post", "first"),
        lambda: run_online(report, server, browser),
        lambda: run_code_replay(report, server, browser),
        lambda: run_deny(report, server, browser),
    ]
    for run in runs:
        try:
            run()
        except RunAborted:
            pass
    return report.summary()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

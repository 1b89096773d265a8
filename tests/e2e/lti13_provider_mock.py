"""An LTI 1.3 resource-link launch from PyPI `lti-provider-mock`, a second platform written
independently of medialib and of lti1p3platform, driven over HTTP as a browser would (two
cookie jars: the mock's and medialib's). Run by tests/integration/lti13.rs, which starts the
mock with uvicorn and registers it.

    python lti13_provider_mock.py --mock URL --user ID --course ID

The mock's cookies are kept as sent, byte for byte, as a browser keeps them: `requests`
unquotes a quoted cookie value, which breaks the signature of the mock's cookies.

Prints one JSON line: {"login": status, "authorize": status, "launch": status,
"session": whether medialib set its session cookie, "page": the launch's page text,
"replay": the status and page of the same form posted again}; on a failure {"error"} and
exit 1.
"""

import argparse
import html
import json
import re
import sys

import requests

args = argparse.ArgumentParser()
args.add_argument("--mock", required=True)
args.add_argument("--user", required=True)
args.add_argument("--course", required=True)
opts = args.parse_args()


def form_of(page: str) -> tuple:
    """The action and the hidden fields of the page's form."""
    action = html.unescape(re.search(r'<form[^>]*action="([^"]*)"', page).group(1))
    fields = {
        html.unescape(name): html.unescape(value)
        for name, value in re.findall(
            r'<input[^>]*name="([^"]*)"[^>]*value="([^"]*)"', page, flags=re.S
        )
    }
    return action, fields


class RawCookies:
    """Cookies as a browser keeps them: each Set-Cookie's value verbatim."""

    def __init__(self) -> None:
        self.jar: dict = {}

    def take(self, response: requests.Response) -> requests.Response:
        for header in response.raw.headers.getlist("set-cookie"):
            name, _, rest = header.partition("=")
            value = rest.split(";", 1)[0]
            if "Max-Age=0" in header or value == '""':
                self.jar.pop(name, None)
            else:
                self.jar[name] = value
        return response

    def header(self) -> dict:
        return {"Cookie": "; ".join(f"{k}={v}" for k, v in self.jar.items())}


def text(page: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", page).split())


try:
    cookies = RawCookies()
    tool = requests.Session()
    mock_url = opts.mock.rstrip("/")

    def at_mock(method: str, url: str, **kw) -> requests.Response:
        r = requests.request(method, url, headers=cookies.header(), allow_redirects=False, **kw)
        return cookies.take(r)

    at_mock("POST", f"{mock_url}/login", data={"userid": opts.user})
    start = at_mock("GET", f"{mock_url}/courses/{opts.course}")
    start.raise_for_status()
    # The mock's page posts the login initiation to medialib.
    action, fields = form_of(start.text)
    login = tool.post(action, data=fields, allow_redirects=False)
    # medialib sends the browser to the mock's authorization endpoint.
    authorize = at_mock("GET", login.headers["location"])
    authorize.raise_for_status()
    # Whose page posts the id_token to medialib.
    action, fields = form_of(authorize.text)
    launch = tool.post(action, data=fields, allow_redirects=False)
    replay = tool.post(action, data=fields, allow_redirects=False)
    print(
        json.dumps(
            {
                "login": login.status_code,
                "authorize": authorize.status_code,
                "launch": launch.status_code,
                "session": "medialib_session" in launch.cookies,
                "page": text(launch.text),
                "replay": {"status": replay.status_code, "page": text(replay.text)},
            }
        )
    )
except Exception as e:  # noqa: BLE001 - the test shows whatever went wrong
    print(json.dumps({"error": repr(e)}))
    sys.exit(1)

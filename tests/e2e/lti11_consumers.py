#!/usr/bin/env python3
"""medialib's LTI 1.1 endpoints launched by independent consumers.

* PyPI ``lti``'s ``ToolConsumer`` (oauthlib underneath) signs a teacher's Content-Item
  selection request to ``/api/ltix/`` and a learner's resource launch with the custom
  parameter ``media``; the learner's session then opens the player. Posting the same
  signed launch twice is refused as a replay.
* A replay of Warpwire's Moodle plugin (``local/warpwire/index.php``): its parameters as
  it sends them (no ``resource_link_id``, ``context_label`` only, ``oauth_timestamp`` 600 s
  ahead, ``oauth_callback=about:blank``), signed as its ``build_signature`` does (the base
  URI is ``scheme://host/path``: the port is dropped), posted to ``/api/lti/``; the picker's
  link goes back to the plugin's return page with ``jsonData``.
* oauthlib signing with a timestamp an hour old, and the plugin's request with a wrong
  secret: both refused with a page that says why.

Prints one JSON line per check and a final summary line; exits 1 on any failure.

Arguments: --base URL --key KEY --secret SECRET --media UUID (a video in the course
library of context ``course-7``, which a teacher's launch already made) --permlink URL (its
permLink, which the activity module's launch names as ``returnContext``).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import sys
import time
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import requests
from lti import ToolConsumer
from oauthlib.oauth1 import SIGNATURE_TYPE_BODY, Client

TIMEOUT = 20
WARPWIRE_RETURN = "https://moodle.example.edu/local/warpwire/html/warpwire.html"

passed = 0
failures: list[str] = []


def check(name: str, condition: bool, detail: str = "") -> None:
    global passed
    if condition:
        passed += 1
    else:
        failures.append(f"{name}: {detail}")
    print(json.dumps({"check": name, "ok": condition, "detail": detail[:500]}), flush=True)


def course(user: str, roles: str, message: str) -> dict[str, str]:
    return {
        "lti_message_type": message,
        "lti_version": "LTI-1p0",
        "user_id": user,
        "lis_person_sourcedid": user,
        "lis_person_name_given": "Grace",
        "lis_person_name_family": "Hopper",
        "roles": roles,
        "context_id": "course-7",
        "context_title": "Biology 101",
        "tool_consumer_instance_guid": "lms.example.edu",
    }


def post(url: str, data: dict[str, str]) -> requests.Response:
    return requests.post(url, data=data, allow_redirects=False, timeout=TIMEOUT)


def tool_consumer(args: argparse.Namespace) -> None:
    url = f"{args.base}/api/ltix/"
    params = course("tc-teacher", "Instructor", "ContentItemSelectionRequest")
    params["content_item_return_url"] = "https://lms.example.edu/return?course=7"
    params["accept_media_types"] = "application/vnd.ims.lti.v1.ltilink"
    # ToolConsumer will not sign without one, though a selection request needs none.
    params["resource_link_id"] = "selection"
    data = ToolConsumer(args.key, args.secret, params=params, launch_url=url).generate_launch_data()
    picker = post(url, data)
    check("tool-consumer picker", picker.status_code == 200 and "Pick media" in picker.text,
          f"{picker.status_code} {picker.text[:300]}")
    check("tool-consumer picker starts a session", "medialib_session" in picker.cookies,
          str(picker.headers.get("set-cookie")))

    params = course("tc-student", "urn:lti:role:ims/lis/Learner", "basic-lti-launch-request")
    params["resource_link_id"] = "link-1"
    params["custom_media"] = args.media
    data = ToolConsumer(args.key, args.secret, params=params, launch_url=url).generate_launch_data()
    launched = post(url, data)
    location = launched.headers.get("location", "")
    check("tool-consumer resource launch", launched.status_code == 303 and location.startswith("/m/"),
          f"{launched.status_code} {location}")
    player = requests.get(f"{args.base}{location}", cookies=launched.cookies, timeout=TIMEOUT)
    check("the learner's session opens the player", player.status_code == 200,
          f"{player.status_code}")
    again = post(url, data)
    check("a replayed launch is refused", again.status_code == 403 and "sent before" in again.text,
          f"{again.status_code} {again.text[:300]}")

    client = Client(args.key, client_secret=args.secret, signature_type=SIGNATURE_TYPE_BODY,
                    timestamp=str(int(time.time()) - 3600))
    body = urlencode(params)
    _, _, signed = client.sign(url, http_method="POST", body=body,
                               headers={"Content-Type": "application/x-www-form-urlencoded"})
    old = requests.post(url, data=signed, allow_redirects=False, timeout=TIMEOUT,
                        headers={"Content-Type": "application/x-www-form-urlencoded"})
    check("a launch signed an hour ago is refused",
          old.status_code == 403 and "from this server" in old.text,
          f"{old.status_code} {old.text[:300]}")


def warpwire_signature(url: str, params: dict[str, str], secret: str) -> str:
    """The Moodle plugin's build_signature, step by step."""
    def encode(value: str) -> str:
        return quote(value, safe="-._~")

    parts = urlsplit(url)
    normalized = f"{parts.scheme}://{parts.hostname}{parts.path}"
    pairs = sorted((encode(k), encode(v)) for k, v in params.items() if k != "oauth_signature")
    query = "&".join(f"{k}={v}" for k, v in pairs)
    base = "&".join(encode(p) for p in ("POST", normalized, query))
    key = f"{encode(secret)}&"
    digest = hmac.new(key.encode(), base.encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


def warpwire(args: argparse.Namespace) -> None:
    url = f"{args.base}/api/lti/"
    params = {
        "oauth_version": "1.0",
        "oauth_nonce": hashlib.md5(str(time.time_ns()).encode()).hexdigest(),
        "oauth_timestamp": str(int(time.time()) + 600),
        "oauth_consumer_key": args.key,
        "user_id": "12",
        "lis_person_sourcedid": "ww-teacher",
        "roles": "Instructor",
        "context_id": "course-7",
        "context_label": "BIO101",
        "context_type": "CourseSection",
        "lis_course_section_sourcedid": "",
        "lis_person_name_given": "Ada",
        "lis_person_name_family": "Lovelace",
        "lis_person_name_full": "Ada Lovelace",
        "ext_user_username": "ww-teacher",
        "lis_person_contact_email_primary": "ada@example.edu",
        "launch_presentation_locale": "en",
        "ext_lms": "moodle-2",
        "tool_consumer_info_product_family_code": "moodle",
        "tool_consumer_info_version": "2024042200",
        "oauth_callback": "about:blank",
        "lti_version": "LTI-1p0",
        "lti_message_type": "ContentItemSelectionRequest",
        "tool_consumer_instance_name": "Example University",
        "tool_consumer_instance_description": "Example University Moodle",
        "launch_presentation_return_url": WARPWIRE_RETURN,
        "oauth_signature_method": "HMAC-SHA1",
        "custom_context_id": "7",
        "custom_plugin_info": "",
    }
    signed = dict(params, oauth_signature=warpwire_signature(url, params, args.secret))
    picker = post(url, signed)
    check("warpwire plugin's launch opens the picker", picker.status_code == 200,
          f"{picker.status_code} {picker.text[:300]}")
    links = [part.split('"', 1)[0].replace("&amp;", "&")
             for part in picker.text.split('href="')[1:]
             if part.startswith(WARPWIRE_RETURN)]
    check("the picker offers the course's video", len(links) == 1, str(links))
    if links:
        data = json.loads(parse_qs(urlsplit(links[0]).query)["jsonData"][0])
        src = data[0]["_ww_src"] if data else ""
        check("jsonData is what the plugin reads",
              isinstance(data, list) and len(data) == 1 and "_ww_img" in data[0]
              and src.startswith(f"[warpwire:{args.base}/w/") and src.endswith("?width=640&height=360]"),
              json.dumps(data))

    # The activity module (mod/warpwire) sends everyone, students too, a selection request
    # with the teacher's chosen asset as returnContext: the student lands on it.
    student = dict(params, lis_person_sourcedid="ww-student", ext_user_username="ww-student",
                   user_id="13", roles="Learner", returnContext=args.permlink,
                   oauth_nonce=hashlib.md5(b"student").hexdigest())
    student["oauth_signature"] = warpwire_signature(url, student, args.secret)
    landed = post(url, student)
    wanted = urlsplit(args.permlink).path
    check("the activity module's returnContext leads a student to the asset",
          landed.status_code == 303 and landed.headers.get("location") == wanted,
          f"{landed.status_code} {landed.headers.get('location')} {landed.text[:200]}")

    params["oauth_nonce"] = hashlib.md5(b"another").hexdigest()
    forged = dict(params, oauth_signature=warpwire_signature(url, params, args.secret + "x"))
    refused = post(url, forged)
    check("a wrong secret is refused", refused.status_code == 403 and "signature" in refused.text,
          f"{refused.status_code} {refused.text[:300]}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    for name in ("--base", "--key", "--secret", "--media", "--permlink"):
        parser.add_argument(name, required=True)
    args = parser.parse_args(argv)
    args.base = args.base.rstrip("/")
    for run in (tool_consumer, warpwire):
        try:
            run(args)
        except Exception as e:  # reported as a failed check, with the run's name
            check(run.__name__, False, repr(e))
    print(json.dumps({"summary": True, "passed": passed, "failures": failures}), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

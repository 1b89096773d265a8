"""An LTI 1.3 platform for the tests: PyPI `lti1p3platform` (a library, not a server) served
with fastapi and uvicorn on 127.0.0.1, as a course system would show medialib.

    python lti13_platform.py --port P --tool URL --client-id ID --deployment-id D

Its issuer is http://127.0.0.1:P. Pages and endpoints:

- GET /course?user=U&kind=deep|resource: the course page, with medialib in an iframe. The
  frame starts the OIDC third-party-initiated login at medialib (the library's
  OIDCLoginAbstract); `kind=deep` asks for Deep Linking, `resource` launches the last link
  picked (its custom parameter `media`).
- GET /authorize: the OIDC authorization endpoint medialib sends the browser to. The library
  checks the request (client id, state, nonce, redirect URI), signs the id_token with the
  platform's key and posts it to medialib in an auto-submitting form. `alice` is an
  Instructor, everyone else a Learner; `preferred_username` is the user.
- POST /deep-link-return: the Deep Linking return. The library fetches medialib's JWKS and
  verifies the response (RS256, its kid, expiry) before the link is kept.
- GET /links: the links kept, as JSON. GET /jwks: the platform's public key.

It prints one line, {"ready": issuer}, once it listens.
"""

import argparse
import asyncio
import json
import sys
import typing as t

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from jwcrypto.jwk import JWK
from lti1p3platform.framework.templates import template
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration

INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
TEACHERS = {"alice"}

args = argparse.ArgumentParser()
args.add_argument("--port", type=int, required=True)
args.add_argument("--tool", required=True)
args.add_argument("--client-id", required=True)
args.add_argument("--deployment-id", required=True)
opts = args.parse_args()

ISSUER = f"http://127.0.0.1:{opts.port}"
TOOL = opts.tool.rstrip("/")
key = JWK.generate(kty="RSA", size=2048)
PRIVATE = key.export_to_pem(private_key=True, password=None).decode()
PUBLIC = key.export_to_pem().decode()

# The links the Deep Linking returns made, newest last.
links: t.List[t.Dict[str, t.Any]] = []


class Platform(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, **kwargs: t.Any) -> None:
        self._registration = (
            Registration()
            .set_iss(ISSUER)
            .set_client_id(opts.client_id)
            .set_deployment_id(opts.deployment_id)
            .set_oidc_login_url(f"{TOOL}/api/lti/login")
            .set_launch_url(f"{TOOL}/api/lti/launch")
            .set_deeplink_launch_url(f"{TOOL}/api/lti/launch")
            .set_tool_key_set_url(f"{TOOL}/api/lti/jwks")
            .set_platform_public_key(PUBLIC)
            .set_platform_private_key(PRIVATE)
        )

    def get_registration_by_params(self, **kwargs: t.Any) -> Registration:
        return self._registration


class Login(OIDCLoginAbstract):
    def set_lti_message_hint(self, **kwargs: t.Any) -> None:
        self._lti_message_hint = kwargs["hint"]

    def get_redirect(self, url: str) -> RedirectResponse:
        return RedirectResponse(url, status_code=302)


class Launch(LTIAdvantageMessageLaunchAbstract):
    def get_preflight_response(self) -> t.Dict[str, t.Any]:
        return dict(self._request.query_params)

    def prepare_launch(self, preflight_response: t.Dict[str, t.Any]) -> None:
        user = preflight_response["login_hint"]
        kind = preflight_response.get("lti_message_hint", "resource")
        self.set_user_data(
            user,
            [INSTRUCTOR if user in TEACHERS else LEARNER],
            full_name=user.title(),
            email_address=f"{user}@example.edu",
            preferred_username=user,
        )
        self.set_extra_claims({"given_name": user.title(), "family_name": "Tester"})
        self.set_launch_context_claim(
            "bio-101", context_title="Biology 101", context_label="BIO101"
        )
        self.set_resource_link_claim("link-1", title="The lecture")
        if kind == "deep":
            self.set_dl(f"{ISSUER}/deep-link-return", accept_types={"ltiResourceLink"})
        elif links:
            self.set_custom_parameters_claim(links[-1].get("custom", {}))

    def render_launch_form(self, launch_data: t.Dict[str, t.Any], **kwargs: t.Any) -> Response:
        return HTMLResponse(template.render(launch_data))


app = FastAPI()


@app.get("/jwks")
def jwks() -> JSONResponse:
    platform = Platform()
    platform.get_registration()
    return JSONResponse(platform.get_jwks())


@app.get("/course", response_class=HTMLResponse)
def course(user: str, kind: str = "resource") -> str:
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Biology 101</title></head>
<body><h1>Biology 101</h1>
<iframe id="tool" title="medialib" width="960" height="640" allow="autoplay; fullscreen"
  src="/start?user={user}&kind={kind}"></iframe>
</body></html>"""


@app.get("/start")
def start(request: Request, user: str, kind: str = "resource") -> Response:
    platform = Platform()
    login = Login(request, platform)
    login.set_lti_message_hint(hint=kind)
    if kind == "deep":
        login.set_deeplinking_launch_url()
    return login.initiate_login(user)


@app.get("/authorize")
def authorize(request: Request) -> Response:
    platform = Platform()
    launch = Launch(request, platform)
    return launch.lti_launch()


@app.post("/deep-link-return", response_class=HTMLResponse)
async def deep_link_return(request: Request) -> str:
    form = dict(await request.form())
    platform = Platform()
    platform.get_registration()
    items = platform.validate_deeplinking_resp(form)
    links.extend(items)
    titles = ", ".join(item.get("title", "") for item in items)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Linked</title></head>
<body><p id="linked">Linked: {titles}</p></body></html>"""


@app.get("/links")
def get_links() -> JSONResponse:
    return JSONResponse(links)


async def main() -> None:
    config = uvicorn.Config(app, host="127.0.0.1", port=opts.port, log_level="warning")
    server = uvicorn.Server(config)
    serving = asyncio.ensure_future(server.serve())
    while not server.started:
        if serving.done():
            serving.result()
            return
        await asyncio.sleep(0.05)
    print(json.dumps({"ready": ISSUER}), flush=True)
    await serving


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)

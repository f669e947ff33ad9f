"""A minimal OAuth 2.0 authorization server for tests: authorization code + PKCE (S256), on 127.0.0.1.

It signs nobody in: `/authorize` approves at once as `user` (or denies, when told to) and
redirects back; `/token` checks the client's Basic credentials, the exact redirect URI, the
single-use code and the PKCE verifier (authlib's S256 comparison), and records every request.
"""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from authlib.oauth2.rfc7636.challenge import compare_s256_code_challenge
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route


@dataclass
class LocalAuthorizationServer:
    client_id: str = "mcp-elicit-test"
    client_secret: str = "cs-test-3c1d"
    user: str = "alice@provider.test"
    deny: bool = False
    fail_token: bool = False
    issuer: str = ""  # set once served (RFC 9207 `iss` on the redirect)
    redirect_uri: str = ""  # the one registered redirect URI; set once the MCP server runs
    codes: dict[str, dict[str, Any]] = field(default_factory=dict)
    authorize_requests: list[dict[str, str]] = field(default_factory=list)
    token_requests: list[dict[str, Any]] = field(default_factory=list)
    issued: list[str] = field(default_factory=list)

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/authorize", self.authorize, methods=["GET"]),
                Route("/token", self.token, methods=["POST"]),
            ]
        )

    async def authorize(self, request: Request) -> Response:
        q = dict(request.query_params)
        self.authorize_requests.append(q)
        ok = (
            q.get("response_type") == "code"
            and q.get("client_id") == self.client_id
            and q.get("redirect_uri") == self.redirect_uri
            and q.get("code_challenge_method") == "S256"
            and bool(q.get("code_challenge"))
        )
        if not ok:
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        if self.deny:
            back = {"error": "access_denied", "state": q.get("state", ""), "iss": self.issuer}
            return RedirectResponse(f"{self.redirect_uri}?{urlencode(back)}", status_code=302)
        code = secrets.token_urlsafe(16)
        self.codes[code] = {"challenge": q["code_challenge"], "redirect_uri": q["redirect_uri"]}
        back = {"code": code, "state": q.get("state", ""), "iss": self.issuer}
        return RedirectResponse(f"{self.redirect_uri}?{urlencode(back)}", status_code=302)

    async def token(self, request: Request) -> Response:
        form = dict(await request.form())
        self.token_requests.append({"headers": dict(request.headers), "form": form})
        expected = base64.b64encode(f"{self.client_id}:{self.client_secret}".encode()).decode()
        if request.headers.get("authorization") != f"Basic {expected}":
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        grant = self.codes.pop(str(form.get("code", "")), None)  # single use
        if (
            self.fail_token
            or grant is None
            or form.get("grant_type") != "authorization_code"
            or form.get("redirect_uri") != grant["redirect_uri"]
            or not compare_s256_code_challenge(str(form.get("code_verifier", "")), grant["challenge"])
        ):
            return JSONResponse({"error": "invalid_grant"}, status_code=400)
        access = f"at-{secrets.token_urlsafe(16)}"
        self.issued.append(access)
        return JSONResponse(
            {"access_token": access, "token_type": "Bearer", "expires_in": 3600, "refresh_token": "rt-1"}
        )

"""Blocking HTTP over urllib, run off the event loop by the async API."""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import urllib.error
import urllib.parse
import urllib.request

# agent-env hands a verifier the env's credentials in its environment: the verifier role's credential
# for MCP (AGENTENV_MCP_AUTHORIZATION) and the gateway's control token for the data plane and the
# control routes (AGENTENV_CONTROL_AUTHORIZATION). They are sent only to the env the verifier grades
# (the origin of AGENTENV_MCP_URL), never to another host, and only when the caller set no
# Authorization itself.
MCP_AUTH = "mcp"
CONTROL_AUTH = "control"
_AUTH_ENV = {MCP_AUTH: "AGENTENV_MCP_AUTHORIZATION", CONTROL_AUTH: "AGENTENV_CONTROL_AUTHORIZATION"}


def _origin(url: str):
    u = urllib.parse.urlsplit(url)
    return (u.scheme.lower(), u.hostname, u.port or (443 if u.scheme.lower() == "https" else 80))


def with_auth(url: str, headers: dict, kind: str) -> dict:
    """headers plus the env's credential of kind when url is on the env's origin."""
    if any(k.lower() == "authorization" for k in headers):
        return headers
    value = os.environ.get(_AUTH_ENV[kind], "")
    env_url = os.environ.get("AGENTENV_MCP_URL", "")
    if not value or not env_url or _origin(url) != _origin(env_url):
        return headers
    return {**headers, "Authorization": value}


class HTTPStatusError(RuntimeError):
    """A non-2xx answer; `status_code` and `body` carry it."""

    def __init__(self, method: str, url: str, status_code: int, body: str):
        super().__init__(f"{method} {url}: HTTP {status_code}: {body[:500]}")
        self.status_code = status_code
        self.body = body


class Response:
    def __init__(self, status: int, headers, body: bytes):
        self.status_code = status
        self.headers = headers
        self.content = body

    def json(self):
        return json.loads(self.content)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: urllib would send the Authorization header on to wherever one points."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def open_url(req, timeout: float, ctx=None):
    handlers = [_NoRedirect()]
    if ctx is not None:
        handlers.append(urllib.request.HTTPSHandler(context=ctx))
    return urllib.request.build_opener(*handlers).open(req, timeout=timeout)


def request(method: str, url: str, *, body=None, headers=None, timeout: float = 30, verify: bool = True,
            auth: str = CONTROL_AUTH) -> Response:
    data = None
    hdrs = with_auth(url, dict(headers or {}), auth)
    if body is not None:
        data = json.dumps(body, separators=(",", ":")).encode()
        hdrs.setdefault("Content-Type", "application/json")
    req = urllib.request.Request(url, data=data, method=method, headers=hdrs)
    ctx = None
    if url.startswith("https:") and not verify:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    try:
        with open_url(req, timeout, ctx) as resp:
            return Response(resp.status, resp.headers, resp.read())
    except urllib.error.HTTPError as e:
        raise HTTPStatusError(method, url, e.code, e.read().decode(errors="replace")) from None


async def arequest(method: str, url: str, **kw) -> Response:
    return await asyncio.to_thread(request, method, url, **kw)

"""Blocking HTTP over urllib, run off the event loop by the async API."""

from __future__ import annotations

import asyncio
import json
import ssl
import urllib.error
import urllib.request


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


def request(method: str, url: str, *, body=None, headers=None, timeout: float = 30, verify: bool = True) -> Response:
    data = None
    hdrs = dict(headers or {})
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
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as resp:
            return Response(resp.status, resp.headers, resp.read())
    except urllib.error.HTTPError as e:
        raise HTTPStatusError(method, url, e.code, e.read().decode(errors="replace")) from None


async def arequest(method: str, url: str, **kw) -> Response:
    return await asyncio.to_thread(request, method, url, **kw)

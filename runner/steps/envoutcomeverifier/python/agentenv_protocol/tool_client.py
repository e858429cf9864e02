"""An MCP session on an env's streamable-HTTP endpoint (the `mcp_url` a verifier is given), with the
reference's `ToolSession` names: `async with ToolSession(mcp_url) as s: await s.call_tool(name, args)`.
Answers may be `application/json` or a `text/event-stream`; the session id is kept and ended on close."""

from __future__ import annotations

import asyncio
import itertools
import json
import urllib.error
import urllib.request

from ._http import CONTROL_AUTH, MCP_AUTH, open_url, with_auth
from .types import PROTOCOL_VERSION, ROLE_HEADER

MCP_PROTOCOL_VERSION = "2025-11-25"
_SESSION_HEADER = "Mcp-Session-Id"
_VERSION_HEADER = "MCP-Protocol-Version"


class ToolSessionError(RuntimeError):
    """The server failed a request at the MCP level (a JSON-RPC error, an HTTP error, an unreadable
    answer). A tool that fails is not one: its result has `isError`."""


class ToolResult:
    def __init__(self, content=None, isError=False, **extra):
        self.content = content or []
        self.isError = bool(isError)
        self.structuredContent = extra.get("structuredContent")

    @property
    def text(self) -> str:
        return "\n".join(b.get("text", "") for b in self.content if isinstance(b, dict) and b.get("type") == "text")

    def model_dump(self, mode: str = "python", exclude_none: bool = False) -> dict:
        return {"content": self.content, "isError": self.isError}

    def __repr__(self):
        return f"ToolResult(isError={self.isError!r}, text={self.text!r})"


class ToolSession:
    def __init__(self, url: str, *, role=None, headers=None, timeout: float = 600.0, verify: bool = True):
        self.url = url
        self.timeout = timeout
        self.session_id = None
        self.protocol_version = None
        self._headers = {**(headers or {}), **({ROLE_HEADER: role} if role else {}),
                         "Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        # Without a role the session speaks as the verifier role (its credential); a session that names a
        # role needs the control token, with which the gateway trusts the role header.
        self._headers = with_auth(url, self._headers, CONTROL_AUTH if role else MCP_AUTH)
        self._ids = itertools.count(1)
        self._open = False

    async def __aenter__(self):
        return await self.open()

    async def __aexit__(self, *exc_info):
        await self.close()

    async def open(self):
        self.session_id = self.protocol_version = None
        self._open = True
        try:
            result = await self._request("initialize", {
                "protocolVersion": MCP_PROTOCOL_VERSION, "capabilities": {},
                "clientInfo": {"name": "agentenv-protocol", "version": PROTOCOL_VERSION}})
            self.protocol_version = result.get("protocolVersion") or MCP_PROTOCOL_VERSION
            await asyncio.to_thread(self._post, {"jsonrpc": "2.0", "method": "notifications/initialized"}, None)
        except BaseException:
            await self.close()
            raise
        return self

    async def close(self):
        if not self._open:
            return
        self._open = False
        if self.session_id:
            try:
                req = urllib.request.Request(self.url, method="DELETE", headers={**self._headers, **self._session_headers()})
                await asyncio.to_thread(lambda: open_url(req, min(self.timeout, 5)).close())
            except Exception:
                pass  # a server that is already gone is not an error

    async def list_tools(self) -> list:
        tools, params = [], {}
        while True:
            result = await self._request("tools/list", params)
            tools += result.get("tools") or []
            if not result.get("nextCursor"):
                return tools
            params = {"cursor": result["nextCursor"]}

    async def call_tool(self, name: str, arguments=None) -> ToolResult:
        result = await self._request("tools/call", {"name": name, "arguments": arguments or {}})
        return ToolResult(**result)

    async def _request(self, method: str, params: dict) -> dict:
        if not self._open:
            raise RuntimeError("the ToolSession is not open: use `async with ToolSession(...)` or `await open()`")
        message = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        try:
            reply = await asyncio.wait_for(asyncio.to_thread(self._post, message, message["id"]), self.timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"{method} did not finish within {self.timeout}s") from None
        if "error" in reply:
            error = reply["error"] if isinstance(reply["error"], dict) else {"message": reply["error"]}
            raise ToolSessionError(f"{method} failed: {error.get('message')} (code {error.get('code')})")
        if not isinstance(reply.get("result"), dict):
            raise ToolSessionError(f"{method}: the reply has no result object")
        return reply["result"]

    def _post(self, message: dict, want_id):
        headers = {**self._headers, **self._session_headers()}
        req = urllib.request.Request(self.url, data=json.dumps(message, separators=(",", ":")).encode(), method="POST", headers=headers)
        method = message["method"]
        try:
            resp = open_url(req, self.timeout)
        except urllib.error.HTTPError as e:
            body = e.read().decode(errors="replace")[:1000]
            if e.code == 404 and self.session_id:
                raise ToolSessionError(f"{method}: the server no longer knows session {self.session_id}") from None
            raise ToolSessionError(f"{method}: HTTP {e.code} from {self.url}: {body}") from None
        with resp:
            if method == "initialize":
                self.session_id = resp.headers.get(_SESSION_HEADER)
            if want_id is None:
                return None
            ctype = resp.headers.get("Content-Type", "")
            try:
                if ctype.startswith("text/event-stream"):
                    for data in _sse_data(resp):
                        reply = json.loads(data)
                        if isinstance(reply, dict) and reply.get("id") == want_id and ("result" in reply or "error" in reply):
                            return reply
                    raise ToolSessionError(f"{method}: the event stream ended before the reply")
                if ctype.startswith("application/json"):
                    reply = json.loads(resp.read())
                    if isinstance(reply, dict):
                        return reply
                    raise ToolSessionError(f"{method}: the reply is not a JSON-RPC object")
            except ValueError as e:
                raise ToolSessionError(f"{method}: unreadable reply: {e}") from None
            raise ToolSessionError(f"{method}: unexpected content type {ctype!r}")

    def _session_headers(self) -> dict:
        headers = {_SESSION_HEADER: self.session_id} if self.session_id else {}
        if self.protocol_version:
            headers[_VERSION_HEADER] = self.protocol_version
        return headers


def _sse_data(resp):
    """The data of each `message` event of a server-sent event stream."""
    event, data = "message", []
    for raw in resp:
        line = raw.decode(errors="replace").rstrip("\r\n")
        if not line:
            payload = "\n".join(data)
            if payload.strip() and event == "message":
                yield payload
            event, data = "message", []
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data":
            data.append(value)
        elif field == "event":
            event = value

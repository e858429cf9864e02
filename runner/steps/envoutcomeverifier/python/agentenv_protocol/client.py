"""Data-plane client (JSON-RPC at `/agentenv`) and card helpers, with the reference's function names and
signatures. `base_url` is an env's or gateway's address without a path (a verifier gets it from its
`mcp_url` with `mcp_url.removesuffix("/mcp")`)."""

from __future__ import annotations

from ._http import HTTPStatusError, arequest
from .tool_client import ToolResult, ToolSession
from .types import (
    METHOD_ADD, METHOD_GET, METHOD_RESET, MCP_PATH, MCP_TRANSPORT, RPC_PATH, WELL_KNOWN_PATH,
    AddDataResponse, GetDataResponse, ResetDataResponse, part_to_dict,
)

__all__ = [
    "HTTPStatusError", "reset_data", "add_data", "get_data", "get_card", "supports_v1", "find_extension",
    "extension_params", "find_extension_method", "mcp_path", "find_tool", "find_child", "invoke_extension",
    "call_tool", "list_tools",
]


async def _rpc(base_url: str, method: str, params: dict, timeout: float, verify: bool) -> dict:
    request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    body = (await arequest("POST", f"{base_url}{RPC_PATH}", body=request, timeout=timeout, verify=verify)).json()
    if not isinstance(body, dict):
        raise RuntimeError(f"{method} failed: the answer is not a JSON-RPC object")
    if "error" in body:
        error = body["error"] or {}
        raise RuntimeError(f"{method} failed: {error.get('message')} ({error.get('data') or error.get('code')})")
    return body.get("result") or {}


async def reset_data(base_url: str, timeout: int = 30, verify: bool = True) -> ResetDataResponse:
    return ResetDataResponse.model_validate(await _rpc(base_url, METHOD_RESET, {}, timeout, verify))


async def add_data(base_url: str, parts: list, timeout: int = 120, verify: bool = True) -> AddDataResponse:
    params = {"parts": [part_to_dict(p) for p in parts]}
    return AddDataResponse.model_validate(await _rpc(base_url, METHOD_ADD, params, timeout, verify))


async def get_data(base_url: str, timeout: int = 30, verify: bool = True, *, write_namespace=None) -> GetDataResponse:
    params = {}
    if write_namespace is not None:
        dump = getattr(write_namespace, "model_dump", None)
        params["write_namespace"] = dump(mode="json", exclude_none=True) if dump else write_namespace
    return GetDataResponse.model_validate(await _rpc(base_url, METHOD_GET, params, timeout, verify))


async def get_card(base_url: str, timeout: int = 10, verify: bool = True) -> dict:
    return (await arequest("GET", f"{base_url}{WELL_KNOWN_PATH}", timeout=timeout, verify=verify)).json()


async def supports_v1(base_url: str, verify: bool = True) -> bool:
    try:
        await get_card(base_url, verify=verify)
        return True
    except Exception:
        return False


def find_extension(card: dict, uri: str):
    for ext in (card.get("capabilities") or {}).get("extensions") or []:
        if ext.get("uri") == uri:
            return ext
    return None


def extension_params(card: dict, uri: str) -> dict:
    ext = find_extension(card, uri)
    return (ext.get("params") or {}) if ext else {}


def find_extension_method(card: dict, uri: str, method: str):
    advertised = extension_params(card, uri)
    entry = (advertised.get("methods") or {}).get(method)
    if entry is None:
        return None
    return {**entry, "endpoint": entry.get("endpoint") or advertised.get("endpoint"),
            "method": (entry.get("method") or "POST").upper()}


def mcp_path(card: dict) -> str:
    for interface in card.get("additionalInterfaces") or []:
        if interface.get("transport") == MCP_TRANSPORT and interface.get("url"):
            return interface["url"]
    return MCP_PATH


def find_tool(card: dict, name: str):
    for entry in (card.get("capabilities") or {}).get("tools") or []:
        if entry.get("name") == name:
            return entry
    return None


def find_child(card: dict, name: str):
    for child in card.get("children_environments") or []:
        if child.get("name") == name:
            return child
    return None


async def invoke_extension(base_url: str, card: dict, uri: str, params=None, timeout: int = 30, verify: bool = True,
                           *, method=None):
    ext = find_extension(card, uri)
    if ext is None:
        raise ValueError(f"extension not advertised on card: {uri}")
    advertised = ext.get("params") or {}
    name = method if method is not None else next(iter(advertised.get("methods") or {}), None)
    op = find_extension_method(card, uri, name) if name is not None else {"endpoint": advertised.get("endpoint"), "method": "POST"}
    if op is None:
        offered = ", ".join(advertised.get("methods") or {}) or "none"
        raise ValueError(f"extension {uri} does not advertise method {method!r} (advertises: {offered})")
    if not op["endpoint"]:
        raise ValueError(f"extension {uri} has no endpoint in params")
    url = f"{base_url}{op['endpoint']}"
    if op["method"] == "GET":
        from urllib.parse import urlencode
        if params:
            url += "?" + urlencode(params)
        return (await arequest("GET", url, timeout=timeout, verify=verify)).json()
    return (await arequest(op["method"], url, body=params or {}, timeout=timeout, verify=verify)).json()


async def call_tool(mcp_url: str, name: str, arguments=None, *, role=None, timeout: float = 600.0) -> ToolResult:
    """One tool call in its own MCP session (ours: the reference opens a `ToolSession` for this)."""
    async with ToolSession(mcp_url, role=role, timeout=timeout) as session:
        return await session.call_tool(name, arguments)


async def list_tools(mcp_url: str, *, role=None, timeout: float = 600.0) -> list:
    """The env's tools as `{name, description, inputSchema}` dicts, in one MCP session (ours)."""
    async with ToolSession(mcp_url, role=role, timeout=timeout) as session:
        return await session.list_tools()

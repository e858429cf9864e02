"""Run a reference-style verifier as agent-env's env_outcome_verifier does: import the file as a module,
call verify(mcp_url), await it when it is a coroutine, and write the outcome as JSON to OUT:
{"rows": [...]} or {"error": {"phase": ..., "message": ...}}.

usage: python3 agentenv_run_verifier.py VERIFIER.py MCP_URL OUT.json"""

import asyncio
import importlib.util
import inspect
import json
import os
import sys
import traceback


def _last_line(exc: BaseException) -> str:
    lines = [l for l in traceback.format_exception_only(type(exc), exc) if l.strip()]
    return lines[-1].strip() if lines else type(exc).__name__


def _jsonable(v):
    dump = getattr(v, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if isinstance(v, (set, frozenset, tuple)):
        return list(v)
    if isinstance(v, bytes):
        return v.decode(errors="replace")
    return str(v)


def _run(path: str, mcp_url: str) -> dict:
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    name = os.path.splitext(os.path.basename(path))[0] or "verifier"
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except BaseException as e:
        traceback.print_exc()
        return {"error": {"phase": "import", "message": _last_line(e)}}
    verify = getattr(module, "verify", None)
    if not callable(verify):
        return {"error": {"phase": "missing", "message": "the module defines no verify(mcp_url) function"}}
    try:
        rows = verify(mcp_url)
        if inspect.isawaitable(rows):
            rows = asyncio.run(_await(rows))
    except BaseException as e:
        traceback.print_exc()
        return {"error": {"phase": "raise", "message": _last_line(e)}}
    if not isinstance(rows, list):
        return {"error": {"phase": "rows", "message": f"verify returned {type(rows).__name__}, want a list of dicts"}}
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            return {"error": {"phase": "rows", "message": f"row {i} is {type(row).__name__}, want a dict"}}
    return {"rows": rows}


async def _await(aw):
    return await aw


def main() -> int:
    path, mcp_url, out = sys.argv[1:4]
    result = _run(path, mcp_url)
    try:
        text = json.dumps(result, default=_jsonable)
    except (TypeError, ValueError) as e:
        text = json.dumps({"error": {"phase": "rows", "message": f"the rows are not JSON: {e}"}})
    with open(out, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

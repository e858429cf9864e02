"""A standard-library subset of the reference's agentenv_protocol package, shipped with agent-env so that
reference-style verifiers (`async def verify(mcp_url)`) run without pip: the data-plane client
(`client.get_data`, `reset_data`, `add_data`, card helpers), the part types, and an MCP tool session
(`tool_client.ToolSession`, plus the `client.call_tool` / `client.list_tools` shortcuts)."""

from . import client, tool_client, types

__all__ = ["client", "tool_client", "types"]

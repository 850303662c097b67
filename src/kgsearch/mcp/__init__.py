"""The MCP adapter (needs ``kgsearch[server]``); see :mod:`kgsearch.mcp.server`.

Importing this package does not import the MCP SDK; ``kgsearch.mcp.server`` does.
"""

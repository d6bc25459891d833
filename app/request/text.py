"""The one check of every string a client sends, GraphQL's (app.api.scalars.check_text) and
MCP's tool arguments (app.mcp.server) alike."""

from __future__ import annotations


def text_problem(value: str) -> str | None:
    """Why PostgreSQL text cannot hold `value`, or None. The one check of every string a
    client sends, GraphQL's (check_text) and MCP's tool arguments (app.mcp.server) alike."""
    if "\x00" in value:
        return "a string must not contain a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "a string must be valid Unicode (it has a lone surrogate)"
    return None

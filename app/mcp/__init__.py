"""Recall as an MCP server (docs/mcp.md): the same operations as /graphql, as tools.

- app.mcp.results: the typed results of the tools (their structured output schemas);
- app.mcp.tools: each tool as a call of the domain function its GraphQL twin calls
  (app.search, app.history), under the same policies (app.access);
- app.mcp.auth: Recall's bearer tokens as the SDK's TokenVerifier;
- app.mcp.server: the MCPServer (per-token tool listing, errors as tool errors, metrics) and
  its Streamable HTTP app, mounted at /mcp by app.server;
- app.mcp.stdio: `recall mcp`, the same server over stdio with RECALL_TOKEN.
"""

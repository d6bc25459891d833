"""Recall as an MCP server (docs/mcp.md): the same operations as /graphql, as tools.

- app.mcp.results: the typed results of the tools (their structured output schemas);
- app.mcp.tools: each tool as a call of the domain function its GraphQL twin calls
  (app.message_search, app.history_search), under the same policies (app.access);
- app.mcp.auth: Recall's bearer tokens as the SDK's TokenVerifier;
- app.mcp.server: the MCPServer (per-token tool listing, errors as tool errors, the tools
  capability only, metrics) and its Streamable HTTP app, mounted at /mcp by app.server;
- app.mcp.jsonrpc: the JSON-RPC framing the SDK's transports leave out (parse errors, invalid
  requests, batches), shared by both transports;
- app.mcp.http: /mcp around the SDK's HTTP app (POST only, framing, RFC 9728 metadata);
- app.mcp.stdio: `recall mcp`, the same server over stdio with RECALL_TOKEN, framed alike.
"""

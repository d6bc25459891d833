"""What one request needs on every transport, below both GraphQL (app.api) and MCP (app.mcp):
its session and ledger (scope), its batching loaders (loaders), global ids (ids) and the one
check of every string a client sends (text)."""

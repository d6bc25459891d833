"""messageSearch, the Messages tab's search: its request sequence (search), query
parsing, paging, cursors and highlights; a scope's transcript around a hit (Scope.messages,
MCP's read_conversation); plus what both search surfaces share: the readiness gate, the
`recall search` operations that open it, and the opaque cursor envelope. The statements
themselves are in app.data."""

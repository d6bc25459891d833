"""Live push over GraphQL (docs/live.md): the subscriptions messageSearchUpdates and
scopeMessages, their update types, and the graphql-transport-ws transport at /graphql
(`transport`: the token in connection_init, error codes, slow clients)."""

"""The GraphQL API: strawberry types, resolvers and per-request loaders."""

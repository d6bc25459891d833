"""The GraphQL API, one package per area (Saleor's layout): `types` build the area's objects,
`resolvers` return data (rows, domain results) and never import types, `schema` holds the
area's root fields. Shared here: the request context, loaders, global ids, Node, PageInfo,
the assembled schema and the HTTP view."""

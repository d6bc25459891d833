"""Linked identities: one person's members in two namespaces, verified live (docs/identity.md).

Domain logic between the API layer (app.api.identity) and the SQL (app.data.identity_links):
each operation checks its app.access policy and its rules here, once. Nothing here imports
strawberry.
"""

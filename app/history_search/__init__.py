"""Agent recall inside a turn: turns, historySearch, its provenance ledger and replies.

Domain logic between the API layer (app.api.history_search) and the SQL (app.data.history_search,
app.data.turns). Nothing here imports strawberry.
"""

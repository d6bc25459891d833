"""Data access: SQL and the typed functions that wrap it. Never imports strawberry."""

"""Search: query parsing, readiness, and the search statements of each surface."""

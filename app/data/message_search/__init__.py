"""messageSearch SQL: the bounded, authorized candidate scan, the page and the page's messages
with their highlights in one statement; then the page's audit row.

Invariant: every filter only removes rows. The scan starts from the viewer's own workspace and
from the documents whose vector matches the query; the position, scope, author and time (since,
until) conditions are further conjuncts of that WHERE clause, and eligibility (evidence,
audience, lineage — the shared fragments of app.data.eligibility, never re-implemented here) is
decided per candidate before a candidate can become a result. Nothing here ORs a condition in,
so no filter and no cursor can widen what the person may read: a filter on another person's DM,
another workspace's scope or a nonexistent author narrows the result to nothing, exactly like a
filter on an unknown id.

The scan is bounded: at most `budget` candidates (documents matching text and every filter)
are examined per request, newest first. A filter that names a conversation or an author admits
only readable candidates (app.data.message_search.conditions), so the budget says nothing about
what is hidden there. The candidates carry ids, order keys and the first eligibility rule each
fails — never text; only the page's bodies are read, from the canonical rows whose verdicts
admitted them, in the same statement.

The modules, in the order the statement uses them:

  inputs      what a search is given: the query, its filters, the position to continue after
  conditions  each filter's conjunct of the scan (and live push's text condition)
  words       the query's words, computed once, and how common they are (the access path)
  scan        one bounded scan of the sidecar in search order (the probe, and the rest)
  verdict     each candidate's canonical row and the first eligibility rule it fails
  page        the probe's decision, the candidates in order, the page and its cut
  hydrate     the page's messages with author, scope, body window and highlights
  rows        the statement's rows as typed values
  statement   the statement assembled from those fragments; search_page runs it, planned
              once per connection, and writes the audit row
"""

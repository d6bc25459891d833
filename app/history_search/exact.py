"""What a message must hold, verbatim, to be an exact match of a query (ranking tier EXACT).

Agents paste what they are looking for: an error line, a host name, a ticket key, a config
key. A message that holds it as written is the one they mean, before any that merely shares
its words. Two tests, each a regular expression (PostgreSQL ARE) over the lower-cased body
with its whitespace runs collapsed to one space:

- the whole query, when it has several words (`remaining connection slots are reserved`);
- every word of it, with each identifier and phrase as written (`pg-replica-03`,
  `ERR_WEBHOOK_TIMEOUT`, `KES-2291`; `retry-after` and `429` verbatim and `header` in any
  form for `Retry-After header 429`; a "quoted phrase"). Every word, not only the
  identifiers: `Q3` alone does not make a message the answer to `Q3 budget`.

Each must stand on its own: not inside a longer word or number (`pg-replica-03` is not in
`pg-replica-031`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.message_search.query import ParsedQuery

# A term is an identifier when it has a digit, or punctuation between two word characters.
_IDENTIFIER = re.compile(r"\d|\w[_\-./:#@]\w")
# Punctuation around a term is the sentence's, not the term's ("pg-replica-03?").
_EDGES = re.compile(r"^[^\w]+|[^\w]+$")
# Not inside a longer word: no letter, digit or underscore on either side.
_BEFORE = "(?<![[:alnum:]_])"
_AFTER = "(?![[:alnum:]_])"


@dataclass(frozen=True, slots=True)
class ExactTests:
    # The whole query (several words), as a pattern; None when it is one word.
    whole: str | None
    # A pattern per identifier and phrase: all must match.
    verbatim: tuple[str, ...]


def _literal(text: str) -> str:
    """`text` as an ARE matching exactly it: every character but letters, digits and the space
    escaped (a backslash before punctuation is that character; before a letter it would be an
    escape)."""
    return "".join(c if c.isalnum() or c == " " else "\\" + c for c in text)


def _pattern(text: str) -> str:
    return _BEFORE + _literal(text) + _AFTER


def exact_tests(parsed: ParsedQuery) -> ExactTests:
    terms = [t for t in (_EDGES.sub("", t) for t in parsed.include) if t]
    whole = " ".join(" ".join(terms).split())
    verbatim = tuple(dict.fromkeys(_pattern(t) for t in terms if " " in t or _IDENTIFIER.search(t)))
    several = len(whole.split(" ")) > 1
    return ExactTests(_pattern(whole) if several else None, verbatim)

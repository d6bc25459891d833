"""Parsing a search query into terms: words, "exact phrases" and -excluded words.

The parsed form is also the query's normalized text: cursors are bound to it and the audit
digest is taken of it, so two spellings of the same query (extra spaces, case, full-width
characters) are one query.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime

from app.errors import BadUserInput

MAX_QUERY_CHARS = 500
MAX_TERMS = 32
_TOKEN = re.compile(r'(-?)"([^"]*)"|(\S+)')


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    include: tuple[str, ...]
    exclude: tuple[str, ...]

    @property
    def normalized(self) -> str:
        parts = [_quote(t) for t in self.include] + ["-" + _quote(t) for t in self.exclude]
        return " ".join(parts)


def _quote(term: str) -> str:
    return f'"{term}"' if " " in term else term


def parse_query(text: str, *, words_required: bool = True) -> ParsedQuery:
    """Terms of a query. Raises BadUserInput for an oversized query, and for an empty or
    exclusion-only one unless `words_required` is false (a messageSearch query whose operators
    say what to list, app.message_search.operators)."""
    if len(text) > MAX_QUERY_CHARS:
        raise BadUserInput(f"query is longer than {MAX_QUERY_CHARS} characters")
    # NFKC folds full-width Latin and half-width Katakana to their usual forms.
    text = unicodedata.normalize("NFKC", text).lower()
    include: list[str] = []
    exclude: list[str] = []
    for match in _TOKEN.finditer(text):
        negated, phrase, word = match.group(1), match.group(2), match.group(3)
        if phrase is not None:
            term = " ".join(phrase.split())
            target = exclude if negated else include
        else:
            assert word is not None
            target = include
            if word.startswith("-") and len(word) > 1:
                word, target = word[1:], exclude
            term = word.replace('"', "")
        if term and term not in target:
            target.append(term)
    if not include and words_required:
        raise BadUserInput("query must contain at least one word to search for")
    if len(include) + len(exclude) > MAX_TERMS:
        raise BadUserInput(f"query has more than {MAX_TERMS} terms")
    return ParsedQuery(tuple(include), tuple(exclude))


def utc_bound(name: str, value: datetime | None) -> datetime | None:
    """A time bound (since/until) as an instant in UTC; a time without a zone is UTC. An offset can put a valid local time outside the years 1-9999 in
    UTC (0001-01-01T00:00:00+14:00): BAD_USER_INPUT, like any other unusable argument."""
    if value is None:
        return None
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise BadUserInput(f"{name} is outside the years 1-9999 in UTC") from None

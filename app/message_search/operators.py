"""Reading the operators people type into a messageSearch query (docs/api.md, Operators):
`from:@bob in:#infra rollback since:2026-03-01`.

A query is read left to right as whitespace-separated tokens, with double quotes grouping:

- an **operator** is one of OPERATORS, in any case, followed directly by `:` and a value, at the
  start of a token, optionally negated by a leading `-`. The value may be quoted (`"Sam Lee"`,
  `@"Sam Lee"`, `#"release train"`) to hold spaces; a quote that is never closed is an ordinary
  character of the value, which then ends at the next space (it never swallows the rest of the
  query);
- everything else is **text**, kept exactly as written for app.message_search.query.parse_query: a word
  with a colon that is not an operator (`http://host/x`, `10:30`, `foo:bar`) stays a word, and a
  quoted phrase stays a phrase even if it contains `from:`.

Nothing here looks anything up or checks a value's meaning beyond its shape (dates):
app.message_search.operator_filters resolves values against what the viewer may see.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.errors import BadUserInput

# The names, lower case, without the colon. Who or where: resolved to actors and scopes; when:
# a day or an instant.
WHO = ("from", "agents-of")
WHERE = ("in",)
WHEN = ("since", "until", "on")
OPERATORS = WHO + WHERE + WHEN
# Only who and where can be negated: "-since:" has no meaning a person would agree on.
NEGATABLE = WHO + WHERE
# More operators than this is not a search someone typed; it only costs resolution work.
MAX_OPERATORS = 16
MAX_VALUE_CHARS = 200
_LONGEST_NAME = max(len(name) for name in OPERATORS)
# The longest query the scanner reads: the caller bounds what was typed (500 characters) before
# Unicode normalization, which can lengthen text (one character of U+FDFA is 18); this bounds
# what normalization made of it.
MAX_NORMALIZED_CHARS = 2000


@dataclass(frozen=True, slots=True)
class Operator:
    name: str  # one of OPERATORS
    value: str  # as typed, quotes removed (the sigil @ or # kept)
    negated: bool = False

    @property
    def normalized(self) -> str:
        """The operator as one canonical token (cursors and digests are bound to it)."""
        value = self.value
        sigil = value[:1] if value[:1] in ("@", "#") else ""
        bare = value[len(sigil) :]
        if bare == "" or any(c.isspace() or c == '"' for c in bare):
            bare = '"' + bare.replace('"', "") + '"'
        return f"{'-' if self.negated else ''}{self.name}:{sigil}{bare}"


@dataclass(frozen=True, slots=True)
class QueryParts:
    """A query split into its text (for parse_query) and its operators, in typed order."""

    text: str
    operators: tuple[Operator, ...]


def split_operators(query: str) -> QueryParts:
    """The text and the operators of a query. Raises BadUserInput for an operator without a
    value, a negated time operator, too many operators or an oversized value."""
    if len(query) > MAX_NORMALIZED_CHARS:
        raise BadUserInput(f"query is longer than {MAX_NORMALIZED_CHARS} characters")
    text: list[str] = []
    operators: list[Operator] = []
    i, n = 0, len(query)
    while i < n:
        if query[i].isspace():
            i += 1
            continue
        start = i
        found = _operator_at(query, i)
        if found is None:
            i = _text_token_end(query, i)
            text.append(query[start:i])
            continue
        operator, i = found
        operators.append(operator)
        if len(operators) > MAX_OPERATORS:
            raise BadUserInput(f"query has more than {MAX_OPERATORS} operators")
    return QueryParts(" ".join(text), tuple(operators))


def _text_token_end(query: str, i: int) -> int:
    """Where a text token starting at i ends: a quoted phrase (`"…"` or `-"…"`) at its closing
    quote, as parse_query reads it; anything else at the next space."""
    j = i + 1 if query[i] == "-" else i
    if j < len(query) and query[j] == '"':
        close = query.find('"', j + 1)
        if close != -1:
            return close + 1
    while i < len(query) and not query[i].isspace():
        i += 1
    return i


def _operator_at(query: str, i: int) -> tuple[Operator, int] | None:
    """The operator starting at i and where it ends, or None if the token there is text."""
    negated = query[i] == "-"
    name_start = i + 1 if negated else i
    # The colon directly after a name: looked for only as far as the longest name reaches, so
    # a query costs time in proportion to its length.
    colon = query.find(":", name_start, name_start + _LONGEST_NAME + 1)
    if colon == -1:
        return None
    name = query[name_start:colon].lower()
    if name not in OPERATORS:
        return None
    value, end = _value_at(query, colon + 1)
    if value == "":
        raise BadUserInput(
            f"{name}: needs a value, e.g. {_EXAMPLES[name]} (no space after the colon)"
        )
    if negated and name not in NEGATABLE:
        raise BadUserInput(f"{name}: cannot be negated; only -from:, -agents-of: and -in: can")
    if len(value) > MAX_VALUE_CHARS:
        raise BadUserInput(f"the value of {name}: is longer than {MAX_VALUE_CHARS} characters")
    return Operator(name, value, negated), end


def _value_at(query: str, i: int) -> tuple[str, int]:
    """A value starting at i: `[@|#]"quoted, may hold spaces"` when the quote is closed, else
    everything up to the next space (an unclosed quote is then just a character, dropped)."""
    sigil = query[i] if i < len(query) and query[i] in ("@", "#") else ""
    q = i + len(sigil)
    if q < len(query) and query[q] == '"':
        close = query.find('"', q + 1)
        if close != -1:
            inner = " ".join(query[q + 1 : close].split())
            return (sigil + inner if inner else ""), close + 1
    end = i
    while end < len(query) and not query[end].isspace():
        end += 1
    return query[i:end].replace('"', ""), end


_EXAMPLES = {
    "from": 'from:@key, from:"Display Name" or from:me',
    "agents-of": "agents-of:@key or agents-of:me",
    "in": "in:#channel or in:@person",
    "since": "since:2026-03-01",
    "until": "until:2026-03-31",
    "on": "on:2026-03-14",
}

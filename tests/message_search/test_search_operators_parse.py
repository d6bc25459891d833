"""app.message_search.operators at unit level: which tokens are operators, what their values are, and
what stays text for parse_query. The same rules through GraphQL: test_message_search_operators."""

from __future__ import annotations

import pytest

from app.errors import BadUserInput
from app.message_search.operators import MAX_OPERATORS, Operator, split_operators


def ops(query: str) -> list[tuple[str, str, bool]]:
    return [(o.name, o.value, o.negated) for o in split_operators(query).operators]


def text(query: str) -> str:
    return split_operators(query).text


def test_operator_names_in_any_case_followed_directly_by_a_colon() -> None:
    assert ops("FROM:@bob In:#infra Agents-Of:me SINCE:2026-03-01") == [
        ("from", "@bob", False),
        ("in", "#infra", False),
        ("agents-of", "me", False),
        ("since", "2026-03-01", False),
    ]
    assert text("FROM:@bob rollback In:#infra") == "rollback"


@pytest.mark.parametrize(
    "query",
    [
        "http://acme.example/in:room",
        "https://x.test/?from:me",
        "10:30",
        "foo:bar",
        "from-:x",
        "fromm:x",
        "xfrom:me",
        '"from:bob in:#x"',
        '-"from:bob"',
        "in :#x",
    ],
)
def test_anything_else_with_a_colon_stays_text_as_typed(query: str) -> None:
    parts = split_operators(query)
    assert parts.operators == ()
    assert parts.text == " ".join(query.split())


def test_quoted_values_hold_spaces_with_or_without_a_sigil() -> None:
    assert ops('from:"Sam  Park" in:#"Release train" in:@"Ann Lee"') == [
        ("from", "Sam Park", False),
        ("in", "#Release train", False),
        ("in", "@Ann Lee", False),
    ]


def test_an_unclosed_quote_ends_at_the_next_space() -> None:
    parts = split_operators('from:"Sam Park rollback in:#infra')
    assert ops('from:"Sam Park rollback in:#infra') == [
        ("from", "Sam", False),
        ("in", "#infra", False),
    ]
    assert parts.text == "Park rollback"


def test_a_leading_minus_negates_who_and_where() -> None:
    assert ops("-from:@bob -in:#infra -agents-of:me") == [
        ("from", "@bob", True),
        ("in", "#infra", True),
        ("agents-of", "me", True),
    ]


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("from:", "from: needs a value"),
        ("rollback in: #infra", "in: needs a value"),
        ('from:""', "from: needs a value"),
        ("-since:2026-03-01", "cannot be negated"),
        ("-on:2026-03-01", "cannot be negated"),
        ("from:" + "x" * 201, "longer than 200"),
        (" ".join(["in:#a"] * (MAX_OPERATORS + 1)), f"more than {MAX_OPERATORS} operators"),
        ("a " * 1000 + "x:", "longer than 2000 characters"),
    ],
)
def test_unusable_operators_are_clear_errors(query: str, says: str) -> None:
    with pytest.raises(BadUserInput, match=says):
        split_operators(query)


def test_the_normalized_form_is_one_token_per_operator() -> None:
    assert Operator("from", "@bob").normalized == "from:@bob"
    assert Operator("from", "Sam Park", negated=True).normalized == '-from:"Sam Park"'
    assert Operator("in", "#Release train").normalized == 'in:#"Release train"'
    # Reading the normalized form again gives the same operator.
    for o in (Operator("in", "@Ann Lee"), Operator("from", "me"), Operator("on", "2026-03-01")):
        (again,) = split_operators(o.normalized).operators
        assert again == o

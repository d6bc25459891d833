"""Operators never widen a search: for random combinations of operators (positive, negated,
known, unknown, hidden, several of one kind), viewers, time zones and arguments, the result
is always a subset of the same search without its operators — restricted by the same
arguments. A query of operators only is compared with "deploy", which every message of the
fixture contains: it lists nothing the viewer could not find by searching."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.message_search.test_message_search_operators import found, ops_fixture, run
from tests.message_search_support import global_id
from tests.personas import load

WHO = ["@ann", "@ben", "ben", "me", "@bot", '"Sam Park"', "@nobody", "carl", "@carl", "scout"]
WHERE = ["#room", "#infra", "#vault", "#hush", "@bot", "@ben", "@ann", "t-room", "dm-ann-ben"]
WHERE += ["#nosuch", "@carl", '#"Infra Team"', "vault"]
WHEN = ["2026-03-01", "2026-03-02", "2026-03-03", "2026-03-02T12:00:00Z"]


@st.composite
def operator(draw: Any) -> str:
    name = draw(st.sampled_from(["from", "agents-of", "in", "since", "until", "on"]))
    if name in ("since", "until", "on"):
        return f"{name}:{draw(st.sampled_from(WHEN))}"
    negated = "-" if draw(st.booleans()) else ""
    values = WHERE if name == "in" else WHO
    return f"{negated}{name}:{draw(st.sampled_from(values))}"


@pytest.fixture
async def world(db: asyncpg.Connection, issue_token: Any) -> dict[str, Any]:
    await load(db, ops_fixture())
    return {
        "tokens": {w: await issue_token("member", "ops", w) for w in ("ann", "ben", "carl")},
        "room": await global_id(db, "Scope", "room"),
        "ben": await global_id(db, "Member", "ben"),
    }


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    viewer=st.sampled_from(["ann", "ben", "carl"]),
    words=st.sampled_from(["deploy", "notes", "deploy -hush", "bot", ""]),
    operators=st.lists(operator(), min_size=1, max_size=4),
    tz=st.sampled_from(["UTC", "Europe/Paris", "America/New_York"]),
    argument=st.sampled_from(["none", "scope", "author", "since"]),
)
async def test_operators_never_widen_a_search(
    client: Any,
    world: dict[str, Any],
    viewer: str,
    words: str,
    operators: list[str],
    tz: str,
    argument: str,
) -> None:
    token = world["tokens"][viewer]
    arguments: dict[str, Any] = {
        "none": {},
        "scope": {"scope": world["room"]},
        "author": {"author": {"kind": "MEMBER", "id": world["ben"]}},
        "since": {"since": "2026-03-02T09:00:00Z"},
    }[argument]
    query = " ".join([words, *operators]).strip()
    answer = await run(client, token, query, tz=tz, **arguments)
    narrowed = [e["node"]["key"] for e in answer["edges"]]
    plain = await found(client, token, words or "deploy", **arguments)
    assert set(narrowed) <= set(plain), (query, set(narrowed) - set(plain))
    # Newest first, like every messageSearch.
    assert narrowed == [k for k in plain if k in set(narrowed)]
    # A positive operator that named nothing the viewer may see is never dropped: nothing
    # matches. A negated one excludes nothing: the search without it answers the same.
    readings = answer["interpretation"]["operators"]
    for name in ("from", "agents-of", "in"):
        group = [r for r in readings if r["name"] == name and not r["negated"]]
        if group and not any(r["known"] for r in group):  # values of one operator are OR'd
            assert narrowed == [], query
    if all(r["negated"] and not r["known"] for r in readings):
        assert narrowed == plain, query

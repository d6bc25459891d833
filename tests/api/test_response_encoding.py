"""How responses and WebSocket messages are encoded (RecallGraphQL.encode_json): compact JSON
text, the same document whichever encoder wrote it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.api.view import RecallGraphQL
from app.settings import Settings


@pytest.fixture(scope="module")
def view() -> RecallGraphQL:
    return RecallGraphQL(Settings())


@pytest.mark.parametrize(
    "document",
    [
        {"data": {"body": "naïve 数据库 😀", "n": 3, "ok": True, "none": None, "f": 0.5}},
        # What orjson refuses: an integer past 64 bits, a lone surrogate. The standard
        # library writes both.
        {"data": {"big": 2**70}},
        {"data": {"odd": "\ud800 alone"}},
    ],
)
def test_a_document_is_encoded_as_text_that_reads_back_the_same(
    view: RecallGraphQL, document: dict[str, Any]
) -> None:
    encoded = view.encode_json(document)
    # Text: strawberry sends bytes over a WebSocket as a binary frame, which
    # graphql-transport-ws clients do not read.
    assert isinstance(encoded, str)
    assert json.loads(encoded) == document
    compact = {
        json.dumps(document, separators=(",", ":"), ensure_ascii=ascii) for ascii in (True, False)
    }
    assert encoded in compact

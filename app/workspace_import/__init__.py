"""The workspace import, `recall import` (docs/fixtures.md): the fixture file's model, its checks,
the importer. Its statements are app.data.workspace_import."""

from __future__ import annotations

from app.workspace_import.model import Fixture, FixtureError, parse_fixture

__all__ = ["Fixture", "FixtureError", "parse_fixture"]

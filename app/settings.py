"""Settings, read once from the environment into one frozen object.

This module is the only one of app/ that touches `os.environ` (tests/test_layers.py checks it):
it reads it into Settings, and hand_database_url_to_workers is its one write.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, PrivateAttr, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class TraceSettings(BaseSettings):
    """The standard OTEL_* variables Recall's own code decides by (app.observability.tracing;
    docs/operations.md, Traces): whether to trace at all, which exporters to build, whether to
    name the service. The OpenTelemetry SDK reads these, and the rest of OTEL_*, itself; so they
    are read as it reads them: names case-sensitive, values the raw strings."""

    model_config = SettingsConfigDict(frozen=True, extra="ignore", case_sensitive=True)

    sdk_disabled: str = Field(default="", alias="OTEL_SDK_DISABLED")
    traces_exporter: str = Field(default="", alias="OTEL_TRACES_EXPORTER")
    otlp_endpoint: str = Field(default="", alias="OTEL_EXPORTER_OTLP_ENDPOINT")
    otlp_traces_endpoint: str = Field(default="", alias="OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    service_name: str = Field(default="", alias="OTEL_SERVICE_NAME")


class Settings(BaseSettings):
    """Everything Recall reads from its environment. Nothing else reads `os.environ`."""

    model_config = SettingsConfigDict(frozen=True, extra="ignore", env_prefix="")

    # No DATABASE_URL means: start (or join) the embedded PostgreSQL under `recall_data_dir`.
    database_url: str | None = Field(default=None, alias="DATABASE_URL")
    recall_data_dir: Path = Field(default=Path(".recall"), alias="RECALL_DATA_DIR")
    # Optional: without it audit digests are empty (docs/design.md, Audit).
    master_key: SecretStr | None = Field(default=None, alias="RECALL_MASTER_KEY")
    host: str = Field(default="127.0.0.1", alias="RECALL_HOST")
    port: int = Field(default=8000, alias="RECALL_PORT", ge=1, le=65535)
    # `recall serve` processes sharing the port (each has its own pool of pool_max_size).
    workers: int = Field(default=1, alias="RECALL_WORKERS", ge=1)
    pool_min_size: int = Field(default=1, alias="RECALL_POOL_MIN", ge=0)
    pool_max_size: int = Field(default=10, alias="RECALL_POOL_MAX", ge=1)
    # Adds `x-recall-statements` (SQL statements the request ran) and `x-recall-database-ms`
    # (time spent waiting on them) response headers. For query-count tests and benchmarks;
    # harmless, but off by default.
    expose_statement_count: bool = Field(default=False, alias="RECALL_EXPOSE_STATEMENT_COUNT")
    # Largest accepted HTTP request body; bigger requests get 413 before parsing.
    max_request_bytes: int = Field(default=256 * 1024, alias="RECALL_MAX_REQUEST_BYTES", ge=1024)
    # How long a request waits for a pooled connection (and a new connection for its
    # handshake) before answering SERVICE_UNAVAILABLE (HTTP 503).
    db_acquire_timeout: float = Field(default=2.0, alias="RECALL_DB_ACQUIRE_TIMEOUT", gt=0)
    # PostgreSQL's statement_timeout on every pooled connection; a statement past it is
    # cancelled and the request answers TIMEOUT. The CLI's own connections have none.
    statement_timeout_ms: int = Field(default=5000, alias="RECALL_STATEMENT_TIMEOUT_MS", ge=100)
    # The whole request's budget (all its statements and its GraphQL work): past it, TIMEOUT.
    request_timeout: float = Field(default=15.0, alias="RECALL_REQUEST_TIMEOUT", gt=0)
    # Logs (docs/operations.md): JSON lines, or `text` for a terminal.
    log_format: Literal["json", "text"] = Field(default="json", alias="RECALL_LOG_FORMAT")
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        default="info", alias="RECALL_LOG_LEVEL"
    )
    # Origins allowed to call the API from a browser, comma-separated (`*` for any). Empty:
    # CORS off, no Access-Control-* header is ever sent.
    cors_origins: str = Field(default="", alias="RECALL_CORS_ORIGINS")
    # How long an identity link code (startIdentityLink) stays usable, in seconds
    # (docs/identity.md): ten minutes; tests make it short.
    link_code_ttl: int = Field(default=600, alias="RECALL_LINK_CODE_TTL", ge=1, le=86400)
    # How often `recall serve` looks for deleted messages whose text is still stored and
    # removes it (app.changes.erasure_worker), in seconds; 0 turns that background work off.
    text_removal_interval: float = Field(
        default=5.0, alias="RECALL_TEXT_REMOVAL_INTERVAL", ge=0, le=3600
    )
    # Live push (docs/live.md): open subscriptions per token and per process (past either,
    # a new one is refused with LIMIT_EXCEEDED); how long the live log keeps events (an
    # `after` older than that is INVALID_CURSOR); how often a subscription looks without a
    # notification (token expiry, a lost LISTEN connection); how many events a subscriber may
    # be behind the log's head, and how long one message may wait for a client to read it,
    # before its connection is closed (4008).
    live_max_per_token: int = Field(default=20, alias="RECALL_LIVE_MAX_PER_TOKEN", ge=1)
    live_max_per_process: int = Field(default=5000, alias="RECALL_LIVE_MAX_PER_PROCESS", ge=1)
    live_retention: float = Field(default=86400.0, alias="RECALL_LIVE_RETENTION", gt=0)
    live_poll_interval: float = Field(default=15.0, alias="RECALL_LIVE_POLL_INTERVAL", gt=0)
    live_max_backlog: int = Field(default=10000, alias="RECALL_LIVE_MAX_BACKLOG", ge=1)
    live_send_timeout: float = Field(default=10.0, alias="RECALL_LIVE_SEND_TIMEOUT", gt=0)
    # `recall serve`'s graceful stop (SIGTERM): open requests and subscriptions get this many
    # seconds to finish, then are cancelled (docs/operations.md).
    shutdown_grace: int = Field(default=10, alias="RECALL_SHUTDOWN_GRACE", ge=1)
    # The token `recall mcp` acts as (docs/mcp.md); no other command uses it.
    mcp_token: SecretStr | None = Field(default=None, alias="RECALL_TOKEN")
    # The OTEL_* variables, read with the rest. A private attribute, not a field: a field
    # would also be looked up as a variable of its own name (TRACING, as JSON).
    _tracing: TraceSettings = PrivateAttr(default_factory=TraceSettings)

    @property
    def tracing(self) -> TraceSettings:
        return self._tracing

    @property
    def cors_origin_list(self) -> list[str]:
        return [o.strip() for o in self.cors_origins.split(",") if o.strip()]


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()


def hand_database_url_to_workers(dsn: str) -> None:
    """DATABASE_URL set to `dsn` in this process's environment: the one write to it.

    `recall serve --workers N` resolves the database once (perhaps starting the embedded
    server, which it keeps running), then uvicorn starts each worker process by importing
    app.server.worker_app, a factory that takes no arguments. A worker learns its settings only
    from the environment it inherits, so that is where the resolved database goes."""
    os.environ["DATABASE_URL"] = dsn

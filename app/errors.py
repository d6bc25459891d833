"""The closed set of errors a client can see (docs/api.md, error codes).

Raised anywhere below the API layer; the API maps `code` to `extensions.code`. Any other
exception is masked before it reaches a client.
"""

from __future__ import annotations

from typing import ClassVar


class RecallError(Exception):
    code: ClassVar[str] = "INTERNAL_SERVER_ERROR"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def extensions(self) -> dict[str, object]:
        """Fields a client may read beside `code` (e.g. the index of a rejected change)."""
        return {}


class Unauthenticated(RecallError):
    code = "UNAUTHENTICATED"


class Forbidden(RecallError):
    code = "FORBIDDEN"


class BadUserInput(RecallError):
    code = "BAD_USER_INPUT"


class InvalidCursor(RecallError):
    code = "INVALID_CURSOR"


class SearchUnavailable(RecallError):
    code = "SEARCH_UNAVAILABLE"


class ServiceUnavailable(RecallError):
    """The database cannot be reached (or stopped answering): HTTP 503, try again shortly."""

    code = "SERVICE_UNAVAILABLE"


class Timeout(RecallError):
    """The request ran past its time budget, or one statement past statement_timeout."""

    code = "TIMEOUT"


class LimitExceeded(RecallError):
    """Too many of something open at once (live subscriptions per token or per process)."""

    code = "LIMIT_EXCEEDED"


class UsageError(Exception):
    """A bad CLI argument or input file: one clear line on stderr, exit non-zero, no change."""

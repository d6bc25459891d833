"""What a benchmark run measured (bench.run fills it, bench.report prints it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench.live import Live


@dataclass
class Case:
    name: str
    query: str
    persona: str  # heavy | lowvis
    author: bool = False
    # False: operators typed in the query (messageSearch only; no SQL floor or baselines,
    # which take words).
    sql: bool = True


@dataclass
class Results:
    messages: int
    seed: int
    server: str
    # True if the server is a Citus coordinator (the database distributed over its workers).
    cluster: bool = False
    generate: dict[str, Any] = field(default_factory=dict)
    imported: dict[str, Any] = field(default_factory=dict)
    sizes: dict[str, Any] = field(default_factory=dict)
    visibility: dict[str, Any] = field(default_factory=dict)
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    gateway_rss_mb: float | None = None
    # Concurrency 8 against `recall serve --workers 1` and `--workers 2`, alternating.
    throughput: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The numbers issue 15's targets name, from the rows above.
    targets: dict[str, Any] = field(default_factory=dict)
    # Writes through applyChanges and search under them (bench.live); None if not run.
    live: Live | None = None
    seconds: float = 0.0

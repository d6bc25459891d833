"""`recall apply`: a change file (NDJSON, one change a line) applied in batches.

Each batch is one transaction. A bad line stops the run with one error line naming it; its
batch is not applied, earlier batches stay, and running the file again is safe (replays are
no-ops). Progress goes to stderr (a bar on a terminal, periodic counts otherwise).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, TextIO

import asyncpg

from app.changes.apply import ApplyResult
from app.changes.batch import apply_batch
from app.changes.model import Change, ChangeRejected, parse_change
from app.errors import UsageError

DEFAULT_BATCH = 500
# How often (seconds) a non-terminal progress stream gets a line.
_REPORT_EVERY = 2.0


async def apply_file(
    conn: asyncpg.Connection,
    workspace_key: str,
    path: Path,
    *,
    batch_size: int = DEFAULT_BATCH,
    progress: TextIO,
) -> dict[str, Any]:
    if batch_size < 1:
        raise UsageError("--batch must be at least 1")
    workspace_id = await conn.fetchval(
        "select workspace_id from workspace_keys where key = $1", workspace_key
    )
    if workspace_id is None:
        raise UsageError(f"unknown workspace '{workspace_key}'")
    size, handle = _open(path)

    started = time.perf_counter()
    total = ApplyResult()
    reporter = _Progress(progress, size)
    lines = batches = 0
    with handle:
        for batch in _batches(handle, batch_size, path):
            first_line = batch[0][0]
            changes = [c for _, c in batch]
            try:
                # Deleted messages' text (this batch's, or an interrupted run's) goes after
                # the batch commits, in chunks.
                result = await apply_batch(conn, workspace_id, changes, progress=reporter.removing)
            except ChangeRejected as e:
                line = batch[e.index][0]
                raise UsageError(
                    f"{path}:{line}: {e.reason} (lines {first_line}-{batch[-1][0]} were not"
                    f" applied; {lines} earlier lines were)"
                ) from None
            total.add(result)
            lines += len(batch)
            batches += 1
            reporter.update(handle.tell(), lines)
    reporter.done(lines)
    seconds = time.perf_counter() - started
    return {
        "workspace": workspace_key,
        "file": str(path),
        "changes": lines,
        "batches": batches,
        "applied": total.applied,
        "unchanged": total.unchanged,
        "erased_messages": total.erased_messages,
        "seconds": round(seconds, 3),
        "changes_per_second": round(lines / seconds, 1) if seconds > 0 else 0.0,
    }


def _open(path: Path) -> tuple[int, BinaryIO]:
    try:
        return path.stat().st_size, path.open("rb")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory, not a change file") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror}") from None


def _batches(handle: BinaryIO, batch_size: int, path: Path) -> Iterator[list[tuple[int, Change]]]:
    batch: list[tuple[int, Change]] = []
    for number, raw in enumerate(handle, start=1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except UnicodeDecodeError:
            raise UsageError(f"{path}:{number}: not UTF-8 text") from None
        except json.JSONDecodeError as e:
            raise UsageError(
                f"{path}:{number}: invalid JSON at column {e.colno}: {e.msg}"
            ) from None
        try:
            change = parse_change(len(batch), data)
        except ChangeRejected as e:
            raise UsageError(f"{path}:{number}: {e.reason}") from None
        batch.append((number, change))
        if len(batch) == batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


class _Progress:
    def __init__(self, out: TextIO, size: int) -> None:
        self.out = out
        self.size = max(size, 1)
        self.tty = out.isatty()
        self.last = time.perf_counter()

    def update(self, position: int, lines: int) -> None:
        now = time.perf_counter()
        if self.tty:
            filled = int(30 * position / self.size)
            bar = "#" * filled + "." * (30 - filled)
            self.out.write(f"\rapplying [{bar}] {100 * position // self.size:3d}%  {lines} changes")
            self.out.flush()
        elif now - self.last >= _REPORT_EVERY:
            print(
                f"applied {lines} changes ({100 * position // self.size}% of the file)",
                file=self.out,
                flush=True,
            )
            self.last = now

    def removing(self, done: int, total: int) -> None:
        """Deleted messages whose text is gone, of those pending (after a batch erased many)."""
        now = time.perf_counter()
        if self.tty:
            self.out.write(f"\rremoving deleted text: {done} of {total} messages")
            self.out.flush()
        elif now - self.last >= _REPORT_EVERY or done == total:
            print(
                f"removed the text of {done} of {total} deleted messages", file=self.out, flush=True
            )
            self.last = now

    def done(self, lines: int) -> None:
        if self.tty:
            self.out.write("\n")
        print(f"applied {lines} changes", file=self.out, flush=True)

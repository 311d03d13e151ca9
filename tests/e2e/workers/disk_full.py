"""A writer that meets a full disk (RLIMIT_FSIZE) mid-workload, then gets room back without a reopen.

    disk_full.py work DB    drive runs of big activity results under a file-size
                            cap; lift it; finish. Prints one JSON report.
    disk_full.py open DB    open a new file with no room at all. Prints one JSON report.

SIGXFSZ is ignored, so a write past the cap fails with EFBIG (SQLite: disk
full or I/O error) instead of killing the process.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

from harvest_engine import (
    ActivityContext,
    HarvestError,
    SqliteRuntime,
    StorageError,
    WorkflowContext,
    activity,
    workflow,
)

RUNS = 6
STEPS = 4
BLOB = 60_000


@activity
async def produce(ctx: ActivityContext, n: int) -> str:
    return f"{n}:" + "x" * BLOB


@workflow
async def pipeline(ctx: WorkflowContext, n: int) -> list[int]:
    sizes = []
    for step in range(STEPS):
        sizes.append(len(await ctx.execute_activity(produce, n * 10 + step)))
    return sizes


def cap(limit: int) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))


def uncap() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))


def running_tasks(db: Path) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(
            conn.execute(
                "SELECT COUNT(*) FROM harvest_tasks WHERE status = 'RUNNING'"
            ).fetchone()[0]
        )
    finally:
        conn.close()


def written_size(db: Path) -> int:
    """How far into its files the database has written: the database, or the WAL's frames.

    The writer preallocates its WAL at open, so the WAL file's size says
    nothing about where the next frame goes; the frame count does (a passive
    checkpoint reports it, and copies what it can, harmlessly, on the way).
    """
    conn = sqlite3.connect(db)
    try:
        page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        frames = int(conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1])
    finally:
        conn.close()
    return max(db.stat().st_size, 32 + frames * (page_size + 24))


async def work(db: Path) -> dict[str, Any]:
    rt = SqliteRuntime.open(db)
    rt.register_workflow(pipeline)
    rt.register_activity(produce)
    runs = [rt.start_workflow("pipeline", n) for n in range(RUNS)]
    await rt.poll_once()  # first drives and a first round of results
    cap(written_size(db) + 3 * BLOB)
    errors: list[str] = []
    raw: list[str] = []
    for _ in range(40):
        try:
            if not await rt.poll_once():
                break
        except StorageError as exc:
            errors.append(exc.reason)  # type: ignore[attr-defined]
            if len(errors) >= 3:
                break
        except HarvestError as exc:
            raw.append(f"{type(exc).__name__}: {exc}")
            break
        except Exception as exc:  # noqa: BLE001 - what the test must never see
            raw.append(f"{type(exc).__name__}: {exc}")
            break
    stranded_while_full = running_tasks(db)
    cached_after_failure = len(rt.cache)
    uncap()
    passes = 0
    while await rt.poll_once():  # the same runtime: no reopen
        passes += 1
    states = [rt.describe(r).state for r in runs]
    outputs = [repr(rt.outcome(r)) for r in runs]
    report = {
        "storage_errors": errors,
        "other_errors": raw,
        "stranded_while_full": stranded_while_full,
        "cached_after_failure": cached_after_failure,
        "passes_after": passes,
        "states": states,
        "outputs": outputs,
        "running_tasks_after": running_tasks(db),
    }
    rt.close()
    return report


def open_without_room(db: Path) -> dict[str, Any]:
    cap(0)
    try:
        SqliteRuntime.open(db).close()
        outcome = "opened"
    except HarvestError as exc:
        outcome = type(exc).__name__
    except Exception as exc:  # noqa: BLE001 - what the test must never see
        outcome = f"raw {type(exc).__name__}: {exc}"
    uncap()
    return {"outcome": outcome, "left": sorted(p.name for p in db.parent.iterdir())}


def main() -> None:
    """Run one scenario and print its report."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    command, db = sys.argv[1], Path(sys.argv[2])
    if command == "work":
        report = asyncio.run(work(db))
    else:
        report = open_without_room(db)
    os.write(1, json.dumps(report).encode() + b"\n")


if __name__ == "__main__":
    main()

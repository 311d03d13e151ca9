"""The hops of a client's signal round trip: no needless sleep, wake or read on the way."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import (
    ExecutionOutcome,
    SqliteRuntime,
    WorkflowContext,
    workflow,
)
from harvest_engine.client import waits
from harvest_engine.errors import HarvestError
from harvest_engine.store.sqlite import client_queue
from harvest_engine.store.sqlite.client_queue import CommandQueue
from tests.engine.served_store import ServedStore

if TYPE_CHECKING:
    from pathlib import Path


@workflow
async def done_at_once(ctx: WorkflowContext, n: int) -> int:
    return n + 1


def _made(tmp_path: Path) -> Path:
    path = tmp_path / "q.db"
    SqliteRuntime.open(path).close()
    return path


def test_a_busy_queue_waits_for_the_writer_in_sub_millisecond_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's busy handler would sleep a whole millisecond first; the queue looks again sooner."""
    path = _made(tmp_path)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # the serving process mid-commit
    steps: list[float] = []

    def sleep(seconds: float) -> None:
        steps.append(seconds)
        if len(steps) == 3:
            writer.execute("COMMIT")  # the writer's transaction ends

    monkeypatch.setattr(client_queue.time, "sleep", sleep)
    queue = CommandQueue.open(path)
    try:
        assert queue.submit("c1", "send_signal", "{}", datetime.now(UTC))
        assert steps == [0.00005, 0.0001, 0.0002]
        assert queue.reply("c1") == (False, None)
    finally:
        queue.close()
        writer.close()


def test_a_queue_busy_past_the_timeout_fails_typed_and_queues_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _made(tmp_path)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    monkeypatch.setattr(client_queue, "BUSY_TIMEOUT_MS", 30)
    queue = CommandQueue.open(path)
    try:
        with pytest.raises(HarvestError):
            queue.submit("c1", "send_signal", "{}", datetime.now(UTC))
        writer.execute("COMMIT")
        assert queue.reply("c1") is None
        assert queue.submit("c1", "send_signal", "{}", datetime.now(UTC))
    finally:
        queue.close()
        writer.close()


async def test_the_result_of_an_ended_run_on_a_file_is_read_without_watching_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A signal's reply comes in the commit that ended its run: result() then reads once, tells no server."""
    served = ServedStore(str(tmp_path / "r.db"), postgres=False)
    served.rt.register_workflow(done_at_once)
    exec_id = served.rt.start_workflow("done_at_once", 1)
    await served.rt.run_until_blocked(exec_id)

    def no_watch(*_: Any, **__: Any) -> Any:
        raise AssertionError("an ended run was watched")

    monkeypatch.setattr(waits, "watching", no_watch)
    try:
        with served.client() as client:
            assert await client.result(exec_id) == ExecutionOutcome.Completed(output=2)
    finally:
        served.rt.close()

"""A serving loop's commit watch on Postgres (store/postgres/notice_watch.py).

The LISTEN thread pokes it at each notice of another process, so the
serving loop reads `data_version` when told (and every WATCH_SAFETY_POLL
seconds), not every poll tick; the worker's own commits never poke it.
"""

from __future__ import annotations

import select
from typing import Any

import pytest

from harvest_engine import PostgresRuntime, WorkflowContext, workflow
from harvest_engine.runtime.postgres_runtime import open_store
from harvest_engine.store.postgres.store import PostgresStore


@workflow
async def parked(ctx: WorkflowContext, _: Any) -> Any:
    return await ctx.wait_for_signal("go")


def readable(fd: int, seconds: float) -> bool:
    return bool(select.select([fd], [], [], seconds)[0])


def test_another_workers_commit_pokes_the_watch_and_its_own_commits_do_not(
    pg_dsn: str,
) -> None:
    rt = PostgresRuntime.connect(pg_dsn)
    other = PostgresRuntime.connect(pg_dsn)
    try:
        for runtime in (rt, other):
            runtime.register_workflow(parked)
        store = rt.store
        assert isinstance(store, PostgresStore)
        watch = store.open_commit_watch()
        assert watch is not None
        rt.start_workflow("parked")  # its own commit
        assert not readable(watch.fd, 0.3)
        other.start_workflow("parked")
        assert readable(watch.fd, 5.0)
        watch.drain()
        assert not readable(watch.fd, 0.0)
        watch.close()
        other.start_workflow("parked")  # a closed watch is dropped, not poked
    finally:
        other.close()
        rt.close()


def test_a_store_that_does_not_listen_has_no_watch_and_is_polled(pg_dsn: str) -> None:
    store = open_store(pg_dsn, worker_id=None, lease=None)
    try:
        assert store.open_commit_watch() is None
    finally:
        store.close()


def test_a_committed_cancel_is_told_to_this_process_at_the_commit(pg_dsn: str) -> None:
    # No LISTEN thread here: what is told comes from the commit itself.
    store = open_store(pg_dsn, worker_id=None, lease=None)
    heard: list[tuple[list[Any], str]] = []
    store.add_cancel_listener(lambda attempts, reason: heard.append((attempts, reason)))
    try:
        with store.write_together() as txn:
            txn.announce_cancels([("run-1", 1, 1)], "kept")

            def failing_block() -> None:
                with store.write() as inner:
                    inner.announce_cancels([("run-2", 1, 1)], "undone")
                    raise ValueError("workflow code failed")

            with pytest.raises(ValueError, match="workflow code"):
                failing_block()
            assert heard == []  # not before the commit
        assert heard == [([("run-1", 1, 1)], "kept")]
    finally:
        store.close()

"""A serving pass's reads, sent together at its start (store/postgres/ahead.py), on Postgres.

They cost one round trip; an answer read ahead is never given after a
commit through the store, to a read as of an earlier time, or once it is
older than FRESH_FOR: the read then asks the server itself.
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from psycopg import pq

from harvest_engine import PostgresRuntime, Queue, StartOptions
from harvest_engine.store.postgres import ahead
from tests.engine.parked_postgres import new_task, open_parked, store_of
from tests.engine.test_postgres_held_batch import statements_sent
from tests.engine.test_postgres_queue_cost import executed
from tests.engine.test_postgres_statement_cost import add_one, three_steps

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


def test_a_pass_sends_its_reads_in_one_round_trip(pg_dsn: str, tmp_path: Path) -> None:
    trace = tmp_path / "libpq.trace"
    rt = PostgresRuntime.connect(pg_dsn)
    try:
        rt.register_activity(add_one)
        rt.register_workflow(three_steps)
        rt.register_queue(Queue("q", concurrency=2))
        asyncio.run(rt.poll_once())  # nothing to do: every read done once before
        pgconn = store_of(rt).connection.pgconn
        with trace.open("w") as out:
            pgconn.trace(out.fileno())
            pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
            try:
                asyncio.run(rt.poll_once())  # a pass that finds nothing to do
            finally:
                pgconn.untrace()
    finally:
        rt.close()
    kinds = [
        line.split("\t")[2]
        for line in trace.read_text().splitlines()
        if line.startswith("F\t")
    ]
    reads = executed(trace)
    # The held starts, schedules, runs needing a decision, queues and ready
    # tasks: all sent before the one Sync the pass waits on (6 before).
    assert len(reads) >= 5, reads
    assert kinds.count("Sync") == 1, kinds


def test_a_commit_through_the_store_drops_what_was_read_ahead(pg_dsn: str) -> None:
    rt = open_parked(pg_dsn)
    try:
        store = store_of(rt)
        now = rt.clock.now()
        store.read_pass_ahead(now, [], flow=False)
        exec_id = str(rt.start_workflow("parked", None))  # commits: needs a decision
        assert store.runs_needing_decision(now) == [exec_id]
    finally:
        rt.close()


def test_an_answer_read_ahead_is_given_once_and_only_as_of_its_time(
    pg_dsn: str,
) -> None:
    rt = open_parked(pg_dsn)
    try:
        store = store_of(rt)
        exec_id = str(rt.start_workflow("parked", None))
        now = rt.clock.now()
        store.read_pass_ahead(now, [], flow=False)
        assert store.ahead.take("needing", now - timedelta(seconds=1)) is ahead.MISSING
        store.read_pass_ahead(now, [], flow=False)
        assert store.ahead.take("needing", now) == [exec_id]
        assert store.ahead.take("needing", now) is ahead.MISSING  # taken already
    finally:
        rt.close()


def test_an_answer_read_ahead_goes_stale(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = open_parked(pg_dsn)
    try:
        store = store_of(rt)
        now = rt.clock.now()
        store.read_pass_ahead(now, [], flow=False)
        later = time.monotonic() + ahead.FRESH_FOR + 1
        monkeypatch.setattr(ahead.time, "monotonic", lambda: later)
        assert store.ahead.take("needing", now) is ahead.MISSING
    finally:
        rt.close()


def test_a_queued_run_is_served_with_its_pass_reads_ahead(pg_dsn: str) -> None:
    rt = PostgresRuntime.connect(pg_dsn)
    try:
        rt.register_activity(add_one)
        rt.register_workflow(three_steps)
        rt.register_queue(Queue("q", concurrency=2))
        runs = [
            rt.start_workflow_with_options("three_steps", i, StartOptions(queue="q"))
            for i in range(5)
        ]

        async def passes() -> None:  # each pass reads ahead (fire_schedules)
            for _ in range(50):
                await rt.poll_once()
                if all(rt.outcome(r.exec_id).is_terminal for r in runs):
                    return

        asyncio.run(passes())
        assert [rt.outcome(r.exec_id).output for r in runs] == [3, 4, 5, 6, 7]
    finally:
        rt.close()


def test_the_queues_waits_read_ahead_serve_the_admission_and_the_next_due_time(
    pg_dsn: str,
) -> None:
    rt = open_parked(pg_dsn)
    try:
        store = store_of(rt)
        store.read_pass_ahead(rt.clock.now(), [], flow=True)
        answers = [store.ahead.take("waiting") for _ in range(3)]
        assert answers[:2] == [([], []), ([], [])]
        assert answers[2] is ahead.MISSING
    finally:
        rt.close()


def test_a_read_that_fails_ahead_gets_no_answer_and_the_others_do(pg_dsn: str) -> None:
    def fails_first(conn: Any) -> object:
        conn.execute("SELECT 1")
        raise ValueError("a read's own bug, met when it reads for itself")

    def fails_on_its_rows(conn: Any) -> object:
        if conn.execute("SELECT 3").fetchall():
            raise ValueError("a damaged row, met when it reads for itself")
        return []

    rt = open_parked(pg_dsn)
    try:
        store = store_of(rt)
        reads = {
            "first": fails_first,
            "fine": lambda conn: conn.execute("SELECT 2").fetchall(),
            "rows": fails_on_its_rows,
        }
        store.ahead.read(store.connection, None, reads)
        assert store.ahead.take("fine") == [(2,)]
        assert store.ahead.take("first") is ahead.MISSING
        assert store.ahead.take("rows") is ahead.MISSING
    finally:
        rt.close()


def test_the_ready_tasks_and_the_carried_claims_are_one_read(pg_dsn: str) -> None:
    rt = open_parked(pg_dsn)
    try:
        store = store_of(rt)
        mine, theirs, ready = (str(rt.start_workflow("parked", None)) for _ in range(3))
        now = rt.clock.now()
        with store.write() as txn:
            kept = txn.add_claimed_task(new_task(mine, 1), now).id
            gone = txn.add_claimed_task(new_task(mine, 2), now).id
            other = txn.add_claimed_task(new_task(theirs, 1), now).id
            waiting = txn.add_task(new_task(ready, 1))
            txn.update_execution(theirs, needs_decision=0)
        with store.write() as txn:  # another worker's claim, one claim gone
            txn.delete_task(gone)
        store.connection.execute(
            "UPDATE harvest_tasks SET worker_id = 'elsewhere' WHERE id = %s", (other,)
        )
        later = now + timedelta(minutes=1)
        with statements_sent() as sent:
            store.read_pass_ahead(later, [kept, gone, other], flow=False)
        assert len([sql for sql in sent if "harvest_tasks" in sql]) == 1, sent
        with statements_sent() as asked:
            assert store.claimed_task_ids([kept, gone, other]) == {kept}
            assert [t.id for t in store.ready_tasks(None, later)] == [waiting]
        assert asked == []  # both answered from the one read
    finally:
        rt.close()

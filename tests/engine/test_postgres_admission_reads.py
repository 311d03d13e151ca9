"""The runs an admission locks on Postgres are read behind their lock: their decisions read nothing.

The commit that ends a queued run admits the next and decides it at once;
the admitted run's row, flags and short history used to be read by the
batch lock that followed the admission, a round trip of its own (and, for
one run, by `= ANY(array)`, which Postgres planned anew at every execution:
~0.9 ms). Now they travel behind the admission's own lock, and one run is
read by `exec_id = ...`, whose prepared plan Postgres keeps.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from psycopg import pq

from harvest_engine import PostgresRuntime
from tests.engine.test_postgres_queue_cost import executed, queued_runs
from tests.engine.test_postgres_statement_cost import sent_messages, traced_passes

if TYPE_CHECKING:
    from pathlib import Path


def test_the_runs_an_admission_locks_are_read_behind_the_lock(
    pg_dsn: str, tmp_path: Path
) -> None:
    with PostgresRuntime.connect(pg_dsn) as rt:
        (exec_id,) = queued_runs(rt, 1, concurrency=1)
        store = rt.store
        trace = tmp_path / "libpq.trace"
        with store.write() as txn:  # type: ignore[attr-defined]
            assert exec_id in txn.flow().lock_enqueued([exec_id])
            held = txn.memory.rows[exec_id]
            assert held is not None
            assert held.state == "ENQUEUED"
            assert [e[1] for e in txn.memory.tails[exec_id]] == ["WorkflowStarted"]
            pgconn = store.connection.pgconn  # type: ignore[attr-defined]
            with trace.open("w") as out:
                pgconn.trace(out.fileno())
                pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
                try:
                    now = datetime.now(UTC)
                    assert txn.lock_runs([exec_id], deciding_at=now) == set()
                    assert txn.lock_for_decision(exec_id)
                    assert [e.type for e in txn.load_events(exec_id)] == [
                        "WorkflowStarted"
                    ]
                finally:
                    pgconn.untrace()
        assert sent_messages(trace)["Execute"] == 0


def test_one_admitted_run_is_read_by_its_id_not_by_an_array(
    pg_dsn: str, tmp_path: Path
) -> None:
    trace = tmp_path / "libpq.trace"
    with PostgresRuntime.connect(pg_dsn) as rt:
        rt.settings.group_commit_seconds = 60.0
        runs = queued_runs(rt, 4, concurrency=1)
        # Every statement parsed where it runs: the trace shows each one's text.
        rt.store.connection.prepare_threshold = None  # type: ignore[attr-defined]
        traced_passes(rt, pg_dsn, runs, trace, passes=100)
    reads = [sql for sql in executed(trace) if "harvest_events WHERE exec_id" in sql]
    assert reads, "no short history was read"
    assert not [sql for sql in reads if "exec_id = ANY" in sql], reads

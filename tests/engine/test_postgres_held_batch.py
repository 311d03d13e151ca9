"""Several runs' held writes sent as ONE statement on Postgres (store/postgres/held_batch.py).

A pass records and decides many runs in one transaction: their task
deletes, attempts, claimed tasks and appends travel together, and so do
runs' ends that follow one another. The guards stay per run (a task gone
fails the transaction with nothing written, for every run of it), and a
run's end still flags the runs watching it, except those it ends itself.
The commit's wake notice goes with the appends' check (appends_check.py).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import psycopg
import pytest

from harvest_engine.errors import HarvestInternalError
from tests.engine.parked_postgres import AT, new_task, open_parked, store_of
from tests.engine.test_postgres_held_writes import attempt, count, event

if TYPE_CHECKING:
    from collections.abc import Iterator

    from harvest_engine import PostgresRuntime
    from harvest_engine.store.postgres.store import PostgresStore
    from harvest_engine.store.postgres.write_txn import PostgresWriteTxn


@pytest.fixture
def rt(pg_dsn: str) -> Iterator[PostgresRuntime]:
    with open_parked(pg_dsn) as runtime:
        yield runtime


def _rows(dsn: str, sql: str) -> list[tuple[object, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return [tuple(r) for r in conn.execute(sql).fetchall()]  # noqa: S608


def _claimed(rt: PostgresRuntime, runs: list[str]) -> list[int]:
    with store_of(rt).write() as txn:
        return [txn.add_claimed_task(new_task(r, 1), AT).id for r in runs]


@contextmanager
def statements_sent() -> Iterator[list[str]]:
    """The text of every statement any psycopg cursor runs meanwhile (kept cursors too)."""
    sent: list[str] = []
    real = psycopg.Cursor.execute

    def counted(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(str(query))
        return real(self, query, *args, **kwargs)

    psycopg.Cursor.execute = counted  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        psycopg.Cursor.execute = real  # type: ignore[method-assign]


def _flushed(store: PostgresStore, txn: PostgresWriteTxn) -> list[str]:
    """Send the transaction's held writes now; the statements that carried them."""
    with statements_sent() as sent:
        txn.memory.flush(store.connection)
    return sent


def _complete_and_decide(
    txn: PostgresWriteTxn, runs: list[str], tasks: list[int]
) -> None:
    """Each run's task completed (task, attempt, append) and its next one claimed."""
    txn.lock_runs(runs, task_ids=tasks)
    for run, task in zip(runs, tasks, strict=True):
        assert txn.delete_task(task)
        txn.record_attempt(attempt(run, 1))
        txn.append_events(run, [event(2, "Completed")], needs_decision=1)
        txn.add_claimed_task(new_task(run, 2), AT)
        txn.append_events(
            run, [event(3, "Scheduled"), event(4, "Also")], needs_decision=0
        )


def test_runs_completions_and_decisions_are_one_statement_and_keep_their_guards(
    rt: PostgresRuntime, pg_dsn: str
) -> None:
    runs = [str(rt.start_workflow("parked")) for _ in range(3)]
    tasks = _claimed(rt, runs)
    store = store_of(rt)

    def with_a_task_gone() -> None:
        with store.write() as txn:
            _complete_and_decide(txn, runs, tasks)
            # Behind the transaction's back (a bug's shape): one task goes.
            store.connection.execute(
                "DELETE FROM harvest_tasks WHERE id = %s", (tasks[1],)
            )

    with pytest.raises(HarvestInternalError, match="were gone"):
        with_a_task_gone()
    assert count(pg_dsn, "harvest_events") == 3  # the runs' WorkflowStarted only
    assert count(pg_dsn, "harvest_tasks") == 3
    assert count(pg_dsn, "harvest_activity_attempts") == 0

    with store.write() as txn:
        _complete_and_decide(txn, runs, tasks)
        sent = _flushed(store, txn)
    assert len(sent) == 1, sent  # three runs' tasks, attempts, claims and appends
    for run in runs:
        assert [e.type for e in rt.load_history(run)] == [
            "WorkflowStarted",
            "Completed",
            "Scheduled",
            "Also",
        ]
    assert _rows(
        pg_dsn,
        "SELECT next_seq, needs_decision, count(*) FROM harvest_executions "
        "GROUP BY next_seq, needs_decision",
    ) == [(5, 0, 3)]
    assert _rows(
        pg_dsn,
        "SELECT activity_id, status, worker_id, ready_at, start_to_close, "
        "lease_expires_at > now(), count(*) FROM harvest_tasks "
        "GROUP BY 1, 2, 3, 4, 5, 6",
    ) == [(2, "RUNNING", store.worker_id, 1893456000000007, 1.25, True, 3)]
    assert _rows(
        pg_dsn,
        "SELECT exec_id, outcome, error FROM harvest_activity_attempts ORDER BY exec_id",
    ) == [(run, "COMPLETED", None) for run in sorted(runs)]


def test_runs_ending_one_after_another_are_one_statement(
    rt: PostgresRuntime, pg_dsn: str
) -> None:
    first, second, watcher = (str(rt.start_workflow("parked")) for _ in range(3))
    tasks = _claimed(rt, [first, second])
    store = store_of(rt)
    with store.write() as txn:
        for run in (first, second):
            txn.add_task(new_task(run, 2))
            txn.add_timer(run, "t", AT)
            txn.stage_signal(run, "plain", '"a"', None, AT)
            txn.stage_signal(run, "keyed", '"b"', "k1", AT)
            txn.update_execution(run, needs_decision=0)
        # The watcher is flagged; the second run, ended too, is not.
        assert txn.watch_runs(watcher, [first])
        assert txn.watch_runs(second, [first])
        txn.update_execution(watcher, needs_decision=0)
    with store.write() as txn:
        txn.lock_runs([first, second], task_ids=tasks)
        for run, task, output in ((first, tasks[0], None), (second, tasks[1], '"2"')):
            assert txn.delete_task(task)
            txn.record_attempt(attempt(run, 1))
            txn.append_events(run, [event(2, "Completed")], needs_decision=1)
            txn.append_events(run, [event(3, "Ended")], needs_decision=0)
            txn.seal(run, "COMPLETED", closed_at=AT, output=output)
        sent = _flushed(store, txn)
    assert len(sent) == 1, sent  # both runs' last writes and ends
    assert _rows(
        pg_dsn,
        "SELECT exec_id, state, output, needs_decision, next_seq FROM harvest_executions "
        "ORDER BY exec_id",
    ) == sorted(
        [
            (first, "COMPLETED", None, 0, 4),
            (second, "COMPLETED", '"2"', 0, 4),
            (watcher, "RUNNING", None, 1, 2),
        ]
    )
    assert count(pg_dsn, "harvest_tasks") == 0
    assert count(pg_dsn, "harvest_timers") == 0
    assert count(pg_dsn, "harvest_run_watchers") == 0
    assert count(pg_dsn, "harvest_activity_attempts") == 2
    assert _rows(
        pg_dsn, "SELECT name, delivered, count(*) FROM harvest_signals GROUP BY 1, 2"
    ) == [("keyed", 1, 2)]
    assert [e.type for e in rt.load_history(second)] == [
        "WorkflowStarted",
        "Completed",
        "Ended",
    ]


def test_the_commits_wake_notice_travels_with_the_appends_check(
    rt: PostgresRuntime, pg_dsn: str
) -> None:
    run = str(rt.start_workflow("parked"))
    store = store_of(rt)
    with psycopg.connect(pg_dsn, autocommit=True) as listener:
        listener.execute("LISTEN harvest_wake")
        with statements_sent() as sent, store.write() as txn:
            txn.append_events(run, [event(2, "Held")], needs_decision=1)
        heard = [n.payload for n in listener.notifies(timeout=5, stop_after=1)]
    assert heard == [store.worker_id]
    wakes = [sql for sql in sent if "pg_notify('harvest_wake'" in sql]
    assert len(wakes) == 1, sent
    assert "appends landed" in wakes[0]  # the check's own statement

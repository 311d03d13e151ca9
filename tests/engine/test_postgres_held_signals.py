"""A plain signal a Postgres transaction stages is held until a statement sends it (held_signals.py).

A client's signal and the decision it unblocks share one transaction: the
decision takes the held signal in and no row is ever written. These tests
pin the other paths: a statement that comes first sends it (and the
decision still removes its row), a decision that fails after taking it in
gives it back (staged, its run flagged), a block that fails drops it, and
a signal with an idempotency key is written at once as before.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
from psycopg import pq

from tests.engine.parked_postgres import AT, open_parked, store_of
from tests.engine.test_postgres_statement_cost import sent_messages

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from harvest_engine import PostgresRuntime
    from harvest_engine.store.postgres.write_txn import PostgresWriteTxn


@pytest.fixture
def rt(pg_dsn: str) -> Iterator[PostgresRuntime]:
    with open_parked(pg_dsn) as runtime:
        yield runtime


@pytest.fixture
def exec_id(rt: PostgresRuntime, pg_dsn: str) -> str:
    """A run parked on "go", decided (not flagged for a decision)."""
    started = str(rt.start_workflow("parked"))
    asyncio.run(rt.poll_once())
    assert flag(pg_dsn) == 0
    return started


def rows(dsn: str, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(sql).fetchall()


def staged_rows(dsn: str) -> list[tuple[Any, ...]]:
    return rows(dsn, "SELECT name, payload, delivered FROM harvest_signals ORDER BY id")


def flag(dsn: str) -> int:
    ((needs,),) = rows(dsn, "SELECT needs_decision FROM harvest_executions")
    return int(needs)


def take_in(txn: PostgresWriteTxn, exec_id: str) -> list[int]:
    """What a decision does with the staged signals: read them, mark them delivered."""
    ids = [s.signal_id for s in txn.staged_signals(exec_id, -1)]
    txn.mark_signals_delivered(exec_id, ids)
    return ids


def test_a_signal_staged_and_taken_in_by_one_transaction_sends_no_statement_for_it(
    rt: PostgresRuntime, exec_id: str, pg_dsn: str, tmp_path: Path
) -> None:
    store = store_of(rt)
    trace = tmp_path / "libpq.trace"
    with trace.open("w") as out, store.write() as txn:
        txn.lock_runs([exec_id])  # no signal staged when its row was locked
        pgconn = store.connection.pgconn
        pgconn.trace(out.fileno())
        pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            assert txn.stage_signal(exec_id, "go", "1", None, AT)
            (taken,) = take_in(txn, exec_id)
        finally:
            pgconn.untrace()
    assert taken < 0  # provisional: no row was written for it
    assert sent_messages(trace)["Execute"] == 0
    assert staged_rows(pg_dsn) == []


def test_a_held_signal_sent_before_its_decision_takes_it_in_leaves_no_row(
    rt: PostgresRuntime, exec_id: str, pg_dsn: str
) -> None:
    store = store_of(rt)
    with store.write() as txn:
        txn.lock_runs([exec_id])
        txn.stage_signal(exec_id, "go", "1", None, AT)
        (staged,) = txn.staged_signals(exec_id, -1)
        txn.add_timer(exec_id, "t1", AT)  # a statement: the held signal goes first
        assert rows(pg_dsn, "SELECT count(*) FROM harvest_signals") == [(0,)]
        txn.mark_signals_delivered(exec_id, [staged.signal_id])
    assert staged_rows(pg_dsn) == []
    assert rows(pg_dsn, "SELECT timer_id FROM harvest_timers") == [("t1",)]


def test_a_decision_that_fails_after_taking_a_held_signal_in_gives_it_back(
    rt: PostgresRuntime, exec_id: str, pg_dsn: str
) -> None:
    store = store_of(rt)

    def failing_decision() -> None:
        with store.write() as decision:
            take_in(decision, exec_id)
            raise ValueError("workflow code failed")

    with store.write_together() as txn:
        txn.lock_runs([exec_id])
        txn.stage_signal(exec_id, "go", "1", None, AT)
        with pytest.raises(ValueError, match="workflow code"):
            failing_decision()
    assert staged_rows(pg_dsn) == [("go", "1", 0)]
    assert flag(pg_dsn) == 1  # the serving loop decides the run again


def test_a_held_signal_of_a_block_that_fails_is_never_sent(
    rt: PostgresRuntime, exec_id: str, pg_dsn: str
) -> None:
    store = store_of(rt)

    def failing_send() -> None:
        with store.write() as block:
            block.stage_signal(exec_id, "go", "1", None, AT)
            raise ValueError("the command failed")

    with store.write_together() as txn:
        txn.lock_runs([exec_id])
        with pytest.raises(ValueError, match="command failed"):
            failing_send()
        txn.add_timer(exec_id, "t1", AT)
    assert staged_rows(pg_dsn) == []
    assert flag(pg_dsn) == 0


def test_a_keyed_signal_is_written_at_once_and_kept_delivered(
    rt: PostgresRuntime, exec_id: str, pg_dsn: str
) -> None:
    store = store_of(rt)
    with store.write() as txn:
        txn.lock_runs([exec_id])
        assert txn.stage_signal(exec_id, "go", "1", "k1", AT)
        assert not txn.stage_signal(exec_id, "go", "2", "k1", AT)  # its key: refused
        (taken,) = take_in(txn, exec_id)
    assert taken > 0
    assert staged_rows(pg_dsn) == [("go", "1", 1)]

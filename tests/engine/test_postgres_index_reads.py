"""harvest's sessions price index reads as on an SSD: a young database is read by key, not scanned.

A fresh database has no statistics; with Postgres's default
random_page_cost (4, a spinning disk's) the planner read whole tables for
harvest's `exec_id = ANY(...)` statements, so every pass of a queue scanned
every run and every event: O(runs) a statement, O(runs²) a workload.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from harvest_engine import PostgresRuntime
from harvest_engine.store.postgres.young_tables import FLOOR, YoungTables
from tests.engine.test_postgres_queue_cost import queued_runs

if TYPE_CHECKING:
    import pytest

RUNS = 600
SERVED = 40


def _serve(rt: PostgresRuntime, runs: list[str]) -> None:
    """Serve until `runs` (the queue's first) have ended."""

    async def drive() -> None:
        for _ in range(1000):
            await rt.poll_once()
            if all(rt.outcome(run).is_terminal for run in runs):
                return
        raise AssertionError("the runs did not complete")

    asyncio.run(drive())


def _scans(dsn: str, events: int) -> dict[str, int]:
    """Rows read by sequential scans, per table, once the closed sessions' stats are in."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for _ in range(100):  # a session's stats reach the view as it exits
            written = conn.execute(
                "SELECT n_tup_ins FROM pg_stat_user_tables WHERE relname = 'harvest_events'"
            ).fetchone()
            if written is not None and written[0] >= events:
                break
            time.sleep(0.05)
        rows = conn.execute(
            "SELECT relname, seq_tup_read FROM pg_stat_user_tables "
            "WHERE relname IN ('harvest_executions', 'harvest_events')"
        ).fetchall()
    return {str(name): int(read) for name, read in rows}


def test_a_queue_on_a_fresh_database_reads_runs_and_events_by_index(
    pg_dsn: str,
) -> None:
    with PostgresRuntime.connect(pg_dsn) as rt:
        runs = queued_runs(rt, RUNS, concurrency=8)
        _serve(rt, runs[:SERVED])
        events = sum(len(rt.load_history(run)) for run in runs)
    scanned = _scans(pg_dsn, events)
    assert scanned["harvest_events"] == 0, scanned
    # A few whole-table reads are fine (the queue's sweep of stale waits; the
    # appends check may hash the table while the plan thinks it small); one
    # per pass read the table 27 times here.
    assert scanned["harvest_executions"] <= 5 * RUNS, scanned


def test_a_store_analyzes_the_tables_once_its_runs_outgrow_their_statistics(
    pg_dsn: str,
) -> None:
    with PostgresRuntime.connect(pg_dsn) as rt:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:  # only ours count here
            conn.execute(
                "ALTER TABLE harvest_executions SET (autovacuum_enabled = false)"
            )
        queued_runs(rt, FLOOR - 1, concurrency=1)
        assert _known_runs(pg_dsn) == -1  # never analyzed
        rt.start_workflow("three_steps", 0)
        assert _known_runs(pg_dsn) == FLOOR
        for i in range(FLOOR - 1):
            rt.start_workflow("three_steps", i)
        assert _known_runs(pg_dsn) == FLOOR  # the next at twice as many
        rt.start_workflow("three_steps", 0)
        assert _known_runs(pg_dsn) == 2 * FLOOR


def test_statistics_that_cannot_be_gathered_never_fail_the_write_before_them(
    pg_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    young = YoungTables()
    conn = psycopg.connect(pg_dsn, autocommit=True)
    conn.close()  # the ANALYZE after this commit fails
    young.after_commit(conn, FLOOR)
    assert "could not analyze harvest's tables" in caplog.text
    assert young.inserted == 0  # counted again from here, not retried at once


def _known_runs(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT reltuples FROM pg_class WHERE relname = 'harvest_executions'"
        ).fetchone()
    assert row is not None
    return int(row[0])


def _cost(dsn: str) -> str:
    with PostgresRuntime.connect(dsn) as rt:
        row = rt.store.connection.execute("SHOW random_page_cost").fetchone()  # type: ignore[attr-defined]
    assert row is not None
    return str(row[0])


def test_harvest_sessions_price_index_reads_low_unless_someone_chose_the_cost(
    pg_dsn: str,
) -> None:
    assert _cost(pg_dsn) == "1.1"
    # The DSN's options win, and so does the database's own setting.
    assert _cost(make_conninfo(pg_dsn, options="-c random_page_cost=2.5")) == "2.5"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        name = conninfo_to_dict(pg_dsn)["dbname"]
        conn.execute(f'ALTER DATABASE "{name}" SET random_page_cost = 3')
    assert _cost(pg_dsn) == "3"

"""The Postgres store: versions, refusals, the append-only guard, leases, skipped runs, faults.

Refusals leave the database untouched; leases are taken by compare-and-swap
and reclaimed from a dead worker; a decision skips a run another worker
holds; a lost connection arrives typed and heals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg
import pytest

from harvest_engine import (
    ActivityContext,
    ManualClock,
    NotAHarvestDatabase,
    PostgresReader,
    PostgresRuntime,
    RunState,
    Runtime,
    SchemaTooNew,
    SqliteRuntime,
    StorageError,
    WorkflowContext,
    activity,
    workflow,
)
from harvest_engine.store.postgres.schema import SCHEMA_VERSION
from harvest_engine.store.postgres.store import PostgresStore

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.pg_server import PostgresServer


@activity
def shout(ctx: ActivityContext, text: str) -> str:
    return text.upper()


@workflow
async def one_shout(ctx: WorkflowContext, text: str) -> str:
    return await ctx.execute_activity(shout, text)


@pytest.fixture
def runtimes(pg_dsn: str) -> Iterator[list[PostgresRuntime]]:
    """Runtimes the test connects (closed at the end)."""
    opened: list[PostgresRuntime] = []
    yield opened
    for rt in opened:
        rt.close()


def connect(
    opened: list[PostgresRuntime], dsn: str, worker_id: str | None = None, **kw: Any
) -> PostgresRuntime:
    rt = PostgresRuntime.connect(dsn, worker_id=worker_id, clock=ManualClock(), **kw)
    rt.register_workflow(one_shout)
    rt.register_activity(shout)
    opened.append(rt)
    return rt


def database_state(dsn: str) -> dict[str, Any]:
    """Every harvest table's rows, and the version table's."""
    with psycopg.connect(dsn) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
                "ORDER BY tablename"
            ).fetchall()
        ]
        return {
            t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr)
            for t in tables
        }


def raw(dsn: str, sql: str, *args: Any) -> list[Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        cursor = conn.execute(sql, args or None)
        return cursor.fetchall() if cursor.description else []


# -- opening ----------------------------------------------------------------------


def test_connecting_twice_creates_the_schema_once(
    pg_dsn: str, runtimes: list[PostgresRuntime]
) -> None:
    connect(runtimes, pg_dsn)
    connect(runtimes, pg_dsn)
    # One row per step, each applied once (a new database takes every step).
    assert raw(
        pg_dsn, "SELECT version FROM harvest_schema_version ORDER BY version"
    ) == [(version,) for version in range(1, SCHEMA_VERSION + 1)]


def test_a_newer_schema_is_refused_and_left_untouched(
    pg_dsn: str, runtimes: list[PostgresRuntime]
) -> None:
    connect(runtimes, pg_dsn).start_workflow("one_shout", "hi")
    raw(pg_dsn, "INSERT INTO harvest_schema_version (version) VALUES (%s)", 99)
    before = database_state(pg_dsn)
    with pytest.raises(SchemaTooNew) as caught:
        PostgresRuntime.connect(pg_dsn)
    assert caught.value.found == 99  # type: ignore[attr-defined]
    with pytest.raises(SchemaTooNew):
        PostgresReader.connect(pg_dsn)
    assert database_state(pg_dsn) == before


def test_a_database_with_foreign_harvest_tables_is_refused_untouched(
    pg_dsn: str,
) -> None:
    raw(pg_dsn, "CREATE TABLE harvest_events (x INTEGER)")
    before = database_state(pg_dsn)
    with pytest.raises(NotAHarvestDatabase, match="harvest_events"):
        PostgresRuntime.connect(pg_dsn)
    assert database_state(pg_dsn) == before


def test_a_missing_database_a_wrong_dsn_and_a_bad_password_are_typed_errors_naming_them(
    pg_server: PostgresServer,
) -> None:
    missing = pg_server.dsn("no_such_db")
    with pytest.raises(NotAHarvestDatabase, match="no_such_db") as caught:
        PostgresRuntime.connect(missing)
    assert "no_such_db" in caught.value.path  # type: ignore[attr-defined]
    with pytest.raises(NotAHarvestDatabase, match="not a valid Postgres DSN"):
        PostgresRuntime.connect("host=x port=not-a-number =oops")
    with pytest.raises(NotAHarvestDatabase, match="a Postgres DSN is required"):
        PostgresRuntime.connect("")
    secret = missing.replace("harvest@", "harvest:hunter2@")
    with pytest.raises(NotAHarvestDatabase) as hidden:
        PostgresReader.connect(secret)
    assert "hunter2" not in str(hidden.value)
    assert "***" in str(hidden.value)


def test_a_database_without_a_schema_is_not_read_by_the_reader(pg_dsn: str) -> None:
    with pytest.raises(NotAHarvestDatabase, match="no harvest schema"):
        PostgresReader.connect(pg_dsn)


def test_a_postgres_runtime_only_connects_it_is_no_sqlite_runtime() -> None:
    assert not issubclass(PostgresRuntime, SqliteRuntime)
    assert issubclass(PostgresRuntime, Runtime)
    assert not hasattr(PostgresRuntime, "open")
    assert not hasattr(PostgresRuntime, "open_in_memory")


# -- the event log ----------------------------------------------------------------


async def test_events_are_append_only_update_and_overwrite_are_refused(
    pg_dsn: str, runtimes: list[PostgresRuntime]
) -> None:
    rt = connect(runtimes, pg_dsn)
    exec_id = rt.start_workflow("one_shout", "hi")
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output="HI")
    history = rt.load_history(exec_id)
    with pytest.raises(psycopg.errors.RestrictViolation, match="append-only"):
        raw(pg_dsn, "UPDATE harvest_events SET attrs = '{}' WHERE seq = 1")
    with pytest.raises(psycopg.errors.UniqueViolation):
        raw(
            pg_dsn,
            "INSERT INTO harvest_events (exec_id, seq, type, at, attrs) "
            "VALUES (%s, 1, 'WorkflowStarted', 0, '{}')",
            str(exec_id),
        )
    assert rt.load_history(exec_id) == history


async def test_the_history_is_the_same_json_as_on_sqlite(
    pg_dsn: str, runtimes: list[PostgresRuntime], tmp_path: Any
) -> None:
    from harvest_engine import SqliteRuntime

    rt = connect(runtimes, pg_dsn)
    exec_id = rt.start_workflow("one_shout", "hi")
    await rt.run_until_blocked(exec_id)
    with SqliteRuntime.open(tmp_path / "w.db", clock=ManualClock()) as other:
        other.register_workflow(one_shout)
        other.register_activity(shout)
        twin = other.start_workflow("one_shout", "hi")
        await other.run_until_blocked(twin)
        sqlite_rows = other.store.connection.execute(  # type: ignore[attr-defined]
            "SELECT seq, type, at, attrs FROM harvest_events ORDER BY seq"
        ).fetchall()
    pg_rows = raw(
        pg_dsn, "SELECT seq, type, at, attrs FROM harvest_events ORDER BY seq"
    )
    # The same events, byte for byte, but for the two runs' own ids.
    assert [(*r[:3], r[3].replace(str(exec_id), str(twin))) for r in pg_rows] == [
        tuple(r) for r in sqlite_rows
    ]


# -- leases -----------------------------------------------------------------------


def scheduled_task(rt: PostgresRuntime) -> int:
    """Start a run and decide it once: its one activity task waits, unclaimed."""
    exec_id = rt.start_workflow("one_shout", "hi")
    rt._engine.decider.decide(str(exec_id), rt.clock.now())
    (task,) = rt.store.ready_tasks(None, rt.clock.now())
    return task.id


def store_of(rt: PostgresRuntime) -> PostgresStore:
    store = rt.store
    assert isinstance(store, PostgresStore)
    return store


def test_a_live_lease_is_never_taken_over_and_an_expired_one_is_reclaimed_as_lost(
    pg_dsn: str, runtimes: list[PostgresRuntime]
) -> None:
    a = store_of(connect(runtimes, pg_dsn, "worker-a"))
    rt_b = connect(runtimes, pg_dsn, "worker-b")
    b = store_of(rt_b)
    task_id = scheduled_task(rt_b)
    now = rt_b.clock.now()

    claimed = a.claim_task(task_id, now)
    assert claimed is not None
    assert b.claim_task(task_id, now) is None  # held by a, lease live
    assert b.ready_tasks(None, now) == []
    assert raw(pg_dsn, "SELECT worker_id FROM harvest_tasks") == [("worker-a",)]

    # worker-a stops renewing (it died): its lease runs out.
    raw(pg_dsn, "UPDATE harvest_tasks SET lease_expires_at = now() - interval '1s'")
    assert [t.id for t in b.expired_leases()] == [task_id]
    assert [t.id for t in b.ready_tasks(None, now)] == [task_id]
    retaken = b.claim_task(task_id, now)
    assert retaken is not None
    assert retaken.idempotency_key == claimed.idempotency_key
    assert retaken.attempt == claimed.attempt
    assert raw(pg_dsn, "SELECT worker_id FROM harvest_tasks") == [("worker-b",)]
    (lost,) = b.activity_attempts(claimed.exec_id, None)
    assert lost.outcome == "LOST"
    assert lost.error is not None
    assert lost.error.type == "LeaseExpired"
    assert "worker-a" in lost.error.message
    # The old holder's renewals no longer touch the task.
    assert a.renew_leases() == 0
    assert b.renew_leases() == 1


def test_heartbeats_and_the_renewal_timer_extend_the_lease(
    pg_dsn: str, runtimes: list[PostgresRuntime]
) -> None:
    rt = connect(runtimes, pg_dsn, "w", lease="60s")
    store = store_of(rt)
    task_id = scheduled_task(rt)
    store.claim_task(task_id, rt.clock.now())
    raw(pg_dsn, "UPDATE harvest_tasks SET lease_expires_at = now() + interval '1s'")
    store.save_heartbeat(task_id, '{"step": 1}')
    ((left, beat),) = raw(
        pg_dsn,
        "SELECT EXTRACT(EPOCH FROM lease_expires_at - now()), heartbeat FROM harvest_tasks",
    )
    assert left > 50
    assert beat == '{"step": 1}'
    raw(pg_dsn, "UPDATE harvest_tasks SET lease_expires_at = now() + interval '1s'")
    assert store.renew_leases() == 1
    ((left,),) = raw(
        pg_dsn, "SELECT EXTRACT(EPOCH FROM lease_expires_at - now()) FROM harvest_tasks"
    )
    assert left > 50


def test_a_worker_id_given_again_frees_the_tasks_its_dead_process_held(
    pg_dsn: str, runtimes: list[PostgresRuntime]
) -> None:
    rt = connect(runtimes, pg_dsn, "steady")
    task_id = scheduled_task(rt)
    store_of(rt).claim_task(task_id, rt.clock.now())
    again = store_of(connect(runtimes, pg_dsn, "steady"))
    assert [t.id for t in again.expired_leases()] == [task_id]


async def test_a_run_another_worker_is_deciding_is_skipped_not_waited_for(
    pg_dsn: str, runtimes: list[PostgresRuntime]
) -> None:
    rt_a = connect(runtimes, pg_dsn, "a")
    rt_b = connect(runtimes, pg_dsn, "b")
    exec_id = rt_a.start_workflow("one_shout", "hi")
    with rt_a.store.write() as txn:
        assert txn.lock_for_decision(str(exec_id))
        decision = rt_b._engine.decider.decide(str(exec_id), rt_b.clock.now())
        assert not decision.progressed
    assert [e.type for e in rt_b.load_history(exec_id)] == ["WorkflowStarted"]
    assert await rt_b.run_until_blocked(exec_id) == RunState.Completed(output="HI")


# -- faults -----------------------------------------------------------------------


async def test_a_lost_connection_is_a_storage_error_and_the_next_call_reconnects(
    pg_dsn: str, runtimes: list[PostgresRuntime]
) -> None:
    rt = connect(runtimes, pg_dsn)
    exec_id = rt.start_workflow("one_shout", "hi")
    raw(
        pg_dsn,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid != pg_backend_pid()",
    )
    with pytest.raises(StorageError) as caught:
        rt.describe(exec_id)
    assert isinstance(caught.value.__cause__, psycopg.OperationalError)
    assert "hunter" not in str(caught.value)
    assert rt.describe(exec_id).state == "RUNNING"
    # The lease connection broke too: a claim's renewals heal the same way.
    assert await rt.run_until_blocked(exec_id) == RunState.Completed(output="HI")


# -- heartbeat_timeout --------------------------------------------------------------


@activity(heartbeat_timeout="5s")
def watched(ctx: ActivityContext, text: str) -> str:
    ctx.heartbeat({"at": text})
    return text


@workflow
async def one_watched(ctx: WorkflowContext, text: str) -> str:
    return await ctx.execute_activity(watched, text)


def lease_left(dsn: str) -> float:
    ((left,),) = raw(
        dsn, "SELECT EXTRACT(EPOCH FROM lease_expires_at - now()) FROM harvest_tasks"
    )
    return float(left)


async def test_heartbeat_timeout_is_supported_and_an_attempt_that_stops_heartbeating_is_retaken(
    pg_dsn: str, runtimes: list[PostgresRuntime]
) -> None:
    rt_a = connect(runtimes, pg_dsn, "a")
    rt_b = connect(runtimes, pg_dsn, "b")
    for rt in (rt_a, rt_b):
        rt.register_workflow(one_watched)
        rt.register_activity(watched)
    exec_id = rt_a.start_workflow("one_watched", "x")
    rt_a._engine.decider.decide(str(exec_id), rt_a.clock.now())
    (task,) = rt_a.store.ready_tasks(None, rt_a.clock.now())
    a, b = store_of(rt_a), store_of(rt_b)

    claimed = a.claim_task(task.id, rt_a.clock.now())
    assert claimed is not None
    assert 3 < lease_left(pg_dsn) <= 5  # the heartbeat timeout, not the 30s lease
    assert a.renew_leases() == 0  # the timer keeps only the other tasks alive
    raw(pg_dsn, "UPDATE harvest_tasks SET lease_expires_at = now() + interval '1s'")
    a.save_heartbeat(task.id, '{"at": "x"}')  # a heartbeat renews it
    assert lease_left(pg_dsn) > 3

    # a's body goes silent past the timeout: b retakes the attempt and finishes.
    raw(pg_dsn, "UPDATE harvest_tasks SET lease_expires_at = now() - interval '1s'")
    assert b.claim_task(task.id, rt_b.clock.now()) is not None
    raw(pg_dsn, "UPDATE harvest_tasks SET status = 'PENDING'")
    assert await rt_b.run_until_blocked(exec_id) == RunState.Completed(output="x")
    outcomes = [x.outcome for x in rt_b.activity_attempts(exec_id)]
    assert outcomes == ["LOST", "COMPLETED"]


def test_a_local_activity_with_heartbeat_timeout_is_refused_on_postgres(
    pg_dsn: str, runtimes: list[PostgresRuntime]
) -> None:
    from harvest_engine import UnsupportedFeature

    @activity(local=True, heartbeat_timeout="5s")
    def quick(ctx: ActivityContext, n: int) -> int:
        return n

    rt = connect(runtimes, pg_dsn)
    with pytest.raises(UnsupportedFeature, match="heartbeat_timeout"):
        rt.register_activity(quick)

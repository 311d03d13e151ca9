"""What a queued 3-activity run costs a Postgres worker: statements, round trips and commits.

As test_postgres_statement_cost, with every run started into a queue of
concurrency 4: the commit that ends a run admits and decides its successor
(no admission transaction, no pass in between), an admission's reads
travel in one round trip behind the queue's lock, and a run's workflow
name is known from its admission.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from psycopg import pq

from harvest_engine import PostgresRuntime, Queue, StartOptions
from tests.engine.test_postgres_statement_cost import (
    add_one,
    sent_messages,
    three_steps,
    traced_passes,
)

if TYPE_CHECKING:
    from pathlib import Path

RUNS = 24
# Per run, driven pass by pass (poll_once), the passes' own reads included
# (measured: 13.7 statements, 4.3-5.0 round trips and 0.88 commits; before
# a pass's ready tasks and carried claims were one read (leases.py), 14.4;
# before the commit's wake notice went with the appends' check, 15.2; before a
# pass's runs' held writes went as one statement (held_batch.py), 18.2;
# earlier, 19.1 statements, 9.5 round trips; before the held writes,
# savepoints and run ends (store/postgres/deferred.py) and the admission's
# one lock for its picks, 36.6 statements; at 27caac9, 40.0, 17.2 and 1.5).
STATEMENTS_PER_RUN = 14
ROUND_TRIPS_PER_RUN = 12
COMMITS_PER_RUN = 1.1


def queued_runs(rt: PostgresRuntime, runs: int, concurrency: int) -> list[str]:
    """Register the 3-activity workflow and queue "q" of `concurrency`; start `runs` into it."""
    rt.register_activity(add_one)
    rt.register_workflow(three_steps)
    rt.register_queue(Queue("q", concurrency=concurrency))
    return [
        str(
            rt.start_workflow_with_options(
                "three_steps", i, StartOptions(queue="q")
            ).exec_id
        )
        for i in range(runs)
    ]


def test_a_queued_run_costs_few_round_trips_and_commits_on_postgres(
    pg_dsn: str, tmp_path: Path
) -> None:
    trace = tmp_path / "libpq.trace"
    rt = PostgresRuntime.connect(pg_dsn)
    try:
        rt.settings.group_commit_seconds = 60.0  # never cut by load
        runs = queued_runs(rt, RUNS, concurrency=4)
        sent = traced_passes(rt, pg_dsn, runs, trace, passes=200)
    finally:
        rt.close()
    commits = sum(
        line.startswith("F") and '"COMMIT"' in line
        for line in trace.read_text().splitlines()
    )
    assert (sent["Execute"] + sent["Query"]) / RUNS <= STATEMENTS_PER_RUN, sent
    assert (sent["Sync"] + sent["Flush"]) / RUNS <= ROUND_TRIPS_PER_RUN, sent
    assert commits / RUNS <= COMMITS_PER_RUN, commits


ENQUEUES = 10
# Per start into a queue this process registered: BEGIN, the run's row with
# its WorkflowStarted event, its ENQUEUED state, its wait, the wake notice
# and COMMIT, all in the commit's round trip (measured: 6 statements, 1
# round trip; before, 8 and 3: the queue's row was read to check it, and the
# event's append was counted in a round trip of its own before the commit).
STATEMENTS_PER_ENQUEUE = 6
ROUND_TRIPS_PER_ENQUEUE = 1


def test_a_start_into_a_registered_queue_is_one_round_trip_on_postgres(
    pg_dsn: str, tmp_path: Path
) -> None:
    trace = tmp_path / "libpq.trace"
    rt = PostgresRuntime.connect(pg_dsn)
    try:
        rt.register_workflow(three_steps)
        rt.register_queue(Queue("q", concurrency=4))
        pgconn = rt.store.connection.pgconn  # type: ignore[attr-defined]
        with trace.open("w") as out:
            pgconn.trace(out.fileno())
            pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
            try:
                runs = [
                    rt.start_workflow_with_options(
                        "three_steps", i, StartOptions(queue="q")
                    ).exec_id
                    for i in range(ENQUEUES)
                ]
            finally:
                pgconn.untrace()
        assert [rt.describe(r).state for r in runs] == ["ENQUEUED"] * ENQUEUES
        assert [e.type for e in rt.load_history(runs[0])] == ["WorkflowStarted"]
    finally:
        rt.close()
    sent = sent_messages(trace)
    statements = sent["Execute"] + sent["Query"]
    assert statements / ENQUEUES <= STATEMENTS_PER_ENQUEUE, sent
    assert _waits(trace) / ENQUEUES <= ROUND_TRIPS_PER_ENQUEUE, sent


def _waits(trace: Path) -> int:
    """The worker's waits for the server: a Sync or a Flush (a commit's Sync + Flush is one)."""
    kinds = [
        parts[2]
        for parts in (line.split("\t") for line in trace.read_text().splitlines())
        if len(parts) > 2 and parts[0] == "F"
    ]
    return sum(
        kind == "Sync" or (kind == "Flush" and (i == 0 or kinds[i - 1] != "Sync"))
        for i, kind in enumerate(kinds)
    )


def executed(trace: Path) -> list[str]:
    """The text of each statement the worker ran, in order (named ones by their Parse)."""
    texts: dict[str, str] = {}
    ran: list[str] = []
    bound = ""
    for line in trace.read_text().splitlines():
        parts = line.split("\t")
        if len(parts) < 4 or parts[0] != "F":
            continue
        fields = parts[3].split('"')
        if parts[2] == "Parse":
            texts[fields[1]] = fields[3] if len(fields) > 3 else ""
        elif parts[2] == "Bind":
            bound = texts.get(fields[3], "") if len(fields) > 3 else ""
        elif parts[2] == "Execute":
            ran.append(bound)
    return ran


def test_an_admission_flips_its_runs_running_in_one_statement_on_postgres(
    pg_dsn: str, tmp_path: Path
) -> None:
    trace = tmp_path / "libpq.trace"
    rt = PostgresRuntime.connect(pg_dsn)
    try:
        rt.settings.group_commit_seconds = 60.0
        runs = queued_runs(rt, 8, concurrency=8)
        # Every statement parsed where it runs: the trace shows each one's text.
        rt.store.connection.prepare_threshold = None  # type: ignore[attr-defined]
        traced_passes(rt, pg_dsn, runs, trace, passes=50)
    finally:
        rt.close()
    # Setting a run's state: the batch's statement, or update_execution's
    # (one a run, its state bound).
    flips = [
        sql
        for sql in executed(trace)
        if "SET state = 'RUNNING'" in sql
        or sql.startswith("WITH moved AS (UPDATE harvest_executions SET state")
    ]
    assert len(flips) == 1, flips
